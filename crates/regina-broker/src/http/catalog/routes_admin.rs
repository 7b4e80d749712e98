//! Catalogue entries of spec §3.8–3.13: resources, messages and DLQ, consumer groups, traces,
//! status and analytics, system and reserved routes.

use serde_json::{json, Value};

use super::schemas::{
    any, array, boolean, counts, integer, map_of, name, named, nullable, number, object,
    object_req, pagination, string, time, uuid,
};
use super::{choice, flag, int, paging, param_name, range, text, Access, Param, Route};

const RESOURCES: &str = "resources";
const MESSAGES: &str = "messages";
const GROUPS: &str = "consumer-groups";
const TRACES: &str = "traces";
const STATUS: &str = "status";
const SYSTEM: &str = "system";

pub(super) fn routes() -> Vec<Route> {
    let mut all = resources();
    all.extend(messages());
    all.extend(groups());
    all.extend(traces());
    all.extend(status());
    all.extend(system());
    all
}

fn resources() -> Vec<Route> {
    let queue_filters = || {
        let mut params = vec![
            text("namespace", "Only queues of this namespace"),
            text("task", "Only queues of this task"),
            text("search", "Substring of the queue name"),
        ];
        params.extend(paging(1_000, 10_000));
        params
    };
    let label_rows = |key: &'static str, list: &'static str| {
        object(&[(
            list,
            array(object(&[
                (key, string()),
                ("queues", integer()),
                ("partitions", integer()),
                (
                    "messages",
                    object(&[("total", integer()), ("pending", integer())]),
                ),
            ])),
        )])
    };
    vec![
        Route::get("/api/v1/resources/overview", Access::ReadOnly, RESOURCES)
            .summary("Counts, lag and throughput over every queue")
            .ok(200, "Overview", overview()),
        Route::get("/api/v1/resources/queues", Access::ReadOnly, RESOURCES)
            .summary("Queues, by name")
            .query(queue_filters())
            .ok(
                200,
                "A page of queues",
                object(&[("queues", array(queue_row())), ("pagination", pagination())]),
            ),
        Route::get(
            "/api/v1/resources/queues/{queue}",
            Access::ReadOnly,
            RESOURCES,
        )
        .summary("One queue with its options and partitions")
        .query(paging(1_000, 10_000))
        .ok(200, "The queue", queue_detail())
        .errors(&[404]),
        Route::delete("/api/v1/resources/queues/{queue}", Access::Admin, RESOURCES)
            .summary("Delete a queue with everything in it (idempotent)")
            .ok(
                200,
                "Deleted",
                object(&[
                    ("deleted", boolean()),
                    ("queue", string()),
                    ("existed", boolean()),
                ]),
            ),
        Route::delete("/api/v1/queues/{queue}/clear", Access::Admin, RESOURCES)
            .summary("Empty a queue but keep its configuration, partitions and groups")
            .ok(
                200,
                "Cleared",
                object(&[
                    ("success", boolean()),
                    ("cleared", boolean()),
                    ("queue", string()),
                    ("deletedMessages", integer()),
                    ("deletedDlq", integer()),
                ]),
            )
            .errors(&[404]),
        Route::get("/api/v1/resources/namespaces", Access::ReadOnly, RESOURCES)
            .summary("Queues grouped by namespace")
            .ok(200, "Namespaces", label_rows("namespace", "namespaces")),
        Route::get("/api/v1/resources/tasks", Access::ReadOnly, RESOURCES)
            .summary("Queues grouped by task")
            .ok(200, "Tasks", label_rows("task", "tasks")),
        Route::get("/api/v1/resources/partitions", Access::ReadOnly, RESOURCES)
            .summary("Partitions, by queue then name")
            .query({
                let mut params = vec![
                    param_name("queue", "Only partitions of this queue"),
                    text("search", "Substring of the partition name"),
                ];
                params.extend(paging(100, 10_000));
                params
            })
            .ok(
                200,
                "A page of partitions",
                object(&[
                    (
                        "partitions",
                        array(object(&[
                            ("id", uuid()),
                            ("name", string()),
                            ("queue", string()),
                            ("queueId", uuid()),
                            ("createdAt", time()),
                            ("lastActivity", nullable(time())),
                            (
                                "messages",
                                object(&[("total", integer()), ("pending", integer())]),
                            ),
                            ("consumerGroups", integer()),
                            ("leasedBy", integer()),
                        ])),
                    ),
                    ("pagination", pagination()),
                ]),
            ),
    ]
}

fn messages() -> Vec<Route> {
    let path = "/api/v1/messages/{partitionId}/{transactionId}";
    let admin_result = || {
        object(&[
            ("success", boolean()),
            ("partitionId", uuid()),
            ("transactionId", string()),
            ("consumerGroup", string()),
            ("consumerGroups", array(string())),
            ("message", string()),
        ])
    };
    vec![
        Route::get("/api/v1/messages", Access::ReadOnly, MESSAGES)
            .summary("Messages, newest first, without payloads")
            .query({
                let mut params = vec![
                    param_name("queue", "Only this queue"),
                    param_name("partition", "Only this partition"),
                    text("ns", "Only this namespace"),
                    text("namespace", "Only this namespace (when `ns` is absent)"),
                    text("task", "Only this task"),
                    param_name("consumerGroup", "Statuses relative to this group"),
                    choice(
                        "status",
                        &["pending", "processing", "completed", "dead_letter"],
                        None,
                        "Only messages with this status",
                    ),
                ];
                params.extend(range("Oldest createdAt (default now − 1 h)", "Newest createdAt (default now)"));
                params.extend(paging(200, 1_000));
                params
            })
            .ok(200, "A page of messages", object(&[
                ("messages", array(map_of(any()))),
                ("mode", object(&[
                    ("hasQueueMode", boolean()),
                    ("busGroupsCount", integer()),
                    ("type", json!({"type": "string", "enum": ["queue", "bus", "hybrid", "none"]})),
                ])),
                ("pagination", object(&[
                    ("limit", integer()),
                    ("offset", integer()),
                    ("hasMore", boolean()),
                ])),
            ])),
        Route::get(path, Access::ReadOnly, MESSAGES)
            .summary("One message with its payload and per-group state")
            .ok(200, "The message", map_of(any()))
            .errors(&[404]),
        Route::delete(path, Access::ReadWrite, MESSAGES)
            .summary("Delete a message; every group skips it")
            .ok(200, "Deleted", admin_result())
            .errors(&[404, 409]),
        Route::post("/api/v1/messages/{partitionId}/{transactionId}/retry", Access::ReadWrite, MESSAGES)
            .summary("Requeue a dead-lettered message")
            .body(object(&[("consumerGroup", nullable(name()))]))
            .ok(200, "Requeued", admin_result())
            .errors(&[404]),
        Route::post("/api/v1/messages/{partitionId}/{transactionId}/dlq", Access::ReadWrite, MESSAGES)
            .summary("Move a pending message to the DLQ of one group")
            .body(object(&[
                ("consumerGroup", nullable(name())),
                ("error", nullable(string())),
            ]))
            .ok(200, "Moved", admin_result())
            .errors(&[404, 409]),
        Route::get("/api/v1/dlq", Access::ReadOnly, MESSAGES)
            .summary("Dead letters, newest failure first")
            .query({
                let mut params = vec![
                    param_name("queue", "Only this queue"),
                    param_name("consumerGroup", "Only this group"),
                    param_name("partition", "Only this partition"),
                ];
                params.extend(range("Oldest failedAt", "Newest failedAt"));
                params.extend(paging(100, 1_000));
                params
            })
            .ok(200, "A page of dead letters", object(&[
                ("messages", array(map_of(any()))),
                ("total", integer()),
                ("pagination", pagination()),
            ])),
    ]
}

fn groups() -> Vec<Route> {
    let listed = "Rows; X-Total-Count carries the unpaged count";
    vec![
        Route::get("/api/v1/consumer-groups", Access::ReadOnly, GROUPS)
            .summary("Every (group, queue) pair with a cursor or a subscription")
            .query(paging(1_000, 10_000))
            .ok(200, listed, array(map_of(any()))),
        Route::get("/api/v1/consumer-groups/lagging", Access::ReadOnly, GROUPS)
            .summary("Partitions whose group lags more than minLagSeconds")
            .query({
                let mut params = vec![int(
                    "minLagSeconds",
                    0,
                    None,
                    Some(3_600),
                    "Least time lag, seconds",
                )];
                params.extend(paging(1_000, 10_000));
                params
            })
            .ok(200, listed, array(map_of(any()))),
        Route::get("/api/v1/consumer-groups/{group}", Access::ReadOnly, GROUPS)
            .summary("One group's cursors, by queue")
            .ok(200, "Partitions of the group by queue", map_of(any())),
        Route::delete("/api/v1/consumer-groups/{group}", Access::Admin, GROUPS)
            .summary("Remove a group's cursors on every queue")
            .query(vec![flag(
                "deleteMetadata",
                true,
                "Also remove its subscriptions",
            )])
            .ok(200, "Deleted", group_deleted()),
        Route::delete(
            "/api/v1/consumer-groups/{group}/queues/{queue}",
            Access::Admin,
            GROUPS,
        )
        .summary("Remove a group's cursors on one queue")
        .query(vec![flag(
            "deleteMetadata",
            true,
            "Also remove its subscription",
        )])
        .ok(200, "Deleted", group_deleted()),
        Route::post(
            "/api/v1/consumer-groups/{group}/subscription",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Set where the group starts on partitions it has not touched")
        .body(object_req(
            &[("subscriptionTimestamp", string())],
            &["subscriptionTimestamp"],
        ))
        .ok(
            200,
            "Updated",
            object(&[
                ("success", boolean()),
                ("consumerGroup", string()),
                ("newTimestamp", time()),
                ("rowsUpdated", integer()),
            ]),
        ),
        Route::post(
            "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Move the group on every partition of a queue")
        .body(seek_body())
        .ok(200, "Moved", map_of(any()))
        .errors(&[404]),
        Route::post(
            "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Move the group on one partition")
        .body(seek_body())
        .ok(200, "Moved", map_of(any()))
        .errors(&[404]),
    ]
}

fn traces() -> Vec<Route> {
    let trace_list = |list: &'static str| {
        object(&[
            (list, array(map_of(any()))),
            ("total", integer()),
            ("pagination", pagination()),
        ])
    };
    vec![
        Route::post("/api/v1/traces", Access::ReadWrite, TRACES)
            .summary("Record a trace event on a message")
            .body(object_req(
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
            ))
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
        .ok(200, "A page of trace events", trace_list("traces")),
        Route::get("/api/v1/traces/names", Access::ReadOnly, TRACES)
            .summary("Trace names, most recently seen first")
            .query(paging(50, 1_000))
            .ok(200, "A page of trace names", trace_list("trace_names")),
    ]
}

fn status() -> Vec<Route> {
    let scope = || {
        let mut params = range(
            "Start of the range (default now − 1 h)",
            "End of the range (default now)",
        );
        params.push(param_name("queue", "Only this queue"));
        params.push(text("namespace", "Only this namespace"));
        params.push(text("task", "Only this task"));
        params
    };
    let mut routes = vec![
        Route::get("/api/v1/status", Access::ReadOnly, STATUS)
            .summary("Dashboard summary: throughput, queues, messages, leases, DLQ, workers")
            .query(scope())
            .ok(200, "Summary", map_of(any())),
        Route::get("/api/v1/status/queues", Access::ReadOnly, STATUS)
            .summary("Queues with counts and throughput")
            .query({
                let mut params = range("Start of the range", "End of the range");
                params.push(text("namespace", "Only this namespace"));
                params.push(text("task", "Only this task"));
                params.extend(paging(100, 10_000));
                params
            })
            .ok(
                200,
                "A page of queues",
                object(&[
                    ("queues", array(map_of(any()))),
                    ("pagination", pagination()),
                ]),
            ),
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
            .query({
                let mut params = vec![choice(
                    "interval",
                    &["hour", "day", "week", "month"],
                    Some("hour"),
                    "Bucket size",
                )];
                params.extend(scope());
                params
            })
            .ok(
                200,
                "Data points",
                object(&[
                    (
                        "dataPoints",
                        array(object(&[("timestamp", time()), ("messages", integer())])),
                    ),
                    ("interval", string()),
                    ("from", time()),
                    ("to", time()),
                ]),
            ),
        Route::get("/api/v1/status/buffers", Access::ReadOnly, STATUS)
            .summary("This instance's failover buffer")
            .ok(200, "Buffer state", buffers()),
    ];
    let series: [Series; 7] = [
        (
            "/api/v1/analytics/system-metrics",
            "CPU, memory, pool and in-flight series per instance",
            Vec::new,
        ),
        (
            "/api/v1/analytics/worker-metrics",
            "Request and operation series per instance",
            || {
                vec![
                    text("hostname", "Only this host"),
                    text("workerId", "Only this instance"),
                ]
            },
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
    for (path, summary, extra) in series {
        let mut params = range(
            "Start of the range (default now − 1 h)",
            "End of the range (default now)",
        );
        params.extend(extra());
        routes.push(
            Route::get(path, Access::ReadOnly, "analytics")
                .summary(summary)
                .query(params)
                .ok(200, "Series", named("TimeSeries")),
        );
    }
    routes
}

/// An analytics route: path, summary, and its parameters beside `from`/`to`.
type Series = (&'static str, &'static str, fn() -> Vec<Param>);

fn queue_filter() -> Vec<Param> {
    vec![param_name("queue", "Only this queue")]
}

fn system() -> Vec<Route> {
    let switch = || object_req(&[("enabled", boolean())], &["enabled"]);
    let streams = "Reserved for a later version: always 501 not_implemented";
    let mut routes = vec![
        Route::get("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("The maintenance switches and the failover buffer")
            .ok(
                200,
                "Switches",
                object(&[
                    ("maintenanceMode", boolean()),
                    ("popMaintenanceMode", boolean()),
                    ("bufferedMessages", integer()),
                    ("bufferHealthy", boolean()),
                    ("bufferStats", buffers()),
                ]),
            ),
        Route::post("/api/v1/system/maintenance", Access::Admin, SYSTEM)
            .summary("Switch push maintenance (pushes go to the failover buffer)")
            .body(switch())
            .ok(
                200,
                "Switched",
                object(&[
                    ("maintenanceMode", boolean()),
                    ("bufferedMessages", integer()),
                    ("bufferHealthy", boolean()),
                    ("message", string()),
                ]),
            ),
        Route::get("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("The pop maintenance switch")
            .ok(
                200,
                "Switch",
                object(&[("popMaintenanceMode", boolean()), ("message", string())]),
            ),
        Route::post("/api/v1/system/maintenance/pop", Access::Admin, SYSTEM)
            .summary("Switch pop maintenance (every pop answers 204 paused)")
            .body(switch())
            .ok(
                200,
                "Switched",
                object(&[("popMaintenanceMode", boolean()), ("message", string())]),
            ),
        Route::post("/api/v1/stats/refresh", Access::Admin, SYSTEM)
            .summary("Recompute the dashboard stats now")
            .ok(
                200,
                "Refreshed or skipped",
                object(&[
                    ("refreshed", boolean()),
                    ("durationMs", number()),
                    ("skipped", boolean()),
                    ("reason", string()),
                ]),
            ),
    ];
    for path in [
        "/streams/v1/queries",
        "/streams/v1/cycle",
        "/streams/v1/state/get",
    ] {
        routes.push(
            Route::post(path, Access::ReadWrite, "streams")
                .summary(streams)
                .ok_as(
                    501,
                    "Not available in this version",
                    Some(("application/json", named("Error"))),
                ),
        );
    }
    routes
}

fn overview() -> Value {
    let stats = || {
        object(&[
            ("avg", number()),
            ("median", number()),
            ("min", number()),
            ("max", number()),
        ])
    };
    object(&[
        ("queues", integer()),
        ("partitions", integer()),
        ("namespaces", integer()),
        ("tasks", integer()),
        ("messages", counts()),
        ("lag", object(&[("time", stats()), ("offset", stats())])),
        (
            "throughput",
            object(&[
                ("ingestedPerSecond", number()),
                ("processedPerSecond", number()),
            ]),
        ),
        ("timestamp", time()),
        ("statsAge", number()),
    ])
}

fn queue_row() -> Value {
    object(&[
        ("id", uuid()),
        ("name", string()),
        ("namespace", nullable(string())),
        ("task", nullable(string())),
        ("priority", integer()),
        ("createdAt", time()),
        ("partitions", integer()),
        (
            "messages",
            object(&[
                ("total", integer()),
                ("pending", integer()),
                ("processing", integer()),
            ]),
        ),
    ])
}

fn queue_detail() -> Value {
    object(&[
        ("id", uuid()),
        ("name", string()),
        ("namespace", nullable(string())),
        ("task", nullable(string())),
        ("createdAt", time()),
        ("options", named("QueueOptions")),
        ("partitionCount", integer()),
        (
            "partitions",
            array(object(&[
                ("id", uuid()),
                ("name", string()),
                ("createdAt", time()),
                ("lastActivity", nullable(time())),
                ("stats", counts()),
                ("oldestMessage", any()),
                ("newestMessage", any()),
            ])),
        ),
        ("totals", counts()),
    ])
}

fn group_deleted() -> Value {
    object(&[
        ("success", boolean()),
        ("consumerGroup", string()),
        ("queueName", string()),
        ("deletedPartitions", integer()),
        ("metadataDeleted", boolean()),
    ])
}

fn seek_body() -> Value {
    object(&[("toEnd", boolean()), ("timestamp", string())])
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
