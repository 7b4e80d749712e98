//! §1.2, §1.3, §2.1, §2.4: routing, CORS, request ids, body parsing and type rules.

use reqwest::Method;
use serde_json::json;

use crate::support::{start, start_with, Api};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_route_answers_404_json_route_not_found() {
    let (_b, api) = start().await;
    let r = api.get("/api/v1/nope").await;
    r.assert_error(404, "route_not_found");
    assert_eq!(r.body["error"], "Not found: GET /api/v1/nope");
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
    let r = api.post("/api/v1/push/extra", &json!({})).await;
    r.assert_error(404, "route_not_found");
    assert_eq!(r.body["error"], "Not found: POST /api/v1/push/extra");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_path_with_wrong_method_answers_405_with_allow_header() {
    let (_b, api) = start().await;
    let r = api.get("/api/v1/push").await;
    r.assert_error(405, "method_not_allowed");
    assert!(
        r.header("allow").unwrap_or("").contains("POST"),
        "Allow: {:?}",
        r.header("allow")
    );
    let r = api
        .send(Method::DELETE, "/api/v1/configure", None, &[])
        .await;
    r.assert_error(405, "method_not_allowed");
    assert!(r.header("allow").unwrap_or("").contains("POST"));
    let r = api.post("/api/v1/pop/queue/q", &json!({})).await;
    r.assert_error(405, "method_not_allowed");
    assert!(r.header("allow").unwrap_or("").contains("GET"));
}

fn assert_cors(r: &crate::support::Reply, origin: &str) {
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some(origin),
        "{r:?}"
    );
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("GET, POST, PUT, DELETE, OPTIONS"),
        "{r:?}"
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("Content-Type, Authorization, X-Request-Id"),
        "{r:?}"
    );
    assert_eq!(
        r.header("access-control-expose-headers"),
        Some("X-Request-Id, X-Regina-Empty-Reason, X-Total-Count, Retry-After"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_cors_headers() {
    let (_b, api) = start().await;
    assert_cors(&api.get("/health").await, "*");
    assert_cors(&api.get("/api/v1/nope").await, "*");
    assert_cors(&api.post_raw("/api/v1/push", b"{bad").await, "*");
    assert_cors(&api.pop("absent", "").await, "*");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_on_any_path_answers_204_preflight() {
    let (_b, api) = start().await;
    for path in [
        "/api/v1/push",
        "/api/v1/pop/queue/q",
        "/no/such/route",
        "/health",
    ] {
        let r = api.send(Method::OPTIONS, path, None, &[]).await;
        assert_eq!(r.status, 204, "OPTIONS {path}: {r:?}");
        assert_cors(&r, "*");
        assert_eq!(
            r.header("access-control-max-age"),
            Some("86400"),
            "OPTIONS {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_allow_origin_is_configurable() {
    let (_b, api) = start_with(|c| c.cors_allow_origin = "https://dash.example".into()).await;
    assert_cors(&api.get("/health").await, "https://dash.example");
    let r = api.send(Method::OPTIONS, "/api/v1/ack", None, &[]).await;
    assert_cors(&r, "https://dash.example");
}

async fn request_id_for(api: &Api, sent: Option<&str>) -> String {
    let headers: Vec<(&str, &str)> = sent.map(|v| vec![("x-request-id", v)]).unwrap_or_default();
    let r = api.send(Method::GET, "/health", None, &headers).await;
    r.header("x-request-id")
        .unwrap_or_else(|| panic!("no X-Request-Id: {r:?}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_is_echoed_when_valid_and_generated_otherwise() {
    let (_b, api) = start().await;
    assert_eq!(request_id_for(&api, Some("req-42")).await, "req-42");
    let max = "r".repeat(128);
    assert_eq!(request_id_for(&api, Some(&max)).await, max);
    let too_long = "r".repeat(129);
    for sent in [Some(too_long.as_str()), Some("has\ttab"), Some(""), None] {
        let got = request_id_for(&api, sent).await;
        assert!(!got.is_empty(), "generated id empty for {sent:?}");
        assert_ne!(Some(got.as_str()), sent, "invalid id was echoed");
        assert!(
            got.len() <= 128 && got.bytes().all(|b| (0x21..0x7f).contains(&b)),
            "{got}"
        );
    }
    let a = request_id_for(&api, None).await;
    let b = request_id_for(&api, None).await;
    assert_ne!(a, b, "generated ids must differ");
    let r = api
        .send(
            Method::GET,
            "/api/v1/nope",
            None,
            &[("x-request-id", "err-1")],
        )
        .await;
    assert_eq!(
        r.header("x-request-id"),
        Some("err-1"),
        "errors carry the id too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trailing_slash_is_ignored() {
    let (_b, api) = start().await;
    assert_eq!(api.get("/health/").await.status, 200);
    let r = api
        .post("/api/v1/configure/", &json!({"queue": "slash"}))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let r = api.get("/api/v1/pop/queue/slash/").await;
    r.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_answers_400_invalid_json() {
    let (_b, api) = start().await;
    for body in [&b"{not json"[..], b"{\"items\": [", b"\xff\xfe", b"[1,]"] {
        let r = api.post_raw("/api/v1/push", body).await;
        r.assert_error(400, "invalid_json");
        let text = r.body["error"].as_str().unwrap_or("");
        assert!(text.starts_with("Invalid JSON: "), "error text {text:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_is_parsed_as_json_whatever_its_content_type() {
    let (_b, api) = start().await;
    let body = serde_json::to_vec(&json!({"items": [{"queue": "ct", "payload": 1}]})).unwrap();
    for ct in ["text/plain", "application/x-www-form-urlencoded"] {
        let headers = [("content-type", ct)];
        let r = api
            .send(Method::POST, "/api/v1/push", Some(body.clone()), &headers)
            .await;
        assert_eq!(r.status, 201, "Content-Type {ct}: {r:?}");
    }
    let r = api
        .send(Method::POST, "/api/v1/push", Some(body), &[])
        .await;
    assert_eq!(r.status, 201, "no Content-Type: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_length_body_is_read_as_empty_object() {
    let (_b, api) = start().await;
    let r = api.post_raw("/api/v1/push", b"").await;
    r.assert_error(400, "validation_failed");
    let r = api.post_raw("/api/v1/configure", b"").await;
    r.assert_error(400, "validation_failed");
    let r = api.post_raw("/api/v1/ack", b"").await;
    r.assert_error(400, "validation_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_that_must_be_an_object_but_is_not_answers_validation_failed() {
    let (_b, api) = start().await;
    for body in ["[1,2]", "\"text\"", "42", "null", "true"] {
        let r = api.post_raw("/api/v1/push", body.as_bytes()).await;
        r.assert_error(400, "validation_failed");
        let r = api.post_raw("/api/v1/configure", body.as_bytes()).await;
        r.assert_error(400, "validation_failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_integers_accept_integral_numbers_only() {
    let (_b, api) = start().await;
    let body = json!({"queue": "ints", "options": {"leaseTime": 30.0}});
    let r = api.post("/api/v1/configure", &body).await;
    assert_eq!(r.status, 201, "300.0-style integers are integers: {r:?}");
    assert_eq!(r.body["options"]["leaseTime"], 30);
    for bad in [
        json!(30.5),
        json!("30"),
        json!(true),
        json!([30]),
        json!({"n": 30}),
    ] {
        let body = json!({"queue": "ints", "options": {"leaseTime": bad}});
        let r = api.post("/api/v1/configure", &body).await;
        r.assert_error(400, "validation_failed");
    }
    let r = api
        .post("/api/v1/configure", &json!({"queue": "ints"}))
        .await;
    assert_eq!(
        r.body["options"]["leaseTime"], 30,
        "rejected requests changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_booleans_accept_json_true_and_false_only() {
    let (_b, api) = start().await;
    for bad in [
        json!("true"),
        json!(1),
        json!(0),
        json!("yes"),
        json!("false"),
    ] {
        let body = json!({"queue": "bools", "options": {"deadLetterQueue": bad}});
        let r = api.post("/api/v1/configure", &body).await;
        r.assert_error(400, "validation_failed");
    }
    let body = json!({"queue": "bools", "options": {"deadLetterQueue": false}});
    let r = api.post("/api/v1/configure", &body).await;
    assert!(r.status == 200 || r.status == 201, "{r:?}");
    assert_eq!(r.body["options"]["deadLetterQueue"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_item_field_types_name_index_and_field() {
    let (_b, api) = start().await;
    let cases = [
        (json!({"queue": 5}), "items[1].queue"),
        (json!({"queue": "q", "partition": 7}), "items[1].partition"),
        (
            json!({"queue": "q", "transactionId": 12}),
            "items[1].transactionId",
        ),
        (
            json!({"queue": "q", "traceId": {"a": 1}}),
            "items[1].traceId",
        ),
        (json!("not an object"), "items[1]"),
    ];
    for (item, field) in cases {
        let r = api.push(json!([{"queue": "q", "payload": 0}, item])).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["index"], 1, "{r:?}");
        assert_eq!(r.body["field"], field, "{r:?}");
    }
    api.pop("q", "").await.assert_empty("queue_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_request_fields_are_ignored() {
    let (_b, api) = start().await;
    let r = api
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "unk", "payload": 1, "bufferMs": 5, "namespace": "x"}],
                    "extra": true}),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let r = api
        .post(
            "/api/v1/configure",
            &json!({"queue": "unk", "options": {"whatever": 1}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body["options"].get("whatever").is_none(),
        "unknown option echoed: {r:?}"
    );
}

/// §3.2, §3.3, §3.5: where the spec gives Queen's error text, Regina uses it (clients show it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_errors_carry_the_documented_texts() {
    let (_b, api) = start().await;
    let pid = uuid::Uuid::now_v7().to_string();
    let cases = [
        ("/api/v1/push", json!({}), "items array is required"),
        (
            "/api/v1/push",
            json!({"items": [{"queue": 1}]}),
            "Queue must be a string",
        ),
        ("/api/v1/configure", json!({}), "queue is required"),
        (
            "/api/v1/ack",
            json!({"partitionId": pid}),
            "transactionId is required",
        ),
        (
            "/api/v1/ack",
            json!({"transactionId": "t"}),
            "partitionId is required to ensure message uniqueness",
        ),
    ];
    for (path, body, text) in cases {
        let r = api.post(path, &body).await;
        r.assert_error(400, "validation_failed");
        assert_eq!(r.body["error"], text, "{path} {body}");
    }
}
