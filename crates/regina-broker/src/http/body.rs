//! Request bodies (spec §2.4): read under `BODY_BYTES_MAX`, nesting checked by a byte scan before
//! parsing, and fields read from borrowed raw JSON so payloads are never built into trees.

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

    /// An optional string bound for a PostgreSQL `text` value: absent, `null` and `""` are `None`
    /// (spec §2.4). `text` cannot hold U+0000, so a NUL is refused here, naming the field,
    /// instead of failing inside the database.
    ///
    /// # Errors
    /// `400 validation_failed` when the member is not a string or contains U+0000.
    pub(crate) fn opt_string(&self, key: &str) -> Result<Option<String>, ApiError> {
        self.string_member(key)?
            .map(|value| self.refuse_nul(key, value))
            .transpose()
    }

    /// A required string ([`Object::opt_string`] rules); `missing` is the message when it is
    /// absent, empty or not a string.
    ///
    /// # Errors
    /// `400 validation_failed` with `missing`, or naming a U+0000.
    pub(crate) fn required_string(&self, key: &str, missing: &str) -> Result<String, ApiError> {
        let value = self
            .string_member(key)
            .ok()
            .flatten()
            .ok_or_else(|| self.error(key, missing))?;
        self.refuse_nul(key, value)
    }

    /// An optional string of at most `chars_max` characters.
    ///
    /// # Errors
    /// As [`Object::opt_string`]; `400 validation_failed` when it is longer.
    pub(crate) fn opt_string_max(
        &self,
        key: &str,
        chars_max: usize,
    ) -> Result<Option<String>, ApiError> {
        let value = self.opt_string(key)?;
        if value
            .as_ref()
            .is_some_and(|v| v.chars().count() > chars_max)
        {
            let message = format!("{key} must be at most {chars_max} characters");
            return Err(self.error(key, message));
        }
        Ok(value)
    }

    /// An optional free text whose U+0000 characters become U+FFFD: for text that is kept
    /// rather than matched (the ack `error`), where a stray NUL must not cost the request.
    ///
    /// # Errors
    /// `400 validation_failed` when the member is not a string.
    pub(crate) fn opt_string_nul_replaced(&self, key: &str) -> Result<Option<String>, ApiError> {
        Ok(self
            .string_member(key)?
            .map(|value| value.replace('\0', "\u{FFFD}")))
    }

    /// The member as a string, NULs included; absent, `null` and `""` are `None`.
    fn string_member(&self, key: &str) -> Result<Option<String>, ApiError> {
        let Some(raw) = self.raw(key).filter(|r| !is_null(r)) else {
            return Ok(None);
        };
        if kind(raw) != b'"' {
            return Err(self.error(key, format!("{key} must be a string")));
        }
        let value: String = serde_json::from_str(raw.get())
            .map_err(|e| self.error(key, format!("{key} is not a valid string: {e}")))?;
        Ok(Some(value).filter(|v| !v.is_empty()))
    }

    fn refuse_nul(&self, key: &str, value: String) -> Result<String, ApiError> {
        if value.contains('\0') {
            return Err(self.error(key, format!("{key} must not contain NUL characters")));
        }
        Ok(value)
    }

    /// An optional integer in `min..=max`; `300.0` counts as `300` (spec §2.4).
    ///
    /// # Errors
    /// `400 validation_failed` for another type, a fraction or a value out of range.
    pub(crate) fn opt_int(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
        let Some(raw) = self.raw(key).filter(|r| !is_null(r)) else {
            return Ok(None);
        };
        let out_of_range =
            || self.error(key, format!("{key} must be an integer from {min} to {max}"));
        let number: serde_json::Number =
            serde_json::from_str(raw.get()).map_err(|_| out_of_range())?;
        let value = match (number.as_i64(), number.as_f64()) {
            (Some(i), _) => i,
            // 2^63 as f64 is just past i64::MAX; anything that large is out of every range here.
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i64,
            _ => return Err(out_of_range()),
        };
        if value < min || value > max {
            return Err(out_of_range());
        }
        Ok(Some(value))
    }

    /// An optional boolean: JSON `true`/`false` only.
    ///
    /// # Errors
    /// `400 validation_failed` for any other type.
    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.raw(key).map(|r| r.get().trim()) {
            None | Some("null") => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(self.error(key, format!("{key} must be a boolean"))),
        }
    }

    /// An optional array of raw elements (`null` is absent).
    ///
    /// # Errors
    /// `400 validation_failed` when the member is not an array.
    pub(crate) fn opt_array(&self, key: &str) -> Result<Option<Vec<&'a RawValue>>, ApiError> {
        let Some(raw) = self.raw(key).filter(|r| !is_null(r)) else {
            return Ok(None);
        };
        if kind(raw) != b'[' {
            return Err(self.error(key, format!("{key} must be an array")));
        }
        serde_json::from_str(raw.get())
            .map(Some)
            .map_err(|e| self.error(key, format!("{key} is not a valid array: {e}")))
    }

    /// A required array member of at most `len_max` elements.
    ///
    /// # Errors
    /// `400 validation_failed` with `missing` when absent or not an array; `400 too_many_items`
    /// beyond `len_max`.
    pub(crate) fn required_array(
        &self,
        key: &str,
        missing: &str,
        len_max: usize,
    ) -> Result<Vec<&'a RawValue>, ApiError> {
        let array = self
            .opt_array(key)
            .ok()
            .flatten()
            .ok_or_else(|| self.error(key, missing))?;
        if array.len() > len_max {
            return Err(ApiError::too_many_items(key, len_max));
        }
        Ok(array)
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
    fn integers_accept_integral_floats_and_check_ranges() {
        let body = br#"{"a":300,"b":300.0,"c":1.5,"d":"3","e":null,"f":-1,"g":1e3,"h":18446744073709551615}"#;
        let object = parse_object(body, 64).expect("object");
        assert_eq!(object.opt_int("a", 0, 1000).ok(), Some(Some(300)));
        assert_eq!(object.opt_int("b", 0, 1000).ok(), Some(Some(300)));
        assert!(object.opt_int("c", 0, 1000).is_err());
        assert!(object.opt_int("d", 0, 1000).is_err());
        assert_eq!(object.opt_int("e", 0, 1000).ok(), Some(None));
        assert!(object.opt_int("f", 0, 1000).is_err());
        assert_eq!(object.opt_int("g", 0, 1000).ok(), Some(Some(1000)));
        assert!(object.opt_int("h", 0, i64::MAX).is_err());
        assert_eq!(object.opt_int("missing", 0, 1).ok(), Some(None));
    }

    #[test]
    fn strings_and_booleans_are_strict() {
        let body = br#"{"s":"x\u00e9","e":"","n":null,"i":1,"t":true,"f":false,"q":"true"}"#;
        let object = parse_object(body, 64).expect("object");
        assert_eq!(object.opt_string("s").ok(), Some(Some("xé".to_owned())));
        assert_eq!(object.opt_string("e").ok(), Some(None));
        assert_eq!(object.opt_string("n").ok(), Some(None));
        assert!(object.opt_string("i").is_err());
        assert_eq!(object.opt_bool("t").ok(), Some(Some(true)));
        assert_eq!(object.opt_bool("f").ok(), Some(Some(false)));
        assert!(object.opt_bool("q").is_err());
        assert!(object.opt_bool("i").is_err());
    }

    #[test]
    fn nul_characters_are_refused_in_text_or_replaced_in_free_text() {
        let body = br#"{"t":"a\u0000b","k":"ok","free":"x\u0000y\u0000"}"#;
        let object = parse_object(body, 64).expect("object");
        let error = format!("{:?}", object.opt_string("t").err());
        assert!(
            error.contains("validation_failed") && error.contains("t must not contain NUL"),
            "{error}"
        );
        let required = format!("{:?}", object.required_string("t", "t is required").err());
        assert!(required.contains("NUL"), "{required}");
        assert_eq!(
            object.required_string("k", "k is required").ok().as_deref(),
            Some("ok")
        );
        let missing = format!("{:?}", object.required_string("none", "none is required"));
        assert!(missing.contains("none is required"), "{missing}");
        assert_eq!(
            object
                .opt_string_nul_replaced("free")
                .ok()
                .flatten()
                .as_deref(),
            Some("x\u{FFFD}y\u{FFFD}")
        );
    }

    #[test]
    fn nested_objects_report_their_path_and_index() {
        let body = br#"{"items":[{"queue":1}]}"#;
        let object = parse_object(body, 64).expect("object");
        let items = object.opt_array("items").ok().flatten().expect("array");
        let item = Object::from_raw(items[0], "items[0].".into(), Some(0)).expect("object");
        let error = format!("{:?}", item.opt_string("queue").err());
        assert!(error.contains("items[0].queue") && error.contains("index: Some(0)"));
    }
}
