//! §3.9, §4.16: the message listing and detail, with statuses derived per consumer group.

use serde_json::{json, Value};

use crate::ack::{ack1, item};
use crate::support::{assert_iso, enc, start, Api, Reply};

pub async fn list(api: &Api, query: &str) -> Reply {
    let r = api.get(&format!("/api/v1/messages?{query}")).await;
    assert_eq!(r.status, 200, "{query}: {r:?}");
    r
}

/// `transactionId`s of a listing, in order.
pub fn txns(r: &Reply) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            m["transactionId"]
                .as_str()
                .expect("transactionId")
                .to_owned()
        })
        .collect()
}

/// Pushes one message per request (so each has its own createdAt); returns the push entry.
pub async fn push(api: &Api, queue: &str, partition: &str, txn: &str, payload: Value) -> Value {
    let r = api
        .push(
            json!([{"queue": queue, "partition": partition, "transactionId": txn,
                      "payload": payload, "traceId": format!("trace-{txn}")}]),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    r.body[0].clone()
}

pub fn message_path(partition_id: &Value, txn: &str) -> String {
    format!(
        "/api/v1/messages/{}/{}",
        partition_id.as_str().expect("partition id"),
        enc(txn)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_is_newest_first_without_payloads_and_reports_the_mode() {
    let (_b, api) = start().await;
    let first = push(&api, "q1", "a", "m1", json!({"secret": 1})).await;
    push(&api, "q1", "b", "m2", json!(2)).await;
    push(&api, "q2", "Default", "m3", json!(3)).await;

    let r = list(&api, "").await;
    assert_eq!(txns(&r), ["m3", "m2", "m1"]);
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 200, "offset": 0, "hasMore": false})
    );
    assert_eq!(
        r.body["mode"],
        json!({"hasQueueMode": false, "busGroupsCount": 0, "type": "none"})
    );
    let m = &r.body["messages"][2];
    assert_eq!(m["id"], first["message_id"]);
    assert_eq!(m["partitionId"], first["partition_id"]);
    assert_eq!(
        (
            &m["queuePath"],
            &m["queue"],
            &m["partition"],
            &m["namespace"],
            &m["task"]
        ),
        (
            &json!("q1/a"),
            &json!("q1"),
            &json!("a"),
            &json!("q1"),
            &json!("")
        )
    );
    assert_eq!(
        (&m["status"], &m["queueStatus"]),
        (&json!("pending"), &Value::Null)
    );
    assert_eq!(m["busStatus"], json!({"consumedBy": 0, "totalGroups": 0}));
    assert_eq!(
        (&m["traceId"], &m["producerSub"]),
        (&json!("trace-m1"), &Value::Null)
    );
    assert_eq!(
        (&m["queuePriority"], &m["leaseExpiresAt"]),
        (&json!(0), &Value::Null)
    );
    assert_iso(&m["createdAt"], 6);
    assert!(
        m.get("payload").is_none() && m.get("data").is_none(),
        "no payloads in lists: {m}"
    );

    // Queue mode completes m1 and holds m2; a named group passes m1.
    api.pop_partition("q1", "a", "autoAck=true").await;
    let held = api.pop_partition("q1", "b", "").await;
    api.pop_partition("q1", "a", "consumerGroup=g&autoAck=true")
        .await;
    let r = list(&api, "queue=q1").await;
    assert_eq!(txns(&r), ["m2", "m1"]);
    assert_eq!(
        r.body["mode"],
        json!({"hasQueueMode": true, "busGroupsCount": 1, "type": "hybrid"})
    );
    let (m2, m1) = (&r.body["messages"][0], &r.body["messages"][1]);
    assert_eq!(
        (&m1["status"], &m1["queueStatus"]),
        (&json!("completed"), &json!("completed"))
    );
    assert_eq!(m1["busStatus"], json!({"consumedBy": 1, "totalGroups": 1}));
    assert_eq!(
        (&m2["status"], &m2["queueStatus"]),
        (&json!("processing"), &json!("processing"))
    );
    assert_eq!(m2["busStatus"], json!({"consumedBy": 0, "totalGroups": 1}));
    assert_iso(&m2["leaseExpiresAt"], 3);
    assert_eq!(held.status, 200);
    assert_eq!(list(&api, "queue=q2").await.body["mode"]["type"], "none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_filters_by_place_time_group_and_status_and_pages_with_has_more() {
    let (_b, api) = start().await;
    api.configure("shop.orders", json!({"retryLimit": 0})).await;
    push(&api, "shop.orders", "a", "o1", json!(1)).await;
    push(&api, "shop.orders", "b", "o2", json!(2)).await;
    push(&api, "shop.orders", "a", "o3", json!(3)).await;
    push(&api, "ops.jobs", "a", "j1", json!(4)).await;

    for (query, expected) in [
        ("queue=shop.orders", vec!["o3", "o2", "o1"]),
        ("queue=shop.orders&partition=a", vec!["o3", "o1"]),
        ("partition=a", vec!["j1", "o3", "o1"]),
        ("ns=ops", vec!["j1"]),
        ("namespace=shop&task=orders", vec!["o3", "o2", "o1"]),
        ("task=jobs", vec!["j1"]),
        ("queue=nope", vec![]),
        ("queue=shop.orders&partition=nope", vec![]),
        ("to=2000-01-01", vec![]),
        ("from=2999-01-01&to=2999-01-02", vec![]),
        ("from=2000-01-01&limit=2", vec!["j1", "o3"]),
    ] {
        assert_eq!(txns(&list(&api, query).await), expected, "{query}");
    }

    // g dead-letters o1 and completes o2 (autoAck); queue mode holds o1 in a lease.
    let r = api
        .pop_partition("shop.orders", "a", "consumerGroup=g")
        .await;
    ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    api.pop_partition("shop.orders", "b", "consumerGroup=g&autoAck=true")
        .await;
    api.pop_partition("shop.orders", "a", "").await;
    for (query, expected) in [
        ("status=dead_letter", vec!["o1"]),
        ("consumerGroup=g&status=dead_letter", vec!["o1"]),
        ("consumerGroup=g&status=completed", vec!["o2"]),
        ("consumerGroup=g&status=pending", vec!["j1", "o3"]),
        ("consumerGroup=__QUEUE_MODE__&status=processing", vec!["o1"]),
        ("status=pending&queue=shop.orders", vec!["o3", "o2"]),
    ] {
        assert_eq!(txns(&list(&api, query).await), expected, "{query}");
    }
    let r = list(&api, "consumerGroup=g").await;
    assert_eq!(r.body["messages"][3]["status"], "dead_letter");

    let page = list(&api, "limit=2&offset=1").await;
    assert_eq!(txns(&page), ["o3", "o2"]);
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 2, "offset": 1, "hasMore": true})
    );
    let last = list(&api, "limit=2&offset=2").await;
    assert_eq!(txns(&last), ["o2", "o1"]);
    assert_eq!(last.body["pagination"]["hasMore"], false);
    let filtered_page = list(&api, "status=pending&limit=1&offset=1").await;
    assert_eq!(txns(&filtered_page), ["o3"]);
    assert_eq!(filtered_page.body["pagination"]["hasMore"], true);

    for bad in [
        "limit=1001",
        "limit=0",
        "offset=-1",
        "status=done",
        "from=soon",
        "consumerGroup=%01",
    ] {
        api.get(&format!("/api/v1/messages?{bad}"))
            .await
            .assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_detail_shows_the_payload_and_every_group() {
    let (_b, api) = start().await;
    api.configure(
        "q",
        json!({"retryLimit": 0, "retryDelay": 5, "ttl": 60, "priority": 2}),
    )
    .await;
    let pushed = push(&api, "q", "Default", "t/1 é", json!({"order": 7})).await;
    // Queue mode dead-letters it; g holds it in a lease; h completes it.
    let r = api.pop("q", "").await;
    ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    api.pop("q", "consumerGroup=g").await;
    api.pop("q", "consumerGroup=h&autoAck=true").await;

    let path = message_path(&pushed["partition_id"], "t/1 é");
    let d = api.get(&path).await;
    assert_eq!(d.status, 200, "{d:?}");
    let b = &d.body;
    assert_eq!(
        (&b["id"], &b["transactionId"], &b["partitionId"]),
        (
            &pushed["message_id"],
            &json!("t/1 é"),
            &pushed["partition_id"]
        )
    );
    assert_eq!(
        (&b["queuePath"], &b["status"]),
        (&json!("q/Default"), &json!("dead_letter"))
    );
    assert_eq!(
        (&b["payload"], &b["isEncrypted"]),
        (&json!({"order": 7}), &json!(false))
    );
    assert_eq!(
        (&b["traceId"], &b["errorMessage"]),
        (&json!("trace-t/1 é"), &json!("Retries exhausted"))
    );
    assert_eq!(b["retryCount"], 0);
    assert_iso(&b["createdAt"], 6);
    assert_eq!(
        b["queueConfig"],
        json!({"leaseTime": 300, "retryLimit": 0, "retryDelay": 5, "ttl": 60, "priority": 2})
    );
    assert_eq!(
        b["mode"],
        json!({"hasQueueMode": true, "busGroupsCount": 2, "type": "hybrid", "consumedByGroups": 1})
    );
    let groups = b["consumerGroups"].as_array().expect("groups");
    assert_eq!(groups.len(), 3, "{groups:?}");
    let qm = &groups[0];
    assert_eq!(
        (&qm["name"], &qm["status"], &qm["consumed"]),
        (
            &json!("__QUEUE_MODE__"),
            &json!("dead_letter"),
            &json!(true)
        )
    );
    assert_eq!(qm["dlq"]["errorMessage"], "Retries exhausted");
    assert_iso(&qm["dlq"]["failedAt"], 3);
    let g = &groups[1];
    assert_eq!(
        (&g["name"], &g["status"], &g["consumed"], &g["dlq"]),
        (
            &json!("g"),
            &json!("processing"),
            &json!(false),
            &Value::Null
        )
    );
    assert_iso(&g["leaseExpiresAt"], 3);
    let h = &groups[2];
    assert_eq!(
        (
            &h["name"],
            &h["status"],
            &h["consumed"],
            &h["leaseExpiresAt"]
        ),
        (&json!("h"), &json!("completed"), &json!(true), &Value::Null)
    );

    let unknown = api
        .get(&message_path(&pushed["partition_id"], "nope"))
        .await;
    unknown.assert_error(404, "message_not_found");
    assert_eq!(
        unknown.body,
        json!({"error": "Message not found", "code": "message_not_found"})
    );
    let other = json!(uuid::Uuid::now_v7().to_string());
    api.get(&message_path(&other, "t/1 é"))
        .await
        .assert_error(404, "message_not_found");
    api.get("/api/v1/messages/not-a-uuid/t")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detail_counts_attempts_charged_to_a_head() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 3})).await;
    let pushed = push(&api, "q", "Default", "t", json!(1)).await;
    let r = api.pop("q", "").await;
    let mut failed = item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None);
    failed["error"] = json!("boom");
    ack1(&api, failed).await;
    let d = api.get(&message_path(&pushed["partition_id"], "t")).await;
    assert_eq!(
        (
            &d.body["status"],
            &d.body["retryCount"],
            &d.body["errorMessage"]
        ),
        (&json!("pending"), &json!(1), &json!("boom"))
    );
    assert_eq!(d.body["consumerGroups"][0]["retryCount"], 1);
}
