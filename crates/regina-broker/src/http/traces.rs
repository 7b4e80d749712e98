//! Traces (spec §3.11): events recorded on a message while it is processed, read back by
//! message, by trace name, and as the list of names. Recording keeps `success` on failure (spec
//! §1.3). Events are deleted with their message (sql/functions/90_traces.sql).

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::access::Auth;
use super::body::{self, BodyBytes, Object};
use super::error::{json_response, ApiError};
use super::messages::message_key;
use super::names::{name_problem, path_segment};
use super::query::Query;
use super::resources::{query_offset, LABEL_CHARS_MAX};
use crate::config::Config;
use crate::encryption::Encryption;
use crate::engine::json::to_json;
use crate::state::AppState;

/// Longest `eventType`, characters (spec §3.11).
const EVENT_TYPE_CHARS_MAX: usize = 64;
const EVENT_TYPE_DEFAULT: &str = "info";
/// Names per event, and characters per name (spec §3.11).
const TRACE_NAMES_MAX: usize = 32;
const TRACE_NAME_CHARS_MAX: usize = 128;
/// Longest `transactionId`, characters (spec §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
const QUEUE_MODE: &str = "__QUEUE_MODE__";
/// `limit` of the by-name listing and of the names listing: defaults and maximum (§3.11).
const BY_NAME_LIMIT_DEFAULT: i64 = 100;
const NAMES_LIMIT_DEFAULT: i64 = 50;
const LIMIT_MAX: i64 = 1_000;
/// Position of `{traceName}` in `/api/v1/traces/by-name/{traceName}`.
const TRACE_NAME_SEGMENT: usize = 4;
/// The member the SQL layer puts beside a sealed `message_payload`.
const SEALED_MARK: &str = "\"payloadKeyId\"";

/// The routes of traces. A literal segment beats a parameter (spec §2.4): the router tries
/// `by-name` before `{partitionId}`, and `names` is a route of its own.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/traces", post(record))
        .route("/api/v1/traces/names", get(names))
        .route("/api/v1/traces/by-name/{traceName}", get(by_name))
        .route(
            "/api/v1/traces/{partitionId}/{transactionId}",
            get(by_message),
        )
}

/// The `regina.trace_record` request: every field validated, defaults applied, the id given.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct SqlTraceRecord {
    id: Uuid,
    partition_id: String,
    transaction_id: String,
    event_type: String,
    consumer_group: String,
    worker_id: Option<String>,
    trace_names: Vec<String>,
}

/// `traceNames` as sent: one name or a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum NamesField {
    One(String),
    Many(Vec<Value>),
}

/// The names of an event: a string (`""` is none), an array of strings, or absent/`null`.
///
/// # Errors
/// `400 validation_failed` for another type, more than 32 names, or a name that is empty,
/// longer than 128 characters or holds U+0000.
fn trace_names(object: &Object<'_>) -> Result<Vec<String>, ApiError> {
    let Some(raw) = object.raw("traceNames").filter(|r| !body::is_null(r)) else {
        return Ok(Vec::new());
    };
    let elements = match serde_json::from_str::<NamesField>(raw.get()) {
        Ok(NamesField::One(name)) if name.is_empty() => return Ok(Vec::new()),
        Ok(NamesField::One(name)) => vec![(String::from("traceNames"), Value::String(name))],
        Ok(NamesField::Many(list)) if list.len() > TRACE_NAMES_MAX => {
            let message = format!("traceNames must hold at most {TRACE_NAMES_MAX} names");
            return Err(object
                .error("traceNames", message)
                .limit(TRACE_NAMES_MAX as u64));
        }
        Ok(NamesField::Many(list)) => list
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("traceNames[{i}]"), v))
            .collect(),
        Err(_) => {
            let message = "traceNames must be a string, an array of strings or null";
            return Err(object.error("traceNames", message));
        }
    };
    elements
        .into_iter()
        .map(|(field, value)| match value {
            Value::String(name)
                if (1..=TRACE_NAME_CHARS_MAX).contains(&name.chars().count())
                    && !name.contains('\0') =>
            {
                Ok(name)
            }
            _ => {
                let message = format!(
                    "{field} must be a string of 1 to {TRACE_NAME_CHARS_MAX} characters without NUL"
                );
                Err(object.error(&field, message))
            }
        })
        .collect()
}

/// JSON text without the whitespace outside strings: how `data` is measured and stored.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        out.push(c);
    }
    out
}

/// The event's `data`: any JSON value but `null`, at most `bytes_max` bytes once compact.
///
/// # Errors
/// `400 validation_failed` when absent, `null` or larger (with `limit`).
fn trace_data(object: &Object<'_>, bytes_max: usize) -> Result<String, ApiError> {
    let raw = object
        .raw("data")
        .filter(|r| !body::is_null(r))
        .ok_or_else(|| object.error("data", "data is required (any JSON value but null)"))?;
    let data = compact(raw.get());
    if data.len() > bytes_max {
        let message = format!("data must be at most {bytes_max} bytes of JSON");
        return Err(object.error("data", message).limit(bytes_max as u64));
    }
    Ok(data)
}

/// Validates a `POST /api/v1/traces` body: the `regina.trace_record` request and the data.
///
/// # Errors
/// `400 invalid_json` / `validation_failed` naming the field (spec §2.4, §3.11).
fn trace_request(bytes: &[u8], config: &Config) -> Result<(SqlTraceRecord, String), ApiError> {
    let object = body::parse_object(bytes, config.json_depth_max)?;
    let transaction_id = object.required_string("transactionId", "transactionId is required")?;
    if transaction_id.chars().count() > TRANSACTION_ID_CHARS_MAX {
        let message =
            format!("transactionId must be at most {TRANSACTION_ID_CHARS_MAX} characters");
        return Err(object.error("transactionId", message));
    }
    let partition_id = object.required_string("partitionId", "partitionId is required")?;
    if Uuid::parse_str(&partition_id).is_err() {
        return Err(object.error("partitionId", "partitionId must be a UUID"));
    }
    let data = trace_data(&object, config.trace_data_bytes_max)?;
    let consumer_group = object.opt_string("consumerGroup")?;
    if let Some(problem) = consumer_group
        .as_deref()
        .and_then(|g| name_problem(g, config.name_chars_max))
    {
        return Err(object.error("consumerGroup", format!("consumerGroup {problem}")));
    }
    let request = SqlTraceRecord {
        id: Uuid::now_v7(),
        partition_id,
        transaction_id,
        event_type: object
            .opt_string_max("eventType", EVENT_TYPE_CHARS_MAX)?
            .unwrap_or_else(|| EVENT_TYPE_DEFAULT.to_owned()),
        consumer_group: consumer_group.unwrap_or_else(|| QUEUE_MODE.to_owned()),
        worker_id: object.opt_string_max("workerId", LABEL_CHARS_MAX)?,
        trace_names: trace_names(&object)?,
    };
    Ok((request, data))
}

/// What `regina.trace_record` answers: the code of a failure.
#[derive(Deserialize)]
struct Outcome {
    code: Option<String>,
}

async fn record(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (request, data) = trace_request(&bytes, &shared.config).map_err(ApiError::unsuccessful)?;
    let body = shared
        .db
        .trace_record(&auth.scoped(to_json(&request)), &data)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    let outcome: Outcome = serde_json::from_str(&body).map_err(ApiError::internal)?;
    let status = match outcome.code.as_deref() {
        None => StatusCode::CREATED,
        Some("message_not_found") => StatusCode::NOT_FOUND,
        Some("forbidden") => StatusCode::FORBIDDEN,
        Some(other) => return Err(ApiError::internal(format!("unexpected code {other}"))),
    };
    Ok(json_response(status, body))
}

/// The `regina.traces_by_message` query.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlMessageQuery<'a> {
    partition_id: &'a str,
    transaction_id: &'a str,
}

async fn by_message(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
) -> Result<Response, ApiError> {
    let key = message_key(&uri)?;
    let query = auth.scoped(to_json(&SqlMessageQuery {
        partition_id: &key.partition_id,
        transaction_id: &key.transaction_id,
    }));
    let body = state.get().db.traces_by_message(&query).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// The `regina.traces_by_name` / `regina.trace_names_list` query (`name` only for the former).
#[derive(Debug, Serialize, PartialEq)]
struct SqlPageQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    limit: i64,
    offset: i64,
}

/// The trace name a by-name path names, validated like a name in a body.
///
/// # Errors
/// `400 invalid_parameter` naming `traceName`.
fn path_trace_name(uri: &Uri) -> Result<String, ApiError> {
    let name = path_segment(uri, TRACE_NAME_SEGMENT, "traceName")?;
    if !(1..=TRACE_NAME_CHARS_MAX).contains(&name.chars().count()) || name.contains('\0') {
        let message =
            format!("traceName must be 1 to {TRACE_NAME_CHARS_MAX} characters without NUL");
        return Err(ApiError::invalid_parameter("traceName", message));
    }
    Ok(name)
}

fn page_query(
    query: &Query,
    name: Option<String>,
    limit_default: i64,
) -> Result<SqlPageQuery, ApiError> {
    Ok(SqlPageQuery {
        name,
        limit: query.integer("limit", 1, LIMIT_MAX, limit_default)?,
        offset: query_offset(query)?,
    })
}

async fn by_name(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let name = path_trace_name(&uri)?;
    let request = page_query(
        &Query::parse(raw.as_deref()),
        Some(name),
        BY_NAME_LIMIT_DEFAULT,
    )?;
    let shared = state.get();
    let body = shared
        .db
        .traces_by_name(&auth.scoped(to_json(&request)))
        .await?;
    let body = open_payloads(&shared.encryption, body)?;
    Ok(json_response(StatusCode::OK, body))
}

async fn names(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let request = page_query(&Query::parse(raw.as_deref()), None, NAMES_LIMIT_DEFAULT)?;
    let body = state
        .get()
        .db
        .trace_names_list(&auth.scoped(to_json(&request)))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

/// A by-name listing; `data` and `message_payload` stay verbatim.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct NamedTraces {
    traces: Vec<NamedTrace>,
    total: Value,
    pagination: Value,
}

/// One row of a by-name listing, with the marks of a sealed payload (read, never written).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct NamedTrace {
    id: Value,
    transaction_id: Value,
    partition_id: Value,
    event_type: Value,
    data: Box<RawValue>,
    consumer_group: Value,
    worker_id: Value,
    created_at: Value,
    queue_name: Value,
    partition_name: Value,
    message_payload: Box<RawValue>,
    trace_names: Value,
    #[serde(rename = "messageId", default, skip_serializing)]
    message_id: Option<Uuid>,
    #[serde(rename = "payloadKeyId", default, skip_serializing)]
    key_id: Option<String>,
}

/// The listing with each sealed `message_payload` decrypted (spec §4.13) and its marks removed.
/// A listing without a sealed payload comes back untouched.
///
/// # Errors
/// No key or the wrong key for a sealed payload (`503` / `500`).
fn open_payloads(encryption: &Encryption, body: String) -> Result<String, ApiError> {
    if !body.contains(SEALED_MARK) {
        return Ok(body);
    }
    let mut listing: NamedTraces = serde_json::from_str(&body).map_err(ApiError::internal)?;
    for trace in &mut listing.traces {
        let (Some(key_id), Some(message_id)) = (trace.key_id.take(), trace.message_id.take())
        else {
            continue;
        };
        let plain = encryption.open(message_id, &key_id, trace.message_payload.get())?;
        trace.message_payload = RawValue::from_string(plain).map_err(ApiError::internal)?;
    }
    serde_json::to_string(&listing).map_err(ApiError::internal)
}

#[cfg(test)]
mod tests;
