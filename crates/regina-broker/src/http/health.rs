//! `GET /health` (http-api.md §3.1): healthy when PostgreSQL answers a query within 2 s.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::error::json_response;
use crate::state::{AppState, Shared};

/// The health answer is due within this budget; a slower database counts as down.
const HEALTH_BUDGET: Duration = Duration::from_secs(2);

/// Whether PostgreSQL answers a query within the health budget.
pub(super) async fn database_healthy(shared: &Shared) -> bool {
    matches!(
        tokio::time::timeout(HEALTH_BUDGET, shared.db.ping()).await,
        Ok(Ok(()))
    )
}

pub(super) async fn health(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let healthy = database_healthy(shared).await;
    let maintenance = &shared.maintenance;
    let buffer = shared.failover.stats();
    let body = serde_json::json!({
        "status": if healthy { "healthy" } else { "unhealthy" },
        "database": if healthy { "connected" } else { "disconnected" },
        "server": "Regina",
        "version": env!("CARGO_PKG_VERSION"),
        "worker_id": shared.worker_id,
        "uptimeSeconds": shared.started.elapsed().as_secs(),
        "maintenanceMode": maintenance.push_on(),
        "popMaintenanceMode": maintenance.pop_on(),
        "failoverBuffer": {"pending": buffer.pending, "healthy": buffer.healthy},
    });
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, body.to_string())
}
