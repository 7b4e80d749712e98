//! `POST /api/v1/push` (http-api.md §3.3): the whole request is validated before anything is
//! stored; items are prepared (stamped with the caller's `sub` as `producerSub`), encrypted where
//! their queue asks for it, and stored by `push_items`. Queue scopes apply to the request as a
//! whole.

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use schemars::JsonSchema;
use serde::Deserialize;

use super::access::Auth;
use super::body::BodyBytes;
use super::contract::fields::{Items, PushItemsMax};
use super::contract::{self, Contract, Limits};
use super::error::{json_response, ApiError};
use super::push_items::{self, EntryStatus, ItemBody, PreparedItem, ENCRYPTION_UNAVAILABLE};
use crate::engine::json::indexed_array;
use crate::state::{AppState, Shared};

/// Body of `POST /api/v1/push`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PushBody<'a> {
    /// The messages, at most PUSH_ITEMS_MAX
    #[serde(borrow)]
    pub(super) items: Items<'a, ItemBody<'a>, PushItemsMax>,
}

impl Contract for PushBody<'_> {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} array is required")
    }
}

pub(super) async fn push(
    State(state): State<AppState>,
    auth: Auth,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let config = &shared.config;
    let body: PushBody = contract::decode(&bytes, config)?;
    let items = body.items.elements;
    if items.is_empty() {
        return Ok(json_response(StatusCode::CREATED, "[]".to_owned()));
    }
    let prepared = push_items::prepare(&items, Limits::of(config), auth.sub())?;
    // A push naming a forbidden queue is refused whole (http-api.md §1.6: only acks and lease
    // extensions report `forbidden` per item).
    if auth.scopes().is_some() {
        for item in &prepared {
            auth.check_queue(&item.queue)?;
        }
    }
    let results = push_items::store(shared, &prepared).await?;
    let statuses: Vec<EntryStatus> = results.iter().map(|r| EntryStatus::of(r)).collect();
    count(shared, &prepared, &statuses);
    let unsealable = statuses
        .iter()
        .filter(|s| s.code.as_deref() == Some(ENCRYPTION_UNAVAILABLE))
        .count();
    if unsealable == results.len() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ENCRYPTION_UNAVAILABLE,
            "Queue encrypts payloads but no encryption key is configured",
        ));
    }
    let rejected = statuses
        .iter()
        .any(|s| s.status.as_deref() == Some("failed"));
    let body = indexed_array(results.iter().map(String::as_str));
    if !rejected {
        return Ok(json_response(StatusCode::CREATED, body));
    }
    // Some items were stored: the full array tells which; the status tells why the rest was not.
    let status = if unsealable > 0 {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::TOO_MANY_REQUESTS
    };
    let mut response = json_response(status, body);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    Ok(response)
}

/// Counts the outcome of each item: stored (per queue), refused in-band (per queue and code),
/// or written to the failover buffer.
fn count(shared: &Shared, items: &[PreparedItem<'_>], statuses: &[EntryStatus]) {
    let metrics = &shared.metrics;
    let mut buffered = 0;
    let mut run: Option<(&str, u64)> = None;
    for (item, status) in items.iter().zip(statuses) {
        match status.status.as_deref() {
            Some("queued") => match &mut run {
                // Items of one queue usually come together: one count per run of them.
                Some((queue, count)) if *queue == &*item.queue => *count += 1,
                _ => {
                    if let Some((queue, count)) = run.replace((&item.queue, 1)) {
                        metrics.pushed(queue, count);
                    }
                }
            },
            Some("buffered") => buffered += 1,
            Some("failed") => {
                metrics.push_rejected(&item.queue, status.code.as_deref().unwrap_or("unknown"));
            }
            _ => {}
        }
    }
    if let Some((queue, count)) = run {
        metrics.pushed(queue, count);
    }
    metrics.buffered(buffered);
}
