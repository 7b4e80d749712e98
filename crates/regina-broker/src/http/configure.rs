//! `POST /api/v1/configure` (spec §3.2): create a queue or merge options into it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde::Deserialize;

use super::body::{self, BodyBytes, Object};
use super::error::{json_response, ApiError};
use super::names::name_problem;
use crate::engine::json::{write_key, write_opt_str};
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
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let request = configure_request(&object, config.name_chars_max)?;
    let result = state.get().db.configure(&request).await?;
    #[derive(Deserialize)]
    struct Created {
        created: Option<bool>,
    }
    let created = serde_json::from_str::<Created>(&result)
        .map_err(ApiError::internal)?
        .created
        .unwrap_or(false);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, result))
}

/// The `regina.configure` argument: `{queue, namespace, task, options: {only the keys sent}}`.
fn configure_request(object: &Object<'_>, name_chars_max: usize) -> Result<String, ApiError> {
    let queue = object.required_string("queue", "queue is required")?;
    if let Some(problem) = name_problem(&queue, name_chars_max) {
        return Err(object.error("queue", format!("queue {problem}")));
    }
    let mut out = String::from("{");
    write_key(&mut out, "queue");
    write_opt_str(&mut out, Some(&queue));
    for key in ["namespace", "task"] {
        let value = object.opt_string(key)?;
        if value
            .as_ref()
            .is_some_and(|v| v.chars().count() > LABEL_CHARS_MAX)
        {
            return Err(object.error(
                key,
                format!("{key} must be at most {LABEL_CHARS_MAX} characters"),
            ));
        }
        out.push(',');
        write_key(&mut out, key);
        write_opt_str(&mut out, value.as_deref());
    }
    out.push(',');
    write_key(&mut out, "options");
    out.push_str(&options_json(object)?);
    out.push('}');
    Ok(out)
}

/// The options present in the request, validated, as a JSON object (unknown keys dropped).
fn options_json(object: &Object<'_>) -> Result<String, ApiError> {
    let Some(raw) = object.raw("options").filter(|r| !body::is_null(r)) else {
        return Ok("{}".to_owned());
    };
    let options = Object::from_raw(raw, "options.".to_owned(), None)?;
    let mut out = String::from("{");
    for (key, kind) in OPTIONS {
        let value = match *kind {
            OptionKind::Int { min, max } => options.opt_int(key, min, max)?.map(|v| v.to_string()),
            OptionKind::Bool => options.opt_bool(key)?.map(|v| v.to_string()),
        };
        let Some(value) = value else { continue };
        if *key == "encryptionEnabled" && value == "true" {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "encryption_unavailable",
                "Encryption is not available: no encryption key is configured",
            )
            .field("options.encryptionEnabled"));
        }
        if out.len() > 1 {
            out.push(',');
        }
        write_key(&mut out, key);
        out.push_str(&value);
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> Result<serde_json::Value, String> {
        let object = body::parse_object(body.as_bytes(), 64).map_err(|e| format!("{e:?}"))?;
        let text = configure_request(&object, 255).map_err(|e| format!("{e:?}"))?;
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
