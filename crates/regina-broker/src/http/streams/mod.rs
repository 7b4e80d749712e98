//! The streams routes (streams-api.md): query registration, state reads and cycles, plus the
//! dashboard's listing of registered queries. Every failure body carries `success: false`,
//! `error` and `code`; the other methods on the three paths answer `405` with `Allow: POST,
//! OPTIONS` (§3.4).

mod cycle;
mod listing;
mod register;
mod state;

use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use uuid::Uuid;

use super::body::{is_null, Object};
use super::error::ApiError;
use crate::state::AppState;

pub(crate) use listing::{LIMIT_DEFAULT, LIMIT_MAX};

/// Longest state key and `key_prefix`, bytes of UTF-8 (streams-api.md §4).
const STATE_KEY_BYTES_MAX: usize = 1_024;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/streams/v1/queries", only_post(post(register::register)))
        .route("/streams/v1/cycle", only_post(post(cycle::cycle)))
        .route("/streams/v1/state/get", only_post(post(state::state_get)))
        .route("/api/v1/resources/streams", get(listing::list))
}

/// A streams route: any other method answers `405` with the `Allow` of §3.4.
fn only_post(router: MethodRouter<AppState>) -> MethodRouter<AppState> {
    router.fallback(|method: Method, uri: Uri| async move {
        let mut response = ApiError::method_not_allowed(method.as_str(), uri.path())
            .unsuccessful()
            .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
        response
    })
}

/// `404 query_not_found`.
fn query_not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "query_not_found", "Query not found")
}

/// A required UUID member (`query_id`, `partition_id`): missing, `null`, empty or not a string
/// → `400 <key> is required`; not a UUID → `400 validation_failed` naming it.
fn required_uuid(object: &Object<'_>, key: &str) -> Result<Uuid, ApiError> {
    let missing = || object.error(key, format!("{key} is required"));
    let raw = object
        .raw(key)
        .filter(|r| !is_null(r))
        .ok_or_else(missing)?;
    let text: String = serde_json::from_str(raw.get()).map_err(|_| missing())?;
    if text.is_empty() {
        return Err(missing());
    }
    Uuid::parse_str(&text).map_err(|_| object.error(key, format!("{key} must be a UUID")))
}

/// A state key or key prefix: a JSON string (`""` included) of at most
/// [`STATE_KEY_BYTES_MAX`] bytes without U+0000. `what` names it in messages.
fn state_key(raw: &serde_json::value::RawValue, what: &str) -> Result<String, String> {
    let key: String =
        serde_json::from_str(raw.get()).map_err(|_| format!("{what} must be a string"))?;
    if key.len() > STATE_KEY_BYTES_MAX {
        return Err(format!(
            "{what} must be at most {STATE_KEY_BYTES_MAX} bytes"
        ));
    }
    if key.contains('\0') {
        return Err(format!("{what} must not contain NUL characters"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body;

    #[test]
    fn uuids_are_required_strings_in_uuid_form() {
        let object = body::parse_object(
            br#"{"a":"0196a000-0000-7000-8000-0000000000A1","b":"x","c":5,"d":""}"#,
            8,
        )
        .expect("object");
        let id = required_uuid(&object, "a").expect("uuid");
        assert_eq!(id.to_string(), "0196a000-0000-7000-8000-0000000000a1");
        let error = |key| format!("{:?}", required_uuid(&object, key).err());
        assert!(error("b").contains("b must be a UUID"), "{}", error("b"));
        assert!(error("c").contains("c is required"), "{}", error("c"));
        assert!(error("d").contains("d is required"), "{}", error("d"));
        assert!(error("e").contains("e is required"), "{}", error("e"));
    }

    #[test]
    fn state_keys_take_empty_text_and_refuse_nul_and_length() {
        let raw =
            |text: &str| serde_json::value::RawValue::from_string(text.to_owned()).expect("valid");
        assert_eq!(state_key(&raw(r#""""#), "key").as_deref(), Ok(""));
        assert_eq!(
            state_key(&raw(r#""a\u001fb""#), "key").as_deref(),
            Ok("a\u{1f}b")
        );
        assert!(state_key(&raw(r#""a\u0000""#), "key").is_err());
        assert!(state_key(&raw("7"), "key").is_err());
        let long = format!("\"{}\"", "é".repeat(513));
        assert!(state_key(&raw(&long), "key").is_err(), "1026 bytes");
        let edge = format!("\"{}\"", "é".repeat(512));
        assert!(state_key(&raw(&edge), "key").is_ok(), "1024 bytes");
    }
}
