//! §6: every limit in scope, enforced at the edge with its exact status and code; names.

use regina_testkit::PARKED_POP_TIMEOUT_MS;
use serde_json::{json, Value};

use crate::support::{enc, start, start_with, Api};

/// A push body of exactly `len` bytes.
fn push_body_of_len(len: usize) -> Vec<u8> {
    let empty = r#"{"items":[{"queue":"big","payload":""}]}"#;
    let pad = "x".repeat(len - empty.len());
    let body = format!(r#"{{"items":[{{"queue":"big","payload":"{pad}"}}]}}"#).into_bytes();
    assert_eq!(body.len(), len);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_over_body_bytes_max_answers_413_body_too_large() {
    let (_b, api) = start_with(|c| c.body_bytes_max = 1024).await;
    let r = api.post_raw("/api/v1/push", &push_body_of_len(1024)).await;
    assert_eq!(
        r.status, 201,
        "a body of exactly the limit is accepted: {r:?}"
    );
    let r = api.post_raw("/api/v1/push", &push_body_of_len(1025)).await;
    r.assert_error(413, "body_too_large");
    assert_eq!(
        r.header("connection"),
        Some("close"),
        "the unread rest of the body makes the connection unusable: {r:?}"
    );
    let r = api
        .post_raw("/api/v1/push", &push_body_of_len(64 * 1024))
        .await;
    r.assert_error(413, "body_too_large");
    let pop = api.pop("big", "batch=10").await;
    assert_eq!(
        pop.messages().len(),
        1,
        "only the accepted body was stored: {pop:?}"
    );
}

/// `{"items":[{"queue":"deep","payload": <k nested arrays>}]}` has nesting depth `3 + k`.
fn push_body_of_depth(depth: usize) -> Vec<u8> {
    let k = depth - 3;
    format!(
        r#"{{"items":[{{"queue":"deep","payload":{}{}}}]}}"#,
        "[".repeat(k),
        "]".repeat(k)
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_nested_deeper_than_default_limit_answers_invalid_json() {
    let (_b, api) = start().await;
    let r = api.post_raw("/api/v1/push", &push_body_of_depth(64)).await;
    assert_eq!(r.status, 201, "depth 64 is within JSON_DEPTH_MAX: {r:?}");
    let r = api.post_raw("/api/v1/push", &push_body_of_depth(65)).await;
    r.assert_error(400, "invalid_json");
    let r = api
        .post_raw("/api/v1/push", &push_body_of_depth(5000))
        .await;
    r.assert_error(400, "invalid_json");
    assert_eq!(
        api.get("/health").await.status,
        200,
        "deep JSON must not crash the broker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_depth_limit_is_configurable() {
    let (_b, api) = start_with(|c| c.json_depth_max = 10).await;
    assert_eq!(
        api.post_raw("/api/v1/push", &push_body_of_depth(10))
            .await
            .status,
        201
    );
    let r = api.post_raw("/api/v1/push", &push_body_of_depth(11)).await;
    r.assert_error(400, "invalid_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_over_push_items_max_answers_too_many_items_and_stores_nothing() {
    let (_b, api) = start_with(|c| c.push_items_max = 3).await;
    let items = |n: usize| {
        Value::Array(
            (0..n)
                .map(|i| json!({"queue": "cap", "payload": i}))
                .collect(),
        )
    };
    assert_eq!(api.push(items(3)).await.status, 201);
    let r = api.push(items(4)).await;
    r.assert_error(400, "too_many_items");
    if let Some(limit) = r.body.get("limit") {
        assert_eq!(limit, 3, "limit member names the limit: {r:?}");
    }
    let pop = api.pop("cap", "batch=100").await;
    assert_eq!(
        pop.messages().len(),
        3,
        "the rejected request stored nothing: {pop:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_batch_over_ack_items_max_answers_too_many_items() {
    let (_b, api) = start_with(|c| c.ack_items_max = 2).await;
    let ack = json!({"transactionId": "t", "partitionId": uuid::Uuid::now_v7().to_string()});
    let r = api
        .ack_batch(json!({"acknowledgments": [ack.clone(), ack.clone()]}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let r = api
        .ack_batch(json!({"acknowledgments": [ack.clone(), ack.clone(), ack]}))
        .await;
    r.assert_error(400, "too_many_items");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_parameters_over_default_limits_answer_invalid_parameter() {
    let (_b, api) = start().await;
    api.push_one("lim", "Default", json!(1)).await;
    for q in [
        "batch=10001",
        "batch=0",
        "batch=-1",
        "partitions=1001",
        "partitions=0",
    ] {
        api.pop("lim", q)
            .await
            .assert_error(400, "invalid_parameter");
    }
    for q in ["wait=true&timeout=300001", "timeout=-1"] {
        api.pop("lim", q)
            .await
            .assert_error(400, "invalid_parameter");
    }
    let r = api.pop("lim", "batch=10000&partitions=1000").await;
    assert_eq!(r.status, 200, "values at the limits are accepted: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_limits_are_configurable() {
    let (_b, api) = start_with(|c| {
        c.pop_batch_max = 5;
        c.pop_partitions_max = 4;
        c.pop_timeout_ms_max = 1000;
    })
    .await;
    api.push_one("lim", "Default", json!(1)).await;
    api.pop("lim", "batch=6")
        .await
        .assert_error(400, "invalid_parameter");
    api.pop("lim", "partitions=5")
        .await
        .assert_error(400, "invalid_parameter");
    api.pop("lim", "wait=true&timeout=1001")
        .await
        .assert_error(400, "invalid_parameter");
    let r = api
        .pop("lim", "batch=5&partitions=4&wait=true&timeout=1000")
        .await;
    assert_eq!(r.status, 200, "{r:?}");
}

async fn push_one_item(api: &Api, item: Value) -> crate::support::Reply {
    api.push(json!([{"queue": "ok", "payload": 0}, item])).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_id_and_trace_id_lengths_are_bounded() {
    let (_b, api) = start().await;
    let cases = [
        ("transactionId", "t".repeat(256), "items[1].transactionId"),
        ("traceId", "t".repeat(129), "items[1].traceId"),
    ];
    for (key, value, field) in cases {
        let r = push_one_item(&api, json!({"queue": "len", key: value})).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["index"], 1);
        assert_eq!(r.body["field"], field);
    }
    let ok = json!({"queue": "len", "transactionId": "é".repeat(255), "traceId": "é".repeat(128)});
    let r = push_one_item(&api, ok).await;
    assert_eq!(r.status, 201, "limits count characters, not bytes: {r:?}");
    assert_eq!(r.body[1]["trace_id"], "é".repeat(128));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_task_are_at_most_255_characters() {
    let (_b, api) = start().await;
    for key in ["namespace", "task"] {
        let r = api
            .post(
                "/api/v1/configure",
                &json!({"queue": "nt", key: "n".repeat(256)}),
            )
            .await;
        r.assert_error(400, "validation_failed");
        let r = api
            .post(
                "/api/v1/configure",
                &json!({"queue": "nt", key: "é".repeat(255)}),
            )
            .await;
        assert!(
            r.status == 200 || r.status == 201,
            "{key} of 255 characters: {r:?}"
        );
        assert_eq!(r.body[key], "é".repeat(255));
    }
}

fn bad_names() -> Vec<String> {
    vec![
        "q".repeat(256),
        "a\u{0}b".into(),
        "a\u{1f}b".into(),
        "a\nb".into(),
        "a\u{7f}b".into(),
        "a\u{9f}b".into(),
        "   ".into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_queue_and_partition_names_in_bodies_are_rejected() {
    let (_b, api) = start().await;
    for name in bad_names() {
        let r = push_one_item(&api, json!({"queue": name})).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["field"], "items[1].queue", "{name:?}");
        let r = push_one_item(&api, json!({"queue": "ok", "partition": name})).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["field"], "items[1].partition", "{name:?}");
        let r = api.post("/api/v1/configure", &json!({"queue": name})).await;
        r.assert_error(400, "validation_failed");
        let ack = json!({"transactionId": "t", "partitionId": uuid::Uuid::now_v7().to_string(),
                         "consumerGroup": name});
        api.ack(ack).await.assert_error(400, "validation_failed");
    }
    api.pop("ok", "").await.assert_empty("queue_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_of_255_unicode_characters_are_valid() {
    let (_b, api) = start().await;
    let name = "é".repeat(255);
    let r = api
        .push(json!([{"queue": name, "partition": name, "payload": 1}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let r = api
        .pop_partition(&name, &name, &format!("consumerGroup={}", enc(&name)))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["consumerGroup"], name);
    assert_eq!(r.messages()[0]["partition"], name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_names_in_query_and_path_are_rejected_with_400() {
    let (_b, api) = start().await;
    api.push_one("ok", "Default", json!(1)).await;
    for name in bad_names() {
        let r = api
            .pop("ok", &format!("consumerGroup={}", enc(&name)))
            .await;
        r.assert_error(400, "invalid_parameter");
        let r = api.pop(&name, "").await;
        assert_eq!(r.status, 400, "queue path parameter {name:?}: {r:?}");
        assert!(
            ["invalid_parameter", "validation_failed"].contains(&r.code()),
            "path names are validated like body names (§2.4): {r:?}"
        );
        let r = api.pop_partition("ok", &name, "").await;
        assert_eq!(r.status, 400, "partition path parameter {name:?}: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_length_limit_is_configurable() {
    let (_b, api) = start_with(|c| c.name_chars_max = 10).await;
    let r = api.push(json!([{"queue": "q".repeat(11)}])).await;
    r.assert_error(400, "validation_failed");
    let r = api
        .push(json!([{"queue": "q".repeat(10), "partition": "p".repeat(11)}]))
        .await;
    r.assert_error(400, "validation_failed");
    let r = api
        .push(json!([{"queue": "q".repeat(10), "partition": "p".repeat(10)}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_http_inflight_max_answer_503_overloaded() {
    let (_b, api) = start_with(|c| c.http_inflight_max = 2).await;
    api.configure("busy", json!({})).await;
    let parked: Vec<_> = (0..2)
        .map(|i| {
            let api = api.with_own_pool();
            tokio::spawn(async move {
                api.pop(
                    "busy",
                    &format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&consumerGroup=g{i}"),
                )
                .await
            })
        })
        .collect();
    api.wait_for_waiters(2).await;
    let r = api.push(json!([{"queue": "busy", "payload": 1}])).await;
    r.assert_error(503, "overloaded");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    // The parked clients leave (a disconnect ends a request, §4.9): capacity comes back.
    for p in parked {
        p.abort();
    }
    regina_testkit::eventually("capacity is back once requests finish", || async {
        let r = api.push(json!([{"queue": "busy", "payload": 2}])).await;
        if r.status == 201 {
            return Ok(());
        }
        r.assert_error(503, "overloaded");
        Err(r)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_over_the_read_buffer_is_refused_and_others_are_served() {
    let (_b, api) = start_with(|c| c.http_read_buffer_bytes_max = 16 * 1024).await;
    let big = "x".repeat(20 * 1024);
    let r = api
        .send(
            reqwest::Method::GET,
            "/health",
            None,
            &[("x-padding", big.as_str())],
        )
        .await;
    assert_eq!(r.status, 431, "{r:?}");
    let fits = "x".repeat(8 * 1024);
    let r = api
        .send(
            reqwest::Method::GET,
            "/health",
            None,
            &[("x-padding", fits.as_str())],
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    // A body far larger than the read buffer is read through it.
    let r = api
        .post_raw("/api/v1/push", &push_body_of_len(200 * 1024))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
}
