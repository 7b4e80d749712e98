//! `POST /streams/v1/cycle` (streams-api.md §3.3): state ops, sink pushes and the source ack in
//! one PostgreSQL transaction (`regina.stream_cycle`). Sink items go through the one preparation
//! path of pushed items (`push_items`: validation, ids, sealing, `producerSub`); a cycle is never
//! diverted to the failover buffer (with PostgreSQL down it answers `503`).

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::super::access::Auth;
use super::super::body::{self, is_null, BodyBytes, Object};
use super::super::error::{json_response, ApiError};
use super::super::names::name_problem;
use super::super::push_items::{self, PreparedItem, ENCRYPTION_UNAVAILABLE};
use super::{query_not_found, state_key};
use crate::config::Config;
use crate::db::DbError;
use crate::encryption::Encryption;
use crate::engine::json::{indexed_array, to_json};
use crate::engine::{push_arrays, CycleOutcome, CycleRequest};
use crate::state::{AppState, Shared};

/// Ack statuses a cycle takes (§3.3).
const ACK_STATUSES: [&str; 5] = ["completed", "success", "failed", "retry", "dlq"];
/// Refusals for plaintext one cycle may meet before it gives up (one queue learnt each).
const ENCRYPTION_ATTEMPTS_MAX: usize = 8;

/// One validated cycle.
struct Cycle<'a> {
    query_id: Uuid,
    partition_id: Uuid,
    /// The state ops as `regina.stream_cycle` takes them: a JSON array.
    state_ops: String,
    items: Vec<PreparedItem<'a>>,
    /// The ack as one `/ack` item (partitionId and consumerGroup filled in), if any.
    ack: Option<String>,
    release_lease: bool,
}

pub(super) async fn cycle(
    State(state): State<AppState>,
    auth: Auth,
    body: Result<BodyBytes, ApiError>,
) -> Response {
    let mut ids = (Value::Null, Value::Null);
    match run(&state, &auth, body, &mut ids).await {
        Ok(response) => response,
        Err(error) => error
            .unsuccessful()
            .member("query_id", ids.0)
            .member("partition_id", ids.1)
            .member("queueName", Value::Null)
            .member("state_ops_applied", json!(0))
            .member("push_results", json!([]))
            .member("ack_result", Value::Null)
            .into_response(),
    }
}

async fn run(
    state: &AppState,
    auth: &Auth,
    body: Result<BodyBytes, ApiError>,
    ids: &mut (Value, Value),
) -> Result<Response, ApiError> {
    let BodyBytes(bytes) = body?;
    let shared = state.get();
    let object = body::parse_object(&bytes, shared.config.json_depth_max)?;
    // The failure body repeats the ids as sent, once they are known to be UUIDs.
    let cycle = parse(&object, &shared.config, auth.sub(), ids)?;
    check_scopes(shared, auth, &cycle).await?;
    let outcome = commit(shared, &cycle).await?;
    Ok(json_response(StatusCode::OK, answer(&cycle, &outcome)))
}

/// Validates the body (§3.3); `ids` gets the query and partition ids as soon as they are valid.
fn parse<'a>(
    object: &Object<'a>,
    config: &Config,
    producer_sub: Option<&str>,
    ids: &mut (Value, Value),
) -> Result<Cycle<'a>, ApiError> {
    let query_id = super::required_uuid(object, "query_id")?;
    ids.0 = Value::String(query_id.to_string());
    let partition_id = super::required_uuid(object, "partition_id")?;
    ids.1 = Value::String(partition_id.to_string());
    let group = object.opt_string("consumer_group")?;
    if let Some(problem) = group
        .as_deref()
        .and_then(|g| name_problem(g, config.name_chars_max))
    {
        return Err(object.error("consumer_group", format!("consumer_group {problem}")));
    }
    let limit = config.transaction_operations_max;
    let raw_ops = object.opt_array("state_ops")?.unwrap_or_default();
    let raw_items = object.opt_array("push_items")?.unwrap_or_default();
    let ack = match object.raw("ack").filter(|r| !is_null(r)) {
        None => None,
        Some(raw) => {
            let ack = Object::from_raw(raw, "ack.".to_owned(), None)?;
            Some(ack_item(&ack, partition_id, group.as_deref())?)
        }
    };
    if raw_ops.len() + raw_items.len() + usize::from(ack.is_some()) > limit {
        return Err(ApiError::too_many_items("state ops and push items", limit));
    }
    let state_ops = state_ops(&raw_ops)?;
    let items = push_items::prepare_at(
        &raw_items,
        "push_items",
        0,
        config.name_chars_max,
        producer_sub,
    )?;
    Ok(Cycle {
        query_id,
        partition_id,
        state_ops,
        items,
        ack,
        release_lease: object.opt_bool("release_lease")?.unwrap_or(true),
    })
}

/// The state ops as a JSON array of `{type, key, value}`; an upsert without `value` stores `{}`
/// (the Go SDK omits nil values), `null` stays `null`.
fn state_ops(raw_ops: &[&serde_json::value::RawValue]) -> Result<String, ApiError> {
    let mut out = String::from("[");
    for (i, raw) in raw_ops.iter().enumerate() {
        let op = Object::from_raw(raw, format!("state_ops[{i}]."), Some(i))?;
        let kind = op.opt_string("type")?;
        let key_field = format!("state_ops[{i}].key");
        let key = op
            .raw("key")
            .filter(|r| !is_null(r))
            .ok_or_else(|| op.error("key", format!("{key_field} is required")))
            .and_then(|raw| state_key(raw, &key_field).map_err(|m| op.error("key", m)))?;
        let value = match kind.as_deref() {
            Some("upsert") => Some(op.raw("value").map_or("{}", |v| v.get())),
            Some("delete") => None,
            other => {
                let name = other.unwrap_or("(none)");
                return Err(op.error("type", format!("Unknown state_op type: {name}")));
            }
        };
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{"type":"#);
        out.push_str(if value.is_some() {
            r#""upsert""#
        } else {
            r#""delete""#
        });
        out.push_str(r#","key":"#);
        out.push_str(&to_json(&key));
        if let Some(value) = value {
            out.push_str(r#","value":"#);
            out.push_str(value);
        }
        out.push('}');
    }
    out.push(']');
    Ok(out)
}

/// The ack object as one `regina.ack` item (§3.3): `transactionId` required, a known status,
/// `count` an integer ≥ 1 when sent (informational), `error` kept as text.
fn ack_item(ack: &Object<'_>, partition_id: Uuid, group: Option<&str>) -> Result<String, ApiError> {
    let transaction_id = ack.required_string("transactionId", "ack.transactionId is required")?;
    let status = ack.opt_string("status")?;
    if let Some(status) = status.as_deref() {
        if !ACK_STATUSES.contains(&status) {
            return Err(ack.error("status", format!("Unknown ack.status: {status}")));
        }
    }
    ack.opt_int("count", 1, i64::MAX)?;
    Ok(json!({
        "transactionId": transaction_id,
        "partitionId": partition_id.to_string(),
        "status": status,
        "leaseId": ack.opt_string("leaseId")?,
        "consumerGroup": group,
        "error": ack.opt_string_nul_replaced("error")?,
    })
    .to_string())
}

/// `403 forbidden` unless the caller has scope over the query's source queue and every sink
/// item's queue (§2). An unknown query answers `404` here already.
async fn check_scopes(shared: &Shared, auth: &Auth, cycle: &Cycle<'_>) -> Result<(), ApiError> {
    if auth.scopes().is_none() {
        return Ok(());
    }
    let source = shared
        .db
        .stream_source_queue(cycle.query_id)
        .await?
        .ok_or_else(query_not_found)?;
    auth.check_queue(&source)?;
    for item in &cycle.items {
        auth.check_queue(&item.queue)?;
    }
    Ok(())
}

/// Runs the cycle. A queue this instance did not know to encrypt refuses plaintext inside the
/// database; each refusal teaches one queue, as for transactions.
async fn commit(shared: &Shared, cycle: &Cycle<'_>) -> Result<CycleOutcome, ApiError> {
    let encryption = &shared.encryption;
    for _ in 0..ENCRYPTION_ATTEMPTS_MAX {
        let request = render(cycle, encryption);
        match shared.engine.stream_cycle(&request).await {
            Ok(outcome) => return Ok(outcome),
            Err(DbError::TransactionAborted { detail }) => {
                let refusal = Refusal::read(&detail)?;
                if refusal.code != "encryption_required" {
                    return Err(refusal.into_error());
                }
                let Some(queue) = refusal.queue_name else {
                    return Err(ApiError::internal("encryption refusal without its queue"));
                };
                encryption.remember(&queue, true);
                if !encryption.available() {
                    return Err(ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        ENCRYPTION_UNAVAILABLE,
                        "Queue encrypts payloads but no encryption key is configured",
                    ));
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
    Err(ApiError::internal(
        "cycle pushes kept meeting queues that encrypt",
    ))
}

/// The `regina.stream_cycle` arguments, sink payloads sealed for queues that encrypt.
fn render(cycle: &Cycle<'_>, encryption: &Encryption) -> CycleRequest {
    let pushed = push_items::render(&cycle.items, encryption, |q| encryption.queue_encrypts(q));
    let (elements, payloads) = push_arrays(pushed.iter());
    let request = format!(
        r#"{{"query_id":"{}","partition_id":"{}","state_ops":{},"push_items":{},"ack":{},"release_lease":{}}}"#,
        cycle.query_id,
        cycle.partition_id,
        cycle.state_ops,
        elements,
        cycle.ack.as_deref().unwrap_or("null"),
        cycle.release_lease
    );
    let targets: BTreeSet<(String, String)> =
        pushed.into_iter().map(|i| (i.queue, i.partition)).collect();
    CycleRequest {
        request,
        payloads,
        targets,
    }
}

/// A refused cycle, as `regina.stream_cycle` reports it (nothing applied).
#[derive(Deserialize)]
struct Refusal {
    code: String,
    error: String,
    #[serde(rename = "queueName")]
    queue_name: Option<String>,
    index: Option<usize>,
}

impl Refusal {
    fn read(detail: &str) -> Result<Refusal, ApiError> {
        serde_json::from_str(detail)
            .map_err(|_| ApiError::internal(format!("unreadable cycle refusal: {detail}")))
    }

    /// The answer (§3.3): status by code, the database's text.
    fn into_error(self) -> ApiError {
        let (status, code) = match self.code.as_str() {
            "query_not_found" => (StatusCode::NOT_FOUND, "query_not_found"),
            "message_not_found" => (StatusCode::NOT_FOUND, "message_not_found"),
            "lease_expired" => (StatusCode::CONFLICT, "lease_expired"),
            "not_leased" => (StatusCode::CONFLICT, "not_leased"),
            "already_settled" => (StatusCode::CONFLICT, "already_settled"),
            "group_mismatch" => (StatusCode::CONFLICT, "group_mismatch"),
            "queue_full" => (StatusCode::TOO_MANY_REQUESTS, "queue_full"),
            other => return ApiError::internal(format!("cycle refused with code {other:?}")),
        };
        let error = ApiError::new(status, code, self.error);
        match self.index {
            Some(index) => error.index(index).field(format!("push_items[{index}]")),
            None => error,
        }
    }
}

/// The `200` body of a committed cycle.
fn answer(cycle: &Cycle<'_>, outcome: &CycleOutcome) -> String {
    #[derive(Deserialize, Default)]
    struct Summary {
        #[serde(rename = "queueName")]
        queue_name: Option<String>,
        state_ops_applied: u64,
        replayed: bool,
    }
    let summary: Summary = serde_json::from_str(&outcome.summary).unwrap_or_default();
    let ack_result = if summary.replayed {
        r#"{"success":true,"count":0,"lease_released":false,"dlq":false}"#
    } else {
        outcome.ack.as_deref().unwrap_or("null")
    };
    format!(
        r#"{{"success":true,"query_id":"{}","partition_id":"{}","queueName":{},"state_ops_applied":{},"push_results":{},"ack_result":{}{}}}"#,
        cycle.query_id,
        cycle.partition_id,
        to_json(&summary.queue_name),
        summary.state_ops_applied,
        indexed_array(outcome.pushes.iter().map(String::as_str)),
        ack_result,
        if summary.replayed {
            r#","replayed":true"#
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests;
