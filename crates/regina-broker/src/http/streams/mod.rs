//! The streams routes (streams-api.md): query registration, state reads and cycles, plus the
//! dashboard's listing of registered queries. Every failure body carries `success: false`,
//! `error` and `code`; the other methods on the three paths answer `405` with `Allow: POST,
//! OPTIONS` (§3.4).

mod cycle;
mod listing;
mod register;
mod state;

use std::borrow::Cow;

use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, post, MethodRouter};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::contract::{fail, Failure};
use super::error::ApiError;
use crate::state::AppState;

pub(crate) use cycle::CycleBody;
pub(crate) use listing::ListingQuery;
pub(crate) use register::RegisterBody;
pub(crate) use state::StateGetBody;

/// Longest state key and `key_prefix`, bytes of UTF-8 (streams-api.md §4).
const STATE_KEY_BYTES_MAX: usize = 1_024;

/// `POST /streams/v1/queries`.
pub(super) fn queries_route() -> MethodRouter<AppState> {
    only_post(post(register::register))
}

/// `POST /streams/v1/cycle`.
pub(super) fn cycle_route() -> MethodRouter<AppState> {
    only_post(post(cycle::cycle))
}

/// `POST /streams/v1/state/get`.
pub(super) fn state_route() -> MethodRouter<AppState> {
    only_post(post(state::state_get))
}

/// `GET /api/v1/resources/streams`.
pub(super) fn listing_route() -> MethodRouter<AppState> {
    get(listing::list)
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
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RequiredUuid(pub(crate) Uuid);

impl<'de> Deserialize<'de> for RequiredUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<&RawValue>::deserialize(deserializer)?
            .filter(|r| r.get().trim() != "null")
            .ok_or_else(|| fail(Failure::missing()))?;
        let text: String = serde_json::from_str(raw.get()).map_err(|_| fail(Failure::missing()))?;
        if text.is_empty() {
            return Err(fail(Failure::missing()));
        }
        Uuid::parse_str(&text)
            .map(RequiredUuid)
            .map_err(|_| fail(Failure::keyed("must be a UUID")))
    }
}

impl JsonSchema for RequiredUuid {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "RequiredUuid".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        Schema::try_from(super::contract::fields::uuid_schema()).unwrap_or_default()
    }
}

/// A state key or key prefix: a JSON string (`""` included) of at most
/// [`STATE_KEY_BYTES_MAX`] bytes without U+0000; the problem after the member's name otherwise.
fn state_key(raw: &RawValue) -> Result<String, String> {
    let key: String = serde_json::from_str(raw.get()).map_err(|_| "must be a string".to_owned())?;
    if key.len() > STATE_KEY_BYTES_MAX {
        return Err(format!("must be at most {STATE_KEY_BYTES_MAX} bytes"));
    }
    if key.contains('\0') {
        return Err("must not contain NUL characters".to_owned());
    }
    Ok(key)
}

/// The schema of a state key.
fn state_key_schema() -> serde_json::Value {
    serde_json::json!({"type": "string", "maxLength": STATE_KEY_BYTES_MAX,
                       "pattern": "^[^\\u0000]*$",
                       "description": "At most 1 024 bytes of UTF-8"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode, Contract};

    #[derive(Debug, Deserialize)]
    struct Ids {
        #[serde(default)]
        a: Option<RequiredUuid>,
        #[serde(default)]
        b: Option<RequiredUuid>,
    }

    #[derive(Debug, Deserialize)]
    struct One {
        id: RequiredUuid,
    }

    impl Contract for Ids {}
    impl Contract for One {}

    #[test]
    fn uuids_are_required_strings_in_uuid_form() {
        let config = Config::default();
        let ids: Ids =
            decode(br#"{"a":"0196a000-0000-7000-8000-0000000000A1"}"#, &config).expect("uuid");
        assert_eq!(
            ids.a.map(|a| a.0.to_string()).as_deref(),
            Some("0196a000-0000-7000-8000-0000000000a1")
        );
        assert!(ids.b.is_none());
        let error = |body: &str| format!("{:?}", decode::<One>(body.as_bytes(), &config).err());
        assert!(error(r#"{"id":"x"}"#).contains("id must be a UUID"));
        assert!(error(r#"{"id":5}"#).contains("id is required"));
        assert!(error(r#"{"id":""}"#).contains("id is required"));
        assert!(error(r#"{}"#).contains("id is required"));
        let one: One =
            decode(br#"{"id":"0196a000-0000-7000-8000-0000000000a1"}"#, &config).expect("valid");
        assert_eq!(one.id.0.get_version_num(), 7);
    }

    #[test]
    fn state_keys_take_empty_text_and_refuse_nul_and_length() {
        let raw = |text: &str| RawValue::from_string(text.to_owned()).expect("valid");
        assert_eq!(state_key(&raw(r#""""#)).as_deref(), Ok(""));
        assert_eq!(state_key(&raw(r#""a\u001fb""#)).as_deref(), Ok("a\u{1f}b"));
        assert!(state_key(&raw(r#""a\u0000""#)).is_err());
        assert!(state_key(&raw("7")).is_err());
        let long = format!("\"{}\"", "é".repeat(513));
        assert!(state_key(&raw(&long)).is_err(), "1026 bytes");
        let edge = format!("\"{}\"", "é".repeat(512));
        assert!(state_key(&raw(&edge)).is_ok(), "1024 bytes");
    }
}
