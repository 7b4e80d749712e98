//! §3.9, §4.7: message delete, requeue from the DLQ and manual moves to the DLQ, over HTTP.

use reqwest::Method;
use serde_json::{json, Value};

use crate::ack::{ack1, assert_fail, assert_ok, item};
use crate::messages::{message_path, push};
use crate::support::{start, Api, Reply};

async fn delete(api: &Api, path: &str) -> Reply {
    api.send(Method::DELETE, path, None, &[]).await
}

/// Asserts an administration failure: status, code, and `success: false` kept (http-api.md §1.3).
#[track_caller]
fn assert_admin_error(r: &Reply, status: u16, code: &str) {
    r.assert_error(status, code);
    assert_eq!(r.body["success"], false, "{r:?}");
}

/// Pops one message of `q` for `group` (queue mode when empty) and fails it; with retryLimit 0
/// that dead-letters it. Returns the delivered message.
async fn dead_letter_head(api: &Api, q: &str, group: &str) -> Value {
    let query = if group.is_empty() {
        String::new()
    } else {
        format!("consumerGroup={group}")
    };
    let r = api.pop(q, &query).await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = r.messages()[0].clone();
    let res = ack1(api, item(&m, "failed", Some(&r.body["leaseId"]), None)).await;
    assert_eq!(res["dlq"], true, "{res}");
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_message_skips_it_for_every_group_and_refuses_a_leased_one() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    let m1 = push(&api, "q", "Default", "m1", json!(1)).await;
    push(&api, "q", "Default", "m2", json!(2)).await;
    push(&api, "q", "Default", "m3", json!(3)).await;
    let pid = &m1["partition_id"];
    let leased = api.pop("q", "").await;
    assert_eq!(leased.data(), vec![json!(1)]);

    assert_admin_error(
        &delete(&api, &message_path(pid, "m1")).await,
        409,
        "message_leased",
    );
    let r = delete(&api, &message_path(pid, "m2")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body,
        json!({"success": true, "partitionId": pid, "transactionId": "m2", "message": "Message deleted"})
    );
    api.get(&message_path(pid, "m2"))
        .await
        .assert_error(404, "message_not_found");
    assert_admin_error(
        &delete(&api, &message_path(pid, "m2")).await,
        404,
        "message_not_found",
    );

    assert_ok(
        &ack1(
            &api,
            item(
                &leased.messages()[0],
                "completed",
                Some(&leased.body["leaseId"]),
                None,
            ),
        )
        .await,
        true,
    );
    assert_eq!(
        api.pop("q", "batch=10&autoAck=true").await.data(),
        vec![json!(3)]
    );
    assert_eq!(
        api.pop("q", "consumerGroup=g&batch=10&autoAck=true")
            .await
            .data(),
        vec![json!(1), json!(3)]
    );

    // A dead-lettered message goes with its dead letters.
    push(&api, "q", "Default", "m4", json!(4)).await;
    dead_letter_head(&api, "q", "").await;
    assert_eq!(api.dlq("queue=q").await.body["total"], 1);
    assert_eq!(delete(&api, &message_path(pid, "m4")).await.status, 200);
    assert_eq!(api.dlq("queue=q").await.body["total"], 0);
    assert_eq!(
        api.pop("q", "consumerGroup=g&batch=10").await.status,
        204,
        "g skips the deleted m4"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_failed_head_drops_its_attempts_and_retry_delay() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 5, "retryDelay": 600000}))
        .await;
    let m1 = push(&api, "q", "Default", "m1", json!(1)).await;
    push(&api, "q", "Default", "m2", json!(2)).await;
    let r = api.pop("q", "").await;
    ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    api.pop("q", "").await.assert_empty("empty");
    assert_eq!(
        delete(&api, &message_path(&m1["partition_id"], "m1"))
            .await
            .status,
        200
    );
    let next = api.pop("q", "").await;
    assert_eq!(
        next.data(),
        vec![json!(2)],
        "no rest left from m1: {next:?}"
    );
    assert_eq!(next.messages()[0]["retryCount"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_redelivers_to_one_group_only_under_the_same_identity() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    let pushed = push(&api, "q", "Default", "m1", json!({"n": 1})).await;
    push(&api, "q", "Default", "m2", json!(2)).await;
    let pid = &pushed["partition_id"];
    let original = dead_letter_head(&api, "q", "g").await;
    dead_letter_head(&api, "q", "h").await;
    assert_eq!(api.dlq("").await.body["total"], 2);

    let path = format!("{}/retry", message_path(pid, "m1"));
    let r = api.post(&path, &json!({"consumerGroup": "g"})).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body,
        json!({"success": true, "partitionId": pid, "transactionId": "m1",
               "consumerGroups": ["g"], "message": "Message requeued"})
    );
    let d = api.dlq("").await;
    assert_eq!(
        (&d.body["total"], &d.body["messages"][0]["consumerGroup"]),
        (&json!(1), &json!("h"))
    );

    // h never sees the requeued delivery; g gets it at the tail, as the original.
    assert_eq!(
        api.pop("q", "consumerGroup=h&batch=10&autoAck=true")
            .await
            .data(),
        vec![json!(2)]
    );
    let g = api.pop("q", "consumerGroup=g&batch=10").await;
    assert_eq!(g.data(), vec![json!(2), json!({"n": 1})], "{g:?}");
    let again = &g.messages()[1];
    for key in ["id", "transactionId", "partitionId", "createdAt", "traceId"] {
        assert_eq!(again[key], original[key], "{key}");
    }
    assert_eq!(again["retryCount"], 0);
    let acks = json!({"acknowledgments": [
        item(&g.messages()[0], "completed", Some(&g.body["leaseId"]), None),
        item(&json!({"transactionId": "m1", "partitionId": pid}), "completed", Some(&g.body["leaseId"]), None)]});
    let res = api.ack_batch(acks).await;
    assert_eq!(
        res.body[1]["success"], true,
        "acked by partitionId and transactionId: {res:?}"
    );
    assert_eq!(res.body[1]["leaseReleased"], true);
    api.pop("q", "consumerGroup=g").await.assert_empty("empty");
    let detail = api.get(&message_path(pid, "m1")).await;
    assert_eq!(
        detail.body["consumerGroups"][0]["status"], "completed",
        "{detail:?}"
    );

    // Without a group: every group with a dead letter; then nothing is left to requeue.
    let all = api.post(&path, &json!({})).await;
    assert_eq!(all.body["consumerGroups"], json!(["h"]));
    assert_admin_error(&api.post(&path, &json!({})).await, 404, "not_in_dlq");
    let unknown = format!("{}/retry", message_path(pid, "nope"));
    assert_admin_error(
        &api.post(&unknown, &json!({})).await,
        404,
        "message_not_found",
    );
    assert_admin_error(
        &api.post(&path, &json!({"consumerGroup": 7})).await,
        400,
        "validation_failed",
    );
    assert_admin_error(&api.post_raw(&path, b"{").await, 400, "invalid_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_wakes_a_parked_pop_of_the_group() {
    let (_b, api) = crate::support::start_event_driven().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    let pushed = push(&api, "q", "Default", "m1", json!("again")).await;
    dead_letter_head(&api, "q", "").await;
    let waiter = {
        let api = api.clone();
        let query = format!(
            "wait=true&timeout={}",
            regina_testkit::PARKED_POP_TIMEOUT_MS
        );
        tokio::spawn(async move { api.pop("q", &query).await })
    };
    api.wait_for_waiters(1).await;
    let path = format!("{}/retry", message_path(&pushed["partition_id"], "m1"));
    assert_eq!(api.post(&path, &json!({})).await.status, 200);
    let got = waiter.await.expect("waiter");
    assert_eq!(
        got.status, 200,
        "woken by the requeue, not timed out: {got:?}"
    );
    assert_eq!(got.data(), vec![json!("again")], "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_dlq_settles_a_message_for_one_group_only() {
    let (_b, api) = start().await;
    api.configure("q", json!({"deadLetterQueue": false})).await;
    let m1 = push(&api, "q", "Default", "m1", json!(1)).await;
    push(&api, "q", "Default", "m2", json!(2)).await;
    push(&api, "q", "Default", "m3", json!(3)).await;
    let pid = &m1["partition_id"];
    let dlq = |txn: &str| format!("{}/dlq", message_path(pid, txn));

    // Queue mode (the default group) skips m2 when it gets there; the entry is written even
    // though the queue discards dead letters.
    let r = api.post_raw(&dlq("m2"), b"").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body,
        json!({"success": true, "partitionId": pid, "transactionId": "m2",
               "consumerGroup": "__QUEUE_MODE__", "message": "Message moved to DLQ"})
    );
    let entry = &api.dlq("").await.body["messages"][0];
    assert_eq!(
        (
            &entry["transactionId"],
            &entry["errorMessage"],
            &entry["retryCount"]
        ),
        (&json!("m2"), &json!("Moved to DLQ manually"), &json!(0))
    );
    assert_admin_error(
        &api.post(&dlq("m2"), &json!({})).await,
        409,
        "already_settled",
    );

    // h moves its head m1 away with its own error text.
    let r = api
        .post(
            &dlq("m1"),
            &json!({"consumerGroup": "h", "error": "bad input"}),
        )
        .await;
    assert_eq!(r.body["consumerGroup"], "h");
    assert_eq!(
        api.dlq("consumerGroup=h").await.body["messages"][0]["errorMessage"],
        "bad input"
    );

    // g holds m3 in a lease: refused for g while it lasts.
    let g = api.pop("q", "consumerGroup=g&batch=3").await;
    assert_eq!(
        g.data(),
        vec![json!(1), json!(2), json!(3)],
        "g is unaffected"
    );
    assert_admin_error(
        &api.post(&dlq("m3"), &json!({"consumerGroup": "g"})).await,
        409,
        "message_leased",
    );
    api.ack_all(&g).await;
    assert_admin_error(
        &api.post(&dlq("m3"), &json!({"consumerGroup": "g"})).await,
        409,
        "already_settled",
    );

    assert_eq!(
        api.pop("q", "batch=10&autoAck=true").await.data(),
        vec![json!(1), json!(3)]
    );
    assert_eq!(
        api.pop("q", "consumerGroup=h&batch=10&autoAck=true")
            .await
            .data(),
        vec![json!(2), json!(3)]
    );
    let detail = api.get(&message_path(pid, "m2")).await;
    assert_eq!(detail.body["status"], "dead_letter");
    assert_admin_error(
        &api.post(&dlq("nope"), &json!({})).await,
        404,
        "message_not_found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manually_dead_lettered_head_takes_its_attempts_along() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 5, "retryDelay": 600000}))
        .await;
    let m1 = push(&api, "q", "Default", "m1", json!(1)).await;
    push(&api, "q", "Default", "m2", json!(2)).await;
    let r = api.pop("q", "").await;
    ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    let path = format!("{}/dlq", message_path(&m1["partition_id"], "m1"));
    assert_eq!(api.post(&path, &json!({})).await.status, 200);
    assert_eq!(api.dlq("").await.body["messages"][0]["retryCount"], 1);
    let next = api.pop("q", "").await;
    assert_eq!(
        (next.data(), next.messages()[0]["retryCount"].clone()),
        (vec![json!(2)], json!(0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_of_a_deleted_message_under_an_ended_lease_is_lease_expired() {
    let (_b, api) = start().await;
    let m = push(&api, "q", "Default", "m1", json!(1)).await;
    let r = api.pop("q", "").await;
    let lease = r.body["leaseId"].clone();
    assert_fail(
        &ack1(
            &api,
            json!({"transactionId": "other", "partitionId": m["partition_id"], "leaseId": lease}),
        )
        .await,
        "message_not_found",
    );
    assert_eq!(
        api.send(Method::DELETE, "/api/v1/queues/q/clear", None, &[])
            .await
            .status,
        200
    );
    assert_fail(
        &ack1(
            &api,
            json!({"transactionId": "m1", "partitionId": m["partition_id"], "leaseId": lease}),
        )
        .await,
        "lease_expired",
    );
}
