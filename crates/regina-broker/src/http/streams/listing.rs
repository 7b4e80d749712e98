//! `GET /api/v1/resources/streams` (RO): one page of the registered streams queries for the
//! dashboard — state size, shards and the last cycle instant. Queries whose source queue lies
//! outside the caller's scopes are left out (spec §1.6).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;

use super::super::access::Auth;
use super::super::error::{json_response, ApiError};
use super::super::query::Query;
use super::super::resources::query_offset;
use crate::engine::json::to_json;
use crate::state::AppState;

/// `limit` of the listing: default and maximum.
pub(crate) const LIMIT_DEFAULT: i64 = 100;
pub(crate) const LIMIT_MAX: i64 = 1_000;

/// The `regina.stream_queries_list` argument.
#[derive(Serialize)]
struct SqlListing {
    limit: i64,
    offset: i64,
}

pub(super) async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let request = to_json(&SqlListing {
        limit: query.integer("limit", 1, LIMIT_MAX, LIMIT_DEFAULT)?,
        offset: query_offset(&query)?,
    });
    let body = state
        .get()
        .db
        .stream_queries_list(&auth.scoped(request))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}
