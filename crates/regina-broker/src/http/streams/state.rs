//! `POST /streams/v1/state/get` (streams-api.md §3.2): a shard's state rows, filtered by keys,
//! a literal key prefix and a numeric `windowEnd` bound. Each request is validated on its own and
//! makes its own database call, so one malformed request never fails another.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::super::access::Auth;
use super::super::body::{self, is_null, BodyBytes, Object};
use super::super::error::{json_response, ApiError};
use super::state_key;
use crate::engine::json::to_json;
use crate::state::AppState;

/// The `regina.stream_state_get` argument.
#[derive(Serialize)]
struct SqlStateGet<'a> {
    query_id: Uuid,
    partition_id: Uuid,
    keys: Vec<String>,
    key_prefix: Option<String>,
    /// The JSON number as sent: compared in SQL as `numeric`, so no precision is lost.
    ripe_at_or_before: Option<&'a RawValue>,
}

pub(super) async fn state_get(
    State(state): State<AppState>,
    auth: Auth,
    body: Result<BodyBytes, ApiError>,
) -> Response {
    match run(&state, &auth, body).await {
        Ok(response) => response,
        Err(error) => error.unsuccessful().into_response(),
    }
}

async fn run(
    state: &AppState,
    auth: &Auth,
    body: Result<BodyBytes, ApiError>,
) -> Result<Response, ApiError> {
    let BodyBytes(bytes) = body?;
    let shared = state.get();
    let object = body::parse_object(&bytes, shared.config.json_depth_max)?;
    let request = parse(&object, shared.config.streams_state_keys_max)?;
    if auth.scopes().is_some() {
        // An unknown query has no rows; a known one needs scope over its source queue.
        match shared.db.stream_source_queue(request.query_id).await? {
            Some(queue) => auth.check_queue(&queue)?,
            None => return Ok(json_response(StatusCode::OK, EMPTY.to_owned())),
        }
    }
    let body = shared.db.stream_state_get(&to_json(&request)).await?;
    Ok(json_response(StatusCode::OK, body))
}

const EMPTY: &str = r#"{"success":true,"rows":[]}"#;

/// Validates the body (§3.2).
fn parse<'a>(object: &Object<'a>, keys_max: usize) -> Result<SqlStateGet<'a>, ApiError> {
    let query_id = super::required_uuid(object, "query_id")?;
    let partition_id = super::required_uuid(object, "partition_id")?;
    let raw_keys = object.opt_array("keys")?.unwrap_or_default();
    if raw_keys.len() > keys_max {
        return Err(ApiError::too_many_items("keys", keys_max));
    }
    let keys = raw_keys
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let field = format!("keys[{i}]");
            state_key(raw, &field).map_err(|m| ApiError::validation(m).field(field).index(i))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let key_prefix = match object.raw("key_prefix").filter(|r| !is_null(r)) {
        None => None,
        Some(raw) => Some(state_key(raw, "key_prefix").map_err(|m| object.error("key_prefix", m))?)
            .filter(|p| !p.is_empty()),
    };
    let ripe_at_or_before = object.raw("ripe_at_or_before").filter(|r| !is_null(r));
    if let Some(raw) = ripe_at_or_before {
        if serde_json::from_str::<serde_json::Number>(raw.get()).is_err() {
            let message = "ripe_at_or_before must be a number (epoch milliseconds)";
            return Err(object.error("ripe_at_or_before", message));
        }
    }
    Ok(SqlStateGet {
        query_id,
        partition_id,
        keys,
        key_prefix,
        ripe_at_or_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: &str = r#""query_id":"0196a000-0000-7000-8000-0000000000a1",
                         "partition_id":"0196a000-0000-7000-8000-0000000000a2""#;

    fn parsed(members: &str, keys_max: usize) -> Result<String, String> {
        let body = format!("{{{IDS}{members}}}");
        let object = body::parse_object(body.as_bytes(), 8).map_err(|e| format!("{e:?}"))?;
        parse(&object, keys_max)
            .map(|r| to_json(&r))
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn absent_filters_read_everything() {
        let request = parsed("", 10).expect("valid");
        assert!(request.contains(r#""keys":[]"#), "{request}");
        assert!(request.contains(r#""key_prefix":null"#), "{request}");
        assert!(request.contains(r#""ripe_at_or_before":null"#), "{request}");
        let request = parsed(
            r#","keys":null,"key_prefix":"","ripe_at_or_before":null"#,
            10,
        )
        .expect("valid");
        assert!(request.contains(r#""key_prefix":null"#), "{request}");
    }

    #[test]
    fn numbers_pass_verbatim_and_other_types_are_refused() {
        let request = parsed(r#","ripe_at_or_before":1.5e3"#, 10).expect("valid");
        assert!(
            request.contains(r#""ripe_at_or_before":1.5e3"#),
            "{request}"
        );
        let error = parsed(r#","ripe_at_or_before":"1000""#, 10).expect_err("refused");
        assert!(error.contains("must be a number"), "{error}");
    }

    #[test]
    fn keys_are_strings_within_the_limit() {
        assert!(parsed(r#","keys":["a",""]"#, 2).is_ok());
        let error = parsed(r#","keys":["a","b","c"]"#, 2).expect_err("refused");
        assert!(error.contains("too_many_items"), "{error}");
        let error = parsed(r#","keys":["a",3]"#, 5).expect_err("refused");
        assert!(error.contains("keys[1]"), "{error}");
        let error = parsed(r#","keys":"a""#, 5).expect_err("refused");
        assert!(error.contains("keys must be an array"), "{error}");
        let error = parsed(r#","key_prefix":5"#, 5).expect_err("refused");
        assert!(error.contains("key_prefix must be a string"), "{error}");
    }
}
