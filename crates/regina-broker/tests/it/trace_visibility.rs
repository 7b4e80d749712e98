//! §3.11 with §4.13 and §1.6: what a reader of traces sees — sealed payloads of by-name rows
//! decrypted, and the events of queues outside a token's scopes left out by the SQL functions.

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use crate::messages::push;
use crate::support::{start, start_with, Api};
use crate::traces::{by_name, recorded};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_name_rows_show_sealed_payloads_decrypted() {
    const KEY: &str = "8f1c2d3e4f5061728394a5b6c7d8e9f00112233445566778899aabbccddeeff0";
    let (b, api) =
        start_with(|c| c.regina_encryption_key = Some(regina_broker::Secret(KEY.to_owned()))).await;
    api.configure("vault", json!({"encryptionEnabled": true}))
        .await;
    let pushed = api
        .post_raw(
            "/api/v1/push",
            br#"{"items":[{"queue":"vault","transactionId":"s1","payload":{"card":"4111","n":12345678901234567890123}}]}"#,
        )
        .await;
    assert_eq!(pushed.status, 201, "{pushed:?}");
    let sealed = pushed.body[0].clone();
    let plain = push(&api, "open", "Default", "o1", json!([1, 2])).await;
    recorded(
        &api,
        &sealed["partition_id"],
        "s1",
        json!({"data": {"k": 1}, "traceNames": "pay"}),
    )
    .await;
    recorded(
        &api,
        &plain["partition_id"],
        "o1",
        json!({"data": 2, "traceNames": "pay"}),
    )
    .await;

    let stored: String = b
        .db()
        .await
        .query_one(
            "select payload::text from regina.messages where transaction_id = 's1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!stored.contains("4111"), "ciphertext at rest: {stored}");
    let r = by_name(&api, "pay", "").await;
    assert!(
        !r.text.contains("payloadKeyId") && !r.text.contains("messageId"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("12345678901234567890123"),
        "payload verbatim: {}",
        r.text
    );
    assert_eq!(r.body["traces"][0]["message_payload"], json!([1, 2]));
    assert_eq!(r.body["traces"][1]["message_payload"]["card"], "4111");
    assert_eq!(r.body["traces"][1]["data"], json!({"k": 1}));

    // Another instance without the key cannot open it and says so.
    let keyless = TestBroker::start_on(&b.database_url, |_| {}).await;
    let r = Api::new(&keyless).get("/api/v1/traces/by-name/pay").await;
    r.assert_error(503, "encryption_unavailable");
}

/// A SQL function's JSON answer to `query` (the broker passes token scopes this way).
async fn sql(b: &TestBroker, function: &str, query: Value) -> Value {
    let text: String = b
        .db()
        .await
        .query_one(
            &format!("select regina.{function}($1::text::jsonb)::text"),
            &[&query.to_string()],
        )
        .await
        .unwrap()
        .get(0);
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_scopes_leave_out_the_events_of_other_queues() {
    let (b, api) = start().await;
    let mine = push(&api, "orders.eu", "p", "m1", json!("mine")).await;
    let theirs = push(&api, "billing", "p", "m2", json!("theirs")).await;
    for _ in 0..2 {
        recorded(
            &api,
            &mine["partition_id"],
            "m1",
            json!({"data": 1, "traceNames": ["shared", "mine"]}),
        )
        .await;
    }
    recorded(
        &api,
        &theirs["partition_id"],
        "m2",
        json!({"data": 2, "traceNames": ["shared", "theirs"]}),
    )
    .await;
    let scopes = json!(["orders.*"]);

    let all = sql(
        &b,
        "traces_by_name",
        json!({"name": "shared", "limit": 10, "offset": 0}),
    )
    .await;
    assert_eq!(all["total"], 3);
    let scoped = sql(
        &b,
        "traces_by_name",
        json!({"name": "shared", "limit": 10, "offset": 0, "scopes": scopes}),
    )
    .await;
    assert_eq!(scoped["total"], 2);
    let queues: Vec<&Value> = scoped["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["queue_name"])
        .collect();
    assert_eq!(queues, [&json!("orders.eu"), &json!("orders.eu")]);

    let listed = sql(
        &b,
        "trace_names_list",
        json!({"limit": 10, "offset": 0, "scopes": scopes}),
    )
    .await;
    let counts: Vec<(String, i64, i64)> = listed["trace_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["trace_name"].as_str().unwrap().to_owned(),
                r["trace_count"].as_i64().unwrap(),
                r["message_count"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut sorted = counts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [("mine".to_owned(), 2, 1), ("shared".to_owned(), 2, 1)]
    );
    assert_eq!(listed["total"], 2);
    let everything = sql(&b, "trace_names_list", json!({"limit": 10, "offset": 0})).await;
    assert_eq!(everything["total"], 3);

    let message = |p: &Value, t: &str, scopes: Value| json!({"partitionId": p, "transactionId": t, "scopes": scopes});
    let hidden = sql(
        &b,
        "traces_by_message",
        message(&theirs["partition_id"], "m2", scopes.clone()),
    )
    .await;
    assert_eq!(hidden, json!({"traces": []}));
    let shown = sql(
        &b,
        "traces_by_message",
        message(&mine["partition_id"], "m1", scopes.clone()),
    )
    .await;
    assert_eq!(shown["traces"].as_array().unwrap().len(), 2);
    let none = sql(
        &b,
        "traces_by_message",
        message(&mine["partition_id"], "m1", json!([])),
    )
    .await;
    assert_eq!(none, json!({"traces": []}), "empty scopes allow nothing");

    let forbidden: String = b
        .db()
        .await
        .query_one(
            "select regina.trace_record($1::text::jsonb, '1')::text",
            &[
                &json!({"id": uuid::Uuid::now_v7(), "partitionId": theirs["partition_id"],
                      "transactionId": "m2", "eventType": "info", "consumerGroup": "g",
                      "traceNames": [], "scopes": scopes})
                .to_string(),
            ],
        )
        .await
        .unwrap()
        .get(0);
    let forbidden: Value = serde_json::from_str(&forbidden).unwrap();
    assert_eq!(
        (&forbidden["success"], &forbidden["code"]),
        (&json!(false), &json!("forbidden"))
    );
}
