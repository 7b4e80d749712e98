//! §3.11 traces: recording events on a message and reading them back by message, by name and as
//! the list of names; validation of every field and parameter; routes. Sealed payloads and queue
//! scopes: `trace_visibility.rs`; deletion with the message: `trace_deletion.rs`.

use reqwest::Method;
use serde_json::{json, Value};

use crate::messages::push;
use crate::support::{assert_iso, assert_uuid_v7, enc, start, start_with, Api, Reply};

/// `POST /api/v1/traces` for the message `(partition, txn)`, with `extra` merged into the body.
pub async fn record(api: &Api, partition: &Value, txn: &str, extra: Value) -> Reply {
    let mut body = json!({"partitionId": partition, "transactionId": txn});
    for (key, value) in extra.as_object().expect("object") {
        body[key] = value.clone();
    }
    api.post("/api/v1/traces", &body).await
}

/// Records an event and asserts `201 {success: true, traceId}`; returns the trace id.
pub async fn recorded(api: &Api, partition: &Value, txn: &str, extra: Value) -> String {
    let r = record(api, partition, txn, extra).await;
    assert_eq!(r.status, 201, "{r:?}");
    assert_eq!(r.body["success"], true, "{r:?}");
    assert_uuid_v7(&r.body["traceId"]);
    r.body["traceId"].as_str().unwrap().to_owned()
}

/// `GET /api/v1/traces/{partition}/{txn}`: the events.
pub async fn of_message(api: &Api, partition: &Value, txn: &str) -> Vec<Value> {
    let path = format!(
        "/api/v1/traces/{}/{}",
        partition.as_str().unwrap(),
        enc(txn)
    );
    let r = api.get(&path).await;
    assert_eq!(r.status, 200, "{r:?}");
    r.body["traces"].as_array().expect("traces").clone()
}

/// `GET /api/v1/traces/by-name/{name}?query`.
pub async fn by_name(api: &Api, name: &str, query: &str) -> Reply {
    let r = api
        .get(&format!("/api/v1/traces/by-name/{}?{query}", enc(name)))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

/// `GET /api/v1/traces/names?query`.
pub async fn names(api: &Api, query: &str) -> Reply {
    let r = api.get(&format!("/api/v1/traces/names?{query}")).await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

/// The `trace_id` values of a listing, in order.
fn ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_recorded_and_read_back_oldest_first() {
    let (_b, api) = start().await;
    let m = push(&api, "q", "p", "m1", json!({"n": 1})).await;
    let pid = &m["partition_id"];
    // Sent as text: the number is beyond 64 bits, and comes back as sent.
    let body = format!(
        r#"{{"partitionId":"{}","transactionId":"m1","data":{{"step": 1, "big": 12345678901234567890123}}}}"#,
        pid.as_str().unwrap()
    );
    let r = api.post_raw("/api/v1/traces", body.as_bytes()).await;
    assert_eq!(r.status, 201, "{r:?}");
    let first = r.body["traceId"].as_str().unwrap().to_owned();
    let second = recorded(
        &api,
        pid,
        "m1",
        json!({"data": "done", "eventType": "processed", "consumerGroup": "billing",
               "workerId": "worker-7", "traceNames": ["order-1", "tenant-a", "order-1"]}),
    )
    .await;
    let third = recorded(
        &api,
        pid,
        "m1",
        json!({"data": [false], "traceNames": "order-1"}),
    )
    .await;

    let events = of_message(&api, pid, "m1").await;
    assert_eq!(ids(&events), [first.clone(), second, third]);
    assert_eq!(
        events[0],
        json!({"id": first, "event_type": "info", "data": events[0]["data"],
               "consumer_group": "__QUEUE_MODE__", "worker_id": null,
               "created_at": events[0]["created_at"], "trace_names": []})
    );
    assert_eq!(events[0]["data"]["step"], 1);
    let raw = api
        .get(&format!("/api/v1/traces/{}/m1", pid.as_str().unwrap()))
        .await;
    assert!(
        raw.text
            .contains(r#"{"step":1,"big":12345678901234567890123}"#),
        "data verbatim, without insignificant whitespace: {}",
        raw.text
    );
    assert_iso(&events[0]["created_at"], 3);
    assert_eq!(
        (
            &events[1]["event_type"],
            &events[1]["consumer_group"],
            &events[1]["worker_id"]
        ),
        (&json!("processed"), &json!("billing"), &json!("worker-7"))
    );
    assert_eq!(
        events[1]["trace_names"],
        json!(["order-1", "tenant-a"]),
        "a repeated name counts once"
    );
    assert_eq!(events[2]["trace_names"], json!(["order-1"]));
    assert!(
        events
            .windows(2)
            .all(|w| w[0]["created_at"].as_str() <= w[1]["created_at"].as_str()),
        "{events:?}"
    );

    // Another message of the partition, a message without events, an unknown partition.
    push(&api, "q", "p", "m2", json!(2)).await;
    assert!(of_message(&api, pid, "m2").await.is_empty());
    let unknown = json!("01a2024a-e4e0-7688-9587-dea73d51b2c0");
    assert!(of_message(&api, &unknown, "m1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_by_name_are_newest_first_with_pages_and_a_total() {
    let (_b, api) = start().await;
    let a = push(&api, "orders", "p1", "a", json!({"order": "a"})).await;
    let b = push(&api, "audit", "Default", "b", json!("b")).await;
    let mut order = Vec::new();
    for (i, (m, txn)) in [(&a, "a"), (&b, "b"), (&a, "a"), (&b, "b"), (&a, "a")]
        .iter()
        .enumerate()
    {
        let id = recorded(
            &api,
            &m["partition_id"],
            txn,
            json!({"data": {"i": i}, "traceNames": ["order-1"]}),
        )
        .await;
        order.push(id);
    }
    recorded(
        &api,
        &a["partition_id"],
        "a",
        json!({"data": 0, "traceNames": "other"}),
    )
    .await;
    order.reverse();

    let page = by_name(&api, "order-1", "limit=2").await;
    assert_eq!(ids(page.body["traces"].as_array().unwrap()), order[..2]);
    assert_eq!(page.body["total"], 5);
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 2, "offset": 0, "total": 5})
    );
    let rest = by_name(&api, "order-1", "limit=2&offset=2").await;
    assert_eq!(ids(rest.body["traces"].as_array().unwrap()), order[2..4]);
    let last = by_name(&api, "order-1", "offset=4").await;
    assert_eq!(ids(last.body["traces"].as_array().unwrap()), order[4..]);
    assert_eq!(
        last.body["pagination"],
        json!({"limit": 100, "offset": 4, "total": 5})
    );
    assert_eq!(
        by_name(&api, "order-1", "offset=5").await.body["traces"],
        json!([])
    );

    let newest = &page.body["traces"][0];
    assert_eq!(
        newest,
        &json!({"id": order[0], "transaction_id": "a", "partition_id": a["partition_id"],
                "event_type": "info", "data": {"i": 4}, "consumer_group": "__QUEUE_MODE__",
                "worker_id": null, "created_at": newest["created_at"], "queue_name": "orders",
                "partition_name": "p1", "message_payload": {"order": "a"},
                "trace_names": ["order-1"]})
    );
    assert_eq!(page.body["traces"][1]["queue_name"], "audit");
    assert_eq!(page.body["traces"][1]["message_payload"], "b");
    let none = by_name(&api, "nobody", "").await;
    assert_eq!(
        none.body,
        json!({"traces": [], "total": 0, "pagination": {"limit": 100, "offset": 0, "total": 0}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_list_counts_events_and_messages_most_recent_first() {
    let (_b, api) = start().await;
    let m1 = push(&api, "q", "p", "m1", json!(1)).await;
    let m2 = push(&api, "q2", "p", "m2", json!(2)).await;
    let (p1, p2) = (&m1["partition_id"], &m2["partition_id"]);
    recorded(
        &api,
        p1,
        "m1",
        json!({"data": 1, "traceNames": ["shared", "old"]}),
    )
    .await;
    recorded(&api, p1, "m1", json!({"data": 2, "traceNames": ["shared"]})).await;
    recorded(&api, p2, "m2", json!({"data": 3, "traceNames": ["shared"]})).await;
    recorded(&api, p2, "m2", json!({"data": 4, "traceNames": ["newest"]})).await;
    recorded(&api, p1, "m1", json!({"data": 5})).await;

    let all = names(&api, "").await;
    let rows = all.body["trace_names"].as_array().unwrap();
    let summary: Vec<(&str, i64, i64)> = rows
        .iter()
        .map(|r| {
            (
                r["trace_name"].as_str().unwrap(),
                r["trace_count"].as_i64().unwrap(),
                r["message_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summary, [("newest", 1, 1), ("shared", 3, 2), ("old", 1, 1)]);
    for r in rows {
        assert_iso(&r["last_seen"], 3);
    }
    assert!(rows[0]["last_seen"].as_str() >= rows[1]["last_seen"].as_str());
    assert!(rows[1]["last_seen"].as_str() >= rows[2]["last_seen"].as_str());
    assert_eq!(all.body["total"], 3);
    assert_eq!(
        all.body["pagination"],
        json!({"limit": 50, "offset": 0, "total": 3})
    );
    let page = names(&api, "limit=1&offset=1").await;
    assert_eq!(page.body["trace_names"][0]["trace_name"], "shared");
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 1, "offset": 1, "total": 3})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_message_is_404_and_keeps_success_false() {
    let (_b, api) = start().await;
    let m = push(&api, "q", "p", "m1", json!(1)).await;
    let missing = record(&api, &m["partition_id"], "nope", json!({"data": 1})).await;
    missing.assert_error(404, "message_not_found");
    assert_eq!(
        missing.body,
        json!({"success": false, "error": "Message not found", "code": "message_not_found"})
    );
    let other_partition = json!("01a2024a-e4e0-7688-9587-dea73d51b2c0");
    let r = record(&api, &other_partition, "m1", json!({"data": 1})).await;
    r.assert_error(404, "message_not_found");
    assert_eq!(r.body["success"], false);
    assert_eq!(
        names(&api, "").await.body["total"],
        0,
        "nothing was recorded"
    );
}

/// Asserts a refused recording: `400`, the code, `success: false`, and the field named.
#[track_caller]
fn assert_refused(r: &Reply, code: &str, field: Option<&str>) {
    r.assert_error(400, code);
    assert_eq!(r.body["success"], false, "{r:?}");
    assert_eq!(r.body["field"].as_str(), field, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_invalid_field_is_refused_with_a_clear_error() {
    let (_b, api) = start_with(|c| c.trace_data_bytes_max = 16).await;
    let m = push(&api, "q", "p", "m1", json!(1)).await;
    let pid = m["partition_id"].as_str().unwrap();
    let many: Vec<String> = (0..33).map(|i| format!("n{i}")).collect();
    let cases = [
        (json!({"partitionId": pid, "data": 1}), "transactionId"),
        (
            json!({"transactionId": "x".repeat(256), "partitionId": pid, "data": 1}),
            "transactionId",
        ),
        (json!({"transactionId": "m1", "data": 1}), "partitionId"),
        (
            json!({"transactionId": "m1", "partitionId": "nope", "data": 1}),
            "partitionId",
        ),
        (json!({"transactionId": "m1", "partitionId": pid}), "data"),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": null}),
            "data",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "eventType": "e".repeat(65)}),
            "eventType",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "eventType": 3}),
            "eventType",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "consumerGroup": "   "}),
            "consumerGroup",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": many}),
            "traceNames",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": ["a", "n".repeat(129)]}),
            "traceNames[1]",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": ["a", null]}),
            "traceNames[1]",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": 5}),
            "traceNames",
        ),
        (
            json!({"transactionId": "m1", "partitionId": pid, "data": 1, "workerId": ["w"]}),
            "workerId",
        ),
    ];
    for (body, field) in cases {
        let r = api.post("/api/v1/traces", &body).await;
        assert_refused(&r, "validation_failed", Some(field));
    }
    let over = api
        .post(
            "/api/v1/traces",
            &json!({"transactionId": "m1", "partitionId": pid, "data": "0123456789abcdef"}),
        )
        .await;
    assert_refused(&over, "validation_failed", Some("data"));
    assert_eq!(over.body["limit"], 16);
    let fits = api
        .post(
            "/api/v1/traces",
            &json!({"transactionId": "m1", "partitionId": pid, "data": "0123456789abcd"}),
        )
        .await;
    assert_eq!(fits.status, 201, "{fits:?}");
    let not_json = api.post_raw("/api/v1/traces", b"{\"data\":").await;
    assert_refused(&not_json, "invalid_json", None);
    let not_object = api.post_raw("/api/v1/traces", b"[1]").await;
    assert_refused(&not_object, "validation_failed", None);
    let empty = api.post_raw("/api/v1/traces", b"").await;
    assert_refused(&empty, "validation_failed", Some("transactionId"));

    let p = enc(pid);
    for (path, key) in [
        ("/api/v1/traces/not-a-uuid/m1".to_owned(), "partitionId"),
        (
            format!("/api/v1/traces/{p}/{}", "t".repeat(256)),
            "transactionId",
        ),
        (
            format!("/api/v1/traces/by-name/{}", "n".repeat(129)),
            "traceName",
        ),
        ("/api/v1/traces/by-name/a%00".to_owned(), "traceName"),
        ("/api/v1/traces/by-name/a?limit=0".to_owned(), "limit"),
        ("/api/v1/traces/by-name/a?limit=1001".to_owned(), "limit"),
        ("/api/v1/traces/by-name/a?offset=-1".to_owned(), "offset"),
        ("/api/v1/traces/names?limit=1001".to_owned(), "limit"),
        ("/api/v1/traces/names?limit=x".to_owned(), "limit"),
    ] {
        let r = api.get(&path).await;
        r.assert_error(400, "invalid_parameter");
        assert_eq!(r.body["field"], key, "{path}: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_literal_routes_beat_the_parameter_route() {
    let (_b, api) = start().await;
    let m = push(&api, "q", "p", "m1", json!(1)).await;
    recorded(
        &api,
        &m["partition_id"],
        "m1",
        json!({"data": 1, "traceNames": "n"}),
    )
    .await;
    for path in ["/api/v1/traces/names", "/api/v1/traces/names/"] {
        let r = api.get(path).await;
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.body["trace_names"][0]["trace_name"], "n", "{path}");
    }
    let r = api.get("/api/v1/traces/by-name/n/").await;
    assert_eq!((r.status, &r.body["total"]), (200, &json!(1)), "{r:?}");
    // A message whose transactionId is `names` is still reachable under its partition.
    let named = push(&api, "q", "p", "names", json!(2)).await;
    recorded(&api, &named["partition_id"], "names", json!({"data": "x"})).await;
    assert_eq!(
        of_message(&api, &named["partition_id"], "names")
            .await
            .len(),
        1
    );

    let wrong = api
        .send(Method::POST, "/api/v1/traces/names", None, &[])
        .await;
    wrong.assert_error(405, "method_not_allowed");
    let list = api.get("/api/v1/traces").await;
    list.assert_error(405, "method_not_allowed");
    api.get("/api/v1/traces/by-name")
        .await
        .assert_error(404, "route_not_found");
}
