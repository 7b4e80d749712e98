//! Catalogue entries of the streams API (streams-api.md §3) and the dashboard's listing of
//! registered queries.

use serde_json::{json, Value};

use super::schemas::{
    any, array, boolean, integer, name, named, nullable, number, object, object_req, string, time,
    uuid,
};
use super::{paging, Access, Route};
use crate::http::streams::{LIMIT_DEFAULT, LIMIT_MAX};

const STREAMS: &str = "streams";

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/streams/v1/queries", Access::ReadWrite, STREAMS)
            .summary("Register a streams query by name (a changed config_hash needs reset)")
            .body(object_req(
                &[
                    ("name", name()),
                    ("source_queue", name()),
                    ("sink_queue", nullable(string())),
                    (
                        "config_hash",
                        json!({"type": "string", "minLength": 1, "maxLength": 255}),
                    ),
                    ("reset", boolean()),
                ],
                &["name", "source_queue", "config_hash"],
            ))
            .ok(200, "Registered", registered())
            .errors(&[409]),
        Route::post("/streams/v1/state/get", Access::ReadOnly, STREAMS)
            .summary("Read a shard's state rows (keys, literal key prefix, ripe windows)")
            .body(object_req(
                &[
                    ("query_id", uuid()),
                    ("partition_id", uuid()),
                    ("keys", nullable(array(string()))),
                    (
                        "key_prefix",
                        nullable(json!({"type": "string", "maxLength": 1024})),
                    ),
                    ("ripe_at_or_before", nullable(number())),
                ],
                &["query_id", "partition_id"],
            ))
            .ok(200, "State rows by key", state_rows()),
        Route::post("/streams/v1/cycle", Access::ReadWrite, STREAMS)
            .summary("State ops, sink pushes and the source ack, committed together or not at all")
            .body(cycle_body())
            .ok(
                200,
                "Committed (or a replay of a committed cycle)",
                cycle_answer(),
            )
            .errors(&[404, 409, 429]),
        Route::get("/api/v1/resources/streams", Access::ReadOnly, STREAMS)
            .summary("Registered streams queries with their state size and last cycle")
            .query(paging(LIMIT_DEFAULT, LIMIT_MAX))
            .ok(200, "One page of queries", listing()),
    ]
}

fn registered() -> Value {
    object(&[
        ("success", boolean()),
        ("query_id", uuid()),
        ("name", string()),
        ("config_hash", string()),
        ("fresh", boolean()),
        ("reset", boolean()),
    ])
}

fn state_rows() -> Value {
    object(&[
        ("success", boolean()),
        (
            "rows",
            array(object(&[
                ("key", string()),
                ("value", any()),
                ("updated_at", time()),
            ])),
        ),
    ])
}

fn cycle_body() -> Value {
    let state_op = object_req(
        &[
            (
                "type",
                json!({"type": "string", "enum": ["upsert", "delete"]}),
            ),
            ("key", json!({"type": "string", "maxLength": 1024})),
            ("value", any()),
        ],
        &["type", "key"],
    );
    let ack = object_req(
        &[
            ("transactionId", string()),
            ("leaseId", nullable(string())),
            (
                "status",
                json!({"type": "string",
                       "enum": ["completed", "success", "failed", "retry", "dlq"]}),
            ),
            ("count", json!({"type": "integer", "minimum": 1})),
            ("error", nullable(string())),
        ],
        &["transactionId"],
    );
    object_req(
        &[
            ("query_id", uuid()),
            ("partition_id", uuid()),
            ("consumer_group", nullable(name())),
            ("state_ops", nullable(array(state_op))),
            ("push_items", nullable(array(named("PushItem")))),
            ("ack", nullable(ack)),
            ("release_lease", nullable(boolean())),
        ],
        &["query_id", "partition_id"],
    )
}

fn cycle_answer() -> Value {
    object(&[
        ("success", boolean()),
        ("query_id", uuid()),
        ("partition_id", uuid()),
        ("queueName", nullable(string())),
        ("state_ops_applied", integer()),
        ("push_results", array(named("PushResult"))),
        (
            "ack_result",
            nullable(object(&[
                ("success", boolean()),
                ("count", integer()),
                ("lease_released", boolean()),
                ("dlq", boolean()),
            ])),
        ),
        ("replayed", boolean()),
    ])
}

fn listing() -> Value {
    let query = object(&[
        ("queryId", uuid()),
        ("name", string()),
        ("sourceQueue", string()),
        ("sinkQueue", nullable(string())),
        ("configHash", string()),
        ("createdAt", time()),
        ("updatedAt", time()),
        ("shards", integer()),
        ("cycles", integer()),
        ("lastCycleAt", nullable(time())),
        ("stateRows", integer()),
        ("stateBytes", integer()),
    ]);
    object(&[
        ("queries", array(query)),
        ("total", integer()),
        ("limit", integer()),
        ("offset", integer()),
    ])
}
