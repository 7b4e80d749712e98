//! §1.6: queue scopes on every kind of route: requests naming a forbidden queue, per-item acks
//! and lease extensions, transactions, namespace/task pops, listings and the administration
//! routes.

use serde_json::{json, Value};

use crate::jwt::{start_auth, token, As};

/// A broker with two namespaces' worth of queues, a scoped admin and an unscoped one.
async fn scoped_setup() -> (regina_testkit::TestBroker, As, As) {
    let (b, api) = start_auth(|_| {}).await;
    let admin = As {
        api: api.clone(),
        token: token(Some("root"), "admin", None),
    };
    let scoped = As {
        api,
        token: token(Some("team-a"), "admin", Some(json!(["team-a.*", "shared"]))),
    };
    for queue in ["team-a.orders", "team-b.orders", "shared"] {
        let r = admin
            .post(
                "/api/v1/configure",
                json!({"queue": queue, "namespace": "ns"}),
            )
            .await;
        assert_eq!(r.status, 201, "{r:?}");
    }
    (b, admin, scoped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_naming_a_forbidden_queue_are_refused_whole() {
    let (_b, admin, scoped) = scoped_setup().await;
    let r = scoped
        .push(json!([{"queue": "team-a.orders", "payload": 1},
                               {"queue": "team-b.orders", "payload": 2}]))
        .await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["error"], "Insufficient permissions");
    assert_eq!(
        scoped
            .push(json!([{"queue": "shared", "payload": 1}]))
            .await
            .status,
        201
    );
    assert_eq!(
        admin.pop("team-a.orders", "").await.status,
        204,
        "nothing of the refused push stored"
    );
    scoped
        .post("/api/v1/configure", json!({"queue": "team-b.new"}))
        .await
        .assert_error(403, "forbidden");
    assert_eq!(
        scoped
            .post("/api/v1/configure", json!({"queue": "team-a.new"}))
            .await
            .status,
        201
    );
    scoped
        .pop("team-b.orders", "")
        .await
        .assert_error(403, "forbidden");
    scoped
        .get("/api/v1/pop/queue/team-b.orders/partition/Default")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(scoped.pop("shared", "").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn administration_naming_a_forbidden_queue_is_refused() {
    let (_b, admin, scoped) = scoped_setup().await;
    let path = "/api/v1/resources/queues/team-b.orders";
    scoped.get(path).await.assert_error(403, "forbidden");
    scoped.delete(path).await.assert_error(403, "forbidden");
    let r = scoped.delete("/api/v1/queues/team-b.orders/clear").await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["success"], false);
    scoped
        .delete("/api/v1/consumer-groups/g/queues/team-b.orders")
        .await
        .assert_error(403, "forbidden");
    scoped
        .post(
            "/api/v1/consumer-groups/g/queues/team-b.orders/seek",
            json!({"toEnd": true}),
        )
        .await
        .assert_error(403, "forbidden");
    scoped
        .post(
            "/api/v1/consumer-groups/g/queues/team-b.orders/partitions/Default/seek",
            json!({}),
        )
        .await
        .assert_error(403, "forbidden");
    // Changes that reach every queue of a group are not for scoped tokens.
    scoped
        .delete("/api/v1/consumer-groups/g")
        .await
        .assert_error(403, "forbidden");
    scoped
        .post(
            "/api/v1/consumer-groups/g/subscription",
            json!({"subscriptionTimestamp": "2026-01-01"}),
        )
        .await
        .assert_error(403, "forbidden");
    assert_eq!(
        scoped
            .get("/api/v1/resources/queues/team-a.orders")
            .await
            .status,
        200
    );
    assert_eq!(
        scoped
            .delete("/api/v1/consumer-groups/g/queues/team-a.orders")
            .await
            .status,
        200
    );
    // The same routes with an unscoped token.
    assert_eq!(
        admin
            .get("/api/v1/resources/queues/team-b.orders")
            .await
            .status,
        200
    );
    assert_eq!(admin.delete("/api/v1/consumer-groups/g").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_of_forbidden_queues_are_refused_by_partition() {
    let (_b, admin, scoped) = scoped_setup().await;
    let entry = admin
        .push(json!([{"queue": "team-b.orders", "payload": 1, "transactionId": "b-1"}]))
        .await;
    let partition = entry.body[0]["partition_id"].as_str().unwrap().to_owned();
    let base = format!("/api/v1/messages/{partition}/b-1");
    scoped.get(&base).await.assert_error(403, "forbidden");
    let r = scoped.delete(&base).await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["success"], false);
    scoped
        .post(&format!("{base}/retry"), json!({}))
        .await
        .assert_error(403, "forbidden");
    scoped
        .post(&format!("{base}/dlq"), json!({}))
        .await
        .assert_error(403, "forbidden");
    assert_eq!(admin.get(&base).await.status, 200, "still there");
    // An unknown message is still a 404 for a scoped caller.
    let unknown = format!("/api/v1/messages/{}/nope", uuid::Uuid::now_v7());
    scoped
        .get(&unknown)
        .await
        .assert_error(404, "message_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_and_lease_extensions_report_forbidden_per_item() {
    let (_b, admin, scoped) = scoped_setup().await;
    admin.push(json!([{"queue": "team-a.orders", "payload": "a"}, {"queue": "team-b.orders", "payload": "b"}])).await;
    let a = admin.pop("team-a.orders", "").await.messages().remove(0);
    let b = admin.pop("team-b.orders", "").await.messages().remove(0);
    let ack = |m: &Value| {
        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                 "leaseId": m["leaseId"], "status": "completed"})
    };
    let r = scoped
        .post(
            "/api/v1/ack/batch",
            json!({"acknowledgments": [ack(&b), ack(&a)]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body[0]["index"], 0);
    assert_eq!(r.body[0]["success"], false);
    assert_eq!(r.body[0]["code"], "forbidden");
    assert_eq!(r.body[0]["error"], "Insufficient permissions");
    assert_eq!(r.body[1]["index"], 1);
    assert_eq!(r.body[1]["success"], true, "{r:?}");
    let r = scoped.post("/api/v1/ack", ack(&b)).await;
    assert_eq!(r.body[0]["code"], "forbidden", "{r:?}");
    let lease = |m: &Value| format!("/api/v1/lease/{}/extend", m["leaseId"].as_str().unwrap());
    let r = scoped.post(&lease(&b), json!({"seconds": 60})).await;
    assert_eq!(
        (r.status, r.body[0]["code"].clone()),
        (200, json!("forbidden")),
        "{r:?}"
    );
    // The refused ack changed nothing: the unscoped caller still holds and settles the lease.
    let r = admin.post(&lease(&b), json!({"seconds": 60})).await;
    assert_eq!(r.body[0]["success"], true, "{r:?}");
    let r = admin.post("/api/v1/ack", ack(&b)).await;
    assert_eq!(r.body[0]["success"], true, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_touching_a_forbidden_queue_fail_whole() {
    let (_b, admin, scoped) = scoped_setup().await;
    admin
        .push(json!([{"queue": "team-b.orders", "payload": "b"}]))
        .await;
    let b = admin.pop("team-b.orders", "").await.messages().remove(0);
    let r = scoped
        .post(
            "/api/v1/transaction",
            json!({"operations": [
        {"type": "push", "items": [{"queue": "team-a.orders", "payload": 1}]},
        {"type": "push", "items": [{"queue": "team-b.orders", "payload": 2}]}]}),
        )
        .await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["success"], false);
    let r = scoped
        .post(
            "/api/v1/transaction",
            json!({"operations": [
        {"type": "push", "items": [{"queue": "team-a.orders", "payload": 1}]},
        {"type": "ack", "transactionId": b["transactionId"], "partitionId": b["partitionId"],
         "leaseId": b["leaseId"]}]}),
        )
        .await;
    r.assert_error(403, "forbidden");
    assert_eq!(
        admin.pop("team-a.orders", "").await.status,
        204,
        "nothing applied"
    );
    let r = scoped
        .post(
            "/api/v1/transaction",
            json!({"operations": [
        {"type": "push", "items": [{"queue": "team-a.orders", "payload": 1}]}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_pops_consider_only_allowed_queues() {
    let (b, admin, scoped) = scoped_setup().await;
    admin
        .push(json!([{"queue": "team-b.orders", "payload": "b"}]))
        .await;
    // A namespace pop subscribes its group to the queues it covers before its walk: only those
    // the token allows.
    let r = scoped
        .get("/api/v1/pop?namespace=ns&consumerGroup=gs")
        .await;
    assert_eq!(r.status, 204, "{r:?}");
    let subscribed = b
        .db()
        .await
        .query_one(
            "select string_agg(q.name, ',' order by q.name) from regina.subscriptions s \
             join regina.queues q on q.id = s.queue_id where s.consumer_group = 'gs'",
            &[],
        )
        .await
        .expect("subscriptions");
    assert_eq!(
        subscribed.get::<_, Option<String>>(0).as_deref(),
        Some("shared,team-a.orders")
    );
    let r = scoped.get("/api/v1/pop?namespace=ns").await;
    assert_eq!(
        r.status, 204,
        "team-b's message is not for this token: {r:?}"
    );
    admin
        .push(json!([{"queue": "team-a.orders", "payload": "a"}]))
        .await;
    let r = scoped.get("/api/v1/pop?namespace=ns&batch=10").await;
    assert_eq!(r.data(), vec![json!("a")], "{r:?}");
    let r = admin.get("/api/v1/pop?namespace=ns").await;
    assert_eq!(
        r.data(),
        vec![json!("b")],
        "the unscoped token sees every queue"
    );
}

fn names(list: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[key].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_leave_out_forbidden_queues() {
    let (_b, admin, scoped) = scoped_setup().await;
    admin.push(json!([{"queue": "team-a.orders", "payload": 1}, {"queue": "team-b.orders", "payload": 2},
                      {"queue": "shared", "payload": 3}])).await;
    for queue in ["team-a.orders", "team-b.orders"] {
        let m = admin
            .pop(queue, "consumerGroup=g")
            .await
            .messages()
            .remove(0);
        admin
            .post(
                "/api/v1/ack",
                json!({"transactionId": m["transactionId"],
            "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "dlq"}),
            )
            .await;
    }
    let allowed = vec!["shared".to_owned(), "team-a.orders".to_owned()];
    let r = scoped.get("/api/v1/resources/queues").await;
    assert_eq!(names(&r.body["queues"], "name"), allowed);
    assert_eq!(r.body["pagination"]["total"], 2);
    let r = scoped.get("/api/v1/resources/partitions").await;
    assert_eq!(names(&r.body["partitions"], "queue"), allowed);
    let r = scoped.get("/api/v1/resources/namespaces").await;
    assert_eq!(r.body["namespaces"][0]["queues"], 2, "{r:?}");
    assert_eq!(
        admin.get("/api/v1/resources/namespaces").await.body["namespaces"][0]["queues"],
        3
    );
    let r = scoped.get("/api/v1/messages").await;
    assert_eq!(names(&r.body["messages"], "queue"), allowed);
    let r = scoped.get("/api/v1/dlq").await;
    assert_eq!(
        names(&r.body["messages"], "queue"),
        vec!["team-a.orders".to_owned()]
    );
    assert_eq!(r.body["total"], 1);
    let r = scoped.get("/api/v1/consumer-groups").await;
    assert_eq!(
        names(&r.body, "queueName"),
        vec!["team-a.orders".to_owned()],
        "{r:?}"
    );
    assert_eq!(
        r.header("x-total-count"),
        Some("1"),
        "group g is on team-a and team-b only"
    );
    let r = scoped.get("/api/v1/consumer-groups/g").await;
    assert_eq!(
        r.body
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        vec!["team-a.orders"]
    );
    // The unscoped token sees all three.
    let r = admin.get("/api/v1/resources/queues").await;
    assert_eq!(r.body["pagination"]["total"], 3);
    assert_eq!(admin.get("/api/v1/dlq").await.body["total"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_of_forbidden_queues_are_refused_and_left_out() {
    let (_b, admin, scoped) = scoped_setup().await;
    let pushed = admin
        .push(json!([{"queue": "team-a.orders", "payload": 1},
                     {"queue": "team-b.orders", "payload": 2}]))
        .await;
    let message = |i: usize| pushed.body[i].clone();
    for i in 0..2 {
        let r = admin
            .post(
                "/api/v1/traces",
                json!({"partitionId": message(i)["partition_id"],
                       "transactionId": message(i)["transaction_id"],
                       "data": {"step": i}, "traceNames": ["checkout"]}),
            )
            .await;
        assert_eq!(r.status, 201, "{r:?}");
    }
    let forbidden = message(1);
    let r = scoped
        .post(
            "/api/v1/traces",
            json!({"partitionId": forbidden["partition_id"],
                   "transactionId": forbidden["transaction_id"], "data": {"step": 9}}),
        )
        .await;
    r.assert_error(403, "forbidden");
    assert_eq!(r.body["success"], false);
    let path = |m: &Value| {
        format!(
            "/api/v1/traces/{}/{}",
            m["partition_id"].as_str().unwrap(),
            m["transaction_id"].as_str().unwrap()
        )
    };
    assert_eq!(
        scoped.get(&path(&message(0))).await.body["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        scoped.get(&path(&forbidden)).await.body["traces"],
        json!([])
    );
    assert_eq!(
        admin.get(&path(&forbidden)).await.body["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let r = scoped.get("/api/v1/traces/by-name/checkout").await;
    assert_eq!(
        names(&r.body["traces"], "queue_name"),
        vec!["team-a.orders".to_owned()]
    );
    assert_eq!(r.body["total"], 1);
    assert_eq!(
        admin.get("/api/v1/traces/by-name/checkout").await.body["total"],
        2
    );
    let r = scoped.get("/api/v1/traces/names").await;
    assert_eq!(r.body["trace_names"][0]["trace_count"], 1, "{r:?}");
    let r = admin.get("/api/v1/traces/names").await;
    assert_eq!(r.body["trace_names"][0]["trace_count"], 2, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_feeds_leave_out_forbidden_queues() {
    let (_b, admin, scoped) = scoped_setup().await;
    admin
        .push(json!([{"queue": "team-a.orders", "payload": 1},
                     {"queue": "team-b.orders", "payload": 2},
                     {"queue": "team-b.orders", "payload": 3}]))
        .await;
    // A pass of our own (the leader's first one may be running: then ours is skipped).
    regina_testkit::wait_until("a stats refresh runs", || async {
        admin.post("/api/v1/stats/refresh", json!({})).await.body["refreshed"] == true
    })
    .await;
    let allowed = vec!["shared".to_owned(), "team-a.orders".to_owned()];
    let r = scoped.get("/api/v1/status/queues").await;
    assert_eq!(names(&r.body["queues"], "name"), allowed, "{r:?}");
    let r = scoped.get("/api/v1/status").await;
    assert_eq!(names(&r.body["queues"], "name"), allowed, "{r:?}");
    assert_eq!(r.body["messages"]["total"], 1, "{r:?}");
    assert_eq!(
        admin.get("/api/v1/status").await.body["messages"]["total"],
        3
    );
    assert_eq!(
        scoped.get("/api/v1/resources/overview").await.body["queues"],
        2
    );
    scoped
        .get("/api/v1/status/queues/team-b.orders")
        .await
        .assert_error(403, "forbidden");
    scoped
        .get("/api/v1/status/queues/team-b.orders/messages")
        .await
        .assert_error(403, "forbidden");
    let r = scoped
        .get("/api/v1/status/queues/team-a.orders/messages")
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let r = scoped
        .get("/api/v1/analytics/queue-lag?queue=team-b.orders")
        .await;
    assert_eq!(r.body["series"], json!([]), "{r:?}");
    let r = admin
        .get("/api/v1/analytics/queue-lag?queue=team-b.orders")
        .await;
    assert!(!r.body["series"].as_array().unwrap().is_empty(), "{r:?}");
}
