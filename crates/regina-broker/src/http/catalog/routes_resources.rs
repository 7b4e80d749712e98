//! Catalogue entries of http-api.md §3.8–3.10: resources, messages and the DLQ, consumer groups.

use serde_json::{json, Value};

use super::schemas::{
    any, array, boolean, counts, integer, map_of, name, named, nullable, number, object,
    pagination, string, time, uuid,
};
use super::{Access, Route};
use crate::http::consumer_groups::{
    DeleteQuery, DetailQuery, GroupPath, GroupQueuePath, LaggingQuery, PartitionSeekBody, SeekBody,
    SubscriptionBody,
};
use crate::http::contract::params::{Page, PartitionPath, QueuePath};
use crate::http::dlq::DlqQuery;
use crate::http::messages::{DeadLetterBody, MessageKey, MessagesQuery, RequeueBody};
use crate::http::resources::{ClearQuery, PartitionsQuery, QueuesQuery};
use crate::http::{consumer_groups, dlq, messages, resources};
use axum::routing::{delete, get, post};

const RESOURCES: &str = "resources";
const MESSAGES: &str = "messages";
const GROUPS: &str = "consumer-groups";
const MESSAGE: &str = "/api/v1/messages/{partitionId}/{transactionId}";
const LISTED: &str = "Rows; X-Total-Count carries the unpaged count";

pub(super) fn routes() -> Vec<Route> {
    let mut all = queue_routes();
    all.extend(listing_routes());
    all.extend(message_routes());
    all.extend(group_routes());
    all.extend(group_changes());
    all
}

fn queue_routes() -> Vec<Route> {
    let queue = "/api/v1/resources/queues/{queue}";
    vec![
        Route::get("/api/v1/resources/overview", Access::ReadOnly, RESOURCES)
            .summary("Counts, lag and throughput over every queue")
            .to(get(resources::overview))
            .ok(200, "Overview", overview()),
        Route::get("/api/v1/resources/queues", Access::ReadOnly, RESOURCES)
            .summary("Queues, by name")
            .to(get(resources::queues))
            .query::<QueuesQuery>()
            .ok(200, "A page of queues", queue_page()),
        Route::get(queue, Access::ReadOnly, RESOURCES)
            .summary("One queue with its options and partitions")
            .to(get(resources::queue))
            .path::<QueuePath>()
            .query::<Page<1_000, 10_000>>()
            .ok(200, "The queue", queue_detail())
            .errors(&[404]),
        Route::delete(queue, Access::Admin, RESOURCES)
            .summary("Delete a queue with everything in it (idempotent)")
            .to(delete(resources::queue_delete))
            .path::<QueuePath>()
            .ok(200, "Deleted", queue_deleted()),
        Route::delete("/api/v1/queues/{queue}/clear", Access::Admin, RESOURCES)
            .summary("Empty a queue but keep its configuration, partitions and groups")
            .to(delete(resources::queue_clear))
            .query::<ClearQuery>()
            .path::<QueuePath>()
            .ok(200, "Cleared", queue_cleared())
            .errors(&[404]),
    ]
}

fn listing_routes() -> Vec<Route> {
    vec![
        Route::get("/api/v1/resources/namespaces", Access::ReadOnly, RESOURCES)
            .summary("Queues grouped by namespace")
            .to(get(resources::namespaces))
            .ok(200, "Namespaces", label_rows("namespace", "namespaces")),
        Route::get("/api/v1/resources/tasks", Access::ReadOnly, RESOURCES)
            .summary("Queues grouped by task")
            .to(get(resources::tasks))
            .ok(200, "Tasks", label_rows("task", "tasks")),
        Route::get("/api/v1/resources/partitions", Access::ReadOnly, RESOURCES)
            .summary("Partitions, by queue then name")
            .to(get(resources::partitions))
            .query::<PartitionsQuery>()
            .ok(200, "A page of partitions", partition_page()),
    ]
}

fn message_routes() -> Vec<Route> {
    vec![
        Route::get("/api/v1/messages", Access::ReadOnly, MESSAGES)
            .summary("Messages, newest first, without payloads")
            .to(get(messages::list))
            .query::<MessagesQuery>()
            .ok(200, "A page of messages", message_page()),
        Route::get(MESSAGE, Access::ReadOnly, MESSAGES)
            .summary("One message with its payload and per-group state")
            .to(get(messages::detail))
            .path::<MessageKey>()
            .ok(200, "The message", map_of(any()))
            .errors(&[404]),
        Route::delete(MESSAGE, Access::ReadWrite, MESSAGES)
            .summary("Delete a message; every group skips it")
            .to(delete(messages::remove))
            .path::<MessageKey>()
            .ok(200, "Deleted", message_changed())
            .errors(&[404, 409]),
        Route::post(
            "/api/v1/messages/{partitionId}/{transactionId}/retry",
            Access::ReadWrite,
            MESSAGES,
        )
        .summary("Requeue a dead-lettered message")
        .to(post(messages::requeue))
        .path::<MessageKey>()
        .body::<RequeueBody>()
        .ok(200, "Requeued", message_changed())
        .errors(&[404]),
        Route::post(
            "/api/v1/messages/{partitionId}/{transactionId}/dlq",
            Access::ReadWrite,
            MESSAGES,
        )
        .summary("Move a pending message to the DLQ of one group")
        .to(post(messages::dead_letter))
        .path::<MessageKey>()
        .body::<DeadLetterBody>()
        .ok(200, "Moved", message_changed())
        .errors(&[404, 409]),
        Route::get("/api/v1/dlq", Access::ReadOnly, MESSAGES)
            .summary("Dead letters, newest failure first")
            .to(get(dlq::list))
            .query::<DlqQuery>()
            .ok(200, "A page of dead letters", dlq_page()),
    ]
}

fn group_routes() -> Vec<Route> {
    vec![
        Route::get("/api/v1/consumer-groups", Access::ReadOnly, GROUPS)
            .summary("Every (group, queue) pair with a cursor or a subscription")
            .to(get(consumer_groups::list))
            .query::<Page<1_000, 10_000>>()
            .ok(200, LISTED, array(map_of(any()))),
        Route::get("/api/v1/consumer-groups/lagging", Access::ReadOnly, GROUPS)
            .summary("Partitions whose group lags more than minLagSeconds")
            .to(get(consumer_groups::lagging))
            .query::<LaggingQuery>()
            .ok(200, LISTED, array(map_of(any()))),
        Route::get("/api/v1/consumer-groups/{group}", Access::ReadOnly, GROUPS)
            .summary("One group's cursors, by queue: a page of partitions per queue")
            .to(get(consumer_groups::detail))
            .path::<GroupPath>()
            .query::<DetailQuery>()
            .ok(
                200,
                "Partitions of the group by queue",
                map_of(group_queue()),
            ),
    ]
}

/// One queue of a group's detail: a page of its partitions and figures over all of them.
fn group_queue() -> Value {
    object(&[
        (
            "partitions",
            array(object(&[
                ("partition", name()),
                ("workerId", nullable(string())),
                ("lastConsumedAt", nullable(time())),
                ("totalConsumed", integer()),
                ("offsetLag", integer()),
                ("timeLagSeconds", integer()),
                ("leaseActive", boolean()),
            ])),
        ),
        ("total", integer()),
        ("totalLag", integer()),
        ("maxTimeLag", integer()),
        ("leased", integer()),
    ])
}

fn group_changes() -> Vec<Route> {
    let group = "/api/v1/consumer-groups/{group}";
    vec![
        Route::delete(group, Access::Admin, GROUPS)
            .summary("Remove a group's cursors on every queue")
            .to(delete(consumer_groups::delete_group))
            .path::<GroupPath>()
            .query::<DeleteQuery>()
            .ok(200, "Deleted", group_deleted()),
        Route::delete(
            "/api/v1/consumer-groups/{group}/queues/{queue}",
            Access::Admin,
            GROUPS,
        )
        .summary("Remove a group's cursors on one queue")
        .to(delete(consumer_groups::delete_on_queue))
        .path::<GroupQueuePath>()
        .query::<DeleteQuery>()
        .ok(200, "Deleted", group_deleted()),
        Route::post(
            "/api/v1/consumer-groups/{group}/subscription",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Set where the group starts on partitions it has not touched")
        .to(post(consumer_groups::subscription))
        .path::<GroupPath>()
        .body::<SubscriptionBody>()
        .ok(200, "Updated", subscription_changed()),
        Route::post(
            "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Move the group on every partition of a queue")
        .to(post(consumer_groups::seek_queue))
        .path::<GroupQueuePath>()
        .body::<SeekBody>()
        .ok(200, "Moved", map_of(any()))
        .errors(&[404]),
        Route::post(
            "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
            Access::ReadWrite,
            GROUPS,
        )
        .summary("Move the group on one partition")
        .to(post(consumer_groups::seek_partition))
        .path::<GroupQueuePath>()
        .path::<PartitionPath>()
        .body::<PartitionSeekBody>()
        .ok(200, "Moved", map_of(any()))
        .errors(&[404]),
    ]
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

/// `{total, pending}` (and `processing` when asked) of a listing row.
fn message_totals(processing: bool) -> Value {
    let mut fields = vec![("total", integer()), ("pending", integer())];
    if processing {
        fields.push(("processing", integer()));
    }
    object(&fields)
}

fn queue_page() -> Value {
    let row = object(&[
        ("id", uuid()),
        ("name", string()),
        ("namespace", nullable(string())),
        ("task", nullable(string())),
        ("priority", integer()),
        ("createdAt", time()),
        ("partitions", integer()),
        ("messages", message_totals(true)),
    ]);
    object(&[("queues", array(row)), ("pagination", pagination())])
}

fn queue_detail() -> Value {
    let partition = object(&[
        ("id", uuid()),
        ("name", string()),
        ("createdAt", time()),
        ("lastActivity", nullable(time())),
        ("stats", counts()),
        ("oldestMessage", nullable(time())),
        ("newestMessage", nullable(time())),
    ]);
    object(&[
        ("id", uuid()),
        ("name", string()),
        ("namespace", nullable(string())),
        ("task", nullable(string())),
        ("createdAt", time()),
        ("options", named("QueueSettings")),
        ("partitionCount", integer()),
        ("partitions", array(partition)),
        ("totals", counts()),
    ])
}

fn queue_deleted() -> Value {
    object(&[
        ("deleted", boolean()),
        ("queue", string()),
        ("existed", boolean()),
    ])
}

fn queue_cleared() -> Value {
    object(&[
        ("success", boolean()),
        ("cleared", boolean()),
        ("queue", string()),
        ("deletedMessages", integer()),
        ("deletedDlq", integer()),
    ])
}

fn label_rows(key: &'static str, list: &'static str) -> Value {
    let row = object(&[
        (key, string()),
        ("queues", integer()),
        ("partitions", integer()),
        ("messages", message_totals(false)),
    ]);
    object(&[(list, array(row))])
}

fn partition_page() -> Value {
    let row = object(&[
        ("id", uuid()),
        ("name", string()),
        ("queue", string()),
        ("queueId", uuid()),
        ("createdAt", time()),
        ("lastActivity", nullable(time())),
        ("messages", message_totals(false)),
        ("consumerGroups", integer()),
        ("leasedBy", integer()),
    ]);
    object(&[("partitions", array(row)), ("pagination", pagination())])
}

fn message_page() -> Value {
    let kinds = json!({"type": "string", "enum": ["queue", "bus", "hybrid", "none"]});
    object(&[
        ("messages", array(map_of(any()))),
        (
            "mode",
            object(&[
                ("hasQueueMode", boolean()),
                ("busGroupsCount", integer()),
                ("type", kinds),
            ]),
        ),
        (
            "pagination",
            object(&[
                ("limit", integer()),
                ("offset", integer()),
                ("hasMore", boolean()),
            ]),
        ),
    ])
}

fn message_changed() -> Value {
    object(&[
        ("success", boolean()),
        ("partitionId", uuid()),
        ("transactionId", string()),
        ("consumerGroup", string()),
        ("consumerGroups", array(string())),
        ("message", string()),
    ])
}

fn dlq_page() -> Value {
    object(&[
        ("messages", array(map_of(any()))),
        ("total", integer()),
        ("pagination", pagination()),
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

fn subscription_changed() -> Value {
    object(&[
        ("success", boolean()),
        ("consumerGroup", string()),
        ("newTimestamp", time()),
        ("rowsUpdated", integer()),
    ])
}
