//! `POST /streams/v1/cycle` (streams-api.md §3.3): state ops, sink pushes and the source ack in
//! one PostgreSQL transaction (`regina.stream_cycle`). Sink items go through the one preparation
//! path of pushed items (`push_items`: validation, ids, sealing, `producerSub`); a cycle is never
//! diverted to the failover buffer (with PostgreSQL down it answers `503`).

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use uuid::Uuid;

use super::super::access::Auth;
use super::super::body::{self, BodyBytes, Object};
use super::super::contract::fields::{
    self, Flag, FreeText, Int, Json, Name, Nested, OptionalItems, RequiredText, Text, Unlimited,
};
use super::super::contract::{fail, Contract, Failure, Limits, Problem};
use super::super::error::{json_response, ApiError};
use super::super::push_items::{self, ItemBody, PreparedItem, ENCRYPTION_UNAVAILABLE};
use super::{query_not_found, state_key, state_key_schema, RequiredUuid};
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

/// The ids of a cycle, read first: a failure repeats them once they are valid.
#[derive(Debug, Deserialize)]
struct CycleIds {
    query_id: RequiredUuid,
    partition_id: RequiredUuid,
}

impl Contract for CycleIds {}

/// Body of `POST /streams/v1/cycle`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CycleBody<'a> {
    /// The query
    query_id: RequiredUuid,
    /// The shard's (source) partition
    partition_id: RequiredUuid,
    /// The group the source is read by (queue mode when absent)
    #[serde(default)]
    consumer_group: Name,
    /// State changes; with the push items and the ack at most TRANSACTION_OPERATIONS_MAX
    #[serde(default, borrow)]
    state_ops: OptionalItems<'a, StateOp<'a>, Unlimited>,
    /// Items pushed to sink queues
    #[serde(default, borrow)]
    push_items: OptionalItems<'a, ItemBody<'a>, Unlimited>,
    /// The ack of the source messages
    #[serde(default, borrow)]
    ack: Nested<'a, CycleAck>,
    /// Release the source lease after the ack (default true); read last
    #[serde(default, borrow)]
    #[schemars(with = "Flag")]
    #[allow(dead_code)] // read as `ReleaseLease` after the ops and items
    release_lease: Json<'a>,
}

impl Contract for CycleBody<'_> {}

/// `release_lease`, read after the ops and items.
#[derive(Debug, Deserialize)]
struct ReleaseLease {
    #[serde(default)]
    release_lease: Flag,
}

impl Contract for ReleaseLease {}

/// The ack of a cycle (§3.3): `transactionId` required, a known status, `count` an integer ≥ 1
/// when sent (informational), `error` kept as text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CycleAck")]
pub(crate) struct CycleAck {
    /// The last source message acknowledged
    transaction_id: RequiredText,
    /// The outcome (default completed)
    #[serde(default)]
    status: CycleAckStatus,
    /// How many messages the ack covers (informational)
    #[serde(default)]
    #[allow(dead_code)] // checked, not used
    count: Int<1, { i64::MAX }>,
    /// The source lease
    #[serde(default)]
    lease_id: Text,
    /// Why it failed (kept as text)
    #[serde(default)]
    error: FreeText<{ usize::MAX }>,
}

impl Contract for CycleAck {
    fn missing(key: &str, field: &str) -> String {
        let _ = key;
        format!("{field} is required")
    }
}

/// The status of a cycle's ack, as sent.
#[derive(Debug, Default)]
struct CycleAckStatus(Option<String>);

impl<'de> Deserialize<'de> for CycleAckStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let status = Text::<0>::deserialize(deserializer)?.0;
        if let Some(status) = status.as_deref() {
            if !ACK_STATUSES.contains(&status) {
                return Err(fail(Failure {
                    problem: Problem::Element {
                        suffix: String::new(),
                        message: format!("Unknown ack.status: {status}"),
                        index: None,
                    },
                    limit: None,
                }));
            }
        }
        Ok(CycleAckStatus(status))
    }
}

impl JsonSchema for CycleAckStatus {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "CycleAckStatus".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"anyOf": [{"type": "string", "enum": ACK_STATUSES}, {"type": "null"},
                                {"const": ""}]})
    }
}

/// One state op: `{type: "upsert" | "delete", key, value}`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct StateOp<'a> {
    /// `upsert` or `delete`
    #[serde(default, rename = "type")]
    #[schemars(with = "StateOpKind")]
    kind: Text,
    /// The state key
    key: OpKey,
    /// The value an upsert stores (`{}` when absent, `null` kept)
    #[serde(default, borrow)]
    value: Json<'a>,
}

impl Contract for StateOp<'_> {
    fn missing(key: &str, field: &str) -> String {
        let _ = key;
        format!("{field} is required")
    }
}

/// The kinds of state op (schema only).
#[derive(JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum StateOpKind {
    Upsert,
    Delete,
}

/// The key of a state op.
#[derive(Debug, Default)]
struct OpKey(String);

impl<'de> Deserialize<'de> for OpKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Option::<&RawValue>::deserialize(deserializer)?
            .filter(|r| r.get().trim() != "null")
            .ok_or_else(|| fail(Failure::missing()))?;
        let key = state_key(raw).map_err(|text| {
            fail(Failure {
                problem: Problem::Pathed(text),
                limit: None,
            })
        })?;
        Ok(OpKey(key))
    }
}

impl JsonSchema for OpKey {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "StateKey".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        Schema::try_from(state_key_schema()).unwrap_or_default()
    }
}

/// Validates the body (§3.3); `ids` gets the query and partition ids as soon as they are valid.
fn parse<'a>(
    object: &Object<'a>,
    config: &Config,
    producer_sub: Option<&str>,
    ids: &mut (Value, Value),
) -> Result<Cycle<'a>, ApiError> {
    let limits = Limits::of(config);
    let known: CycleIds = object.decode(limits)?;
    *ids = (
        Value::String(known.query_id.0.to_string()),
        Value::String(known.partition_id.0.to_string()),
    );
    let body: CycleBody<'a> = object.decode(limits)?;
    let partition_id = body.partition_id.0;
    let group = body.consumer_group.0;
    let ack = body
        .ack
        .decode("ack", None, limits)?
        .map(|ack| ack_item(ack, partition_id, group.as_deref()));
    let (raw_ops, raw_items) = (body.state_ops.elements, body.push_items.elements);
    let limit = config.transaction_operations_max;
    if raw_ops.len() + raw_items.len() + usize::from(ack.is_some()) > limit {
        return Err(ApiError::too_many_items("state ops and push items", limit));
    }
    let state_ops = state_ops(&raw_ops, limits)?;
    let items = push_items::prepare_at(&raw_items, "push_items", 0, limits, producer_sub)?;
    let release: ReleaseLease = object.decode(limits)?;
    Ok(Cycle {
        query_id: body.query_id.0,
        partition_id,
        state_ops,
        items,
        ack,
        release_lease: release.release_lease.0.unwrap_or(true),
    })
}

/// The state ops as a JSON array of `{type, key, value}`; an upsert without `value` stores `{}`
/// (the Go SDK omits nil values), `null` stays `null`.
fn state_ops(raw_ops: &[&RawValue], limits: Limits) -> Result<String, ApiError> {
    let mut out = String::from("[");
    for (i, raw) in raw_ops.iter().enumerate() {
        let op: StateOp = fields::element(raw, "state_ops", i, i, limits)?;
        let value = match op.kind.0.as_deref() {
            Some("upsert") => Some(op.value.0.map_or("{}", RawValue::get)),
            Some("delete") => None,
            other => {
                let name = other.unwrap_or("(none)");
                return Err(
                    ApiError::validation(format!("Unknown state_op type: {name}"))
                        .field(format!("state_ops[{i}].type"))
                        .index(i),
                );
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
        out.push_str(&to_json(&op.key.0));
        if let Some(value) = value {
            out.push_str(r#","value":"#);
            out.push_str(value);
        }
        out.push('}');
    }
    out.push(']');
    Ok(out)
}

/// The ack as one `regina.ack` item of the source partition (§3.3).
fn ack_item(ack: CycleAck, partition_id: Uuid, group: Option<&str>) -> String {
    json!({
        "transactionId": ack.transaction_id.0,
        "partitionId": partition_id.to_string(),
        "status": ack.status.0,
        "leaseId": ack.lease_id.0,
        "consumerGroup": group,
        "error": ack.error.0,
    })
    .to_string()
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
    let targets: BTreeSet<(String, String)> = pushed
        .iter()
        .map(|i| (i.queue.to_string(), i.partition.to_string()))
        .collect();
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
