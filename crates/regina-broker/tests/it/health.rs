//! §3.1: health, metrics and API description.

use std::time::Instant;

use crate::support::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_healthy_with_database_connected() {
    let (_b, api) = start().await;
    let r = api.get("/health").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
    let h = &r.body;
    assert_eq!(h["status"], "healthy");
    assert_eq!(h["database"], "connected");
    assert_eq!(h["server"], "Regina");
    assert!(h["version"].is_string(), "{h}");
    assert!(h["worker_id"].is_string(), "{h}");
    assert!(h["uptimeSeconds"].is_number(), "{h}");
    assert_eq!(h["maintenanceMode"], false);
    assert_eq!(h["popMaintenanceMode"], false);
    assert!(h["failoverBuffer"]["pending"].is_number(), "{h}");
    assert!(h["failoverBuffer"]["healthy"].is_boolean(), "{h}");
}

/// §3.1: `503 unhealthy` while PostgreSQL refuses the broker (an answer, not a hang: the test
/// client gives up after a minute); healthy again after. How long it took is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_turns_unhealthy_while_database_refuses_connections_and_recovers() {
    let (b, api) = start().await;
    assert_eq!(api.get("/health").await.status, 200);
    // The switch is thrown from the cluster's `postgres` database: a session cannot disallow
    // connections to its own database.
    let (base, name) = b.database_url.rsplit_once('/').expect("database URL");
    let (admin, connection) =
        tokio_postgres::connect(&format!("{base}/postgres"), tokio_postgres::NoTls)
            .await
            .expect("connect to the postgres database");
    tokio::spawn(connection);
    let name = name.split('?').next().unwrap().to_string();
    admin
        .batch_execute(&format!(
            "alter database \"{name}\" with allow_connections false"
        ))
        .await
        .unwrap();
    admin
        .execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1",
            &[&name],
        )
        .await
        .unwrap();
    let started = Instant::now();
    let r = api.get("/health").await;
    println!("health answered after {:?}", started.elapsed());
    admin
        .batch_execute(&format!(
            "alter database \"{name}\" with allow_connections true"
        ))
        .await
        .unwrap();
    assert_eq!(
        r.status, 503,
        "health with the database refusing connections: {r:?}"
    );
    assert_eq!(r.body["status"], "unhealthy");
    assert_eq!(r.body["database"], "disconnected");
    assert_eq!(r.body["server"], "Regina");
    api.wait_healthy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_report_instance_counters_in_documented_shape() {
    let (_b, api) = start().await;
    api.push_one("m", "Default", serde_json::json!(1)).await;
    let r = api.get("/metrics").await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = &r.body;
    for path in [
        "/uptime",
        "/requests/total",
        "/requests/rate",
        "/messages/total",
        "/messages/rate",
        "/database/poolSize",
        "/database/idleConnections",
        "/database/waitingRequests",
        "/memory/rssBytes",
        "/cpu/userSeconds",
        "/cpu/systemSeconds",
        "/longPoll/waiters",
    ] {
        assert!(
            m.pointer(path).is_some_and(|v| v.is_number()),
            "metrics lack {path}: {m}"
        );
    }
    assert!(
        m["messages"]["total"].as_f64().unwrap_or(0.0) >= 1.0,
        "pushed count: {m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_metrics_are_text_format_with_regina_prefix() {
    let (_b, api) = start().await;
    api.push_one("pm", "Default", serde_json::json!(1)).await;
    let r = api.get("/metrics/prometheus").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert!(r.text.contains("regina_http_requests_total"), "{}", r.text);
    assert!(
        r.text.contains("regina_messages_pushed_total{"),
        "{}",
        r.text
    );
    for line in r
        .text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            line.starts_with("regina_"),
            "metric without the regina_ prefix: {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_is_served_as_openapi_3_1() {
    let (_b, api) = start().await;
    let r = api.get("/api/openapi.json").await;
    assert_eq!(r.status, 200, "{r:?}");
    let version = r.body["openapi"].as_str().unwrap_or("");
    assert!(version.starts_with("3.1"), "openapi version {version:?}");
    assert!(
        r.body["paths"]["/api/v1/push"].is_object(),
        "push path missing"
    );
}
