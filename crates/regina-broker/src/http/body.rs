//! Request bodies (http-api.md §2.4): read under `BODY_BYTES_MAX`, nesting checked by a byte scan
//! before parsing, and fields read from borrowed raw JSON so payloads are never built into trees.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::value::RawValue;

use super::error::ApiError;
use crate::state::AppState;

/// A request body read whole under `BODY_BYTES_MAX`: the first step of every JSON endpoint
/// (extract it last, as it consumes the request).
pub(crate) struct BodyBytes(pub(crate) Bytes);

impl FromRequest<AppState> for BodyBytes {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.get().config.body_bytes_max;
        let (parts, body) = request.into_parts();
        read(&parts.headers, body, limit).await.map(BodyBytes)
    }
}

/// Reads the whole body, refusing more than `limit` bytes with `413 body_too_large`.
///
/// # Errors
/// `413` over the limit, `400 invalid_json` when the body cannot be read.
pub(crate) async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::body_too_large(limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(ApiError::body_too_large(limit)),
        Err(error) => Err(ApiError::invalid_json(format!("cannot read body: {error}"))),
    }
}

/// True when JSON text nests arrays/objects deeper than `max`; a cheap scan that runs before
/// the parser so a hostile body cannot make it recurse.
pub(crate) fn depth_exceeds(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses a request body that must be a JSON object; a zero-length body is `{}`.
///
/// # Errors
/// `400 invalid_json` (syntax, depth), `400 validation_failed` (not an object).
pub(crate) fn parse_object(bytes: &[u8], depth_max: usize) -> Result<Object<'_>, ApiError> {
    if bytes.is_empty() {
        return Ok(Object {
            fields: HashMap::new(),
            prefix: String::new(),
            index: None,
        });
    }
    if depth_exceeds(bytes, depth_max) {
        return Err(
            ApiError::invalid_json(format!("nested deeper than {depth_max} levels"))
                .limit(depth_max as u64),
        );
    }
    let raw: &RawValue = serde_json::from_slice(bytes).map_err(ApiError::invalid_json)?;
    Object::from_raw(raw, String::new(), None)
        .map_err(|_| ApiError::validation("Request body must be a JSON object"))
}

/// A JSON object whose members are still raw text.
pub(crate) struct Object<'a> {
    fields: HashMap<String, &'a RawValue>,
    /// Field path prefix for error reports, e.g. `items[3].`.
    prefix: String,
    /// Array position for error reports.
    index: Option<usize>,
}

/// The first byte of a raw JSON value, which tells its type.
fn kind(raw: &RawValue) -> u8 {
    raw.get()
        .trim_start()
        .as_bytes()
        .first()
        .copied()
        .unwrap_or(b'n')
}

/// Whether a raw JSON value is `null`.
pub(crate) fn is_null(raw: &RawValue) -> bool {
    kind(raw) == b'n'
}

impl<'a> Object<'a> {
    /// Reads `raw` as an object; errors name `prefix` (without its trailing dot) and `index`.
    ///
    /// # Errors
    /// `400 validation_failed` when `raw` is not an object.
    pub(crate) fn from_raw(
        raw: &'a RawValue,
        prefix: String,
        index: Option<usize>,
    ) -> Result<Self, ApiError> {
        let not_object = || {
            let mut error = ApiError::validation(format!(
                "{} must be an object",
                if prefix.is_empty() {
                    "body"
                } else {
                    prefix.trim_end_matches('.')
                }
            ))
            .field(prefix.trim_end_matches('.'));
            if let Some(i) = index {
                error = error.index(i);
            }
            error
        };
        if kind(raw) != b'{' {
            return Err(not_object());
        }
        let fields = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
        Ok(Object {
            fields,
            prefix,
            index,
        })
    }

    /// The field path prefix of this object's members (`items[3].`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The array position this object reports in errors.
    pub(crate) fn index(&self) -> Option<usize> {
        self.index
    }

    /// `400 validation_failed` naming `key` of this object.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ApiError {
        let error = ApiError::validation(message).field(format!("{}{key}", self.prefix));
        match self.index {
            Some(i) => error.index(i),
            None => error,
        }
    }

    /// The raw member, if present (`null` included).
    pub(crate) fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.get(key).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_scan_counts_nesting_outside_strings() {
        assert!(!depth_exceeds(br#"{"a":[1,{"b":2}]}"#, 3));
        assert!(depth_exceeds(br#"{"a":[1,{"b":[2]}]}"#, 3));
        assert!(!depth_exceeds(br#"{"a":"[[[[[[\"[[[["}"#, 1));
        assert!(!depth_exceeds(b"]]]]}}}", 1));
        let deep = "[".repeat(65) + &"]".repeat(65);
        assert!(depth_exceeds(deep.as_bytes(), 64));
        assert!(!depth_exceeds(deep.as_bytes(), 65));
    }

    #[test]
    fn empty_body_is_an_empty_object_and_others_must_be_objects() {
        assert!(parse_object(b"", 64).is_ok());
        let not_object = parse_object(b"[1]", 64).err().map(|e| format!("{e:?}"));
        assert!(not_object.is_some_and(|e| e.contains("validation_failed")));
        let invalid = parse_object(b"{\"a\":", 64).err().map(|e| format!("{e:?}"));
        assert!(invalid.is_some_and(|e| e.contains("invalid_json")));
        let deep = parse_object(b"{\"a\":[[[]]]}", 3)
            .err()
            .map(|e| format!("{e:?}"));
        assert!(deep.is_some_and(|e| e.contains("invalid_json")));
    }

    #[test]
    fn nested_objects_report_their_path_and_index() {
        let raw = RawValue::from_string("5".to_owned()).expect("raw");
        let error = format!(
            "{:?}",
            Object::from_raw(&raw, "items[0].".into(), Some(0)).err()
        );
        assert!(
            error.contains("items[0] must be an object") && error.contains("index: Some(0)"),
            "{error}"
        );
    }
}
