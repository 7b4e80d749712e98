//! `POST /api/v1/configure` (spec §3.2): create a queue or merge options into it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde::{Deserialize, Serialize};

use super::access::Auth;
use super::body::{self, BodyBytes, Object};
use super::error::{json_response, ApiError};
use super::names::name_problem;
use crate::engine::json::to_json;
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/configure", post(configure))
}

/// Longest `namespace` / `task`, characters (spec §6).
const LABEL_CHARS_MAX: usize = 255;

#[derive(Clone, Copy)]
enum OptionKind {
    Int { min: i64, max: i64 },
    Bool,
}

const TWO_POW_31: i64 = 1 << 31;

/// The known options with their types and ranges (spec §3.2 table).
const OPTIONS: &[(&str, OptionKind)] = &[
    (
        "leaseTime",
        OptionKind::Int {
            min: 0,
            max: 86_400,
        },
    ),
    (
        "retryLimit",
        OptionKind::Int {
            min: 0,
            max: 10_000,
        },
    ),
    (
        "retryDelay",
        OptionKind::Int {
            min: 0,
            max: 86_400_000,
        },
    ),
    (
        "maxSize",
        OptionKind::Int {
            min: 0,
            max: 1 << 53,
        },
    ),
    (
        "ttl",
        OptionKind::Int {
            min: 0,
            max: TWO_POW_31,
        },
    ),
    (
        "priority",
        OptionKind::Int {
            min: -TWO_POW_31,
            max: TWO_POW_31 - 1,
        },
    ),
    (
        "delayedProcessing",
        OptionKind::Int {
            min: 0,
            max: 31_536_000,
        },
    ),
    (
        "windowBuffer",
        OptionKind::Int {
            min: 0,
            max: 86_400,
        },
    ),
    ("deadLetterQueue", OptionKind::Bool),
    ("dlqAfterMaxRetries", OptionKind::Bool),
    ("retentionEnabled", OptionKind::Bool),
    (
        "retentionSeconds",
        OptionKind::Int {
            min: 0,
            max: TWO_POW_31,
        },
    ),
    (
        "completedRetentionSeconds",
        OptionKind::Int {
            min: 0,
            max: TWO_POW_31,
        },
    ),
    (
        "maxWaitTimeSeconds",
        OptionKind::Int {
            min: 0,
            max: TWO_POW_31,
        },
    ),
    ("encryptionEnabled", OptionKind::Bool),
];

async fn configure(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let encryption = &state.get().encryption;
    let request = configure_request(&object, config.name_chars_max, encryption.available())?;
    auth.check_queue(&object.required_string("queue", "queue is required")?)?;
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

/// The `regina.configure` argument: `{queue, namespace, task, options: {only the keys sent}}`.
/// `encryptionEnabled: true` needs a configured key (`can_encrypt`).
fn configure_request(
    object: &Object<'_>,
    name_chars_max: usize,
    can_encrypt: bool,
) -> Result<String, ApiError> {
    let queue = object.required_string("queue", "queue is required")?;
    if let Some(problem) = name_problem(&queue, name_chars_max) {
        return Err(object.error("queue", format!("queue {problem}")));
    }
    let namespace = object.opt_string_max("namespace", LABEL_CHARS_MAX)?;
    let task = object.opt_string_max("task", LABEL_CHARS_MAX)?;
    Ok(to_json(&SqlConfigure {
        queue: &queue,
        namespace: namespace.as_deref(),
        task: task.as_deref(),
        options: options(object, can_encrypt)?,
    }))
}

/// The `regina.configure` argument.
#[derive(Serialize)]
struct SqlConfigure<'a> {
    queue: &'a str,
    namespace: Option<&'a str>,
    task: Option<&'a str>,
    options: serde_json::Map<String, serde_json::Value>,
}

/// The options present in the request, validated (unknown keys dropped).
fn options(
    object: &Object<'_>,
    can_encrypt: bool,
) -> Result<serde_json::Map<String, serde_json::Value>, ApiError> {
    let mut out = serde_json::Map::new();
    let Some(raw) = object.raw("options").filter(|r| !body::is_null(r)) else {
        return Ok(out);
    };
    let options = Object::from_raw(raw, "options.".to_owned(), None)?;
    for (key, kind) in OPTIONS {
        let value = match *kind {
            OptionKind::Int { min, max } => options.opt_int(key, min, max)?.map(Into::into),
            OptionKind::Bool => options.opt_bool(key)?.map(Into::into),
        };
        let Some(value) = value else { continue };
        if *key == "encryptionEnabled" && value == serde_json::Value::Bool(true) && !can_encrypt {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "encryption_unavailable",
                "Encryption is not available: no encryption key is configured",
            )
            .field("options.encryptionEnabled"));
        }
        out.insert((*key).to_owned(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> Result<serde_json::Value, String> {
        let object = body::parse_object(body.as_bytes(), 64).map_err(|e| format!("{e:?}"))?;
        let text = configure_request(&object, 255, false).map_err(|e| format!("{e:?}"))?;
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
        let with_key =
            body::parse_object(br#"{"queue":"q","options":{"encryptionEnabled":true}}"#, 64)
                .map_err(|e| format!("{e:?}"))
                .and_then(|o| configure_request(&o, 255, true).map_err(|e| format!("{e:?}")));
        assert!(
            with_key.is_ok_and(|t| t.contains(r#""encryptionEnabled":true"#)),
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
