//! `POST /api/v1/push` (spec §3.3): the whole request is validated before anything is stored;
//! every item gets its `messageId` (and a missing `transactionId`) before the database call. The
//! failover module decides which items go to the database and which to the buffer (§4.14).

use std::borrow::Cow;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::body::{self, BodyBytes, Object};
use super::error::{json_response, ApiError};
use super::names::name_problem;
use crate::engine::json::{indexed_array, to_json};
use crate::engine::PushItem;
use crate::state::AppState;

/// `transactionId`: 1–255 characters; `traceId`: up to 128 (spec §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
const TRACE_ID_CHARS_MAX: usize = 128;
const DEFAULT_PARTITION: &str = "Default";

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/push", post(push))
}

async fn push(
    State(state): State<AppState>,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let config = &state.get().config;
    let object = body::parse_object(&bytes, config.json_depth_max)?;
    let items = object.required_array("items", "items array is required", config.push_items_max)?;
    if items.is_empty() {
        return Ok(json_response(StatusCode::CREATED, "[]".to_owned()));
    }
    let items = push_items(&items, config.name_chars_max)?;
    let shared = state.get();
    let results = shared.failover.push(&shared.engine, items.into()).await?;
    let statuses: Vec<_> = results.iter().map(|r| result_status(r)).collect();
    let queued = statuses.iter().filter(|s| s.as_deref() == Some("queued"));
    state.get().metrics.messages_pushed(queued.count() as u64);
    let rejected = statuses.iter().any(|s| s.as_deref() == Some("failed"));
    let body = indexed_array(results.iter().map(String::as_str));
    if rejected {
        let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, body);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return Ok(response);
    }
    Ok(json_response(StatusCode::CREATED, body))
}

/// The `status` of a push result entry: `queued`, `duplicate`, `failed` (e.g. `queue_full`).
fn result_status(result: &str) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Status<'a> {
        #[serde(borrow)]
        status: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Status<'_>>(result)
        .ok()
        .and_then(|s| s.status)
}

/// Validates every item and prepares it as a `regina.push` element.
fn push_items(items: &[&RawValue], name_chars_max: usize) -> Result<Vec<PushItem>, ApiError> {
    items
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            let item = Object::from_raw(raw, format!("items[{index}]."), Some(index))?;
            push_item(&item, name_chars_max)
        })
        .collect()
}

/// One `i_items` element of `regina.push`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlPushItem<'a> {
    queue: &'a str,
    partition: &'a str,
    transaction_id: &'a str,
    message_id: Uuid,
    trace_id: Option<&'a str>,
    producer_sub: Option<&'a str>,
}

/// One validated item with its ids.
fn push_item(item: &Object<'_>, name_chars_max: usize) -> Result<PushItem, ApiError> {
    let queue = item.required_string("queue", "Queue must be a string")?;
    if let Some(problem) = name_problem(&queue, name_chars_max) {
        return Err(item.error("queue", format!("queue {problem}")));
    }
    let partition = item
        .opt_string("partition")?
        .unwrap_or_else(|| DEFAULT_PARTITION.to_owned());
    if let Some(problem) = name_problem(&partition, name_chars_max) {
        return Err(item.error("partition", format!("partition {problem}")));
    }
    let transaction_id = item.opt_string_max("transactionId", TRANSACTION_ID_CHARS_MAX)?;
    let trace_id = item.opt_string_max("traceId", TRACE_ID_CHARS_MAX)?;
    // Identity first (spec §4.14): ids are fixed before the first database attempt.
    let message_id = Uuid::now_v7();
    let transaction_id = transaction_id.unwrap_or_else(|| Uuid::now_v7().to_string());
    let json = to_json(&SqlPushItem {
        queue: &queue,
        partition: &partition,
        transaction_id: &transaction_id,
        message_id,
        trace_id: trace_id.as_deref(),
        // Without authentication there is no verified `sub`; a client-sent one is ignored.
        producer_sub: None,
    });
    Ok(PushItem {
        queue,
        partition,
        transaction_id,
        message_id,
        json,
        // Passed through untouched: the database stores the payload text as sent.
        payload: item.raw("payload").map_or("null", |p| p.get()).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `i_items` elements (with each item's payload put back under `payload`) and the
    /// prepared items.
    fn prepare(body: &str) -> Result<(Vec<serde_json::Value>, Vec<PushItem>), String> {
        let object = body::parse_object(body.as_bytes(), 64).map_err(|e| format!("{e:?}"))?;
        let items = object
            .opt_array("items")
            .map_err(|e| format!("{e:?}"))?
            .unwrap_or_default();
        let request = push_items(&items, 255).map_err(|e| format!("{e:?}"))?;
        let (items_json, payloads_json) = crate::engine::push_arrays(request.iter());
        let mut parsed: Vec<serde_json::Value> =
            serde_json::from_str(&items_json).map_err(|e| e.to_string())?;
        let payloads: Vec<serde_json::Value> =
            serde_json::from_str(&payloads_json).map_err(|e| e.to_string())?;
        for (item, payload) in parsed.iter_mut().zip(payloads) {
            item["payload"] = payload;
        }
        Ok((parsed, request))
    }

    #[test]
    fn items_get_ids_defaults_and_raw_payloads() {
        let (items, request) = prepare(
            r#"{"items":[{"queue":"q","payload":{"n":[1, 2.50]},"transactionId":"t-1","traceId":"tr"},
                         {"queue":"q","partition":"","transactionId":null,"producerSub":"x"}]}"#,
        )
        .expect("valid");
        assert_eq!(request.len(), 2);
        assert_eq!(items[0]["payload"], serde_json::json!({"n": [1, 2.5]}));
        assert_eq!(request[0].payload, r#"{"n":[1, 2.50]}"#);
        assert_eq!(items[0]["transactionId"], "t-1");
        assert_eq!(items[0]["traceId"], "tr");
        assert_eq!(items[1]["partition"], "Default");
        assert_eq!(items[1]["payload"], serde_json::Value::Null);
        assert_eq!(items[1]["traceId"], serde_json::Value::Null);
        assert_eq!(items[1]["producerSub"], serde_json::Value::Null);
        for item in &items {
            let message_id = item["messageId"]
                .as_str()
                .and_then(|s| Uuid::parse_str(s).ok());
            assert_eq!(message_id.map(|u| u.get_version_num()), Some(7));
        }
        assert!(Uuid::parse_str(items[1]["transactionId"].as_str().unwrap_or_default()).is_ok());
        assert!(
            request
                .iter()
                .all(|i| (i.queue.as_str(), i.partition.as_str()) == ("q", "Default")),
            "both items go to q/Default"
        );
    }

    #[test]
    fn one_bad_item_fails_the_request_naming_index_and_field() {
        let long = "x".repeat(129);
        for (body, field) in [
            (
                r#"{"items":[{"queue":"q"},{"queue":5}]}"#.to_owned(),
                "items[1].queue",
            ),
            (
                r#"{"items":[{"queue":"q"},{"payload":1}]}"#.to_owned(),
                "items[1].queue",
            ),
            (
                r#"{"items":[{"queue":"q","partition":"\u0001"}]}"#.to_owned(),
                "items[0].partition",
            ),
            (
                format!(r#"{{"items":[{{"queue":"q","traceId":"{long}"}}]}}"#),
                "items[0].traceId",
            ),
            (
                r#"{"items":[{"queue":"q","transactionId":7}]}"#.to_owned(),
                "items[0].transactionId",
            ),
            (r#"{"items":[1]}"#.to_owned(), "items[0]"),
        ] {
            let error = prepare(&body).err().unwrap_or_default();
            assert!(
                error.contains("validation_failed") && error.contains(field),
                "{body}: {error}"
            );
        }
    }

    #[test]
    fn result_statuses_are_read() {
        let failed = result_status(r#"{"status": "failed", "code": "queue_full"}"#);
        assert_eq!(failed.as_deref(), Some("failed"));
        assert_eq!(
            result_status(r#"{"status": "queued"}"#).as_deref(),
            Some("queued")
        );
        assert_eq!(result_status("{}"), None);
    }

    #[test]
    fn nul_is_refused_in_text_fields_and_kept_in_payloads() {
        for (body, field) in [
            (
                r#"{"items":[{"queue":"q"},{"queue":"q","transactionId":"a\u0000b"}]}"#,
                "items[1].transactionId",
            ),
            (
                r#"{"items":[{"queue":"q","traceId":"\u0000"}]}"#,
                "items[0].traceId",
            ),
            (r#"{"items":[{"queue":"q\u0000"}]}"#, "items[0].queue"),
            (
                r#"{"items":[{"queue":"q","partition":"p\u0000"}]}"#,
                "items[0].partition",
            ),
        ] {
            let error = prepare(body).err().unwrap_or_default();
            assert!(
                error.contains("validation_failed")
                    && error.contains(field)
                    && error.contains("must not contain NUL characters"),
                "{body}: {error}"
            );
        }
        let payloads = r#"{"items":[{"queue":"q","payload":"a\u0000b"},
                                    {"queue":"q","payload":{"k\u0000":["\u0000"]}}]}"#;
        let (items, request) = prepare(payloads).expect("payloads may hold NUL");
        let raw: Vec<&str> = request.iter().map(|i| i.payload.as_str()).collect();
        assert_eq!(raw, [r#""a\u0000b""#, r#"{"k\u0000":["\u0000"]}"#]);
        assert_eq!(
            items[1]["payload"],
            serde_json::json!({"k\u{0}": ["\u{0}"]})
        );
    }
}
