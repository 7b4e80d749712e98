//! The HTTP API: one module per resource, each handler next to its request types; the catalogue
//! declares every route once (path, access level, request types, answers, handler). Handlers take
//! validated request types (`contract`), call the engine or the database module, and never hold
//! SQL text.

mod access;
mod ack;
mod analytics;
mod body;
mod buffers;
pub(crate) mod catalog;
mod configure;
mod consumer_groups;
mod contract;
mod dlq;
pub(crate) mod error;
mod health;
mod lease;
mod maintenance;
mod messages;
mod metrics;
mod names;
mod observe;
pub mod openapi;
mod pop;
mod push;
mod push_items;
mod query;
mod range;
mod resources;
pub(crate) mod server;
mod status;
pub(crate) mod streams;
mod timestamp;
mod traces;
mod transaction;
pub(crate) mod webapp;

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tracing::Instrument;

use crate::state::AppState;
use error::ApiError;

/// The path as the client sent it, before the trailing `/` was dropped.
#[derive(Clone)]
struct OriginalPath(String);

/// The broker's router: every route of this scope, JSON `404`/`405` for the rest, and on every
/// response the CORS headers, `X-Request-Id` and the in-flight limit (http-api.md §1.2, §6).
pub fn app(state: AppState) -> Router {
    // Every served route is a catalogue entry: the access guard below covers exactly those routes.
    let api = catalog::router();
    // A route layer sees the matched template (its catalogue entry); unknown routes skip it and
    // keep their JSON 404/405. Without authentication there is nothing to check.
    let api = if state.get().auth.is_some() {
        api.route_layer(middleware::from_fn_with_state(state.clone(), access::guard))
    } else {
        api
    };
    // Outermost route layer: answers of the access guard keep their route template too.
    let api = api.route_layer(middleware::from_fn(observe::route_template));
    let routes = api
        // The dashboard for `GET`s outside the API; the JSON 404 of an unknown route otherwise.
        // Outside the access guard: the dashboard's files are public (http-api.md §1.6).
        .fallback_service(webapp::router(state.clone()))
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    // The edge layer sits outside the routing router so it can normalise the path first; the
    // request counter outside both, so it sees every answer.
    Router::new()
        .fallback_service(routes)
        .layer(middleware::from_fn_with_state(state.clone(), edge))
        .layer(middleware::from_fn_with_state(state, observe::count))
}

async fn not_found(
    method: Method,
    uri: Uri,
    original: Option<axum::Extension<OriginalPath>>,
) -> ApiError {
    ApiError::route_not_found(method.as_str(), &request_path(&uri, original))
}

async fn method_not_allowed(
    method: Method,
    uri: Uri,
    original: Option<axum::Extension<OriginalPath>>,
) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), &request_path(&uri, original))
}

/// The path as the client sent it (before the trailing `/` was trimmed).
fn request_path(uri: &Uri, original: Option<axum::Extension<OriginalPath>>) -> String {
    original.map_or_else(|| uri.path().to_owned(), |o| o.0 .0)
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

async fn edge(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let id = names::request_id(
        request
            .headers()
            .get(&REQUEST_ID)
            .map(HeaderValue::as_bytes),
    );
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        request_id = %id,
    );
    let shared = state.get();
    let mut response = async {
        if request.method() == Method::OPTIONS {
            return preflight();
        }
        // Parked and in-flight requests finish; new ones are turned away at once.
        if shared.waiters.is_shutting_down() {
            return ApiError::shutting_down().into_response();
        }
        drop_trailing_slash(&mut request);
        // The metrics routes are local and cheap: an instance at its limit must stay
        // observable, and polling it must not take the room of real work.
        let _permit = if metrics::exempt_from_inflight_limit(request.uri().path()) {
            None
        } else {
            let Ok(permit) = shared.inflight.clone().try_acquire_owned() else {
                return ApiError::overloaded("requests in flight", shared.config.http_inflight_max)
                    .into_response();
            };
            Some(permit)
        };
        let started = Instant::now();
        let response = next.run(request).await;
        tracing::debug!(
            status = response.status().as_u16(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "answered"
        );
        response
    }
    .instrument(span)
    .await;
    decorate(response.headers_mut(), &shared.cors_origin, &id);
    response
}

fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    response
}

/// One trailing `/` is ignored (http-api.md §2.4).
fn drop_trailing_slash(request: &mut Request) {
    let path = request.uri().path();
    if path.len() <= 1 || !path.ends_with('/') {
        return;
    }
    let original = path.to_owned();
    let trimmed = &original[..original.len() - 1];
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{trimmed}?{query}"),
        None => trimmed.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    if let Ok(pq) = path_and_query.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
            request.extensions_mut().insert(OriginalPath(original));
        }
    }
}

/// The headers every response carries: CORS (http-api.md §1.2) and the request id.
fn decorate(headers: &mut HeaderMap, cors_origin: &HeaderValue, request_id: &str) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, cors_origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PUT, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, Authorization, X-Request-Id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("X-Request-Id, X-Regina-Empty-Reason, X-Total-Count, Retry-After"),
    );
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(REQUEST_ID, value);
    }
}
