//! The one preparation path of pushed items, for every route that pushes: validation (http-api.md
//! §3.3), identity before the first database attempt (§4.14), and encryption of payloads for queues
//! that encrypt (§4.13, ADR 0006).
//!
//! [`prepare`] validates and gives ids; [`render`] writes the `regina.push` arguments, sealing
//! the payloads of queues that encrypt; [`store`] pushes and, when the database refuses plaintext
//! for a queue that encrypts (`encryption_required`), seals those items and pushes them again
//! with the same ids.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::contract::fields::{self, Json, Name, RequiredName, Text};
use super::contract::{Contract, Limits};
use super::error::ApiError;
use crate::encryption::Encryption;
use crate::engine::json::to_json;
use crate::engine::PushItem;
use crate::push::PushError;
use crate::state::Shared;

/// `transactionId`: 1–255 characters; `traceId`: up to 128 (http-api.md §6).
const TRANSACTION_ID_CHARS_MAX: usize = 255;
const TRACE_ID_CHARS_MAX: usize = 128;
const DEFAULT_PARTITION: &str = "Default";
/// The in-band code of `regina.push` for plaintext sent to a queue that encrypts.
const ENCRYPTION_REQUIRED: &str = "encryption_required";
/// The in-band code for such an item when this instance has no key.
pub(crate) const ENCRYPTION_UNAVAILABLE: &str = "encryption_unavailable";

/// A validated item with its identity fixed. Its names are shared (an item repeating the queue
/// or partition of the one before it shares that name) and pass to the rendered item as counts.
pub(crate) struct PreparedItem<'a> {
    pub(crate) queue: Arc<str>,
    pub(crate) partition: Arc<str>,
    pub(crate) transaction_id: Arc<str>,
    pub(crate) message_id: Uuid,
    pub(crate) trace_id: Option<Arc<str>>,
    /// The verified token's `sub` (none without authentication; a client-sent one is ignored).
    pub(crate) producer_sub: Option<Arc<str>>,
    /// The payload as the client sent it (`null` when absent).
    pub(crate) payload: &'a str,
}

/// One pushed item as the client sends it (http-api.md §3.3).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PushItem")]
pub(crate) struct ItemBody<'a> {
    /// The queue (created on first push)
    queue: RequiredName,
    /// The partition (default `Default`; created on first push)
    #[serde(default)]
    #[schemars(extend("default" = "Default"))]
    partition: Name,
    /// Idempotency key, unique per partition (generated when absent)
    #[serde(default)]
    transaction_id: Text<TRANSACTION_ID_CHARS_MAX>,
    /// Correlation id carried with the message
    #[serde(default)]
    trace_id: Text<TRACE_ID_CHARS_MAX>,
    /// The message: any JSON value, stored as sent
    #[serde(default, borrow)]
    payload: Json<'a>,
}

impl Contract for ItemBody<'_> {
    fn missing(key: &str, _field: &str) -> String {
        match key {
            "queue" => "Queue must be a string".to_owned(),
            _ => format!("{key} is required"),
        }
    }
}

/// Validates every item and fixes its ids (a `messageId` each, a `transactionId` where none was
/// sent); every item carries `producer_sub`, the verified token's `sub` (http-api.md §1.6),
/// whatever the client sent.
///
/// # Errors
/// `400 validation_failed` naming the first bad item's index and field.
pub(crate) fn prepare<'a>(
    items: &[&'a RawValue],
    limits: Limits,
    producer_sub: Option<&str>,
) -> Result<Vec<PreparedItem<'a>>, ApiError> {
    prepare_at(items, "items", 0, limits, producer_sub)
}

/// [`prepare`] for items found at `path` of a larger body (a transaction's push operation):
/// errors name the field `<path>[i].<key>` and the index `first_index + i`.
///
/// # Errors
/// `400 validation_failed` naming the first bad item.
pub(crate) fn prepare_at<'a>(
    items: &[&'a RawValue],
    path: &str,
    first_index: usize,
    limits: Limits,
    producer_sub: Option<&str>,
) -> Result<Vec<PreparedItem<'a>>, ApiError> {
    let producer_sub: Option<Arc<str>> = producer_sub.map(Arc::from);
    let mut names = Names::default();
    items
        .iter()
        .enumerate()
        .map(|(position, raw)| {
            let item: ItemBody<'a> =
                fields::element(raw, path, position, first_index + position, limits)?;
            Ok(prepared(item, &mut names, producer_sub.clone()))
        })
        .collect()
}

/// The queue and partition names of the item before, shared with the next item that repeats
/// them.
#[derive(Default)]
struct Names {
    queue: Option<Arc<str>>,
    partition: Option<Arc<str>>,
}

impl Names {
    fn share(last: &mut Option<Arc<str>>, name: &str) -> Arc<str> {
        match last {
            Some(shared) if **shared == *name => shared.clone(),
            _ => last.insert(Arc::from(name)).clone(),
        }
    }
}

fn prepared<'a>(
    item: ItemBody<'a>,
    names: &mut Names,
    producer_sub: Option<Arc<str>>,
) -> PreparedItem<'a> {
    let partition = item.partition.0.as_deref().unwrap_or(DEFAULT_PARTITION);
    PreparedItem {
        queue: Names::share(&mut names.queue, &item.queue.0),
        partition: Names::share(&mut names.partition, partition),
        // Identity first (http-api.md §4.14): ids are fixed before the first database attempt.
        transaction_id: item
            .transaction_id
            .0
            .map_or_else(|| Uuid::now_v7().to_string().into(), Arc::from),
        message_id: Uuid::now_v7(),
        trace_id: item.trace_id.0.map(Arc::from),
        producer_sub,
        // Passed through untouched: the database stores the payload text as sent.
        payload: item.payload.0.map_or("null", RawValue::get),
    }
}

/// The `regina.push` elements of `items`. A payload is sealed when `seal(queue)` says so and a
/// key is configured; without a key it goes as sent, and the database refuses it if the queue
/// encrypts. `seal` is asked once per queue, so all items of a queue go alike and a refusal
/// takes them all (their order holds).
pub(crate) fn render<'i, 'a: 'i>(
    items: impl IntoIterator<Item = &'i PreparedItem<'a>>,
    encryption: &Encryption,
    seal: impl Fn(&str) -> bool,
) -> Vec<PushItem> {
    let mut decided: BTreeMap<Arc<str>, bool> = BTreeMap::new();
    items
        .into_iter()
        .map(|item| {
            let sealing = match decided.get(&item.queue) {
                Some(&sealing) => sealing,
                None => *decided
                    .entry(item.queue.clone())
                    .or_insert_with(|| seal(&item.queue)),
            };
            let sealed = if sealing {
                encryption.seal(item.message_id, item.payload)
            } else {
                None
            };
            PushItem {
                queue: item.queue.clone(),
                partition: item.partition.clone(),
                transaction_id: item.transaction_id.clone(),
                message_id: item.message_id,
                trace_id: item.trace_id.clone(),
                producer_sub: item.producer_sub.clone(),
                payload_key_id: sealed.as_ref().map(|(_, key_id)| Arc::from(*key_id)),
                payload: sealed.map_or_else(|| item.payload.to_owned(), |(text, _)| text),
            }
        })
        .collect()
}

/// The `status` and `code` of a push result entry.
#[derive(Deserialize)]
pub(crate) struct EntryStatus {
    pub(crate) status: Option<String>,
    pub(crate) code: Option<String>,
}

impl EntryStatus {
    pub(crate) fn of(entry: &str) -> EntryStatus {
        serde_json::from_str(entry).unwrap_or(EntryStatus {
            status: None,
            code: None,
        })
    }
}

/// Pushes `items`: one result entry per item, in order. Items of a queue that encrypts, sent in
/// plaintext because this instance did not know it, are sealed and pushed again; without a key
/// they come back `failed` with code `encryption_unavailable` (nothing stored for them).
///
/// # Errors
/// The database failures of the engine.
pub(crate) async fn store(
    shared: &Shared,
    items: &[PreparedItem<'_>],
) -> Result<Vec<String>, ApiError> {
    let encryption = &shared.encryption;
    let request = render(items, encryption, |queue| encryption.queue_encrypts(queue));
    let mut results = push(shared, request).await?;
    let refused: Vec<usize> = (0..results.len())
        .filter(|&i| EntryStatus::of(&results[i]).code.as_deref() == Some(ENCRYPTION_REQUIRED))
        .collect();
    if refused.is_empty() {
        return Ok(results);
    }
    for &i in &refused {
        encryption.remember(&items[i].queue, true);
    }
    if !encryption.available() {
        for &i in &refused {
            results[i] = unavailable_entry(&items[i]);
        }
        return Ok(results);
    }
    let again = render(refused.iter().map(|&i| &items[i]), encryption, |_| true);
    let retried = push(shared, again).await?;
    for (i, entry) in refused.into_iter().zip(retried) {
        results[i] = entry;
    }
    Ok(results)
}

/// Stores rendered items through the push path (which buffers them when they cannot reach the
/// database in order, http-api.md §4.14).
async fn push(shared: &Shared, items: Vec<PushItem>) -> Result<Vec<String>, PushError> {
    let (engine, buffer, maintenance) = (&shared.engine, &shared.failover, &shared.maintenance);
    crate::push::store(engine, buffer, maintenance, items.into()).await
}

/// The in-band entry of an item that could not be sealed for want of a key.
fn unavailable_entry(item: &PreparedItem<'_>) -> String {
    #[derive(Serialize)]
    struct Entry<'a> {
        transaction_id: &'a str,
        status: &'a str,
        #[serde(rename = "queueName")]
        queue_name: &'a str,
        error: &'a str,
        code: &'a str,
    }
    let entry = Entry {
        transaction_id: &item.transaction_id,
        status: "failed",
        queue_name: &item.queue,
        error: "Queue encrypts payloads but no encryption key is configured",
        code: ENCRYPTION_UNAVAILABLE,
    };
    to_json(&entry)
}

#[cfg(test)]
mod tests;
