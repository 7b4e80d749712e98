//! Catalogue entries of spec §3.11–3.13: traces, status and analytics (the dashboard feeds),
//! system routes.

use serde_json::{json, Value};

use super::schemas::{
    any, array, boolean, integer, map_of, name, named, nullable, number, object, object_req,
    pagination, string, time, uuid,
};
use super::{choice, paging, param_name, range, text, Access, Param, Route};

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

fn trace_routes() -> Vec<Route> {
    vec![
        Route::post("/api/v1/traces", Access::ReadWrite, TRACES)
            .summary("Record a trace event on a message")
            .body(trace_body())
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
        .query(paging(100, 1_000))
        .ok(200, "A page of trace events", trace_page("traces")),
        Route::get("/api/v1/traces/names", Access::ReadOnly, TRACES)
            .summary("Trace names, most recently seen first")
            .query(paging(50, 1_000))
            .ok(200, "A page of trace names", trace_page("trace_names")),
    ]
}

fn status_routes() -> Vec<Route> {
    let mut queues = time_range();
    queues.push(text("namespace", "Only this namespace"));
    queues.push(text("task", "Only this task"));
    queues.extend(paging(100, 10_000));
    let mut analytics = vec![choice(
        "interval",
        &["hour", "day", "week", "month"],
        Some("hour"),
        "Bucket size",
    )];
    analytics.extend(status_scope());
    vec![
        Route::get("/api/v1/status", Access::ReadOnly, STATUS)
            .summary("Dashboard summary: throughput, queues, messages, leases, DLQ, workers")
            .query(status_scope())
            .ok(200, "Summary", map_of(any())),
        Route::get("/api/v1/status/queues", Access::ReadOnly, STATUS)
            .summary("Queues with counts and throughput")
            .query(queues)
            .ok(200, "A page of queues", status_queue_page()),
        Route::get("/api/v1/status/queues/{queue}", Access::ReadOnly, STATUS)
            .summary("One queue's configuration and partitions")
            .query(paging(1_000, 10_000))
            .ok(200, "The queue", map_of(any()))
            .errors(&[404]),
        Route::get(
            "/api/v1/status/queues/{queue}/messages",
            Access::ReadOnly,
            STATUS,
        )
        .summary("A queue's messages, newest first; X-Total-Count")
        .query(paging(50, 1_000))
        .ok(200, "Messages", array(map_of(any())))
        .errors(&[404]),
        Route::get("/api/v1/status/analytics", Access::ReadOnly, STATUS)
            .summary("Messages pushed per bucket")
            .query(analytics)
            .ok(200, "Data points", data_points()),
        Route::get("/api/v1/status/buffers", Access::ReadOnly, STATUS)
            .summary("This instance's failover buffer")
            .ok(200, "Buffer state", buffers()),
    ]
}

/// An analytics route: path, summary, and its parameters beside `from`/`to`.
type Series = (&'static str, &'static str, fn() -> Vec<Param>);

fn analytics_routes() -> Vec<Route> {
    let series: [Series; 7] = [
        (
            "/api/v1/analytics/system-metrics",
            "CPU, memory, pool and in-flight series per instance",
            Vec::new,
        ),
        (
            "/api/v1/analytics/worker-metrics",
            "Request and operation series per instance",
            instance_filter,
        ),
        (
            "/api/v1/analytics/queue-lag",
            "Lag and depth series per queue",
            queue_filter,
        ),
        (
            "/api/v1/analytics/queue-ops",
            "Push, pop, ack and DLQ series per queue",
            queue_filter,
        ),
        (
            "/api/v1/analytics/queue-parked-replicas",
            "Parked long-polls per queue and instance",
            Vec::new,
        ),
        (
            "/api/v1/analytics/retention",
            "Deletion series per queue",
            queue_filter,
        ),
        (
            "/api/v1/analytics/postgres-stats",
            "Latest PostgreSQL figures",
            Vec::new,
        ),
    ];
    series
        .into_iter()
        .map(|(path, summary, extra)| {
            let mut params = time_range();
            params.extend(extra());
            Route::get(path, Access::ReadOnly, "analytics")
                .summary(summary)
                .query(params)
                .ok(200, "Series", named("TimeSeries"))
        })
        .collect()
}

fn system_routes() -> Vec<Route> {
    let switch = || object_req(&[("enabled", boolean())], &["enabled"]);
    let pop_switch = || object(&[("popMaintenanceMode", boolean()), ("message", string())]);
    let routes = vec![
        Route::get("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("The maintenance switches and the failover buffer")
            .ok(200, "Switches", maintenance()),
        Route::post("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("Switch push maintenance (pushes go to the failover buffer)")
            .body(switch())
            .ok(200, "Switched", maintenance_switched()),
        Route::get("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("The pop maintenance switch")
            .ok(200, "Switch", pop_switch()),
        Route::post("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("Switch pop maintenance (every pop answers 204 paused)")
            .body(switch())
            .ok(200, "Switched", pop_switch()),
        Route::post("/api/v1/stats/refresh", Access::Admin, SYSTEM)
            .summary("Recompute the dashboard stats now")
            .ok(200, "Refreshed or skipped", stats_refreshed()),
    ];
    routes
}

/// `from` and `to` of a dashboard feed (default: the last hour).
fn time_range() -> Vec<Param> {
    range(
        "Start of the range (default now − 1 h)",
        "End of the range (default now)",
    )
}

fn status_scope() -> Vec<Param> {
    let mut params = time_range();
    params.push(param_name("queue", "Only this queue"));
    params.push(text("namespace", "Only this namespace"));
    params.push(text("task", "Only this task"));
    params
}

fn queue_filter() -> Vec<Param> {
    vec![param_name("queue", "Only this queue")]
}

fn instance_filter() -> Vec<Param> {
    vec![
        text("hostname", "Only this host"),
        text("workerId", "Only this instance"),
    ]
}

fn trace_body() -> Value {
    object_req(
        &[
            ("transactionId", string()),
            ("partitionId", uuid()),
            ("data", any()),
            ("consumerGroup", nullable(name())),
            (
                "eventType",
                json!({"type": ["string", "null"], "maxLength": 64}),
            ),
            ("traceNames", any()),
            ("workerId", nullable(string())),
        ],
        &["transactionId", "partitionId", "data"],
    )
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
