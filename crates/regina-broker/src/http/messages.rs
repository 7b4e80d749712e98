//! Messages (http-api.md §3.9): the newest-first listing, one message's detail, and the message
//! administration — delete, requeue from the DLQ, manual move to the DLQ (http-api.md §4.7). The
//! administration answers keep `success` on failure (http-api.md §1.3). The listing leaves out
//! queues outside the caller's scopes; a message of such a queue is answered `403` (http-api.md
//! §1.6).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::access::Auth;
use super::contract::fields::{FreeText, Name};
use super::contract::params::{
    Choice, Offset, PageLimit, PathKey, PathUuid, QueryInstant, QueryName, QueryText, Words,
};
use super::contract::{Body, Contract, Params, PathParams};
use super::error::{json_response, ApiError};
use super::resources::LABEL_CHARS_MAX;
use crate::encryption::Encryption;
use crate::engine::json::to_json;
use crate::state::{AppState, Shared};

/// Longest `transactionId`, characters (http-api.md §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
/// A manual DLQ move's `error` beyond this many characters is truncated, as an ack's (http-api.md
/// §6).
const ERROR_CHARS_MAX: usize = 4_096;
const QUEUE_MODE: &str = "__QUEUE_MODE__";
const MANUAL_DLQ_ERROR: &str = "Moved to DLQ manually";

/// The statuses a listing filters by.
#[derive(Debug)]
pub(crate) struct MessageStatus;

impl Words for MessageStatus {
    const VALUES: &'static [&'static str] = &["pending", "processing", "completed", "dead_letter"];
    const DEFAULT: Option<&'static str> = None;
    fn refusal(value: &str) -> String {
        format!("must be pending, processing, completed or dead_letter, not {value:?}")
    }
}

/// Query of `GET /api/v1/messages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessagesQuery {
    /// Only messages with this status
    #[serde(default)]
    status: Choice<MessageStatus>,
    /// Only this namespace
    #[serde(default)]
    ns: QueryText<LABEL_CHARS_MAX>,
    /// Only this namespace (when `ns` is absent; read only then)
    #[serde(default)]
    #[schemars(length(max = 255))]
    namespace: QueryText,
    /// Only this queue
    #[serde(default)]
    queue: QueryName,
    /// Only this partition
    #[serde(default)]
    partition: QueryName,
    /// Only this task
    #[serde(default)]
    task: QueryText<LABEL_CHARS_MAX>,
    /// Statuses relative to this group
    #[serde(default)]
    consumer_group: QueryName,
    /// Oldest createdAt (default now − 1 h)
    #[serde(default)]
    from: QueryInstant,
    /// Newest createdAt (default now)
    #[serde(default)]
    to: QueryInstant,
    /// Page size
    #[serde(default)]
    limit: PageLimit<200, 1_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for MessagesQuery {}

/// The `regina.messages_list` argument: filters given (absent ones null), timestamps normalised.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlMessagesQuery<'a> {
    queue: Option<&'a str>,
    partition: Option<&'a str>,
    namespace: Option<&'a str>,
    task: Option<&'a str>,
    consumer_group: Option<&'a str>,
    status: Option<&'a str>,
    from: Option<&'a str>,
    to: Option<&'a str>,
    limit: i64,
    offset: i64,
}

fn messages_query(query: &MessagesQuery) -> Result<String, ApiError> {
    let namespace = match (&query.ns.0, &query.namespace.0) {
        (Some(ns), _) => Some(ns),
        (None, Some(namespace)) if namespace.chars().count() > LABEL_CHARS_MAX => {
            let message = format!("namespace must be at most {LABEL_CHARS_MAX} characters");
            return Err(
                ApiError::invalid_parameter("namespace", message).limit(LABEL_CHARS_MAX as u64)
            );
        }
        (None, namespace) => namespace.as_ref(),
    };
    Ok(to_json(&SqlMessagesQuery {
        queue: query.queue.0.as_deref(),
        partition: query.partition.0.as_deref(),
        namespace: namespace.map(String::as_str),
        task: query.task.0.as_deref(),
        consumer_group: query.consumer_group.0.as_deref(),
        status: query.status.0,
        from: query.from.0.as_deref(),
        to: query.to.0.as_deref(),
        limit: query.limit.0,
        offset: query.offset.0,
    }))
}

pub(super) async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<MessagesQuery>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(messages_query(&query)?);
    let body = state.get().db.messages_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// The message a path names: `(partitionId, transactionId)`, validated like the ack fields
/// (`/api/v1/messages/{p}/{t}`, `/api/v1/traces/{p}/{t}`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageKey {
    /// The message's partition
    pub(super) partition_id: PathUuid,
    /// The message's transactionId
    pub(super) transaction_id: PathKey<TRANSACTION_ID_CHARS_MAX>,
}

impl Contract for MessageKey {}

/// `403 forbidden` when the caller has queue scopes and the message's partition belongs to a
/// queue they do not allow (the lookup is made only for scoped callers).
async fn check_scope(shared: &Shared, auth: &Auth, key: &MessageKey) -> Result<(), ApiError> {
    if auth.scopes().is_none() {
        return Ok(());
    }
    let id = Uuid::parse_str(&key.partition_id.0)
        .map_err(ApiError::internal)?
        .hyphenated()
        .to_string();
    match shared.db.partition_queues(&[id]).await?.values().next() {
        Some(queue) => auth.check_queue(queue),
        None => Ok(()),
    }
}

pub(super) async fn detail(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(key): PathParams<MessageKey>,
) -> Result<Response, ApiError> {
    check_scope(state.get(), &auth, &key).await?;
    let found = state
        .get()
        .db
        .message_detail(&key.partition_id.0, &key.transaction_id.0)
        .await?;
    match found {
        Some(body) => {
            let body = open_detail(&state.get().encryption, &body)?;
            Ok(json_response(StatusCode::OK, body))
        }
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "message_not_found",
            "Message not found",
        )),
    }
}

/// The detail with its payload decrypted when it is sealed at rest (http-api.md §4.13), without the
/// `payloadKeyId` member the database adds for that.
///
/// # Errors
/// No key or the wrong key for a sealed payload (`503` / `500`).
fn open_detail(encryption: &Encryption, body: &str) -> Result<String, ApiError> {
    let mut detail: serde_json::Map<String, Value> =
        serde_json::from_str(body).map_err(ApiError::internal)?;
    if let Some(Value::String(key_id)) = detail.remove("payloadKeyId") {
        let id = detail
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| Uuid::parse_str(id).ok())
            .ok_or_else(|| ApiError::internal("sealed message detail without an id"))?;
        let sealed = detail
            .get("payload")
            .map(Value::to_string)
            .unwrap_or_default();
        let plain = encryption.open(id, &key_id, &sealed)?;
        let payload: Value = serde_json::from_str(&plain).map_err(ApiError::internal)?;
        detail.insert("payload".to_owned(), payload);
    }
    serde_json::to_string(&detail).map_err(ApiError::internal)
}

/// What the administration functions answer: `success`, and on failure the error code.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    code: Option<String>,
    #[serde(default)]
    consumer_groups: Vec<String>,
}

/// The response of an administration call: its body with the status its code calls for.
fn answer(body: String) -> Result<(Response, Outcome), ApiError> {
    let outcome: Outcome = serde_json::from_str(&body).map_err(ApiError::internal)?;
    let status = match outcome.code.as_deref() {
        None => StatusCode::OK,
        Some("message_not_found" | "not_in_dlq") => StatusCode::NOT_FOUND,
        Some("message_leased" | "already_settled") => StatusCode::CONFLICT,
        Some(other) => return Err(ApiError::internal(format!("unexpected code {other}"))),
    };
    Ok((json_response(status, body), outcome))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    auth: Auth,
    key: Result<PathParams<MessageKey>, ApiError>,
) -> Result<Response, ApiError> {
    let PathParams(key) = key.map_err(ApiError::unsuccessful)?;
    check_scope(state.get(), &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let body = state
        .get()
        .db
        .message_delete(&key.partition_id.0, &key.transaction_id.0)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    answer(body).map(|(response, _)| response)
}

/// Body of `POST /api/v1/messages/{partitionId}/{transactionId}/retry`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequeueBody {
    /// The group to requeue for (every group the message is dead-lettered for when absent)
    #[serde(default)]
    consumer_group: Name,
}

impl Contract for RequeueBody {}

pub(super) async fn requeue(
    State(state): State<AppState>,
    auth: Auth,
    key: Result<PathParams<MessageKey>, ApiError>,
    body: Result<Body<RequeueBody>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let PathParams(key) = key.map_err(ApiError::unsuccessful)?;
    let Body(body) = body.map_err(ApiError::unsuccessful)?;
    check_scope(shared, &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let (body, queue) = shared
        .db
        .message_requeue(
            &key.partition_id.0,
            &key.transaction_id.0,
            body.consumer_group.0.as_deref(),
        )
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    let (response, outcome) = answer(body)?;
    // A new delivery for each group: their waiters retry (http-api.md §4.9). Other instances hear
    // of it through the push notification the database sent.
    if let Some(queue) = queue {
        for group in &outcome.consumer_groups {
            shared.waiters.lease_ended(&queue, group);
        }
    }
    Ok(response)
}

/// Body of `POST /api/v1/messages/{partitionId}/{transactionId}/dlq`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeadLetterBody {
    /// The group whose DLQ takes the message (queue mode when absent)
    #[serde(default)]
    consumer_group: Name,
    /// Why (default: `Moved to DLQ manually`)
    #[serde(default)]
    error: FreeText<ERROR_CHARS_MAX>,
}

impl Contract for DeadLetterBody {}

pub(super) async fn dead_letter(
    State(state): State<AppState>,
    auth: Auth,
    key: Result<PathParams<MessageKey>, ApiError>,
    body: Result<Body<DeadLetterBody>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let PathParams(key) = key.map_err(ApiError::unsuccessful)?;
    let Body(body) = body.map_err(ApiError::unsuccessful)?;
    let group = body
        .consumer_group
        .0
        .unwrap_or_else(|| QUEUE_MODE.to_owned());
    let error = body.error.0.unwrap_or_else(|| MANUAL_DLQ_ERROR.to_owned());
    check_scope(shared, &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let body = shared
        .db
        .message_dead_letter(&key.partition_id.0, &key.transaction_id.0, &group, &error)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    answer(body).map(|(response, _)| response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode_path, decode_query, Limits};

    fn listing(query: &str) -> Result<serde_json::Value, ApiError> {
        let query: MessagesQuery = decode_query(Some(query), Limits::of(&Config::default()))?;
        Ok(serde_json::from_str(&messages_query(&query)?).expect("JSON"))
    }

    #[test]
    fn listing_filters_are_passed_normalised() {
        assert_eq!(
            listing("queue=q&ns=billing&namespace=ignored&consumerGroup=g&status=dead_letter&from=2026-05-10&limit=5")
                .ok(),
            Some(serde_json::json!({"queue":"q","partition":null,"namespace":"billing","task":null,
                               "consumerGroup":"g","status":"dead_letter",
                               "from":"2026-05-10T00:00:00.000000Z","to":null,
                               "limit":5,"offset":0}))
        );
        let defaults = listing("namespace=n").expect("valid");
        assert_eq!(
            (defaults["namespace"].as_str(), defaults["limit"].as_i64()),
            (Some("n"), Some(200))
        );
    }

    #[test]
    fn bad_listing_parameters_are_refused() {
        for bad in [
            "limit=0",
            "limit=1001",
            "offset=-1",
            "status=done",
            "from=yesterday",
            "to=2026-13-01",
            "consumerGroup=%01",
            "partition=%00",
        ] {
            assert!(listing(bad).is_err(), "{bad}");
        }
        let long = format!("namespace={}", "n".repeat(256));
        assert!(listing(&long).is_err());
        assert!(
            listing(&format!("ns=a&{long}")).is_ok(),
            "namespace is read only without ns"
        );
    }

    #[test]
    fn message_paths_are_decoded_and_validated() {
        let p = "01a2024a-e4e0-7688-9587-dea73d51b2c0";
        let template = "/api/v1/messages/{partitionId}/{transactionId}/retry";
        let limits = Limits::of(&Config::default());
        let key: MessageKey = decode_path(
            template,
            &format!("/api/v1/messages/{p}/a%2Fb%20c/retry"),
            limits,
        )
        .expect("valid");
        assert_eq!(
            (key.partition_id.0.as_str(), key.transaction_id.0.as_str()),
            (p, "a/b c")
        );
        for bad in [
            "/api/v1/messages/not-a-uuid/t/retry".to_owned(),
            format!("/api/v1/messages/{p}/a%00b/retry"),
            format!("/api/v1/messages/{p}/{}/retry", "t".repeat(256)),
        ] {
            assert!(
                decode_path::<MessageKey>(template, &bad, limits).is_err(),
                "{bad}"
            );
        }
    }
}
