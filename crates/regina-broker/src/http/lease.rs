//! `POST /api/v1/lease/{leaseId}/extend` (http-api.md §3.6); a lease on a queue outside the
//! caller's scopes is refused in-band with `forbidden` (http-api.md §1.6).
//!
//! The answer is the one-entry array of the spec, except for a request without a body: that one
//! gets the entry itself, a JSON object. Queen's Python clients 0.12–1.x send no body and read the
//! answer with `result.get("newExpiresAt")`, which no JSON array can satisfy (it decodes to a
//! Python list); every client that reads the array sends a body (`{}` at least). See
//! docs/compatibility.md.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::access::Auth;
use super::body::BodyBytes;
use super::contract::fields::Int;
use super::contract::params::PathText;
use super::contract::{self, Contract, PathParams};
use super::error::{json_response, ApiError};
use crate::engine::json::{indexed_array, to_json, write_indexed};
use crate::engine::ExtendRequest;
use crate::state::AppState;

/// `seconds` range (http-api.md §3.6).
const SECONDS_MAX: i64 = 86_400;

/// Path of `POST /api/v1/lease/{leaseId}/extend`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeasePath {
    /// The lease (any text: one that is not a UUID names no lease, answered in-band)
    lease_id: PathText,
}

impl Contract for LeasePath {}

/// Body of the lease extension (none at all changes the answer's shape).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ExtendBody {
    /// New lease length from now, seconds (default: the queue's leaseTime)
    #[serde(default)]
    seconds: Int<1, SECONDS_MAX>,
}

impl Contract for ExtendBody {}

pub(super) async fn extend(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(LeasePath { lease_id }): PathParams<LeasePath>,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let lease_id = lease_id.0;
    let shape = Shape::of(&bytes);
    let body: ExtendBody = contract::decode(&bytes, &state.get().config)?;
    let seconds = body.seconds.0;
    // Lease ids are UUIDs: anything else names no lease, answered in-band like an unknown one.
    if Uuid::parse_str(&lease_id).is_err() {
        return Ok(shape.answer(&not_found(&lease_id)));
    }
    // Queue scopes: a lease holding a partition of a forbidden queue is not extended (in-band).
    if auth.scopes().is_some() {
        let queues = state.get().db.lease_queues(&lease_id).await?;
        if queues.iter().any(|q| !auth.allows(q)) {
            return Ok(shape.answer(&forbidden(&lease_id)));
        }
    }
    let json = to_json(&SqlExtend {
        lease_id: &lease_id,
        seconds,
    });
    let result = state.get().engine.extend(ExtendRequest { json }).await?;
    Ok(shape.answer(&result))
}

/// The form of the answer: the spec's array, or its single entry for a body-less request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Array,
    Entry,
}

impl Shape {
    /// `Entry` when the request carried no body at all (not even `{}`).
    fn of(body: &[u8]) -> Shape {
        if body.is_empty() {
            Shape::Entry
        } else {
            Shape::Array
        }
    }

    /// `200` with `entry` (one result object) in this shape; both carry `"index":0`.
    fn answer(self, entry: &str) -> Response {
        let body = match self {
            Shape::Array => indexed_array([entry]),
            Shape::Entry => {
                let mut out = String::new();
                write_indexed(&mut out, 0, entry);
                out
            }
        };
        json_response(StatusCode::OK, body)
    }
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
    fn only_a_request_without_a_body_gets_the_bare_entry() {
        assert_eq!(Shape::of(b""), Shape::Entry);
        assert_eq!(Shape::of(b"{}"), Shape::Array);
        assert_eq!(Shape::of(br#"{"seconds":5}"#), Shape::Array);
    }

    #[test]
    fn unknown_lease_entry_is_valid_json() {
        let entry: serde_json::Value =
            serde_json::from_str(&not_found("x\"y")).expect("valid JSON");
        assert_eq!(entry["leaseId"], "x\"y");
        assert_eq!(entry["code"], "lease_not_found");
    }
}
