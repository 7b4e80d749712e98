//! `POST /api/v1/lease/{leaseId}/extend` (spec §3.6); a lease on a queue outside the caller's
//! scopes is refused in-band with `forbidden` (spec §1.6).

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde::Serialize;
use uuid::Uuid;

use super::access::Auth;
use super::body::{self, BodyBytes};
use super::error::{json_response, ApiError};
use super::names::path_segment;
use crate::engine::json::{indexed_array, to_json};
use crate::engine::ExtendRequest;
use crate::state::AppState;

/// `seconds` range (spec §3.6).
const SECONDS_MAX: i64 = 86_400;
/// Position of `{leaseId}` in `/api/v1/lease/{leaseId}/extend`.
const LEASE_SEGMENT: usize = 3;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/lease/{leaseId}/extend", post(extend))
}

async fn extend(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let lease_id = path_segment(&uri, LEASE_SEGMENT, "leaseId")?;
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let seconds = object.opt_int("seconds", 1, SECONDS_MAX)?;
    // Lease ids are UUIDs: anything else names no lease, answered in-band like an unknown one.
    if Uuid::parse_str(&lease_id).is_err() {
        return Ok(json_response(
            StatusCode::OK,
            indexed_array([not_found(&lease_id).as_str()]),
        ));
    }
    // Queue scopes: a lease holding a partition of a forbidden queue is not extended (in-band).
    if auth.scopes().is_some() {
        let queues = state.get().db.lease_queues(&lease_id).await?;
        if queues.iter().any(|q| !auth.allows(q)) {
            return Ok(json_response(
                StatusCode::OK,
                indexed_array([forbidden(&lease_id).as_str()]),
            ));
        }
    }
    let json = to_json(&SqlExtend {
        lease_id: &lease_id,
        seconds,
    });
    let result = state.get().engine.extend(ExtendRequest { json }).await?;
    Ok(json_response(
        StatusCode::OK,
        indexed_array([result.as_str()]),
    ))
}

/// One `i_reqs` element of `regina.lease_extend`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlExtend<'a> {
    lease_id: &'a str,
    seconds: Option<i64>,
}

/// The in-band `lease_not_found` entry.
fn not_found(lease_id: &str) -> String {
    serde_json::json!({
        "leaseId": lease_id, "success": false, "error": "Lease not found",
        "code": "lease_not_found", "expiresAt": null, "newExpiresAt": null,
    })
    .to_string()
}

/// The in-band `forbidden` entry of a lease outside the caller's queue scopes.
fn forbidden(lease_id: &str) -> String {
    serde_json::json!({
        "leaseId": lease_id, "success": false, "error": "Insufficient permissions",
        "code": "forbidden", "expiresAt": null, "newExpiresAt": null,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_lease_entry_is_valid_json() {
        let entry: serde_json::Value =
            serde_json::from_str(&not_found("x\"y")).expect("valid JSON");
        assert_eq!(entry["leaseId"], "x\"y");
        assert_eq!(entry["code"], "lease_not_found");
    }
}
