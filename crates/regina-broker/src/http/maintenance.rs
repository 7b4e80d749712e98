//! `GET/POST /api/v1/system/maintenance` and `GET/POST /api/v1/system/maintenance/pop`
//! (http-api.md §3.13): the cluster-wide maintenance switches. A change is stored in the database
//! and announced to every instance; this instance applies it at once.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::Deserialize;

use super::buffers::buffer_stats;
use super::contract::fields::RequiredFlag;
use super::contract::{Body, Contract};
use super::error::{json_response, ApiError};
use crate::maintenance::MaintenanceKind;
use crate::state::{AppState, Shared};

pub(super) async fn push_get(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let stats = buffer_stats(shared).await;
    let body = serde_json::json!({
        "maintenanceMode": shared.maintenance.push_on(),
        "popMaintenanceMode": shared.maintenance.pop_on(),
        "bufferedMessages": stats["pending"],
        "bufferHealthy": shared.failover.stats().healthy,
        "bufferStats": stats,
    });
    json_response(StatusCode::OK, body.to_string())
}

/// Body of the maintenance switches.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SwitchBody {
    /// On or off
    enabled: RequiredFlag,
}

impl Contract for SwitchBody {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} (boolean) is required")
    }
}

pub(super) async fn push_set(
    State(state): State<AppState>,
    Body(body): Body<SwitchBody>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let enabled = body.enabled.0;
    switch(shared, MaintenanceKind::Push, enabled).await?;
    let stats = shared.failover.stats();
    let message = if enabled {
        "Push maintenance on: pushes are buffered and replay is paused"
    } else {
        "Push maintenance off: buffered messages are being replayed"
    };
    let body = serde_json::json!({
        "maintenanceMode": enabled,
        "bufferedMessages": stats.pending,
        "bufferHealthy": stats.healthy,
        "message": message,
    });
    Ok(json_response(StatusCode::OK, body.to_string()))
}

pub(super) async fn pop_get(State(state): State<AppState>) -> Response {
    let on = state.get().maintenance.pop_on();
    json_response(StatusCode::OK, pop_body(on).to_string())
}

pub(super) async fn pop_set(
    State(state): State<AppState>,
    Body(body): Body<SwitchBody>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let enabled = body.enabled.0;
    switch(shared, MaintenanceKind::Pop, enabled).await?;
    Ok(json_response(StatusCode::OK, pop_body(enabled).to_string()))
}

fn pop_body(on: bool) -> serde_json::Value {
    let message = if on {
        "Pop maintenance on: every pop answers empty (paused)"
    } else {
        "Pop maintenance off: pops deliver again"
    };
    serde_json::json!({"popMaintenanceMode": on, "message": message})
}

/// Stores and announces the switch, then applies it here without waiting for the announcement.
async fn switch(shared: &Shared, kind: MaintenanceKind, enabled: bool) -> Result<(), ApiError> {
    shared
        .maintenance
        .switch(&shared.db, kind, enabled)
        .await
        .map_err(ApiError::from)
}
