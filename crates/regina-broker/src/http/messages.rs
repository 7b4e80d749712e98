//! Messages (spec §3.9): the newest-first listing, one message's detail, and the message
//! administration — delete, requeue from the DLQ, manual move to the DLQ (spec §4.7). The
//! administration answers keep `success` on failure (spec §1.3). The listing leaves out queues
//! outside the caller's scopes; a message of such a queue is answered `403` (spec §1.6).

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::access::Auth;
use super::body::{self, BodyBytes};
use super::error::{json_response, ApiError};
use super::names::{name_problem, path_segment};
use super::query::Query;
use super::resources::{query_name, query_offset, query_text, LABEL_CHARS_MAX};
use super::timestamp;
use crate::encryption::Encryption;
use crate::engine::json::to_json;
use crate::state::{AppState, Shared};

/// `limit` of the listing: default and maximum (§3.9).
const LIMIT_DEFAULT: i64 = 200;
const LIMIT_MAX: i64 = 1_000;
/// Longest `transactionId`, characters (spec §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
/// A manual DLQ move's `error` beyond this many characters is truncated, as an ack's (spec §6).
const ERROR_CHARS_MAX: usize = 4_096;
const QUEUE_MODE: &str = "__QUEUE_MODE__";
const MANUAL_DLQ_ERROR: &str = "Moved to DLQ manually";
/// Positions of `{partitionId}` and `{transactionId}` in `/api/v1/messages/{p}/{t}`.
const PARTITION_SEGMENT: usize = 3;
const TRANSACTION_SEGMENT: usize = 4;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/messages", get(list))
        .route(
            "/api/v1/messages/{partitionId}/{transactionId}",
            get(detail).delete(remove),
        )
        .route(
            "/api/v1/messages/{partitionId}/{transactionId}/retry",
            post(requeue),
        )
        .route(
            "/api/v1/messages/{partitionId}/{transactionId}/dlq",
            post(dead_letter),
        )
}

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
    from: Option<String>,
    to: Option<String>,
    limit: i64,
    offset: i64,
}

fn instant(query: &Query, key: &str) -> Result<Option<String>, ApiError> {
    query
        .string(key)?
        .map(|value| {
            timestamp::normalize(value).ok_or_else(|| {
                let message = format!("{key} must be an RFC 3339 timestamp or a date");
                ApiError::invalid_parameter(key, message)
            })
        })
        .transpose()
}

fn messages_query(query: &Query, name_chars_max: usize) -> Result<String, ApiError> {
    let status = query.string("status")?;
    if let Some(other) =
        status.filter(|s| !matches!(*s, "pending" | "processing" | "completed" | "dead_letter"))
    {
        let message =
            format!("status must be pending, processing, completed or dead_letter, not {other:?}");
        return Err(ApiError::invalid_parameter("status", message));
    }
    let namespace = match query_text(query, "ns", LABEL_CHARS_MAX)? {
        Some(ns) => Some(ns),
        None => query_text(query, "namespace", LABEL_CHARS_MAX)?,
    };
    Ok(to_json(&SqlMessagesQuery {
        queue: query_name(query, "queue", name_chars_max)?,
        partition: query_name(query, "partition", name_chars_max)?,
        namespace,
        task: query_text(query, "task", LABEL_CHARS_MAX)?,
        consumer_group: query_name(query, "consumerGroup", name_chars_max)?,
        status,
        from: instant(query, "from")?,
        to: instant(query, "to")?,
        limit: query.integer("limit", 1, LIMIT_MAX, LIMIT_DEFAULT)?,
        offset: query_offset(query)?,
    }))
}

async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = messages_query(&Query::parse(raw.as_deref()), shared.config.name_chars_max)?;
    let request = auth.scoped(request);
    let body = shared.db.messages_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// The message a path names: `(partitionId, transactionId)`, validated like the ack fields.
pub(super) struct MessageKey {
    pub(super) partition_id: String,
    pub(super) transaction_id: String,
}

/// The message named by segments 3 and 4 of the path (`/api/v1/messages/{p}/{t}`,
/// `/api/v1/traces/{p}/{t}`).
///
/// # Errors
/// `400 invalid_parameter` naming `partitionId` (not a UUID) or `transactionId` (not 1 to 255
/// characters without NUL).
pub(super) fn message_key(uri: &Uri) -> Result<MessageKey, ApiError> {
    let partition_id = path_segment(uri, PARTITION_SEGMENT, "partitionId")?;
    if uuid::Uuid::parse_str(&partition_id).is_err() {
        return Err(ApiError::invalid_parameter(
            "partitionId",
            "partitionId must be a UUID",
        ));
    }
    let transaction_id = path_segment(uri, TRANSACTION_SEGMENT, "transactionId")?;
    let chars = transaction_id.chars().count();
    if chars == 0 || chars > TRANSACTION_ID_CHARS_MAX || transaction_id.contains('\0') {
        return Err(ApiError::invalid_parameter(
            "transactionId",
            format!("transactionId must be 1 to {TRANSACTION_ID_CHARS_MAX} characters without NUL"),
        ));
    }
    Ok(MessageKey {
        partition_id,
        transaction_id,
    })
}

/// `403 forbidden` when the caller has queue scopes and the message's partition belongs to a
/// queue they do not allow (the lookup is made only for scoped callers).
async fn check_scope(shared: &Shared, auth: &Auth, key: &MessageKey) -> Result<(), ApiError> {
    if auth.scopes().is_none() {
        return Ok(());
    }
    let id = Uuid::parse_str(&key.partition_id)
        .map_err(ApiError::internal)?
        .hyphenated()
        .to_string();
    match shared.db.partition_queues(&[id]).await?.values().next() {
        Some(queue) => auth.check_queue(queue),
        None => Ok(()),
    }
}

async fn detail(State(state): State<AppState>, auth: Auth, uri: Uri) -> Result<Response, ApiError> {
    let key = message_key(&uri)?;
    check_scope(state.get(), &auth, &key).await?;
    let found = state
        .get()
        .db
        .message_detail(&key.partition_id, &key.transaction_id)
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

/// The detail with its payload decrypted when it is sealed at rest (spec §4.13), without the
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

async fn remove(State(state): State<AppState>, auth: Auth, uri: Uri) -> Result<Response, ApiError> {
    let key = message_key(&uri).map_err(ApiError::unsuccessful)?;
    check_scope(state.get(), &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let body = state
        .get()
        .db
        .message_delete(&key.partition_id, &key.transaction_id)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    answer(body).map(|(response, _)| response)
}

/// The optional `consumerGroup` of an administration body, validated as a name.
fn body_group(object: &body::Object<'_>, shared: &Shared) -> Result<Option<String>, ApiError> {
    let group = object.opt_string("consumerGroup")?;
    if let Some(problem) = group
        .as_deref()
        .and_then(|g| name_problem(g, shared.config.name_chars_max))
    {
        return Err(object.error("consumerGroup", format!("consumerGroup {problem}")));
    }
    Ok(group)
}

async fn requeue(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (key, group) = (|| {
        let key = message_key(&uri)?;
        let object = body::parse_object(&bytes, shared.config.json_depth_max)?;
        Ok::<_, ApiError>((key, body_group(&object, shared)?))
    })()
    .map_err(ApiError::unsuccessful)?;
    check_scope(shared, &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let (body, queue) = shared
        .db
        .message_requeue(&key.partition_id, &key.transaction_id, group.as_deref())
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    let (response, outcome) = answer(body)?;
    // A new delivery for each group: their waiters retry (spec §4.9). Other instances hear of it
    // through the push notification the database sent.
    if let Some(queue) = queue {
        for group in &outcome.consumer_groups {
            shared.waiters.lease_ended(&queue, group);
        }
    }
    Ok(response)
}

async fn dead_letter(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (key, group, error) = (|| {
        let key = message_key(&uri)?;
        let object = body::parse_object(&bytes, shared.config.json_depth_max)?;
        let group = body_group(&object, shared)?.unwrap_or_else(|| QUEUE_MODE.to_owned());
        // Kept, not matched: a NUL becomes U+FFFD and overlong text is cut, as in acks.
        let error: String = object.opt_string_nul_replaced("error")?.map_or_else(
            || MANUAL_DLQ_ERROR.to_owned(),
            |e| e.chars().take(ERROR_CHARS_MAX).collect(),
        );
        Ok::<_, ApiError>((key, group, error))
    })()
    .map_err(ApiError::unsuccessful)?;
    check_scope(shared, &auth, &key)
        .await
        .map_err(ApiError::unsuccessful)?;
    let body = shared
        .db
        .message_dead_letter(&key.partition_id, &key.transaction_id, &group, &error)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    answer(body).map(|(response, _)| response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: Result<String, ApiError>) -> serde_json::Value {
        serde_json::from_str(&text.expect("valid")).expect("JSON")
    }

    #[test]
    fn listing_filters_are_passed_normalised() {
        let query = Query::parse(Some(
            "queue=q&ns=billing&namespace=ignored&consumerGroup=g&status=dead_letter&from=2026-05-10&limit=5",
        ));
        assert_eq!(
            value(messages_query(&query, 255)),
            serde_json::json!({"queue":"q","partition":null,"namespace":"billing","task":null,
                               "consumerGroup":"g","status":"dead_letter",
                               "from":"2026-05-10T00:00:00.000000Z","to":null,
                               "limit":5,"offset":0})
        );
        let defaults = value(messages_query(&Query::parse(Some("namespace=n")), 255));
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
            assert!(
                messages_query(&Query::parse(Some(bad)), 255).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn message_paths_are_decoded_and_validated() {
        let p = "01a2024a-e4e0-7688-9587-dea73d51b2c0";
        let uri: Uri = format!("/api/v1/messages/{p}/a%2Fb%20c/retry")
            .parse()
            .expect("uri");
        let key = message_key(&uri).expect("valid");
        assert_eq!(
            (key.partition_id.as_str(), key.transaction_id.as_str()),
            (p, "a/b c")
        );
        for bad in [
            "/api/v1/messages/not-a-uuid/t".to_owned(),
            format!("/api/v1/messages/{p}/a%00b"),
            format!("/api/v1/messages/{p}/{}", "t".repeat(256)),
        ] {
            let uri: Uri = bad.parse().expect("uri");
            assert!(message_key(&uri).is_err(), "{bad}");
        }
    }
}
