//! `GET /metrics` (this instance's counters as JSON) and `GET /metrics/prometheus` (the
//! Prometheus text format), spec §3.1. Both are local and cheap: the edge exempts them from
//! `HTTP_INFLIGHT_MAX`, so a saturated instance stays observable and scraping it never takes the
//! room of real work.

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::error::json_response;
use crate::metrics::process::ProcessSample;
use crate::metrics::GaugeSample;
use crate::state::{AppState, Shared};

/// The JSON route.
const PATH: &str = "/metrics";
/// The Prometheus route.
const PROMETHEUS_PATH: &str = "/metrics/prometheus";
/// Text exposition format 0.0.4.
const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route(PATH, get(metrics))
        .route(PROMETHEUS_PATH, get(prometheus))
}

/// Whether requests to `path` (trailing `/` already dropped) skip the in-flight limit.
pub(super) fn exempt_from_inflight_limit(path: &str) -> bool {
    path == PATH || path == PROMETHEUS_PATH
}

async fn metrics(State(state): State<AppState>) -> Response {
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
        "longPoll": {"waiters": shared.waiters.len()},
    });
    json_response(StatusCode::OK, body.to_string())
}

async fn prometheus(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let body = shared.metrics.render(&gauge_sample(shared));
    // Cluster gauges (`queue_depth`, `consumer_lag_messages`, `consumer_lag_seconds`,
    // `dlq_depth`) describe the whole database, not this instance: they belong here, read from
    // the stats tables the leader refreshes (`regina.metrics_cluster_gauges(labels_max)`), once
    // those exist. This instance reports none of them until then.
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROMETHEUS_CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The local gauges now.
fn gauge_sample(shared: &Shared) -> GaugeSample {
    let pool = shared.db.stats();
    let buffer = shared.failover.stats();
    let maintenance = shared.failover.maintenance();
    GaugeSample {
        pool_busy: (pool.size.saturating_sub(pool.idle)) as u64,
        pool_idle: pool.idle as u64,
        pool_waiting: pool.waiting as u64,
        longpoll_waiters: shared.waiters.len() as u64,
        http_inflight: shared.inflight_in_use() as u64,
        buffer_records: buffer.pending,
        buffer_bytes: buffer.bytes,
        push_maintenance: maintenance.push_on(),
        pop_maintenance: maintenance.pop_on(),
    }
}
