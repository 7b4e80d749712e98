//! `POST /api/v1/ack` and `POST /api/v1/ack/batch` (spec §3.5): per-item outcomes in-band,
//! `forbidden` included for acks of queues outside the caller's scopes (spec §1.6).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use serde::Serialize;

use super::access::Auth;
use super::body::{self, BodyBytes, Object};
use super::error::{json_response, ApiError};
use super::names::name_problem;
use crate::engine::json::{indexed_array, to_json};
use crate::engine::AckRequest;
use crate::state::{AppState, Shared};

/// Ack `error` text beyond this many characters is truncated, not rejected (spec §6).
const ERROR_CHARS_MAX: usize = 4_096;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/ack", post(ack))
        .route("/api/v1/ack/batch", post(ack_batch))
}

async fn ack(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let mut acks = Acks::default();
    acks.push(&object, None, config.name_chars_max)?;
    apply(&state, &auth, acks).await
}

async fn ack_batch(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let raw = object.required_array(
        "acknowledgments",
        "acknowledgments array is required",
        config.ack_items_max,
    )?;
    let request_group = group(&object, config.name_chars_max)?;
    if raw.is_empty() {
        return Ok(json_response(StatusCode::OK, "[]".to_owned()));
    }
    let mut acks = Acks::default();
    for (index, raw) in raw.iter().enumerate() {
        let item = Object::from_raw(raw, format!("acknowledgments[{index}]."), Some(index))?;
        acks.push(&item, request_group.as_deref(), config.name_chars_max)?;
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
    fn push(
        &mut self,
        item: &Object<'_>,
        request_group: Option<&str>,
        name_chars_max: usize,
    ) -> Result<(), ApiError> {
        if !self.keys.is_empty() {
            self.items.push(',');
        }
        let key = write_item(&mut self.items, item, request_group, name_chars_max)?;
        self.keys.push(key);
        self.ends.push(self.items.len());
        Ok(())
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

/// The optional `consumerGroup` of an object, validated as a name.
fn group(object: &Object<'_>, name_chars_max: usize) -> Result<Option<String>, ApiError> {
    let group = object.opt_string("consumerGroup")?;
    if let Some(problem) = group
        .as_deref()
        .and_then(|g| name_problem(g, name_chars_max))
    {
        return Err(object.error("consumerGroup", format!("consumerGroup {problem}")));
    }
    Ok(group)
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

/// Validates one ack and writes it as a `regina.ack` element; the item's own group beats the
/// request's (spec §4.5). The one preparation of acks, shared by `/ack`, `/ack/batch` and
/// transaction ack operations. Returns the message's key.
pub(super) fn write_item(
    out: &mut String,
    item: &Object<'_>,
    request_group: Option<&str>,
    name_chars_max: usize,
) -> Result<AckKey, ApiError> {
    let transaction_id = item.required_string("transactionId", "transactionId is required")?;
    let partition_id = item.required_string(
        "partitionId",
        "partitionId is required to ensure message uniqueness",
    )?;
    if uuid::Uuid::parse_str(&partition_id).is_err() {
        return Err(item.error("partitionId", "partitionId must be a UUID"));
    }
    let status = match item.opt_string("status")?.as_deref() {
        None | Some("completed") | Some("success") => "completed",
        Some("failed") => "failed",
        Some("retry") => "retry",
        Some("dlq") => "dlq",
        Some(other) => {
            return Err(item.error(
                "status",
                format!("status must be completed, success, failed, retry or dlq, not {other:?}"),
            ))
        }
    };
    let lease_id = item.opt_string("leaseId")?;
    let own_group = group(item, name_chars_max)?;
    // Kept, not matched: a NUL becomes U+FFFD rather than costing the ack (spec §6).
    let error: Option<String> = item
        .opt_string_nul_replaced("error")?
        .map(|e| e.chars().take(ERROR_CHARS_MAX).collect());
    out.push_str(&to_json(&SqlAckItem {
        transaction_id: &transaction_id,
        partition_id: &partition_id,
        status,
        lease_id: lease_id.as_deref(),
        consumer_group: own_group.as_deref().or(request_group),
        error: error.as_deref(),
    }));
    Ok(AckKey {
        transaction_id,
        partition_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "01a2024a-e4e0-7688-9587-dea73d51b2c0";

    /// Writes one ack item; `"partitionId":"p"` in `body` stands for the UUID `P`.
    fn item(body: &str, request_group: Option<&str>) -> Result<serde_json::Value, String> {
        let body = body.replace(r#""partitionId":"p""#, &format!(r#""partitionId":"{P}""#));
        let object = body::parse_object(body.as_bytes(), 64).map_err(|e| format!("{e:?}"))?;
        let mut out = String::new();
        write_item(&mut out, &object, request_group, 255).map_err(|e| format!("{e:?}"))?;
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
