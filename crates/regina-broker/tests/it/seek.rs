//! §3.10 seeks: to the end or to an instant (exclusive), on every partition of a queue (cursors
//! created where the group had none) or on one; leases end, attempts reset, waiters wake.

use regina_testkit::PARKED_POP_TIMEOUT_MS;
use serde_json::{json, Value};

use crate::support::{assert_iso, start, start_event_driven, Api, Reply};

async fn seek(api: &Api, group: &str, queue: &str, body: Value) -> Reply {
    api.post(
        &format!("/api/v1/consumer-groups/{group}/queues/{queue}/seek"),
        &body,
    )
    .await
}

async fn seek_partition(
    api: &Api,
    group: &str,
    queue: &str,
    partition: &str,
    body: &[u8],
) -> Reply {
    api.post_raw(
        &format!("/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek"),
        body,
    )
    .await
}

/// Everything `group` receives now from `queue` (autoAck), sorted.
async fn receive(api: &Api, queue: &str, group: &str) -> Vec<Value> {
    let r = api
        .pop(
            queue,
            &format!("consumerGroup={group}&batch=100&partitions=100&autoAck=true"),
        )
        .await;
    let mut data = r.data();
    data.sort_by_key(|v| v.as_i64());
    data
}

/// Pushes `n` one-message requests to `partition` (distinct `createdAt`s); returns the entries.
async fn push_each(api: &Api, queue: &str, partition: &str, values: &[i64]) -> Vec<Value> {
    let mut entries = Vec::new();
    for v in values {
        entries.push(api.push_one(queue, partition, json!(v)).await);
    }
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_to_end_skips_everything_before_on_every_partition_and_ends_leases() {
    let (_b, api) = start().await;
    api.push_to("q", "p1", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("q", "p2", &[json!(4), json!(5)]).await;
    let held = api
        .pop_partition("q", "p1", "consumerGroup=g")
        .await
        .messages();

    let r = seek(&api, "g", "q", json!({"toEnd": true})).await;
    assert_eq!(
        r.body,
        json!({"success": true, "consumerGroup": "g", "queueName": "q", "seekToEnd": true,
               "targetTimestamp": null, "partitionsUpdated": 2}),
        "{r:?}"
    );
    assert_eq!(
        api.ack_msg(&held[0], "completed").await["code"],
        "lease_expired"
    );
    assert!(receive(&api, "q", "g").await.is_empty());
    api.push_one("q", "p2", json!(6)).await;
    assert_eq!(receive(&api, "q", "g").await, vec![json!(6)]);
    // Other groups are untouched.
    assert_eq!(receive(&api, "q", "other").await.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_to_a_timestamp_replays_what_came_after_it_and_resets_attempts() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 5})).await;
    let pushed = push_each(&api, "q", "Default", &[1, 2, 3]).await;
    assert_eq!(receive(&api, "q", "g").await.len(), 3);
    // A failed attempt on the head before the seek.
    api.push_one("q", "Default", json!(4)).await;
    let failing = api.pop("q", "consumerGroup=g").await.messages()[0].clone();
    api.ack_msg(&failing, "failed").await;

    let first = api
        .pop_partition("q", "Default", "consumerGroup=audit&autoAck=true")
        .await
        .messages()[0]
        .clone();
    assert_eq!(first["id"], pushed[0]["message_id"]);
    let r = seek(&api, "g", "q", json!({"timestamp": first["createdAt"]})).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["seekToEnd"], false);
    assert_eq!(r.body["partitionsUpdated"], 1);
    assert_iso(&r.body["targetTimestamp"], 3);

    let replay = api.pop("q", "consumerGroup=g&batch=10").await.messages();
    let data: Vec<Value> = replay.iter().map(|m| m["data"].clone()).collect();
    assert_eq!(
        data,
        vec![json!(2), json!(3), json!(4)],
        "exclusive of the instant"
    );
    assert!(replay.iter().all(|m| m["retryCount"] == 0), "{replay:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_timestamp_acts_as_to_end() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = seek(&api, "g", "q", json!({"timestamp": "2999-01-01T00:00:00Z"})).await;
    assert_eq!(
        r.body["targetTimestamp"], "2999-01-01T00:00:00.000Z",
        "{r:?}"
    );
    assert!(receive(&api, "q", "g").await.is_empty());
    api.push_one("q", "Default", json!(3)).await;
    assert_eq!(receive(&api, "q", "g").await, vec![json!(3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_covers_partitions_the_group_never_touched() {
    let (_b, api) = start().await;
    let mut instant = Value::Null;
    for (i, partition) in ["p1", "p2", "p3"].iter().enumerate() {
        let before = push_each(&api, "q", partition, &[i as i64 * 10]).await;
        let seen = api
            .pop_partition("q", partition, "consumerGroup=clock&autoAck=true")
            .await;
        assert_eq!(seen.messages()[0]["id"], before[0]["message_id"]);
        instant = seen.messages()[0]["createdAt"].clone();
    }
    // Every message so far is at or before `instant`; later ones follow on every partition.
    for (i, partition) in ["p1", "p2", "p3"].iter().enumerate() {
        push_each(&api, "q", partition, &[i as i64 * 10 + 1]).await;
    }
    let r = seek(&api, "newcomer", "q", json!({"timestamp": instant})).await;
    assert_eq!(r.body["partitionsUpdated"], 3, "{r:?}");
    let detail = api.get("/api/v1/consumer-groups/newcomer").await;
    assert_eq!(
        detail.body["q"]["partitions"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(
        receive(&api, "q", "newcomer").await,
        vec![json!(1), json!(11), json!(21)]
    );
    let listed = api.get("/api/v1/consumer-groups").await;
    let row = listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "newcomer")
        .cloned();
    assert_eq!(
        row.map(|r| r["subscriptionMode"].clone()),
        Some(json!("all"))
    );
    // Partitions created after the seek are read from their start.
    api.push_one("q", "p4", json!(40)).await;
    assert_eq!(receive(&api, "q", "newcomer").await, vec![json!(40)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_partition_seek_reports_where_the_cursor_now_stands() {
    let (_b, api) = start().await;
    let pushed = push_each(&api, "q", "p1", &[1, 2]).await;
    api.push_one("q", "p2", json!(3)).await;

    let r = seek_partition(&api, "g", "q", "p1", b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["partitionName"], "p1");
    assert_eq!(r.body["updated"], true);
    let moved = &r.body["cursorMovedTo"];
    assert_eq!(moved["messageId"], pushed[1]["message_id"]);
    assert_eq!(moved["transactionId"], pushed[1]["transaction_id"]);
    assert_iso(&moved["createdAt"], 6);
    assert_eq!(
        receive(&api, "q", "g").await,
        vec![json!(3)],
        "only p1 moved"
    );

    let back = seek_partition(&api, "g", "q", "p1", br#"{"timestamp":"2000-01-01"}"#).await;
    assert_eq!(back.body["cursorMovedTo"], Value::Null, "{back:?}");
    assert_eq!(receive(&api, "q", "g").await, vec![json!(1), json!(2)]);

    let missing_queue = seek_partition(&api, "g", "nope", "p1", b"{}").await;
    missing_queue.assert_error(404, "queue_not_found");
    let missing_partition = seek_partition(&api, "g", "q", "nope", b"{}").await;
    missing_partition.assert_error(404, "partition_not_found");
    seek(&api, "g", "nope", json!({"toEnd": true}))
        .await
        .assert_error(404, "queue_not_found");
    let neither = seek(&api, "g", "q", json!({})).await;
    neither.assert_error(400, "validation_failed");
    assert_eq!(
        neither.body["error"],
        "Must specify either 'toEnd': true or 'timestamp'"
    );
    seek(&api, "g", "q", json!({"timestamp": "later"}))
        .await
        .assert_error(400, "validation_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seek_back_wakes_parked_pops_of_the_group() {
    let (_b, api) = start_event_driven().await;
    push_each(&api, "q", "Default", &[1]).await;
    assert_eq!(receive(&api, "q", "g").await, vec![json!(1)]);
    let parked = {
        let api = api.with_own_pool();
        tokio::spawn(async move {
            let query =
                format!("consumerGroup=g&wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true");
            api.pop("q", &query).await
        })
    };
    api.wait_for_waiters(1).await;
    let r = seek(&api, "g", "q", json!({"timestamp": "2000-01-01"})).await;
    assert_eq!(r.status, 200, "{r:?}");
    let woken = parked.await.expect("waiter");
    assert_eq!(
        woken.status, 200,
        "woken by the seek, not timed out: {woken:?}"
    );
    assert_eq!(woken.data(), vec![json!(1)]);
}
