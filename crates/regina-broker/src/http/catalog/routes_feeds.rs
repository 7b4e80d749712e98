//! Catalogue entries of http-api.md §3.11–3.13: traces, status and analytics (the dashboard feeds),
//! system routes.

use serde_json::Value;

use super::schemas::{
    any, array, boolean, integer, map_of, named, nullable, number, object, pagination, string,
    time, uuid,
};
use super::{Access, Route};
use crate::http::analytics::FeedFilters;
use crate::http::contract::params::{Page, QueuePath};
use crate::http::maintenance::SwitchBody;
use crate::http::messages::MessageKey;
use crate::http::range::RangeQuery;
use crate::http::status::{AnalyticsQuery, QueuesQuery, Scope};
use crate::http::traces::{TraceBody, TraceNamePath};
use crate::http::{analytics, buffers, maintenance, status, traces};
use axum::routing::{get, post};

const TRACES: &str = "traces";
const STATUS: &str = "status";
const SYSTEM: &str = "system";

pub(super) fn routes() -> Vec<Route> {
    let mut all = trace_routes();
    all.extend(status_routes());
    all.extend(analytics_routes());
    all.extend(system_routes());
    all
}

/// A literal segment beats a parameter (http-api.md §2.4): the router tries `by-name` before
/// `{partitionId}`, and `names` is a route of its own.
fn trace_routes() -> Vec<Route> {
    vec![
        Route::post("/api/v1/traces", Access::ReadWrite, TRACES)
            .summary("Record a trace event on a message")
            .to(post(traces::record))
            .body::<TraceBody>()
            .ok(
                201,
                "Recorded",
                object(&[("success", boolean()), ("traceId", uuid())]),
            )
            .errors(&[404]),
        Route::get(
            "/api/v1/traces/{partitionId}/{transactionId}",
            Access::ReadOnly,
            TRACES,
        )
        .summary("A message's trace events, oldest first")
        .to(get(traces::by_message))
        .path::<MessageKey>()
        .ok(
            200,
            "Trace events",
            object(&[("traces", array(map_of(any())))]),
        ),
        Route::get(
            "/api/v1/traces/by-name/{traceName}",
            Access::ReadOnly,
            TRACES,
        )
        .summary("Trace events carrying a name, newest first")
        .to(get(traces::by_name))
        .path::<TraceNamePath>()
        .query::<Page<100, 1_000>>()
        .ok(200, "A page of trace events", trace_page("traces")),
        Route::get("/api/v1/traces/names", Access::ReadOnly, TRACES)
            .summary("Trace names, most recently seen first")
            .to(get(traces::names))
            .query::<Page<50, 1_000>>()
            .ok(200, "A page of trace names", trace_page("trace_names")),
    ]
}

fn status_routes() -> Vec<Route> {
    vec![
        Route::get("/api/v1/status", Access::ReadOnly, STATUS)
            .summary("Dashboard summary: throughput, queues, messages, leases, DLQ, workers")
            .to(get(status::status))
            .query::<RangeQuery>()
            .query::<Scope>()
            .ok(200, "Summary", map_of(any())),
        Route::get("/api/v1/status/queues", Access::ReadOnly, STATUS)
            .summary("Queues with counts and throughput")
            .to(get(status::queues))
            .query::<RangeQuery>()
            .query::<QueuesQuery>()
            .ok(200, "A page of queues", status_queue_page()),
        Route::get("/api/v1/status/queues/{queue}", Access::ReadOnly, STATUS)
            .summary("One queue's configuration and partitions")
            .to(get(status::queue))
            .path::<QueuePath>()
            .query::<Page<1_000, 10_000>>()
            .ok(200, "The queue", map_of(any()))
            .errors(&[404]),
        Route::get(
            "/api/v1/status/queues/{queue}/messages",
            Access::ReadOnly,
            STATUS,
        )
        .summary("A queue's messages, newest first; X-Total-Count")
        .to(get(status::messages))
        .path::<QueuePath>()
        .query::<Page<50, 1_000>>()
        .ok(200, "Messages", array(map_of(any())))
        .errors(&[404]),
        Route::get("/api/v1/status/analytics", Access::ReadOnly, STATUS)
            .summary("Messages pushed per bucket")
            .to(get(status::analytics))
            .query::<AnalyticsQuery>()
            .query::<RangeQuery>()
            .query::<Scope>()
            .ok(200, "Data points", data_points()),
        Route::get("/api/v1/status/buffers", Access::ReadOnly, STATUS)
            .summary("This instance's failover buffer")
            .to(get(buffers::buffers))
            .ok(200, "Buffer state", buffers()),
    ]
}

fn analytics_routes() -> Vec<Route> {
    let series: [(&str, &str); 7] = [
        (
            "/api/v1/analytics/system-metrics",
            "CPU, memory, pool and in-flight series per instance",
        ),
        (
            "/api/v1/analytics/worker-metrics",
            "Request and operation series per instance",
        ),
        (
            "/api/v1/analytics/queue-lag",
            "Lag and depth series per queue",
        ),
        (
            "/api/v1/analytics/queue-ops",
            "Push, pop, ack and DLQ series per queue",
        ),
        (
            "/api/v1/analytics/queue-parked-replicas",
            "Parked long-polls per queue and instance",
        ),
        ("/api/v1/analytics/retention", "Deletion series per queue"),
        (
            "/api/v1/analytics/postgres-stats",
            "Latest PostgreSQL figures",
        ),
    ];
    series
        .into_iter()
        .map(|(path, summary)| {
            let feed = path.trim_start_matches("/api/v1/analytics/");
            Route::get(path, Access::ReadOnly, "analytics")
                .summary(summary)
                .to(analytics::feed_route(feed))
                .query::<RangeQuery>()
                .query::<FeedFilters>()
                .ok(200, "Series", named("TimeSeries"))
        })
        .collect()
}

fn system_routes() -> Vec<Route> {
    let pop_switch = || object(&[("popMaintenanceMode", boolean()), ("message", string())]);
    let routes = vec![
        Route::get("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("The maintenance switches and the failover buffer")
            .to(get(maintenance::push_get))
            .ok(200, "Switches", maintenance()),
        Route::post("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("Switch push maintenance (pushes go to the failover buffer)")
            .to(post(maintenance::push_set))
            .body::<SwitchBody>()
            .ok(200, "Switched", maintenance_switched()),
        Route::get("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("The pop maintenance switch")
            .to(get(maintenance::pop_get))
            .ok(200, "Switch", pop_switch()),
        Route::post("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("Switch pop maintenance (every pop answers 204 paused)")
            .to(post(maintenance::pop_set))
            .body::<SwitchBody>()
            .ok(200, "Switched", pop_switch()),
        Route::post("/api/v1/stats/refresh", Access::Admin, SYSTEM)
            .summary("Recompute the dashboard stats now")
            .to(post(status::refresh))
            .ok(200, "Refreshed or skipped", stats_refreshed()),
    ];
    routes
}

fn trace_page(list: &'static str) -> Value {
    object(&[
        (list, array(map_of(any()))),
        ("total", integer()),
        ("pagination", pagination()),
    ])
}

fn status_queue_page() -> Value {
    object(&[
        ("queues", array(map_of(any()))),
        ("pagination", pagination()),
    ])
}

fn data_points() -> Value {
    object(&[
        (
            "dataPoints",
            array(object(&[("timestamp", time()), ("messages", integer())])),
        ),
        ("interval", string()),
        ("from", time()),
        ("to", time()),
    ])
}

fn maintenance() -> Value {
    object(&[
        ("maintenanceMode", boolean()),
        ("popMaintenanceMode", boolean()),
        ("bufferedMessages", integer()),
        ("bufferHealthy", boolean()),
        ("bufferStats", buffers()),
    ])
}

fn maintenance_switched() -> Value {
    object(&[
        ("maintenanceMode", boolean()),
        ("bufferedMessages", integer()),
        ("bufferHealthy", boolean()),
        ("message", string()),
    ])
}

fn stats_refreshed() -> Value {
    object(&[
        ("refreshed", boolean()),
        ("durationMs", number()),
        ("skipped", boolean()),
        ("reason", string()),
    ])
}

fn buffers() -> Value {
    object(&[
        ("pending", integer()),
        ("failed", integer()),
        ("corrupt", integer()),
        ("segments", integer()),
        ("bytes", integer()),
        ("oldestAt", nullable(time())),
        ("partitionsBlocked", integer()),
        ("dbHealthy", boolean()),
        ("worker", string()),
        ("note", nullable(string())),
    ])
}
