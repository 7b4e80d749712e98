//! `POST /api/v1/configure` (http-api.md §3.2): create a queue or merge options into it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::access::Auth;
use super::body::BodyBytes;
use super::contract::fields::{Flag, Int, Nested, RequiredName, Text};
use super::contract::{self, Contract, Limits};
use super::error::{json_response, ApiError};
use crate::config::Config;
use crate::engine::json::to_json;
use crate::state::AppState;

/// Longest `namespace` / `task`, characters (http-api.md §6).
const LABEL_CHARS_MAX: usize = 255;

const TWO_POW_31: i64 = 1 << 31;
const I32_MIN: i64 = -TWO_POW_31;
const I32_MAX: i64 = TWO_POW_31 - 1;
const TWO_POW_53: i64 = 1 << 53;

/// Body of `POST /api/v1/configure`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ConfigureBody<'a> {
    /// The queue (created when it does not exist)
    queue: RequiredName,
    /// The queue's namespace
    #[serde(default)]
    namespace: Text<LABEL_CHARS_MAX>,
    /// The queue's task
    #[serde(default)]
    task: Text<LABEL_CHARS_MAX>,
    /// Options to set (merged into the current ones)
    #[serde(default, borrow)]
    options: Nested<'a, QueueOptions>,
}

impl Contract for ConfigureBody<'_> {}

/// The options of a queue (http-api.md §3.2 table); only those sent are changed, unknown keys are
/// ignored.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueueOptions {
    /// Lease length, seconds (default 300)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    lease_time: Int<0, 86_400>,
    /// Failed attempts before the DLQ (default 3)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    retry_limit: Int<0, 10_000>,
    /// Wait before a failed message is delivered again, milliseconds (default 0)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    retry_delay: Int<0, 86_400_000>,
    /// Most messages waiting (0: no limit)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    max_size: Int<0, TWO_POW_53>,
    /// Messages older than this are not delivered, seconds (0: never)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    ttl: Int<0, TWO_POW_31>,
    /// Order of namespace and task pops (higher first)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    priority: Int<I32_MIN, I32_MAX>,
    /// Messages become deliverable this long after their push, seconds
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    delayed_processing: Int<0, 31_536_000>,
    /// A partition is delivered only once its newest message is this old, seconds
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    window_buffer: Int<0, 86_400>,
    /// Failed messages go to the DLQ (default true)
    #[serde(default, skip_serializing_if = "Flag::is_absent")]
    dead_letter_queue: Flag,
    /// Accepted and echoed without effect (Queen's clients send it)
    #[serde(default, skip_serializing_if = "Flag::is_absent")]
    dlq_after_max_retries: Flag,
    /// Delete messages by age (default true)
    #[serde(default, skip_serializing_if = "Flag::is_absent")]
    retention_enabled: Flag,
    /// Delete messages older than this, seconds (0: never)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    retention_seconds: Int<0, TWO_POW_31>,
    /// Delete settled messages older than this, seconds (0: never)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    completed_retention_seconds: Int<0, TWO_POW_31>,
    /// Evict messages waiting longer than this, seconds (0: never)
    #[serde(default, skip_serializing_if = "Int::is_absent")]
    max_wait_time_seconds: Int<0, TWO_POW_31>,
    /// Store payloads encrypted (needs REGINA_ENCRYPTION_KEY)
    #[serde(default, skip_serializing_if = "Flag::is_absent")]
    encryption_enabled: Flag,
}

impl Contract for QueueOptions {}

pub(super) async fn configure(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let encryption = &state.get().encryption;
    let (queue, request) = configure_request(&bytes, config, encryption.available())?;
    auth.check_queue(&queue)?;
    let result = state.get().db.configure(&request).await?;
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Options {
        encryption_enabled: Option<bool>,
    }
    #[derive(Deserialize)]
    struct Configured {
        created: Option<bool>,
        queue: Option<String>,
        options: Option<Options>,
    }
    let configured = serde_json::from_str::<Configured>(&result).map_err(ApiError::internal)?;
    // This instance seals pushes to the queue from now on (others learn it from the database).
    if let (Some(queue), Some(encrypts)) = (
        configured.queue.as_deref(),
        configured.options.and_then(|o| o.encryption_enabled),
    ) {
        encryption.remember(queue, encrypts);
    }
    let created = configured.created.unwrap_or(false);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, result))
}

/// The queue and the `regina.configure` argument: `{queue, namespace, task, options: {only the
/// keys sent}}`. `encryptionEnabled: true` needs a configured key (`can_encrypt`).
fn configure_request(
    bytes: &[u8],
    config: &Config,
    can_encrypt: bool,
) -> Result<(String, String), ApiError> {
    let body: ConfigureBody = contract::decode(bytes, config)?;
    let options = body.options.decode("options", None, Limits::of(config))?;
    if let Some(options) = &options {
        if options.encryption_enabled.0 == Some(true) && !can_encrypt {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "encryption_unavailable",
                "Encryption is not available: no encryption key is configured",
            )
            .field("options.encryptionEnabled"));
        }
    }
    let request = to_json(&SqlConfigure {
        queue: &body.queue.0,
        namespace: body.namespace.0.as_deref(),
        task: body.task.0.as_deref(),
        options: options.as_ref(),
    });
    Ok((body.queue.0, request))
}

/// The `regina.configure` argument.
#[derive(Serialize)]
struct SqlConfigure<'a> {
    queue: &'a str,
    namespace: Option<&'a str>,
    task: Option<&'a str>,
    /// The options sent (`{}` when none).
    #[serde(serialize_with = "options_or_empty")]
    options: Option<&'a QueueOptions>,
}

fn options_or_empty<S: serde::Serializer>(
    options: &Option<&QueueOptions>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match options {
        Some(options) => options.serialize(serializer),
        None => serde_json::Map::new().serialize(serializer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> Result<serde_json::Value, String> {
        let (_, text) = configure_request(body.as_bytes(), &Config::default(), false)
            .map_err(|e| format!("{e:?}"))?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    #[test]
    fn only_present_options_are_passed_normalised() {
        let value = request(
            r#"{"queue":"q","options":{"leaseTime":300.0,"deadLetterQueue":false,"unknown":1,"ttl":null}}"#,
        );
        assert_eq!(
            value.ok(),
            Some(serde_json::json!({"queue":"q","namespace":null,"task":null,
                                    "options":{"leaseTime":300,"deadLetterQueue":false}}))
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        assert!(request("{}").is_err_and(|e| e.contains("queue is required")));
        assert!(request(r#"{"queue":""}"#).is_err_and(|e| e.contains("queue is required")));
        assert!(request(r#"{"queue":" "}"#).is_err_and(|e| e.contains("validation_failed")));
        assert!(request(r#"{"queue":"q","options":{"leaseTime":86401}}"#)
            .is_err_and(|e| e.contains("options.leaseTime")));
        assert!(request(r#"{"queue":"q","options":{"retryLimit":"3"}}"#).is_err());
        assert!(request(r#"{"queue":"q","options":{"deadLetterQueue":1}}"#).is_err());
        assert!(request(r#"{"queue":"q","options":[]}"#).is_err());
        assert!(
            request(r#"{"queue":"q","options":{"encryptionEnabled":true}}"#)
                .is_err_and(|e| e.contains("encryption_unavailable"))
        );
        assert!(request(r#"{"queue":"q","options":{"encryptionEnabled":false}}"#).is_ok());
        let with_key = configure_request(
            br#"{"queue":"q","options":{"encryptionEnabled":true}}"#,
            &Config::default(),
            true,
        )
        .map_err(|e| format!("{e:?}"));
        assert!(
            with_key.is_ok_and(|(_, t)| t.contains(r#""encryptionEnabled":true"#)),
            "accepted with a key"
        );
        for (key, body) in [
            ("queue", r#"{"queue":"a\u0000b"}"#),
            ("namespace", r#"{"queue":"q","namespace":"a\u0000b"}"#),
            ("task", r#"{"queue":"q","task":"\u0000"}"#),
        ] {
            assert!(
                request(body).is_err_and(|e| e.contains("validation_failed")
                    && e.contains(&format!("{key} must not contain NUL characters"))),
                "{body}"
            );
        }
    }
}
