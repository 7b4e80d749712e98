//! The push path (http-api.md §3.3, §4.14): the items of one validated push are stored through the
//! engine's push batcher, in one fused call with other pushes. The failover buffer of this
//! instance is a step the path takes only when the database cannot take the items in order: while
//! push maintenance is on, when PostgreSQL cannot be reached, and — per partition — while the
//! partition has records in the buffer, so that nothing this instance acknowledged is overtaken.
//! Buffered items are answered `buffered`; the drainer of the buffer replays them later.

use std::sync::Arc;

use serde::Serialize;

use crate::db::DbError;
use crate::engine::json::to_json;
use crate::engine::{Engine, PushItem, PushRequest};
use crate::failover::{BufferUnavailable, Failover};
use crate::maintenance::Maintenance;

/// Why a push was not taken; nothing of it was stored by this call.
#[derive(Debug)]
pub(crate) enum PushError {
    /// The database failed in a way that is not diverted (timeout, a statement error, …).
    Db(DbError),
    /// The push needed the buffer and the buffer could not take it.
    BufferUnavailable(String),
}

impl From<BufferUnavailable> for PushError {
    fn from(error: BufferUnavailable) -> Self {
        PushError::BufferUnavailable(error.0)
    }
}

/// The wire entry of a buffered item (http-api.md §3.3), without `index`.
#[derive(Serialize)]
struct BufferedEntry<'a> {
    transaction_id: &'a str,
    status: &'static str,
    message_id: String,
    #[serde(rename = "queueName")]
    queue_name: &'a str,
    queue: &'a str,
    partition: &'a str,
}

fn buffered_entry(item: &PushItem) -> String {
    to_json(&BufferedEntry {
        transaction_id: &item.transaction_id,
        status: "buffered",
        message_id: item.message_id.to_string(),
        queue_name: &item.queue,
        queue: &item.queue,
        partition: &item.partition,
    })
}

/// Stores the items of one validated push request; one wire entry per item, in order.
///
/// # Errors
/// [`PushError`]: the database failed without being unreachable, or the buffer was needed and
/// could not take the items. In both cases this call stored nothing.
pub(crate) async fn store(
    engine: &Engine,
    buffer: &Failover,
    maintenance: &Maintenance,
    items: Arc<[PushItem]>,
) -> Result<Vec<String>, PushError> {
    if maintenance.push_on() {
        return buffer_all(buffer, &items).await;
    }
    let blocked = buffer.blocked(&items);
    if blocked.iter().all(|b| *b) {
        return buffer_all(buffer, &items).await;
    }
    // Room for the blocked items is taken first, so that a full buffer refuses the request
    // before any of it is stored.
    let held = match blocked.iter().any(|b| *b) {
        true => Some(buffer.admit(select(&items, &blocked, true))?),
        false => None,
    };
    let direct: Arc<[PushItem]> = match held {
        Some(_) => select(&items, &blocked, false).cloned().collect(),
        None => items.clone(),
    };
    let outcome = engine.push(PushRequest::new(direct.clone())).await;
    match outcome {
        Ok(stored) => {
            buffer.db_reached(true);
            if let Some(held) = held {
                buffer.write(held).await?;
            }
            Ok(merge(&items, &blocked, stored))
        }
        // Lost, refused or never reached: the commit is unknown or did not happen; the ids
        // fixed at the edge make a replay of a push that did commit a duplicate.
        Err(DbError::Unavailable(reason)) => {
            tracing::debug!(%reason, "push diverted to the failover buffer");
            buffer.db_reached(false);
            let mut admission = buffer.admit(select(&items, &blocked, false))?;
            if let Some(held) = held {
                admission.absorb(held);
            }
            buffer.write(admission).await?;
            Ok(items.iter().map(buffered_entry).collect())
        }
        Err(error) => Err(PushError::Db(error)),
    }
}

async fn buffer_all(buffer: &Failover, items: &[PushItem]) -> Result<Vec<String>, PushError> {
    let admission = buffer.admit(items.iter())?;
    buffer.write(admission).await?;
    Ok(items.iter().map(buffered_entry).collect())
}

/// The items whose flag equals `which`, in order.
fn select<'a>(
    items: &'a [PushItem],
    flags: &'a [bool],
    which: bool,
) -> impl Iterator<Item = &'a PushItem> + Clone {
    items
        .iter()
        .zip(flags)
        .filter(move |(_, flag)| **flag == which)
        .map(|(item, _)| item)
}

/// Entries in item order: stored results for the items sent to the database, `buffered` for
/// the others.
fn merge(items: &[PushItem], blocked: &[bool], stored: Vec<String>) -> Vec<String> {
    let mut stored = stored.into_iter();
    items
        .iter()
        .zip(blocked)
        .map(|(item, held)| match held {
            true => buffered_entry(item),
            false => stored.next().unwrap_or_else(|| buffered_entry(item)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(partition: &str, n: u32) -> PushItem {
        PushItem {
            queue: "q".into(),
            partition: partition.into(),
            transaction_id: format!("t{n}").into(),
            message_id: uuid::Uuid::now_v7(),
            trace_id: None,
            producer_sub: None,
            payload_key_id: None,
            payload: n.to_string(),
        }
    }

    #[test]
    fn entries_keep_item_order_across_the_split() {
        let items = [item("a", 0), item("b", 1), item("a", 2), item("c", 3)];
        let blocked = [true, false, true, false];
        let stored = vec!["{\"s\":1}".to_owned(), "{\"s\":3}".to_owned()];
        let merged = merge(&items, &blocked, stored);
        assert_eq!(merged[1], "{\"s\":1}");
        assert_eq!(merged[3], "{\"s\":3}");
        for index in [0, 2] {
            let entry: serde_json::Value = serde_json::from_str(&merged[index]).expect("JSON");
            assert_eq!(entry["status"], "buffered");
            assert_eq!(entry["transaction_id"], format!("t{index}"));
            assert_eq!(entry["partition"], "a");
            assert_eq!(entry["queue"], "q");
            assert_eq!(entry["queueName"], "q");
            assert_eq!(entry["message_id"], items[index].message_id.to_string());
        }
        let direct: Vec<_> = select(&items, &blocked, false)
            .map(|i| i.payload.clone())
            .collect();
        assert_eq!(direct, ["1", "3"]);
    }
}
