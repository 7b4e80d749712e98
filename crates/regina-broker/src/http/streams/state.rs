//! `POST /streams/v1/state/get` (streams-api.md §3.2): a shard's state rows, filtered by keys,
//! a literal key prefix and a numeric `windowEnd` bound. Each request is validated on its own and
//! makes its own database call, so one malformed request never fails another.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::super::access::Auth;
use super::super::body::{self, BodyBytes, Object};
use super::super::contract::fields::{Json, StateKeysMax};
use super::super::contract::{fail, Contract, Failure, Limits, Problem};
use super::super::error::{json_response, ApiError};
use super::{state_key, state_key_schema, RequiredUuid};
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
    let request = parse(&object, Limits::of(&shared.config))?;
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

/// The keys of a state read: at most `STREAMS_STATE_KEYS_MAX` state keys (absent: none).
#[derive(Debug, Default)]
pub(crate) struct StateKeys(Vec<String>);

impl<'de> Deserialize<'de> for StateKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use super::super::contract::fields::ArrayLimit as _;
        let Some(raw) =
            Option::<&RawValue>::deserialize(deserializer)?.filter(|r| r.get().trim() != "null")
        else {
            return Ok(StateKeys::default());
        };
        let elements: Vec<&RawValue> = serde_json::from_str(raw.get())
            .map_err(|_| fail(Failure::keyed("must be an array")))?;
        let keys_max = StateKeysMax::current();
        if elements.len() > keys_max {
            return Err(fail(Failure {
                problem: Problem::TooMany(keys_max),
                limit: None,
            }));
        }
        elements
            .iter()
            .enumerate()
            .map(|(i, raw)| {
                state_key(raw).map_err(|text| {
                    fail(Failure {
                        problem: Problem::Element {
                            suffix: format!("[{i}]"),
                            message: format!("keys[{i}] {text}"),
                            index: Some(i),
                        },
                        limit: None,
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(StateKeys)
    }
}

/// A literal key prefix (`""` and `null`: none).
#[derive(Debug, Default)]
pub(crate) struct KeyPrefix(Option<String>);

impl<'de> Deserialize<'de> for KeyPrefix {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(raw) =
            Option::<&RawValue>::deserialize(deserializer)?.filter(|r| r.get().trim() != "null")
        else {
            return Ok(KeyPrefix(None));
        };
        let prefix = state_key(raw).map_err(|text| fail(Failure::keyed(text)))?;
        Ok(KeyPrefix(Some(prefix).filter(|p| !p.is_empty())))
    }
}

/// A `windowEnd` bound: a JSON number, passed verbatim (`null`: none).
#[derive(Debug, Default)]
pub(crate) struct RipeBound<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for RipeBound<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Json::deserialize(deserializer)?
            .0
            .filter(|r| r.get().trim() != "null");
        if let Some(raw) = raw {
            if serde_json::from_str::<serde_json::Number>(raw.get()).is_err() {
                let message = "must be a number (epoch milliseconds)";
                return Err(fail(Failure::keyed(message)));
            }
        }
        Ok(RipeBound(raw))
    }
}

impl JsonSchema for StateKeys {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "StateKeys".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": ["array", "null"], "items": state_key_schema(),
                      "maxItems": crate::config::defaults::STREAMS_STATE_KEYS_MAX})
    }
}

impl JsonSchema for KeyPrefix {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "KeyPrefix".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [state_key_schema(), {"type": "null"}]})
    }
}

impl JsonSchema for RipeBound<'_> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "RipeBound".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": ["number", "null"]})
    }
}

/// Body of `POST /streams/v1/state/get`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct StateGetBody<'a> {
    /// The query
    query_id: RequiredUuid,
    /// The shard's partition
    partition_id: RequiredUuid,
    /// Only these keys
    #[serde(default)]
    keys: StateKeys,
    /// Only keys starting with this text (literally)
    #[serde(default)]
    key_prefix: KeyPrefix,
    /// Only rows whose numeric `windowEnd` is at or before this, epoch milliseconds
    #[serde(default, borrow)]
    ripe_at_or_before: RipeBound<'a>,
}

impl Contract for StateGetBody<'_> {}

/// Validates the body (§3.2).
fn parse<'a>(object: &Object<'a>, limits: Limits) -> Result<SqlStateGet<'a>, ApiError> {
    let body: StateGetBody<'a> = object.decode(limits)?;
    Ok(SqlStateGet {
        query_id: body.query_id.0,
        partition_id: body.partition_id.0,
        keys: body.keys.0,
        key_prefix: body.key_prefix.0,
        ripe_at_or_before: body.ripe_at_or_before.0,
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
        let config = crate::config::Config {
            streams_state_keys_max: keys_max,
            ..crate::config::Config::default()
        };
        parse(&object, Limits::of(&config))
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
