//! `GET /metrics` (this instance's counters as JSON) and `GET /metrics/prometheus` (the
//! Prometheus text format), http-api.md §3.1. Both are local and cheap: the edge exempts them from
//! `HTTP_INFLIGHT_MAX`, so a saturated instance stays observable and scraping it never takes the
//! room of real work.

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::json_response;
use crate::metrics::cluster;
use crate::metrics::process::ProcessSample;
use crate::metrics::GaugeSample;
use crate::state::{AppState, Shared};

/// The JSON route.
const PATH: &str = "/metrics";
/// The Prometheus route.
const PROMETHEUS_PATH: &str = "/metrics/prometheus";
/// Longest wait for the cluster gauges of a scrape.
const CLUSTER_GAUGES_TIMEOUT: Duration = Duration::from_secs(1);
/// Text exposition format 0.0.4.
const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether requests to `path` (trailing `/` already dropped) skip the in-flight limit.
pub(super) fn exempt_from_inflight_limit(path: &str) -> bool {
    path == PATH || path == PROMETHEUS_PATH
}

pub(super) async fn metrics(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let metrics = &shared.metrics;
    let process = ProcessSample::read(metrics.clock_ticks_per_second()).await;
    let pool = shared.db.stats();
    let (requests_total, requests_rate) = metrics.requests_total_and_rate();
    let (messages_total, messages_rate) = metrics.pushed_total_and_rate();
    let body = serde_json::json!({
        "uptime": shared.started.elapsed().as_secs(),
        "requests": {"total": requests_total, "rate": requests_rate},
        "messages": {"total": messages_total, "rate": messages_rate},
        "database": {
            "poolSize": pool.size,
            "idleConnections": pool.idle,
            "waitingRequests": pool.waiting,
        },
        "memory": {"rssBytes": process.rss_bytes},
        "cpu": {"userSeconds": process.user_seconds, "systemSeconds": process.system_seconds},
        "longPoll": {"waiters": shared.waiters.len(), "parked": shared.waiters.parked()},
    });
    json_response(StatusCode::OK, body.to_string())
}

pub(super) async fn prometheus(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let mut body = shared.metrics.render(&gauge_sample(shared));
    body.push_str(&cluster_gauges(shared).await);
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROMETHEUS_CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The cluster gauges (`crate::metrics::cluster`), or none when the database does not answer
/// within `CLUSTER_GAUGES_TIMEOUT`: the local metrics are worth most when it does not.
async fn cluster_gauges(shared: &Shared) -> String {
    let labels_max = i32::try_from(shared.config.metrics_queue_labels_max).unwrap_or(i32::MAX);
    let read = tokio::time::timeout(CLUSTER_GAUGES_TIMEOUT, shared.db.cluster_gauges(labels_max));
    match read.await {
        Ok(Ok(gauges)) => cluster::render(&gauges),
        Ok(Err(error)) => {
            tracing::debug!(%error, "cluster gauges left out");
            String::new()
        }
        Err(_) => {
            tracing::debug!("cluster gauges left out: the database is slow");
            String::new()
        }
    }
}

/// The local gauges now.
fn gauge_sample(shared: &Shared) -> GaugeSample {
    let pool = shared.db.stats();
    let (push_announcing, announcements_skipped) = shared.db.announcing();
    let buffer = shared.failover.stats();
    let maintenance = &shared.maintenance;
    GaugeSample {
        pool_busy: pool.busy() as u64,
        pool_idle: pool.idle as u64,
        pool_waiting: pool.waiting as u64,
        longpoll_waiters: shared.waiters.len() as u64,
        http_inflight: shared.inflight_in_use() as u64,
        body_bytes_held: shared.bodies.held() as u64,
        buffer_records: buffer.pending,
        buffer_bytes: buffer.bytes,
        push_maintenance: maintenance.push_on(),
        pop_maintenance: maintenance.pop_on(),
        push_announcing,
        announcements_skipped,
    }
}
