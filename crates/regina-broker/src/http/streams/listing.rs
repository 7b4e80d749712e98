//! `GET /api/v1/resources/streams` (RO): one page of the registered streams queries for the
//! dashboard — state size, shards and the last cycle instant. Queries whose source queue lies
//! outside the caller's scopes are left out (http-api.md §1.6).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::super::access::Auth;
use super::super::contract::params::Page;
use super::super::contract::Params;
use super::super::error::{json_response, ApiError};
use crate::engine::json::to_json;
use crate::state::AppState;

/// One page of the listing: 100 queries by default, at most 1 000 (the
/// `regina.stream_queries_list` argument).
pub(crate) type ListingQuery = Page<100, 1_000>;

pub(super) async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Params(page): Params<ListingQuery>,
) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .stream_queries_list(&auth.scoped(to_json(&page)))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}
