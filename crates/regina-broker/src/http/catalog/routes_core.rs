//! Catalogue entries of http-api.md §3.1–3.7: health and description, configure, push, pop, ack,
//! lease extension, transaction.

use serde_json::{json, Value};

use super::schemas::{
    any, array, boolean, integer, map_of, named, nullable, number, object, string, time, uuid,
};
use super::{Access, Route};
use crate::http::ack::{AckBatchBody, AckItem};
use crate::http::configure::ConfigureBody;
use crate::http::contract::params::{PartitionPath, QueuePath};
use crate::http::lease::{ExtendBody, LeasePath};
use crate::http::pop::{PartitionPopQuery, PopQuery, SelectorQuery};
use crate::http::push::PushBody;
use crate::http::transaction::TransactionBody;
use crate::http::{ack, configure, health, lease, metrics, openapi, pop, push, transaction};
use axum::routing::{get, post};

const HEALTH: &str = "health";
const QUEUES: &str = "queues";
const MESSAGING: &str = "messaging";

pub(super) fn routes() -> Vec<Route> {
    let mut all = health_routes();
    all.extend(produce_routes());
    all.extend(consume_routes());
    all
}

fn health_routes() -> Vec<Route> {
    vec![
        Route::get("/health", Access::Public, HEALTH)
            .summary("Whether this instance can reach PostgreSQL")
            .to(get(health::health))
            .ok(200, "Healthy", health())
            .errors(&[503]),
        Route::get("/metrics", Access::Public, HEALTH)
            .summary("This instance's counters as JSON")
            .to(get(metrics::metrics))
            .ok(200, "Counters of this instance", metrics()),
        Route::get("/metrics/prometheus", Access::Public, HEALTH)
            .summary("Metrics in the Prometheus text format 0.0.4")
            .to(get(metrics::prometheus))
            .ok_as(
                200,
                "Prometheus exposition",
                Some(("text/plain; version=0.0.4", json!({"type": "string"}))),
            ),
        Route::get("/api/openapi.json", Access::Public, HEALTH)
            .summary("This OpenAPI document")
            .to(get(openapi::serve))
            .ok(200, "OpenAPI 3.1 document", json!({"type": "object"})),
    ]
}

fn produce_routes() -> Vec<Route> {
    vec![
        Route::post("/api/v1/configure", Access::ReadWrite, QUEUES)
            .summary("Create a queue or change its configuration (options merge)")
            .to(post(configure::configure))
            .body::<ConfigureBody<'static>>()
            .ok(200, "Configuration changed", configured())
            .ok(201, "Queue created", configured()),
        Route::post("/api/v1/push", Access::ReadWrite, MESSAGING)
            .summary("Push messages; per-item outcomes in input order")
            .to(post(push::push))
            .body::<PushBody<'static>>()
            .ok(
                201,
                "Every item queued, duplicate or buffered",
                push_results(),
            )
            .ok_as(
                429,
                "Some items rejected for capacity (queue_full); the array tells which",
                Some(("application/json", push_results())),
            ),
    ]
}

fn consume_routes() -> Vec<Route> {
    vec![
        Route::get("/api/v1/pop/queue/{queue}", Access::ReadWrite, MESSAGING)
            .summary("Claim partitions of a queue and receive messages")
            .to(get(pop::pop_queue))
            .path::<QueuePath>()
            .query::<PopQuery>()
            .ok(200, "Messages delivered", pop_body())
            .ok_as(204, "Nothing delivered (X-Regina-Empty-Reason)", None),
        Route::get(
            "/api/v1/pop/queue/{queue}/partition/{partition}",
            Access::ReadWrite,
            MESSAGING,
        )
        .summary("Claim one partition and receive messages")
        .to(get(pop::pop_partition))
        .path::<QueuePath>()
        .path::<PartitionPath>()
        .query::<PartitionPopQuery>()
        .ok(200, "Messages delivered", pop_body())
        .ok_as(204, "Nothing delivered (X-Regina-Empty-Reason)", None),
        Route::get("/api/v1/pop", Access::ReadWrite, MESSAGING)
            .summary("Pop across the queues of a namespace and/or task, in priority order")
            .to(get(pop::pop_selector))
            .query::<SelectorQuery>()
            .query::<PopQuery>()
            .ok(200, "Messages delivered", pop_body())
            .ok_as(204, "Nothing delivered (X-Regina-Empty-Reason)", None),
        Route::post("/api/v1/ack", Access::ReadWrite, MESSAGING)
            .summary("Acknowledge one message")
            .to(post(ack::ack))
            .body::<AckItem>()
            .ok(200, "The outcome, in-band", array(named("AckResult"))),
        Route::post("/api/v1/ack/batch", Access::ReadWrite, MESSAGING)
            .summary("Acknowledge many messages")
            .to(post(ack::ack_batch))
            .body::<AckBatchBody<'static>>()
            .ok(
                200,
                "Outcomes in input order, in-band",
                array(named("AckResult")),
            ),
        Route::post(
            "/api/v1/lease/{leaseId}/extend",
            Access::ReadWrite,
            MESSAGING,
        )
        .summary("Extend every partition lease held by a pop's lease")
        .to(post(lease::extend))
        .path::<LeasePath>()
        .body::<ExtendBody>()
        .ok(
            200,
            "The outcome, in-band: a one-entry array; a request without a body gets the entry \
             itself (docs/compatibility.md)",
            json!({"oneOf": [array(lease_result()), lease_result()]}),
        ),
        Route::post("/api/v1/transaction", Access::ReadWrite, MESSAGING)
            .summary("Pushes and acks committed together or not at all")
            .to(post(transaction::transaction))
            .body::<TransactionBody<'static>>()
            .ok(200, "Committed", transaction_body())
            .errors(&[404, 409, 429]),
    ]
}

fn health() -> Value {
    object(&[
        (
            "status",
            json!({"type": "string", "enum": ["healthy", "unhealthy"]}),
        ),
        (
            "database",
            json!({"type": "string", "enum": ["connected", "disconnected"]}),
        ),
        ("server", string()),
        ("version", string()),
        ("worker_id", string()),
        ("uptimeSeconds", number()),
        ("maintenanceMode", boolean()),
        ("popMaintenanceMode", boolean()),
        (
            "failoverBuffer",
            object(&[("pending", integer()), ("healthy", boolean())]),
        ),
    ])
}

fn metrics() -> Value {
    let rate = || object(&[("total", integer()), ("rate", number())]);
    object(&[
        ("uptime", number()),
        ("requests", rate()),
        ("messages", rate()),
        (
            "database",
            object(&[
                ("poolSize", integer()),
                ("idleConnections", integer()),
                ("waitingRequests", integer()),
            ]),
        ),
        ("memory", object(&[("rssBytes", integer())])),
        (
            "cpu",
            object(&[("userSeconds", number()), ("systemSeconds", number())]),
        ),
        (
            "longPoll",
            object(&[("waiters", integer()), ("parked", integer())]),
        ),
    ])
}

fn configured() -> Value {
    object(&[
        ("configured", boolean()),
        ("created", boolean()),
        ("queueId", uuid()),
        ("partitionId", uuid()),
        ("queue", string()),
        ("namespace", nullable(string())),
        ("task", nullable(string())),
        ("options", named("QueueSettings")),
    ])
}

fn push_results() -> Value {
    array(named("PushResult"))
}

fn pop_body() -> Value {
    object(&[
        ("success", boolean()),
        ("queue", string()),
        ("partition", string()),
        ("partitionId", uuid()),
        ("leaseId", string()),
        ("consumerGroup", string()),
        ("partitionsClaimed", integer()),
        ("messages", array(named("Message"))),
    ])
}

fn lease_result() -> Value {
    object(&[
        ("index", integer()),
        ("leaseId", string()),
        ("success", boolean()),
        ("error", nullable(string())),
        ("code", nullable(string())),
        ("expiresAt", nullable(time())),
        ("newExpiresAt", nullable(time())),
    ])
}

fn transaction_body() -> Value {
    object(&[
        ("transactionId", uuid()),
        ("success", boolean()),
        ("results", array(map_of(any()))),
    ])
}
