//! §4.9, §7 `SHUTDOWN_GRACE_MS`: graceful shutdown.

use std::time::Instant;

use axum::body::Body;
use http_body_util::BodyExt as _;
use regina_testkit::{eventually, DEADLINE, PARKED_POP_TIMEOUT_MS};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;
use tower::ServiceExt as _;

use crate::support::start_with;

/// Starts a push whose body never arrives: a request in flight that would never end by itself.
async fn stalled_push(base_url: &str) -> tokio::net::TcpStream {
    let address = base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect to the broker");
    let head = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: {address}\r\ncontent-type: application/json\r\n\
         content-length: 1000\r\n\r\n{{\"items\": ["
    );
    stream
        .write_all(head.as_bytes())
        .await
        .expect("send the request head");
    stream
}

/// §4.9, §7: shutdown answers parked pops `204 shutdown`, and `SHUTDOWN_GRACE_MS` bounds it: a
/// request that would never finish does not hold it up (without the bound, shutdown would never
/// end; the test gives up after a minute). How long it took is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_parked_pops_and_ends_within_the_grace_period() {
    let (b, api) = start_with(|c| c.shutdown_grace_ms = 3_000).await;
    api.push_one("kept", "Default", json!(1)).await;
    let parked: Vec<_> = (0..3)
        .map(|n| {
            let api = api.clone();
            let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}");
            tokio::spawn(async move { api.pop(&format!("idle-{n}"), &query).await })
        })
        .collect();
    api.wait_for_waiters(3).await;
    let _stalled = stalled_push(&b.base_url).await;
    eventually("the stalled push is in flight", || async {
        let m = api.get("/metrics/prometheus").await;
        let inflight = m
            .text
            .lines()
            .find_map(|l| l.strip_prefix("regina_http_inflight_requests "))
            .and_then(|v| v.trim().parse::<f64>().ok());
        // The three parked pops and the push (scrapes are not counted).
        if inflight.is_some_and(|n| n >= 4.0) {
            Ok(())
        } else {
            Err(inflight)
        }
    })
    .await;
    let started = Instant::now();
    tokio::time::timeout(DEADLINE, b.shutdown())
        .await
        .expect("shutdown ended although a request never finished");
    println!("shutdown took {:?} (grace period 3 s)", started.elapsed());
    for pop in parked {
        pop.await.unwrap().assert_empty("shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_after_shutdown_began_get_503_shutting_down() {
    let (b, _api) = start_with(|_| {}).await;
    let buffer_dir = std::env::temp_dir().join(format!(
        "regina-shutdown-buffer-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let config = regina_broker::Config {
        database_url: Some(b.database_url.clone()),
        file_buffer_dir: buffer_dir.to_string_lossy().into_owned(),
        ..regina_broker::Config::default()
    };
    let state = regina_broker::AppState::start(config).await.unwrap();
    state.begin_shutdown();
    for (method, path, body) in [
        ("GET", "/health", ""),
        (
            "POST",
            "/api/v1/push",
            r#"{"items":[{"queue":"q","payload":1}]}"#,
        ),
        ("GET", "/api/v1/pop/queue/q?wait=true&timeout=1000", ""),
    ] {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Body::from(body))
            .unwrap();
        let response = regina_broker::app(state.clone())
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), 503, "{method} {path}");
        assert_eq!(
            response.headers().get("retry-after").map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["code"], "shutting_down", "{body}");
    }
    state.close().await;
    let _ = std::fs::remove_dir_all(&buffer_dir);
}
