//! `GET /health` (spec §3.1): healthy when PostgreSQL answers a query within 2 s.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::error::json_response;
use crate::state::AppState;

/// The health answer is due within this budget; a slower database counts as down.
const HEALTH_BUDGET: Duration = Duration::from_secs(2);

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/health", get(health))
}

async fn health(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let healthy = matches!(
        tokio::time::timeout(HEALTH_BUDGET, shared.db.ping()).await,
        Ok(Ok(()))
    );
    let body = serde_json::json!({
        "status": if healthy { "healthy" } else { "unhealthy" },
        "database": if healthy { "connected" } else { "disconnected" },
        "server": "Regina",
        "version": env!("CARGO_PKG_VERSION"),
        "worker_id": shared.worker_id,
        "uptimeSeconds": shared.started.elapsed().as_secs(),
        "maintenanceMode": false,
        "popMaintenanceMode": false,
        // This version has no failover buffer: nothing pending, and none to fall back on.
        "failoverBuffer": {"pending": 0, "healthy": false},
    });
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, body.to_string())
}
