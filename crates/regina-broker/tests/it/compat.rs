//! Requests exactly as Queen's published clients send them (docs/compatibility.md): each lenient
//! value is accepted with Queen's meaning, and the strict rules around it still hold.

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{start, start_with, ts, Api, Reply};

/// The pop query of `queen-mq` 0.12–0.15 `pop()` / `consume()`: every key it sends, with
/// `subscriptionMode` as given.
fn queen_pop_query(group: &str, mode: &str) -> String {
    format!("batch=10&wait=false&timeout=30000&consumerGroup={group}&subscriptionMode={mode}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_mode_from_beginning_starts_a_new_group_at_the_oldest_message() {
    let (_b, api) = start().await;
    api.push_to("q", "p", &[json!(1), json!(2)]).await;
    let r = api
        .pop("q", &queen_pop_query("replay", "from_beginning"))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data(), vec![json!(1), json!(2)]);
    // Against it, `new` starts now: the same backlog is not delivered to such a group.
    api.pop("q", &queen_pop_query("live", "new"))
        .await
        .assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_other_subscription_mode_spelling_means_all_even_when_the_default_is_new() {
    let (_b, api) = start_with(|c| {
        c.default_subscription_mode = regina_broker::SubscriptionMode::New;
    })
    .await;
    api.push_to("q", "p", &[json!("old")]).await;
    for (group, mode) in [("g1", "FROM_BEGINNING"), ("g2", "earliest"), ("g3", "all")] {
        let r = api.pop("q", &queen_pop_query(group, mode)).await;
        assert_eq!(r.status, 200, "{mode}: {r:?}");
        assert_eq!(r.data(), vec![json!("old")], "{mode}");
    }
    // No mode at all: the configured default (new) applies.
    api.pop("q", "consumerGroup=g4").await.assert_empty("empty");
    // The parameters around it stay strict.
    api.pop(
        "q",
        "consumerGroup=g5&subscriptionMode=from_beginning&batch=x",
    )
    .await
    .assert_error(400, "invalid_parameter");
    api.pop(
        "q",
        "consumerGroup=g5&subscriptionMode=from_beginning&subscriptionFrom=soon",
    )
    .await
    .assert_error(400, "invalid_parameter");
}

async fn leased(api: &Api) -> String {
    api.configure("q", json!({"leaseTime": 120})).await;
    api.push_to("q", "p", &[json!("slow")]).await;
    let r = api.pop("q", "").await;
    assert_eq!(r.status, 200, "{r:?}");
    r.body["leaseId"].as_str().unwrap().to_owned()
}

async fn extend_without_body(api: &Api, lease: &str) -> Reply {
    let path = format!("/api/v1/lease/{lease}/extend");
    api.send(Method::POST, &path, None, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_extension_without_a_body_answers_the_entry_as_an_object() {
    let (_b, api) = start().await;
    let lease = leased(&api).await;
    // queen-mq 0.12–1.x: POST with no body, reads result.get("newExpiresAt").
    let r = extend_without_body(&api, &lease).await;
    assert_eq!(r.status, 200, "{r:?}");
    let entry = r.body.as_object().expect("an object");
    assert_eq!(entry["leaseId"], lease.as_str());
    assert_eq!(entry["success"], true);
    assert_eq!(entry["index"], 0);
    assert_eq!(entry["newExpiresAt"], entry["expiresAt"]);
    let renewed = ts(&entry["newExpiresAt"]);
    // Any body, even `{}`, gets the array of http-api.md §3.6, and both say the same thing.
    let r = api.extend(&lease, json!({})).await;
    assert_eq!(r.status, 200, "{r:?}");
    let entries = r.body.as_array().expect("an array");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["success"], true);
    assert!(ts(&entries[0]["expiresAt"]) >= renewed, "{r:?}");
    // In-band failures keep the shape of the request.
    let unknown = "00000000-0000-7000-8000-000000000000";
    let r = extend_without_body(&api, unknown).await;
    assert_eq!(
        (&r.body["success"], &r.body["code"]),
        (&json!(false), &json!("lease_not_found")),
        "{r:?}"
    );
    let r = api.extend(unknown, json!({})).await;
    assert_eq!(r.body[0]["code"], "lease_not_found", "{r:?}");
    // A body that is not JSON is still refused.
    api.post_raw(&format!("/api/v1/lease/{lease}/extend"), b"seconds=5")
        .await
        .assert_error(400, "invalid_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_one_partition_empties_it_alone() {
    let (_b, api) = start().await;
    api.push_to("q", "p", &[json!(1), json!(2)]).await;
    api.push_to("q", "r", &[json!(3)]).await;
    // queen-mq admin.clear_queue(name, partition) sends ?partition=.
    let clear = |path: &'static str| {
        let api = &api;
        async move { api.send(Method::DELETE, path, None, &[]).await }
    };
    let r = clear("/api/v1/queues/q/clear?partition=p").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (&r.body["partition"], &r.body["deletedMessages"]),
        (&json!("p"), &json!(2)),
        "{r:?}"
    );
    let unknown = clear("/api/v1/queues/q/clear?partition=nope").await;
    unknown.assert_error(404, "partition_not_found");
    assert_eq!(unknown.body["success"], false);
    let left = api.pop("q", "batch=10&partitions=10&autoAck=true").await;
    assert_eq!(left.data(), vec![json!(3)], "partition r is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queen_bodies_with_nulls_and_defaults_are_accepted() {
    let (_b, api) = start().await;
    // configure: namespace/task null and the client's QUEUE_DEFAULTS in camelCase.
    let r = api
        .post(
            "/api/v1/configure",
            &json!({"queue": "q", "namespace": null, "task": null, "options": {
                "leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0,
                "windowBuffer": 0, "maxSize": 0, "retentionSeconds": 0,
                "completedRetentionSeconds": 0, "encryptionEnabled": false,
                "dlqAfterMaxRetries": true}}),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    api.push_to("q", "p", &[json!(1), json!(2), json!(3)]).await;
    let r = api.pop("q", &queen_pop_query("g", "from_beginning")).await;
    let m = r.messages();
    assert_eq!(m.len(), 3, "{r:?}");
    // ack: error and consumerGroup null.
    let r = api
        .ack(
            json!({"transactionId": m[0]["transactionId"], "partitionId": m[0]["partitionId"],
                    "status": "completed", "error": null, "consumerGroup": null,
                    "leaseId": m[0]["leaseId"]}),
        )
        .await;
    assert_eq!(r.body[0]["success"], true, "{r:?}");
    // ack/batch: body-level consumerGroup null, items with error null.
    let items: Vec<Value> = m[1..]
        .iter()
        .map(|x| {
            json!({"transactionId": x["transactionId"], "partitionId": x["partitionId"],
                   "status": "completed", "error": null, "leaseId": x["leaseId"]})
        })
        .collect();
    let r = api
        .ack_batch(json!({"acknowledgments": items, "consumerGroup": null}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["success"] == true),
        "{r:?}"
    );
    // traces: traceNames null, the client's default eventType.
    let r = api
        .post(
            "/api/v1/traces",
            &json!({"transactionId": m[0]["transactionId"], "partitionId": m[0]["partitionId"],
                    "consumerGroup": "g", "traceNames": null, "eventType": "info",
                    "data": {"step": 1}}),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queen_transactions_with_required_leases_and_unnamed_items_commit() {
    let (_b, api) = start().await;
    api.push_to("in", "p", &[json!("a")]).await;
    let r = api.pop("in", "consumerGroup=g").await;
    let m = &r.messages()[0];
    // queen-mq 0.x: requiredLeases, ack operations without leaseId, push items without
    // transactionId or partition.
    let r = api
        .post(
            "/api/v1/transaction",
            &json!({"operations": [
                {"type": "ack", "transactionId": m["transactionId"],
                 "partitionId": m["partitionId"], "status": "completed", "consumerGroup": "g"},
                {"type": "push", "items": [{"queue": "out", "payload": {"b": 1}}]}],
                "requiredLeases": [m["leaseId"]]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["success"], true);
    let out = api.pop("out", "autoAck=true").await;
    assert_eq!(out.data(), vec![json!({"b": 1})]);
    assert_eq!(out.messages()[0]["partition"], "Default");
}

/// queen-mq 0.7.4 and 0.12.0: `transaction().ack(messages, status)` sends neither
/// `consumerGroup` nor `leaseId`, the lease only in `requiredLeases` (docs/compatibility.md). Such
/// an ack applies to queue mode (http-api.md §4.5): it settles a message popped without a group,
/// and refuses one of a named group's lease, the whole transaction with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queen_0_12_0_transaction_acks_apply_to_queue_mode() {
    let (_b, api) = start().await;
    let commit = |m: &Value, out: &str| {
        json!({"operations": [
            {"type": "ack", "transactionId": m["transactionId"],
             "partitionId": m["partitionId"], "status": "completed"},
            {"type": "push", "items": [{"queue": out, "payload": "next"}]}],
            "requiredLeases": [m["leaseId"]]})
    };
    api.push_to("plain", "p", &[json!("a")]).await;
    let m = api.pop("plain", "batch=1").await.messages()[0].clone();
    let r = api
        .post("/api/v1/transaction", &commit(&m, "plain-out"))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["results"][0]["success"], true, "{r:?}");
    let settled = |m: &Value, group: Option<&str>| {
        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
               "status": "failed", "consumerGroup": group})
    };
    // Settled for queue mode: a lease-less failure is refused as such.
    let r = api.post("/api/v1/ack", &settled(&m, None)).await;
    assert_eq!(r.body[0]["code"], "already_settled", "{r:?}");
    assert_eq!(
        api.pop("plain-out", "autoAck=true").await.data(),
        vec![json!("next")]
    );

    api.push_to("named", "p", &[json!("b")]).await;
    let m = api.pop("named", "consumerGroup=g").await.messages()[0].clone();
    let r = api
        .post("/api/v1/transaction", &commit(&m, "named-out"))
        .await;
    assert_eq!(r.status, 409, "{r:?}");
    assert_eq!(r.body["code"], "not_leased", "{r:?}");
    assert_eq!(r.body["success"], false);
    assert_eq!(api.pop("named-out", "").await.status, 204, "nothing pushed");
    let ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                     "leaseId": m["leaseId"], "status": "completed"});
    let r = api.post("/api/v1/ack", &ack).await;
    assert_eq!(
        r.body[0]["success"], true,
        "the group's lease held on: {r:?}"
    );
    let r = api.post("/api/v1/ack", &settled(&m, Some("g"))).await;
    assert_eq!(r.body[0]["code"], "already_settled", "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_admin_posts_without_a_body_use_their_defaults() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    api.push_to("q", "p", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "batch=1").await;
    let m = &r.messages()[0];
    api.ack_msg(m, "failed").await;
    let base = format!(
        "/api/v1/messages/{}/{}",
        m["partitionId"].as_str().unwrap(),
        m["transactionId"].as_str().unwrap()
    );
    // admin.retry_message(): POST with no body → every group that dead-lettered it.
    let r = api
        .send(Method::POST, &format!("{base}/retry"), None, &[])
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["consumerGroups"], json!(["__QUEUE_MODE__"]));
    // admin.move_message_to_dlq(): POST with no body → queue mode, default error text.
    let second = api.pop("q", "batch=10").await;
    assert_eq!(second.data(), vec![json!(2), json!(1)], "{second:?}");
    // admin.refresh_consumer_stats(): POST with no body.
    let r = api
        .send(Method::POST, "/api/v1/stats/refresh", None, &[])
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    for msg in second.messages() {
        api.ack_msg(&msg, "retry").await;
    }
    let other = &second.messages()[0];
    let path = format!(
        "/api/v1/messages/{}/{}/dlq",
        other["partitionId"].as_str().unwrap(),
        other["transactionId"].as_str().unwrap()
    );
    let r = api.send(Method::POST, &path, None, &[]).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["consumerGroup"], "__QUEUE_MODE__");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_of_newer_clients_are_ignored_and_python_booleans_are_read() {
    let (_b, api) = start().await;
    api.push_to("q", "p", &[json!(1), json!(2)]).await;
    // queen-mq 1.2+ autopilot leaves `batch` out; 1.1+ `conflation`, 2.x `frames` are extras.
    let r = api
        .pop(
            "q",
            "autopilot=true&wait=False&timeout=30000&consumerGroup=g&conflation=true&frames=true",
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data(), vec![json!(1)], "the default batch (1) applies");
    assert!(r.body.get("autopilot").is_none(), "no sizing echo: {r:?}");
    // Python's urlencode spells booleans True/False (admin calls with **params).
    let r = api
        .send(
            Method::DELETE,
            "/api/v1/consumer-groups/g/queues/q?deleteMetadata=False",
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["metadataDeleted"], false, "{r:?}");
}
