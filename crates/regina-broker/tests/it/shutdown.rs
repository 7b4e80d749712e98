//! §4.9, §7 `SHUTDOWN_GRACE_MS`: graceful shutdown.

use std::time::{Duration, Instant};

use axum::body::Body;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use crate::support::start_with;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_parked_pops_and_ends_within_the_grace_period() {
    let (b, api) = start_with(|c| c.shutdown_grace_ms = 3_000).await;
    api.push_one("kept", "Default", json!(1)).await;
    let parked: Vec<_> = (0..3)
        .map(|n| {
            let api = api.clone();
            tokio::spawn(async move {
                api.pop(&format!("idle-{n}"), "wait=true&timeout=60000")
                    .await
            })
        })
        .collect();
    api.wait_for_waiters(3).await;
    let started = Instant::now();
    b.shutdown().await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "shutdown took {took:?}");
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
