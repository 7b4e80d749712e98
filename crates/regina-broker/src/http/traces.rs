//! Traces (http-api.md §3.11): events recorded on a message while it is processed, read back by
//! message, by trace name, and as the list of names. Recording keeps `success` on failure (spec
//! §1.3). Events are deleted with their message (sql/functions/84_traces.sql).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::access::Auth;
use super::body::BodyBytes;
use super::contract::fields::{Name, RequiredText, Text, UuidText};
use super::contract::params::{Page, PathKey};
use super::contract::{self, fail, Contract, Failure, Limits, Params, PathParams, Problem};
use super::error::{json_response, ApiError};
use super::messages::MessageKey;
use super::resources::LABEL_CHARS_MAX;
use crate::config::Config;
use crate::encryption::Encryption;
use crate::engine::json::to_json;
use crate::state::AppState;

/// Longest `eventType`, characters (http-api.md §3.11).
const EVENT_TYPE_CHARS_MAX: usize = 64;
const EVENT_TYPE_DEFAULT: &str = "info";
/// Names per event, and characters per name (http-api.md §3.11).
const TRACE_NAMES_MAX: usize = 32;
const TRACE_NAME_CHARS_MAX: usize = 128;
/// Longest `transactionId`, characters (http-api.md §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
const QUEUE_MODE: &str = "__QUEUE_MODE__";
/// The member the SQL layer puts beside a sealed `message_payload`.
const SEALED_MARK: &str = "\"payloadKeyId\"";

/// `traceNames` as sent: one name or a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum NamesField {
    One(String),
    Many(Vec<Value>),
}

/// The names of an event: a string (`""` is none), an array of strings, or absent/`null`; at
/// most 32 names of 1 to 128 characters without U+0000.
#[derive(Debug, Default)]
pub(crate) struct TraceNames(Vec<String>);

impl<'de> Deserialize<'de> for TraceNames {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<&RawValue>::deserialize(deserializer)?;
        trace_names(raw.filter(|r| r.get().trim() != "null"))
            .map(TraceNames)
            .map_err(fail)
    }
}

fn trace_names(raw: Option<&RawValue>) -> Result<Vec<String>, Failure> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let elements = match serde_json::from_str::<NamesField>(raw.get()) {
        Ok(NamesField::One(name)) if name.is_empty() => return Ok(Vec::new()),
        Ok(NamesField::One(name)) => vec![(String::new(), Value::String(name))],
        Ok(NamesField::Many(list)) if list.len() > TRACE_NAMES_MAX => {
            let message = format!("must hold at most {TRACE_NAMES_MAX} names");
            return Err(Failure::keyed(message).limit(TRACE_NAMES_MAX as u64));
        }
        Ok(NamesField::Many(list)) => list
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("[{i}]"), v))
            .collect(),
        Err(_) => {
            return Err(Failure::keyed(
                "must be a string, an array of strings or null",
            ))
        }
    };
    elements
        .into_iter()
        .map(|(suffix, value)| match value {
            Value::String(name)
                if (1..=TRACE_NAME_CHARS_MAX).contains(&name.chars().count())
                    && !name.contains('\0') =>
            {
                Ok(name)
            }
            _ => Err(Failure {
                problem: Problem::Element {
                    message: format!(
                        "traceNames{suffix} must be a string of 1 to {TRACE_NAME_CHARS_MAX} \
                         characters without NUL"
                    ),
                    suffix,
                    index: None,
                },
                limit: None,
            }),
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

/// The event's `data`: any JSON value but `null`, at most `TRACE_DATA_BYTES_MAX` bytes once
/// compact.
#[derive(Debug, Default)]
pub(crate) struct TraceData(String);

impl<'de> Deserialize<'de> for TraceData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<&RawValue>::deserialize(deserializer)?
            .filter(|r| r.get().trim() != "null")
            .ok_or_else(|| fail(Failure::missing()))?;
        let data = compact(raw.get());
        let bytes_max = Limits::current().trace_data_bytes_max;
        if data.len() > bytes_max {
            let message = format!("must be at most {bytes_max} bytes of JSON");
            return Err(fail(Failure::keyed(message).limit(bytes_max as u64)));
        }
        Ok(TraceData(data))
    }
}

impl JsonSchema for TraceData {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TraceData".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "not": {"type": "null"},
            "description": format!("Any JSON value but null, at most TRACE_DATA_BYTES_MAX \
                                    (default {}) bytes without insignificant whitespace",
                                   crate::config::defaults::TRACE_DATA_BYTES_MAX),
        })
    }
}

impl JsonSchema for TraceNames {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TraceNames".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let name = serde_json::json!({"type": "string", "minLength": 1,
                                      "maxLength": TRACE_NAME_CHARS_MAX,
                                      "pattern": "^[^\\u0000]*$"});
        schemars::json_schema!({"anyOf": [
            {"type": "null"},
            {"const": ""},
            name,
            {"type": "array", "items": name, "maxItems": TRACE_NAMES_MAX},
        ]})
    }
}

/// Body of `POST /api/v1/traces`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TraceBody {
    /// The message's transactionId
    transaction_id: RequiredText<TRANSACTION_ID_CHARS_MAX>,
    /// The message's partition
    partition_id: UuidText,
    /// What happened
    data: TraceData,
    /// The group processing the message (queue mode when absent)
    #[serde(default)]
    consumer_group: Name,
    /// The event's type (default `info`)
    #[serde(default)]
    event_type: Text<EVENT_TYPE_CHARS_MAX>,
    /// Who recorded it
    #[serde(default)]
    worker_id: Text<LABEL_CHARS_MAX>,
    /// Names to find the event by: one, or a list
    #[serde(default)]
    trace_names: TraceNames,
}

impl Contract for TraceBody {
    fn missing(key: &str, _field: &str) -> String {
        match key {
            "data" => "data is required (any JSON value but null)".to_owned(),
            _ => format!("{key} is required"),
        }
    }
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

/// Validates a `POST /api/v1/traces` body: the `regina.trace_record` request and the data.
///
/// # Errors
/// `400 invalid_json` / `validation_failed` naming the field (http-api.md §2.4, §3.11).
fn trace_request(bytes: &[u8], config: &Config) -> Result<(SqlTraceRecord, String), ApiError> {
    let body: TraceBody = contract::decode(bytes, config)?;
    let request = SqlTraceRecord {
        id: Uuid::now_v7(),
        partition_id: body.partition_id.0,
        transaction_id: body.transaction_id.0,
        event_type: body
            .event_type
            .0
            .unwrap_or_else(|| EVENT_TYPE_DEFAULT.to_owned()),
        consumer_group: body
            .consumer_group
            .0
            .unwrap_or_else(|| QUEUE_MODE.to_owned()),
        worker_id: body.worker_id.0,
        trace_names: body.trace_names.0,
    };
    Ok((request, body.data.0))
}

/// What `regina.trace_record` answers: the code of a failure.
#[derive(Deserialize)]
struct Outcome {
    code: Option<String>,
}

pub(super) async fn record(
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

pub(super) async fn by_message(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(key): PathParams<MessageKey>,
) -> Result<Response, ApiError> {
    let query = auth.scoped(to_json(&SqlMessageQuery {
        partition_id: &key.partition_id.0,
        transaction_id: &key.transaction_id.0,
    }));
    let body = state.get().db.traces_by_message(&query).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// The `regina.traces_by_name` / `regina.trace_names_list` query (`name` only for the former).
#[derive(Debug, Serialize, PartialEq)]
struct SqlPageQuery<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    limit: i64,
    offset: i64,
}

/// Path of `GET /api/v1/traces/by-name/{traceName}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TraceNamePath {
    /// The trace name
    trace_name: PathKey<TRACE_NAME_CHARS_MAX>,
}

impl Contract for TraceNamePath {}

pub(super) async fn by_name(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(path): PathParams<TraceNamePath>,
    Params(page): Params<Page<100, 1_000>>,
) -> Result<Response, ApiError> {
    let request = SqlPageQuery {
        name: Some(&path.trace_name.0),
        limit: page.limit.0,
        offset: page.offset.0,
    };
    let shared = state.get();
    let body = shared
        .db
        .traces_by_name(&auth.scoped(to_json(&request)))
        .await?;
    let body = open_payloads(&shared.encryption, body)?;
    Ok(json_response(StatusCode::OK, body))
}

pub(super) async fn names(
    State(state): State<AppState>,
    auth: Auth,
    Params(page): Params<Page<50, 1_000>>,
) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .trace_names_list(&auth.scoped(to_json(&page)))
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

/// The listing with each sealed `message_payload` decrypted (http-api.md §4.13) and its marks
/// removed. A listing without a sealed payload comes back untouched.
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
