//! The one error answer of the HTTP API: `{error, code}` plus optional `field`, `index`, `limit`
//! (http-api.md §1.3), with the stable codes of the registry in http-api.md §2.3.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::db::DbError;
use crate::encryption::OpenError;
use crate::push::PushError;

/// An error answer.
#[derive(Debug, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    /// `false` on endpoints whose success body carries `success` (http-api.md §1.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    success: Option<bool>,
    error: String,
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u64>,
    /// More top-level members, for endpoints that keep their success shape on failure (§1.3).
    /// Boxed: most errors have none, and every `Result` carrying this type pays for its size.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    members: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

impl ApiError {
    /// An error with a status, a stable code and a message.
    pub(crate) fn new(status: StatusCode, code: &'static str, error: impl Into<String>) -> Self {
        ApiError {
            status,
            success: None,
            error: error.into(),
            code,
            field: None,
            index: None,
            limit: None,
            members: None,
        }
    }

    /// Adds a top-level member to the body, e.g. the transaction's `success: false`.
    pub(crate) fn member(mut self, key: &str, value: serde_json::Value) -> Self {
        self.members
            .get_or_insert_with(Box::default)
            .insert(key.to_owned(), value);
        self
    }

    /// Names the offending field (`items[3].traceId`).
    pub(crate) fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Adds `success: false`, for endpoints whose success body has `success: true`.
    pub(crate) fn unsuccessful(mut self) -> Self {
        self.success = Some(false);
        self
    }

    /// Names the offending array index.
    pub(crate) fn index(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }

    /// Names the limit that was exceeded.
    pub(crate) fn limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// `404 queue_not_found` (http-api.md §2.3).
    pub(crate) fn queue_not_found() -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "queue_not_found", "Queue not found")
    }

    /// `404 partition_not_found` (http-api.md §2.3).
    pub(crate) fn partition_not_found() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "partition_not_found",
            "Partition not found",
        )
    }

    /// `400 invalid_json`.
    pub(crate) fn invalid_json(detail: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("Invalid JSON: {detail}"),
        )
    }

    /// `400 validation_failed`.
    pub(crate) fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation_failed", message)
    }

    /// `400 invalid_parameter` naming the query or path key.
    pub(crate) fn invalid_parameter(key: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_parameter", message).field(key)
    }

    /// `400 too_many_items`.
    pub(crate) fn too_many_items(what: &str, limit: usize) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "too_many_items",
            format!("Too many {what} (limit {limit})"),
        )
        .limit(limit as u64)
    }

    /// `413 body_too_large`.
    pub(crate) fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("Request body larger than {limit} bytes"),
        )
        .limit(limit as u64)
    }

    /// `503 overloaded`.
    pub(crate) fn overloaded(what: &str, limit: usize) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            format!("Too many {what}"),
        )
        .limit(limit as u64)
    }

    /// `503 buffer_unavailable`: the push needed the failover buffer, which could not take it.
    pub(crate) fn buffer_unavailable(detail: &str) -> Self {
        tracing::warn!(%detail, "push refused: failover buffer unavailable");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "buffer_unavailable",
            "Database unavailable and failover buffer unavailable",
        )
    }

    /// `503 shutting_down`.
    pub(crate) fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "Broker is shutting down",
        )
    }

    /// `500 internal`; the detail goes to the log only.
    pub(crate) fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(%detail, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
        )
    }

    /// `404 route_not_found`.
    pub(crate) fn route_not_found(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "route_not_found",
            format!("Not found: {method} {path}"),
        )
    }

    /// `405 method_not_allowed` (the router adds `Allow`).
    pub(crate) fn method_not_allowed(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("Method not allowed: {method} {path}"),
        )
    }
}

impl From<DbError> for ApiError {
    fn from(error: DbError) -> Self {
        match &error {
            DbError::Unavailable(_) => {
                tracing::warn!(%error, "database unavailable");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_unavailable",
                    "Database unavailable",
                )
            }
            DbError::Timeout(_) => {
                tracing::warn!(%error, "database timeout");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_timeout",
                    "Database timed out",
                )
            }
            DbError::Statement { message, .. } if error.is_data_exception() => {
                Self::validation(format!("Invalid value: {message}"))
            }
            _ => Self::internal(&error),
        }
    }
}

impl From<OpenError> for ApiError {
    fn from(error: OpenError) -> Self {
        match error {
            OpenError::NoKey => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "encryption_unavailable",
                "Encrypted payloads cannot be read: no encryption key is configured",
            ),
            OpenError::Failed => {
                tracing::error!("an encrypted payload failed authentication (wrong key?)");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "decryption_failed",
                    "An encrypted payload could not be decrypted",
                )
            }
            OpenError::Malformed(detail) => ApiError::internal(detail),
        }
    }
}

impl From<PushError> for ApiError {
    fn from(error: PushError) -> Self {
        match error {
            PushError::Db(error) => error.into(),
            PushError::BufferUnavailable(detail) => Self::buffer_unavailable(&detail),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_string(&self)
            .unwrap_or_else(|_| r#"{"error":"Internal error","code":"internal"}"#.to_owned());
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.status == StatusCode::SERVICE_UNAVAILABLE
            || self.status == StatusCode::TOO_MANY_REQUESTS
        {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if self.status == StatusCode::PAYLOAD_TOO_LARGE {
            // The rest of the body is never read, so this connection cannot carry another
            // request: say so, or a keep-alive client reuses it and fails its next request.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// A `200`/`201` answer whose body is JSON text already.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_has_code_and_optional_members() {
        let error = ApiError::validation("Queue must be a string")
            .field("items[2].queue")
            .index(2);
        let body = serde_json::to_value(&error).expect("serialisable");
        assert_eq!(
            body,
            serde_json::json!({"error": "Queue must be a string", "code": "validation_failed",
                               "field": "items[2].queue", "index": 2})
        );
    }

    #[test]
    fn database_errors_map_to_503_or_400() {
        let unavailable = ApiError::from(DbError::Unavailable("x".into()));
        assert_eq!(
            (unavailable.status, unavailable.code),
            (StatusCode::SERVICE_UNAVAILABLE, "database_unavailable")
        );
        let timeout = ApiError::from(DbError::Timeout("x".into()));
        assert_eq!(timeout.code, "database_timeout");
        let data = ApiError::from(DbError::Statement {
            code: "22P05".into(),
            message: "bad".into(),
        });
        assert_eq!(
            (data.status, data.code),
            (StatusCode::BAD_REQUEST, "validation_failed")
        );
    }
}
