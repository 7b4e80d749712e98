//! `POST /api/v1/transaction` (http-api.md §3.7, §4.12): acks and pushes committed together or not
//! at all. Operations are validated by the very functions `/ack` and `/push` use, and pushed items
//! get their identities before the database call; every failure, from a malformed body to an ack
//! refused inside the database, answers `{transactionId, success: false, error, code, results}`.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::access::Auth;
use super::ack::{self, AckItem};
use super::body::{BodyBytes, Object};
use super::contract::fields::{Items, Json, OperationsMax, Text};
use super::contract::{self, Contract, Limits};
use super::error::{json_response, ApiError};
use super::push_items::{self, ItemBody, PreparedItem};
use crate::config::Config;
use crate::db::DbError;
use crate::encryption::Encryption;
use crate::engine::json::{indexed_array, to_json};
use crate::engine::{push_arrays, TransactionRequest};
use crate::state::{AppState, Shared};

/// A refused transaction: why, and the outcomes computed up to the failing operation.
struct Failure {
    error: ApiError,
    results: Vec<Value>,
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        Failure {
            error,
            results: Vec::new(),
        }
    }
}

pub(super) async fn transaction(
    State(state): State<AppState>,
    auth: Auth,
    body: Result<BodyBytes, ApiError>,
) -> Response {
    // Names this transaction in the answer, whatever the outcome (http-api.md §3.7).
    let id = Uuid::now_v7().to_string();
    match run(&state, &auth, body).await {
        Ok(results) => {
            let body = format!(
                r#"{{"transactionId":{},"success":true,"results":{}}}"#,
                to_json(&id),
                indexed_array(results.iter().map(String::as_str))
            );
            json_response(StatusCode::OK, body)
        }
        Err(Failure { error, results }) => error
            .member("transactionId", Value::String(id))
            .member("success", Value::Bool(false))
            .member("results", Value::Array(results))
            .into_response(),
    }
}

async fn run(
    state: &AppState,
    auth: &Auth,
    body: Result<BodyBytes, ApiError>,
) -> Result<Vec<String>, Failure> {
    let BodyBytes(bytes) = body?;
    let shared = state.get();
    let config = &shared.config;
    let body: TransactionBody = contract::decode(&bytes, config)?;
    let operations = body.operations.elements;
    if operations.is_empty() {
        return Err(ApiError::validation("operations array cannot be empty")
            .field("operations")
            .into());
    }
    let operations = parse_operations(&operations, config, auth.sub())?;
    check_scopes(shared, auth, &operations).await?;
    let encryption = &shared.encryption;
    // A queue this instance did not know to encrypt refuses plaintext inside the database; each
    // refusal teaches one queue, so a few attempts seal every queue that needs it.
    for _ in 0..ENCRYPTION_ATTEMPTS_MAX {
        let request = render_request(&operations, encryption);
        match shared.engine.transaction(&request).await {
            Ok(results) => return Ok(results),
            Err(DbError::TransactionAborted { detail }) => match refused_plaintext(&detail) {
                Some(queue) => {
                    encryption.remember(&queue, true);
                    if !encryption.available() {
                        return Err(ApiError::new(
                            StatusCode::SERVICE_UNAVAILABLE,
                            push_items::ENCRYPTION_UNAVAILABLE,
                            "Queue encrypts payloads but no encryption key is configured",
                        )
                        .into());
                    }
                }
                None => return Err(aborted(&detail)),
            },
            Err(error) => return Err(ApiError::from(error).into()),
        }
    }
    Err(ApiError::internal("transaction pushes kept meeting queues that encrypt").into())
}

/// Refusals for plaintext one transaction may meet before it gives up (one queue learnt each).
const ENCRYPTION_ATTEMPTS_MAX: usize = 8;

/// The queue of a push the database refused as plaintext for a queue that encrypts.
fn refused_plaintext(detail: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Detail {
        code: String,
        results: Vec<Value>,
    }
    let detail = serde_json::from_str::<Detail>(detail).ok()?;
    if detail.code != "encryption_required" {
        return None;
    }
    detail.results.last()?["queueName"]
        .as_str()
        .map(str::to_owned)
}

/// Refuses the whole transaction (`403 forbidden`) when one of its pushes or acks names a queue
/// outside the caller's scopes (http-api.md §1.6). Acks name partitions: they are looked up only
/// when the caller has scopes.
async fn check_scopes(
    shared: &Shared,
    auth: &Auth,
    operations: &[Operation<'_>],
) -> Result<(), ApiError> {
    if auth.scopes().is_none() {
        return Ok(());
    }
    let mut partitions = Vec::new();
    for operation in operations {
        match operation {
            Operation::Ack(_, partition_id) => {
                partitions.push(ack::canonical_partition(partition_id));
            }
            Operation::Push(items) => {
                for item in items {
                    auth.check_queue(&item.queue)?;
                }
            }
        }
    }
    if !partitions.is_empty() {
        for queue in shared.db.partition_queues(&partitions).await?.values() {
            auth.check_queue(queue)?;
        }
    }
    Ok(())
}

/// Body of `POST /api/v1/transaction`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransactionBody<'a> {
    /// Ack operations and push operations (at least one); their acks plus pushed items at most
    /// TRANSACTION_OPERATIONS_MAX
    #[serde(borrow)]
    #[schemars(length(min = 1))]
    operations: Items<'a, OperationBody<'a>, OperationsMax>,
    /// Accepted and ignored: each ack checks its own lease (docs/compatibility.md)
    #[serde(default, borrow)]
    #[allow(dead_code)] // accepted, not used
    required_leases: Json<'a>,
}

impl Contract for TransactionBody<'_> {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} array required")
    }
}

/// An operation's `type`, read first.
#[derive(Debug, Deserialize)]
struct OperationKind {
    #[serde(default, rename = "type")]
    kind: Text,
}

impl Contract for OperationKind {}

/// A push operation: `{type: "push", items}`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PushOperation<'a> {
    /// `push`
    #[serde(default, rename = "type")]
    #[schemars(with = "PushTag")]
    #[allow(dead_code)] // read as `OperationKind` first; here for the schema
    kind: Text,
    /// The items pushed
    #[serde(borrow)]
    items: Items<'a, ItemBody<'a>, OperationsMax>,
}

impl Contract for PushOperation<'_> {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} array is required")
    }
}

/// The tag of a push operation (schema only).
#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(dead_code)]
enum PushTag {
    #[serde(rename = "push")]
    Push,
}

/// The tag of an ack operation (schema only).
#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(dead_code)]
enum AckTag {
    #[serde(rename = "ack")]
    Ack,
}

/// An ack operation: `{type: "ack"}` and the members of an ack (schema only).
#[derive(JsonSchema)]
#[allow(dead_code)]
struct AckOperation {
    #[serde(rename = "type")]
    kind: AckTag,
    #[serde(flatten)]
    ack: AckItem,
}

/// One operation of a transaction (schema only: each is decoded by its `type`).
#[derive(Debug)]
pub(crate) struct OperationBody<'a>(std::marker::PhantomData<&'a ()>);

impl JsonSchema for OperationBody<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TransactionOperation".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let push = generator.subschema_for::<PushOperation<'static>>();
        let ack = generator.subschema_for::<AckOperation>();
        schemars::json_schema!({"oneOf": [push, ack]})
    }
}

/// One validated operation.
enum Operation<'a> {
    /// A `regina.ack` element, and the partition id it names.
    Ack(String, String),
    /// Pushed items with their identities fixed.
    Push(Vec<PreparedItem<'a>>),
}

/// Validates every operation. Errors name the field (`operations[2].items[0].queue`) and, as
/// `index`, the position of the offending operation or item in the flattened results.
fn parse_operations<'a>(
    operations: &[&'a RawValue],
    config: &Config,
    producer_sub: Option<&str>,
) -> Result<Vec<Operation<'a>>, ApiError> {
    let limit = config.transaction_operations_max;
    let limits = Limits::of(config);
    let mut count = 0usize;
    let mut out = Vec::with_capacity(operations.len());
    for (position, raw) in operations.iter().enumerate() {
        let op = Object::from_raw(raw, format!("operations[{position}]."), Some(count))?;
        let kind: OperationKind = op.decode(limits)?;
        match kind.kind.0.as_deref() {
            Some("ack") => {
                let mut ack = String::new();
                let key = ack::write_item(&mut ack, op.decode::<AckItem>(limits)?, None);
                out.push(Operation::Ack(ack, key.partition_id));
                count += 1;
            }
            Some("push") => {
                let items = op.decode::<PushOperation>(limits)?.items.elements;
                if count + items.len() > limit {
                    return Err(too_many(limit));
                }
                let path = format!("operations[{position}].items");
                let prepared = push_items::prepare_at(&items, &path, count, limits, producer_sub)?;
                count += prepared.len();
                out.push(Operation::Push(prepared));
            }
            other => {
                let name = other.unwrap_or("(none)");
                return Err(op.error("type", format!("Unknown operation type: {name}")));
            }
        }
        if count > limit {
            return Err(too_many(limit));
        }
    }
    Ok(out)
}

/// The `regina.transaction` arguments; pushed payloads are sealed for queues that encrypt, as
/// `/push` seals them (one preparation of pushed items: `push_items`).
fn render_request(operations: &[Operation<'_>], encryption: &Encryption) -> TransactionRequest {
    let mut out = String::from("[");
    let mut payloads = String::from("[");
    let mut count = 0usize;
    let mut targets = BTreeSet::new();
    for (position, operation) in operations.iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        match operation {
            Operation::Ack(ack, _) => {
                out.push_str(r#"{"type":"ack","ack":"#);
                out.push_str(ack);
                out.push('}');
                count += 1;
            }
            Operation::Push(items) => {
                let pushed =
                    push_items::render(items, encryption, |q| encryption.queue_encrypts(q));
                let (elements, texts) = push_arrays(pushed.iter());
                // Both are JSON arrays: splice their elements into the operation and the payloads.
                out.push_str(r#"{"type":"push","items":"#);
                out.push_str(&elements);
                out.push('}');
                if !pushed.is_empty() {
                    if payloads.len() > 1 {
                        payloads.push(',');
                    }
                    payloads.push_str(&texts[1..texts.len() - 1]);
                }
                count += pushed.len();
                targets.extend(
                    pushed
                        .iter()
                        .map(|i| (i.queue.to_string(), i.partition.to_string())),
                );
            }
        }
    }
    out.push(']');
    payloads.push(']');
    TransactionRequest {
        operations: out,
        payloads,
        count,
        targets,
    }
}

fn too_many(limit: usize) -> ApiError {
    ApiError::too_many_items("ack operations and pushed items", limit)
}

/// The answer to a transaction the database refused: status by the failing operation's code
/// (http-api.md §3.7), its prefixed error text, and the results up to it.
fn aborted(detail: &str) -> Failure {
    #[derive(Deserialize)]
    struct Detail {
        code: String,
        error: String,
        results: Vec<Value>,
    }
    let Ok(detail) = serde_json::from_str::<Detail>(detail) else {
        return ApiError::internal(format!("unreadable transaction refusal: {detail}")).into();
    };
    let (status, code) = match detail.code.as_str() {
        "message_not_found" => (StatusCode::NOT_FOUND, "message_not_found"),
        "lease_expired" => (StatusCode::CONFLICT, "lease_expired"),
        "not_leased" => (StatusCode::CONFLICT, "not_leased"),
        "already_settled" => (StatusCode::CONFLICT, "already_settled"),
        "group_mismatch" => (StatusCode::CONFLICT, "group_mismatch"),
        "queue_full" => (StatusCode::TOO_MANY_REQUESTS, "queue_full"),
        "forbidden" => (StatusCode::FORBIDDEN, "forbidden"),
        other => {
            return ApiError::internal(format!("transaction refused with code {other:?}")).into()
        }
    };
    let results = detail
        .results
        .into_iter()
        .enumerate()
        .map(|(index, mut result)| {
            if let Value::Object(members) = &mut result {
                members.insert("index".to_owned(), Value::from(index));
            }
            result
        })
        .collect();
    Failure {
        error: ApiError::new(status, code, detail.error),
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(body: &str, limit: usize) -> Result<TransactionRequest, String> {
        let config = Config {
            transaction_operations_max: limit,
            ..Config::default()
        };
        let body: TransactionBody =
            contract::decode(body.as_bytes(), &config).map_err(|e| format!("{e:?}"))?;
        let operations = body.operations.elements;
        let encryption = Encryption::from_config(&config).map_err(|e| format!("{e:?}"))?;
        parse_operations(&operations, &config, None)
            .map(|ops| render_request(&ops, &encryption))
            .map_err(|e| format!("{e:?}"))
    }

    const P: &str = "01a2024a-e4e0-7688-9587-dea73d51b2c0";

    #[test]
    fn operations_become_tagged_elements_with_payloads_beside_them() {
        let body = format!(
            r#"{{"operations":[
                {{"type":"push","items":[{{"queue":"q","payload":{{"a": 1.50}}}},{{"queue":"r","partition":"p"}}]}},
                {{"type":"ack","transactionId":"t","partitionId":"{P}","status":"failed"}},
                {{"type":"push","items":[]}},
                {{"type":"push","items":["#
        ) + r#"{"queue":"q","payload":"x\u0000"}]}]}"#;
        let request = prepare(&body, 100).expect("valid");
        assert_eq!(request.count, 4);
        assert_eq!(request.payloads, r#"[{"a": 1.50},null,"x\u0000"]"#);
        let operations: Value = serde_json::from_str(&request.operations).expect("JSON");
        assert_eq!(operations[0]["type"], "push");
        assert_eq!(operations[0]["items"][1]["partition"], "p");
        assert_eq!(operations[1]["type"], "ack");
        assert_eq!(operations[1]["ack"]["status"], "failed");
        assert_eq!(operations[1]["ack"]["partitionId"], P);
        assert_eq!(operations[2]["items"], serde_json::json!([]));
        let targets: Vec<_> = request.targets.iter().cloned().collect();
        assert_eq!(
            targets,
            vec![
                ("q".to_owned(), "Default".to_owned()),
                ("r".to_owned(), "p".to_owned())
            ]
        );
    }

    #[test]
    fn errors_name_the_operation_field_and_flattened_index() {
        let bad_item = r#"{"operations":[{"type":"push","items":[{"queue":"q"},{"queue":"q"}]},
                                          {"type":"push","items":[{"queue":"q","traceId":5}]}]}"#;
        let error = prepare(bad_item, 100).err().unwrap_or_default();
        assert!(
            error.contains("operations[1].items[0].traceId") && error.contains("index: Some(2)"),
            "{error}"
        );
        let bad_ack = r#"{"operations":[{"type":"ack","transactionId":"t"}]}"#;
        let error = prepare(bad_ack, 100).err().unwrap_or_default();
        assert!(error.contains("partitionId is required"), "{error}");
        let unknown = r#"{"operations":[{"type":"ack","transactionId":"t","partitionId":"x"}]}"#;
        assert!(prepare(unknown, 100).is_err());
        let kind = r#"{"operations":[{"type":"peek"}]}"#;
        let error = prepare(kind, 100).err().unwrap_or_default();
        assert!(
            error.contains("Unknown operation type: peek") && error.contains("validation_failed"),
            "{error}"
        );
    }

    #[test]
    fn acks_and_items_count_against_the_limit() {
        let body = format!(
            r#"{{"operations":[{{"type":"ack","transactionId":"t","partitionId":"{P}"}},
                              {{"type":"push","items":[{{"queue":"q"}},{{"queue":"q"}}]}}]}}"#
        );
        assert!(prepare(&body, 3).is_ok());
        let error = prepare(&body, 2).err().unwrap_or_default();
        assert!(error.contains("too_many_items"), "{error}");
    }

    #[test]
    fn refusals_map_to_status_code_and_indexed_results() {
        let detail = r#"{"code":"lease_expired","error":"ACK operation failed: Invalid or expired lease",
                         "results":[{"type":"push","success":true},{"type":"ack","success":false}]}"#;
        let failure = aborted(detail);
        let body = serde_json::to_value(&failure.error).expect("JSON");
        assert_eq!(body["code"], "lease_expired");
        assert_eq!(
            body["error"],
            "ACK operation failed: Invalid or expired lease"
        );
        assert_eq!(failure.error.into_response().status(), StatusCode::CONFLICT);
        assert_eq!(failure.results[1]["index"], 1);
        assert_eq!(failure.results[1]["success"], false);
        let missing = aborted(r#"{"code":"message_not_found","error":"x","results":[]}"#);
        assert_eq!(
            missing.error.into_response().status(),
            StatusCode::NOT_FOUND
        );
        let full = aborted(r#"{"code":"queue_full","error":"x","results":[]}"#);
        assert_eq!(
            full.error.into_response().status(),
            StatusCode::TOO_MANY_REQUESTS
        );
    }
}
