//! Reserved streams routes (spec §3.13): `501 not_implemented` until a later version.

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;

use super::error::ApiError;
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/streams/v1/queries", post(reserved))
        .route("/streams/v1/cycle", post(reserved))
        .route("/streams/v1/state/get", post(reserved))
}

async fn reserved() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "not_implemented",
        "Streams API is not available in this version",
    )
}
