//! `POST /api/v1/ack` and `POST /api/v1/ack/batch` (http-api.md §3.5): per-item outcomes in-band,
//! `forbidden` included for acks of queues outside the caller's scopes (http-api.md §1.6).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::access::Auth;
use super::body::BodyBytes;
use super::contract::fields::{
    self, AckItemsMax, FreeText, Items, Name, RequiredText, Text, UuidText,
};
use super::contract::{self, fail, Contract, Failure, Limits};
use super::error::{json_response, ApiError};
use crate::engine::json::{indexed_array, to_json};
use crate::engine::AckRequest;
use crate::state::{AppState, Shared};

/// Ack `error` text beyond this many characters is truncated, not rejected (http-api.md §6).
const ERROR_CHARS_MAX: usize = 4_096;

pub(super) async fn ack(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let item: AckItem = contract::decode(&bytes, &state.get().config)?;
    let mut acks = Acks::default();
    acks.push(item, None);
    apply(&state, &auth, acks).await
}

/// Body of `POST /api/v1/ack/batch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AckBatchBody<'a> {
    /// The acknowledgments, at most ACK_ITEMS_MAX
    #[serde(borrow)]
    acknowledgments: Items<'a, AckItem, AckItemsMax>,
    /// The group of every ack that names none
    #[serde(default)]
    consumer_group: Name,
}

impl Contract for AckBatchBody<'_> {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} array is required")
    }
}

pub(super) async fn ack_batch(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let body: AckBatchBody = contract::decode(&bytes, config)?;
    let raw = body.acknowledgments.elements;
    if raw.is_empty() {
        return Ok(json_response(StatusCode::OK, "[]".to_owned()));
    }
    let limits = Limits::of(config);
    let mut acks = Acks::default();
    for (index, raw) in raw.iter().enumerate() {
        let item: AckItem = fields::element(raw, "acknowledgments", index, index, limits)?;
        acks.push(item, body.consumer_group.0.as_deref());
    }
    apply(&state, &auth, acks).await
}

/// Validated acks: the `regina.ack` elements, comma-separated, and each one's key and end.
#[derive(Default)]
struct Acks {
    items: String,
    keys: Vec<AckKey>,
    ends: Vec<usize>,
}

impl Acks {
    fn push(&mut self, item: AckItem, request_group: Option<&str>) {
        if !self.keys.is_empty() {
            self.items.push(',');
        }
        let key = write_item(&mut self.items, item, request_group);
        self.keys.push(key);
        self.ends.push(self.items.len());
    }

    /// The element of ack `index`.
    fn element(&self, index: usize) -> &str {
        let start = match index {
            0 => 0,
            i => self.ends[i - 1] + 1,
        };
        &self.items[start..self.ends[index]]
    }
}

async fn apply(state: &AppState, auth: &Auth, acks: Acks) -> Result<Response, ApiError> {
    let shared = state.get();
    let count = acks.keys.len();
    let Some(forbidden) = forbidden_acks(shared, auth, &acks.keys).await? else {
        let results = shared
            .engine
            .ack(AckRequest {
                items: acks.items,
                count,
            })
            .await?;
        return Ok(json_response(
            StatusCode::OK,
            indexed_array(results.iter().map(String::as_str)),
        ));
    };
    // Acks of forbidden queues are answered in-band; the others are applied as usual.
    let allowed: Vec<&str> = (0..count)
        .filter(|&i| !forbidden[i])
        .map(|i| acks.element(i))
        .collect();
    let mut applied = if allowed.is_empty() {
        Vec::new()
    } else {
        let request = AckRequest {
            items: allowed.join(","),
            count: allowed.len(),
        };
        shared.engine.ack(request).await?
    }
    .into_iter();
    let mut entries = Vec::with_capacity(count);
    for (key, refused) in acks.keys.iter().zip(&forbidden) {
        let entry = if *refused {
            forbidden_entry(&key.transaction_id)
        } else {
            applied
                .next()
                .ok_or_else(|| ApiError::internal("ack results missing"))?
        };
        entries.push(entry);
    }
    Ok(json_response(
        StatusCode::OK,
        indexed_array(entries.iter().map(String::as_str)),
    ))
}

/// Which acks name a partition of a queue the caller's scopes forbid; `None` when the caller
/// has no scopes (no lookup is made) or none is forbidden.
async fn forbidden_acks(
    shared: &Shared,
    auth: &Auth,
    keys: &[AckKey],
) -> Result<Option<Vec<bool>>, ApiError> {
    if auth.scopes().is_none() {
        return Ok(None);
    }
    let ids: Vec<String> = keys
        .iter()
        .map(|k| canonical_partition(&k.partition_id))
        .collect();
    let queues = shared.db.partition_queues(&ids).await?;
    // An unknown partition is left to the ack itself (message_not_found).
    let forbidden: Vec<bool> = ids
        .iter()
        .map(|id| queues.get(id).is_some_and(|q| !auth.allows(q)))
        .collect();
    Ok(forbidden.contains(&true).then_some(forbidden))
}

/// The in-band entry of an ack refused for the caller's queue scopes.
fn forbidden_entry(transaction_id: &str) -> String {
    serde_json::json!({
        "transactionId": transaction_id, "success": false,
        "error": "Insufficient permissions", "code": "forbidden",
        "queueName": null, "partitionName": null, "leaseReleased": false, "dlq": false,
    })
    .to_string()
}

/// An ack's `status` (http-api.md §3.5): `completed` (also `success`, and the default), `failed`,
/// `retry` or `dlq`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckStatus(&'static str);

impl<'de> Deserialize<'de> for AckStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let status = match Text::<0>::deserialize(deserializer)?.0.as_deref() {
            None | Some("completed") | Some("success") => "completed",
            Some("failed") => "failed",
            Some("retry") => "retry",
            Some("dlq") => "dlq",
            Some(other) => {
                return Err(fail(Failure::keyed(format!(
                    "must be completed, success, failed, retry or dlq, not {other:?}"
                ))))
            }
        };
        Ok(AckStatus(status))
    }
}

impl JsonSchema for AckStatus {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AckStatus".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                {"type": "string",
                 "enum": ["completed", "success", "failed", "retry", "dlq"]},
                {"type": "null"},
                {"const": ""},
            ],
            "default": "completed",
        })
    }
}

/// One acknowledgment (http-api.md §3.5): of `/ack`, an element of `/ack/batch`, an ack operation
/// of a transaction.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Ack")]
pub(crate) struct AckItem {
    /// The message's transactionId
    transaction_id: RequiredText,
    /// The message's partition
    partition_id: UuidText,
    /// The outcome
    #[serde(default)]
    status: AckStatus,
    /// The lease the message was delivered under
    #[serde(default)]
    lease_id: Text,
    /// The group acknowledging (beats the batch's)
    #[serde(default)]
    consumer_group: Name,
    /// Why it failed (kept as text)
    #[serde(default)]
    error: FreeText<ERROR_CHARS_MAX>,
}

impl Contract for AckItem {
    fn missing(key: &str, _field: &str) -> String {
        match key {
            "partitionId" => "partitionId is required to ensure message uniqueness".to_owned(),
            _ => format!("{key} is required"),
        }
    }
}

/// One `i_acks` element of `regina.ack`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlAckItem<'a> {
    transaction_id: &'a str,
    partition_id: &'a str,
    status: &'a str,
    lease_id: Option<&'a str>,
    consumer_group: Option<&'a str>,
    error: Option<&'a str>,
}

/// What names the message of an ack.
pub(super) struct AckKey {
    pub(super) transaction_id: String,
    /// A UUID, as the client wrote it (see [`canonical_partition`]).
    pub(super) partition_id: String,
}

/// The canonical text of a validated partition id, as the database writes it.
pub(super) fn canonical_partition(partition_id: &str) -> String {
    uuid::Uuid::parse_str(partition_id)
        .map(|u| u.hyphenated().to_string())
        .unwrap_or_else(|_| partition_id.to_owned())
}

/// Writes one validated ack as a `regina.ack` element; the item's own group beats the
/// request's (http-api.md §4.5). The one preparation of acks, shared by `/ack`, `/ack/batch` and
/// transaction ack operations. Returns the message's key.
pub(super) fn write_item(out: &mut String, item: AckItem, request_group: Option<&str>) -> AckKey {
    out.push_str(&to_json(&SqlAckItem {
        transaction_id: &item.transaction_id.0,
        partition_id: &item.partition_id.0,
        status: item.status.0,
        lease_id: item.lease_id.0.as_deref(),
        consumer_group: item.consumer_group.0.as_deref().or(request_group),
        error: item.error.0.as_deref(),
    }));
    AckKey {
        transaction_id: item.transaction_id.0,
        partition_id: item.partition_id.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "01a2024a-e4e0-7688-9587-dea73d51b2c0";

    /// Writes one ack item; `"partitionId":"p"` in `body` stands for the UUID `P`.
    fn item(body: &str, request_group: Option<&str>) -> Result<serde_json::Value, String> {
        let body = body.replace(r#""partitionId":"p""#, &format!(r#""partitionId":"{P}""#));
        let config = crate::config::Config::default();
        let item: AckItem =
            contract::decode(body.as_bytes(), &config).map_err(|e| format!("{e:?}"))?;
        let mut out = String::new();
        write_item(&mut out, item, request_group);
        serde_json::from_str(&out).map_err(|e| e.to_string())
    }

    #[test]
    fn statuses_are_normalised_and_groups_resolved() {
        let value = item(
            r#"{"transactionId":"t","partitionId":"p","status":"success","leaseId":""}"#,
            Some("g"),
        );
        assert_eq!(
            value.ok(),
            Some(
                serde_json::json!({"transactionId":"t","partitionId":P,"status":"completed",
                                    "leaseId":null,"consumerGroup":"g","error":null})
            )
        );
        let own = item(
            r#"{"transactionId":"t","partitionId":"p","consumerGroup":"mine"}"#,
            Some("g"),
        );
        assert_eq!(
            own.ok().map(|v| v["consumerGroup"].clone()),
            Some(serde_json::json!("mine"))
        );
    }

    #[test]
    fn error_text_is_truncated_not_rejected() {
        let long = "é".repeat(5000);
        let value = item(
            &format!(
                r#"{{"transactionId":"t","partitionId":"p","status":"failed","error":"{long}"}}"#
            ),
            None,
        );
        let error = value
            .ok()
            .and_then(|v| v["error"].as_str().map(|e| e.chars().count()));
        assert_eq!(error, Some(4096));
    }

    #[test]
    fn nul_is_refused_in_matched_fields_and_replaced_in_error_text() {
        for (body, field) in [
            (
                r#"{"transactionId":"t\u0000","partitionId":"p"}"#,
                "transactionId",
            ),
            (
                r#"{"transactionId":"t","partitionId":"p","leaseId":"\u0000"}"#,
                "leaseId",
            ),
            (
                r#"{"transactionId":"t","partitionId":"p","consumerGroup":"g\u0000"}"#,
                "consumerGroup",
            ),
        ] {
            let error = item(body, None).err().unwrap_or_default();
            assert!(
                error.contains("validation_failed")
                    && error.contains(&format!("{field} must not contain NUL characters")),
                "{body}: {error}"
            );
        }
        let value = item(
            r#"{"transactionId":"t","partitionId":"p","status":"failed","error":"a\u0000b"}"#,
            None,
        );
        assert_eq!(
            value.ok().map(|v| v["error"].clone()),
            Some(serde_json::json!("a\u{FFFD}b"))
        );
    }

    #[test]
    fn missing_or_bad_fields_are_refused() {
        assert!(item(r#"{"partitionId":"p"}"#, None)
            .is_err_and(|e| e.contains("transactionId is required")));
        assert!(item(r#"{"transactionId":"t"}"#, None)
            .is_err_and(|e| e.contains("partitionId is required")));
        assert!(item(
            r#"{"transactionId":"t","partitionId":"p","status":"done"}"#,
            None
        )
        .is_err());
        assert!(item(
            r#"{"transactionId":"t","partitionId":"p","consumerGroup":"\u0000"}"#,
            None
        )
        .is_err());
        assert!(item(r#"{"transactionId":1,"partitionId":"p"}"#, None).is_err());
        assert!(item(r#"{"transactionId":"t","partitionId":"p-1"}"#, None)
            .is_err_and(|e| e.contains("partitionId must be a UUID")));
    }
}
