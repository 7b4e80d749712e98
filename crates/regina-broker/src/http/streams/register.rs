//! `POST /streams/v1/queries` (streams-api.md §3.1): registers a query by name, refusing a
//! changed operator chain (`config_hash`) unless the caller consents to drop its state.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::super::access::Auth;
use super::super::body::{BodyBytes, Object};
use super::super::contract::fields::{Flag, Name, RequiredName, RequiredText};
use super::super::contract::{Contract, Limits};
use super::super::error::{json_response, ApiError};
use crate::engine::json::to_json;
use crate::state::AppState;

/// `config_hash`: 1–255 characters (streams-api.md §4).
const CONFIG_HASH_CHARS_MAX: usize = 255;

/// Body of `POST /streams/v1/queries`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RegisterBody {
    /// The query's name (its id across restarts)
    name: RequiredName,
    /// The queue the query reads
    source_queue: RequiredName,
    /// The queue the query pushes to
    #[serde(default)]
    sink_queue: Name,
    /// Hash of the operator chain; a changed one needs `reset`
    config_hash: RequiredText<CONFIG_HASH_CHARS_MAX>,
    /// Drop the state of a changed chain
    #[serde(default)]
    reset: Flag,
}

impl Contract for RegisterBody {}

/// The `regina.stream_register` argument.
#[derive(Serialize)]
struct SqlRegister {
    name: String,
    source_queue: String,
    sink_queue: Option<String>,
    config_hash: String,
    reset: bool,
    /// The id a new query gets (identity fixed at the edge, like every id the broker assigns).
    query_id: Uuid,
}

pub(super) async fn register(
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
    let object = super::super::body::parse_object(&bytes, shared.config.json_depth_max)?;
    let request = parse(&object, Limits::of(&shared.config))?;
    auth.check_queue(&request.source_queue)?;
    if let Some(sink) = &request.sink_queue {
        auth.check_queue(sink)?;
    }
    let answer = shared.db.stream_register(&to_json(&request)).await?;
    mismatch(&answer).map_or_else(|| Ok(json_response(StatusCode::OK, answer)), Err)
}

/// Validates the body (§3.1).
fn parse(object: &Object<'_>, limits: Limits) -> Result<SqlRegister, ApiError> {
    let body: RegisterBody = object.decode(limits)?;
    Ok(SqlRegister {
        name: body.name.0,
        source_queue: body.source_queue.0,
        sink_queue: body.sink_queue.0,
        config_hash: body.config_hash.0,
        reset: body.reset.0.unwrap_or(false),
        query_id: Uuid::now_v7(),
    })
}

/// The `409 config_hash_mismatch` of a refused registration (§3.1), if `answer` is one.
fn mismatch(answer: &str) -> Option<ApiError> {
    #[derive(Deserialize)]
    struct Refusal {
        success: bool,
        query_id: Value,
        name: String,
    }
    let refusal = serde_json::from_str::<Refusal>(answer)
        .ok()
        .filter(|r| !r.success)?;
    let text = format!(
        "config_hash mismatch: operator chain changed for queryId '{}'. Pass reset:true to \
         wipe existing state, or use a new queryId.",
        refusal.name
    );
    Some(
        ApiError::new(StatusCode::CONFLICT, "config_hash_mismatch", text)
            .member("query_id", refusal.query_id)
            .member("name", Value::String(refusal.name)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> Result<SqlRegister, String> {
        let object =
            crate::http::body::parse_object(body.as_bytes(), 8).map_err(|e| format!("{e:?}"))?;
        parse(&object, Limits::of(&crate::config::Config::default())).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn required_fields_have_their_messages() {
        let error = parsed(r#"{"source_queue":"s","config_hash":"h"}"#).err();
        assert!(format!("{error:?}").contains("name is required"));
        let error = parsed(r#"{"name":"n","config_hash":"h"}"#).err();
        assert!(format!("{error:?}").contains("source_queue is required"));
        let error = parsed(r#"{"name":"n","source_queue":"s"}"#).err();
        assert!(format!("{error:?}").contains("config_hash is required"));
        let long = format!(
            r#"{{"name":"n","source_queue":"s","config_hash":"{}"}}"#,
            "h".repeat(256)
        );
        assert!(format!("{:?}", parsed(&long).err()).contains("at most 255"));
        let error = parsed(r#"{"name":"n","source_queue":"s","config_hash":"h","reset":"true"}"#);
        assert!(format!("{:?}", error.err()).contains("reset must be a boolean"));
    }

    #[test]
    fn an_empty_sink_is_absent() {
        let request =
            parsed(r#"{"name":"n","source_queue":"s","sink_queue":"","config_hash":"h"}"#)
                .expect("valid");
        assert_eq!(request.sink_queue, None);
        assert!(!request.reset);
    }

    #[test]
    fn a_refusal_becomes_409_with_the_mismatch_text() {
        let error = mismatch(
            r#"{"success": false, "code": "config_hash_mismatch", "query_id": "q", "name": "n"}"#,
        )
        .expect("refusal");
        let body = serde_json::to_value(&error).expect("JSON");
        assert_eq!(body["code"], "config_hash_mismatch");
        assert!(body["error"]
            .as_str()
            .is_some_and(|t| t.starts_with("config_hash mismatch")));
        assert_eq!(body["query_id"], "q");
        assert_eq!(error.into_response().status(), StatusCode::CONFLICT);
        assert!(mismatch(r#"{"success": true, "query_id": "q", "name": "n"}"#).is_none());
    }
}
