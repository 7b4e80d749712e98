//! `GET /api/v1/status/buffers` (http-api.md §3.12): this instance's failover buffer.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use time::macros::format_description;

use super::error::json_response;
use super::health::database_healthy;
use crate::state::{AppState, Shared};

pub(super) async fn buffers(State(state): State<AppState>) -> Response {
    let body = buffer_stats(state.get()).await;
    json_response(StatusCode::OK, body.to_string())
}

/// `{pending, failed, corrupt, segments, bytes, oldestAt, partitionsBlocked, dbHealthy, worker,
/// note}`, also embedded in the maintenance answer.
pub(super) async fn buffer_stats(shared: &Shared) -> Value {
    let stats = shared.failover.stats();
    let db_healthy = database_healthy(shared).await;
    let layout = format_description!(
        version = 2,
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    let oldest_at = stats.oldest_at.and_then(|t| t.format(&layout).ok());
    let note = match (&stats.problem, shared.maintenance.push_on()) {
        (Some(problem), _) => Some(problem.clone()),
        (None, true) => {
            Some("push maintenance is on: pushes are buffered, replay is paused".into())
        }
        (None, false) if stats.pending > 0 && !db_healthy => {
            Some("database unreachable: replay resumes when it answers".into())
        }
        _ => None,
    };
    serde_json::json!({
        "pending": stats.pending,
        "failed": stats.failed,
        "corrupt": stats.corrupt,
        "segments": stats.segments,
        "bytes": stats.bytes,
        "oldestAt": oldest_at,
        "partitionsBlocked": stats.partitions_blocked,
        "dbHealthy": db_healthy,
        "worker": shared.worker_id,
        "note": note,
    })
}
