//! Counting of HTTP requests (`http_requests_total`, `http_request_duration_seconds`): the router
//! tags each response of a matched route with its template, and the outermost layer counts every
//! answer — by template, never by raw path, so ids in paths cannot multiply the series.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::metrics::UNMATCHED;
use crate::state::AppState;

/// Route layer: carries the matched route's template to [`count`] on the response.
pub(super) async fn route_template(request: Request, next: Next) -> Response {
    let path = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(path) = path {
        response.extensions_mut().insert(path);
    }
    response
}

/// Outermost layer: counts the request when it arrives, and its answer by route template (or
/// `unmatched`), method and status, with its duration.
pub(super) async fn count(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let metrics = &state.get().metrics;
    metrics.http_received();
    let method = request.method().clone();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str);
    metrics.http_answered(route, &method, response.status(), started.elapsed());
    response
}
