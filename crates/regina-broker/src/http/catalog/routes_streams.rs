//! Catalogue entries of the streams API (streams-api.md §3) and the dashboard's listing of
//! registered queries.

use serde_json::Value;

use super::schemas::{any, array, boolean, integer, named, nullable, object, string, time, uuid};
use super::{Access, Route};
use crate::http::streams;
use crate::http::streams::{CycleBody, ListingQuery, RegisterBody, StateGetBody};

const STREAMS: &str = "streams";

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/streams/v1/queries", Access::ReadWrite, STREAMS)
            .summary("Register a streams query by name (a changed config_hash needs reset)")
            .to(streams::queries_route())
            .body::<RegisterBody>()
            .ok(200, "Registered", registered())
            .errors(&[409]),
        Route::post("/streams/v1/state/get", Access::ReadOnly, STREAMS)
            .summary("Read a shard's state rows (keys, literal key prefix, ripe windows)")
            .to(streams::state_route())
            .body::<StateGetBody<'static>>()
            .ok(200, "State rows by key", state_rows()),
        Route::post("/streams/v1/cycle", Access::ReadWrite, STREAMS)
            .summary("State ops, sink pushes and the source ack, committed together or not at all")
            .to(streams::cycle_route())
            .body::<CycleBody<'static>>()
            .ok(
                200,
                "Committed (or a replay of a committed cycle)",
                cycle_answer(),
            )
            .errors(&[404, 409, 429]),
        Route::get("/api/v1/resources/streams", Access::ReadOnly, STREAMS)
            .summary("Registered streams queries with their state size and last cycle")
            .to(streams::listing_route())
            .query::<ListingQuery>()
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
