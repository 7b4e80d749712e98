//! The drainer: replays buffered records in buffer order while PostgreSQL is reachable and push
//! maintenance is off, checking for work every `FILE_BUFFER_FLUSH_MS` and at once at startup.
//!
//! A batch is one `regina.failover_replay` call (one transaction). Records keep their ids, so
//! what already reached the database comes back `duplicate`. A batch is removed from the buffer
//! only after its call returned, i.e. after commit. When the database is unreachable the batch
//! stays and is tried again at the next tick; when a statement fails, the records are replayed
//! one by one, in order, and a record that fails on its own is set aside in `failed/`.

use std::sync::Arc;

use tokio::sync::watch;

use super::record::Record;
use super::store::Batch;
use super::Failover;
use crate::db::{DbError, IndexedRow};
use crate::engine::{push_arrays, push_committed, repeating_conflicts, succeeded};

pub(super) async fn run(failover: Arc<Failover>, mut stopped: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(failover.replay.flush);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = failover.maintenance.push_resumed() => {}
            _ = stopped.changed() => return,
        }
        drain(&failover, &stopped).await;
    }
}

/// Replays batch after batch until the buffer is empty, the database fails, maintenance starts
/// or the broker stops.
async fn drain(failover: &Arc<Failover>, stopped: &watch::Receiver<bool>) {
    while !*stopped.borrow() && !failover.maintenance.push_on() && failover.store.pending() > 0 {
        let reader = failover.clone();
        let replay = failover.replay;
        let read = tokio::task::spawn_blocking(move || {
            reader
                .store
                .next_batch(replay.records_max, replay.bytes_max)
        })
        .await;
        let mut batch = match read {
            Ok(Ok(Some(batch))) => batch,
            Ok(Ok(None)) => return,
            Ok(Err(error)) => {
                tracing::error!(%error, "failover buffer segment unreadable");
                return;
            }
            Err(error) => {
                tracing::error!(%error, "failover read task failed");
                return;
            }
        };
        let done = replay_batch(failover, &mut batch).await;
        let advanced = batch.records.len();
        let writer = failover.clone();
        let moved = tokio::task::spawn_blocking(move || writer.store.advance(&batch)).await;
        if moved.is_err() || !done {
            return;
        }
        tracing::debug!(records = advanced, "failover records replayed");
    }
}

/// Replays the batch. Returns false when replay must stop for now; the batch is then cut to the
/// records that were dealt with (replayed or set aside).
async fn replay_batch(failover: &Failover, batch: &mut Batch) -> bool {
    if batch.records.is_empty() {
        return true;
    }
    match call(failover, &batch.records).await {
        Ok(()) => true,
        Err(error) if record_at_fault(&error) => one_by_one(failover, batch).await,
        Err(error) => {
            note_failure(failover, &error);
            batch.truncate(0);
            false
        }
    }
}

/// Replays each record alone, in order; a record failing on its own is set aside.
async fn one_by_one(failover: &Failover, batch: &mut Batch) -> bool {
    for index in 0..batch.records.len() {
        let record = &batch.records[index];
        match call(failover, std::slice::from_ref(record)).await {
            Ok(()) => {}
            Err(error) if record_at_fault(&error) => {
                let reason = error.to_string();
                tracing::error!(%reason, queue = %record.item.queue, partition = %record.item.partition,
                                transaction_id = %record.item.transaction_id,
                                "failover record cannot be replayed; set aside in failed/");
                // A small appended line: rare enough to write from here.
                failover.store.set_aside(batch.segment, record, &reason);
            }
            Err(error) => {
                note_failure(failover, &error);
                batch.truncate(index);
                return false;
            }
        }
    }
    true
}

/// One replay call with conflict retries; after commit, wakes the waiters of the written
/// partitions here and on the other instances.
async fn call(failover: &Failover, records: &[Record]) -> Result<(), DbError> {
    let items = records.iter().map(|r| &r.item);
    let (items_json, payloads) = push_arrays(items.clone());
    let calls = &failover.replay_calls;
    let rows = repeating_conflicts("failover_replay", calls, records.len(), succeeded, || {
        failover.db.failover_replay(&items_json, &payloads)
    })
    .await?;
    if rows.len() != records.len() {
        return Err(DbError::Internal(format!(
            "replay returned {} rows for {} records",
            rows.len(),
            records.len()
        )));
    }
    failover.db_reached(true);
    count(failover, records, &rows);
    push_committed(
        &failover.waiters,
        &failover.announcer,
        items.map(|i| (&*i.queue, &*i.partition)),
    );
    Ok(())
}

/// Counts a committed replay: every record replayed, and the messages it stored per queue.
fn count(failover: &Failover, records: &[Record], rows: &[IndexedRow]) {
    #[derive(serde::Deserialize)]
    struct Status<'a> {
        status: Option<&'a str>,
    }
    for row in rows {
        let stored = serde_json::from_str::<Status<'_>>(&row.result)
            .is_ok_and(|r| r.status == Some("queued"));
        if let Some(record) = records.get(row.idx).filter(|_| stored) {
            failover.metrics.pushed(&record.item.queue, 1);
        }
    }
    // Last, so that a scrape seeing the records replayed also sees the messages they stored.
    failover.metrics.replayed(records.len() as u64);
}

/// Whether an error belongs to the records sent rather than to the database: a data or
/// integrity exception, or a rule the SQL raised. Missing objects, resource and system errors
/// (SQLSTATE classes 42, 53, 54, 58, XX) say the database is not ready, and the records wait.
fn record_at_fault(error: &DbError) -> bool {
    match error {
        DbError::Statement { code, .. } => !["42", "53", "54", "58", "XX"]
            .iter()
            .any(|class| code.starts_with(class)),
        _ => false,
    }
}

fn note_failure(failover: &Failover, error: &DbError) {
    match error {
        DbError::Unavailable(_) => failover.db_reached(false),
        DbError::Timeout(_) | DbError::Conflict(_) => {
            tracing::warn!(%error, "failover replay postponed");
        }
        _ => tracing::error!(%error, "failover replay postponed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_record_faults_set_records_aside() {
        let statement = |code: &str| DbError::Statement {
            code: code.into(),
            message: String::new(),
        };
        assert!(record_at_fault(&statement("22P02")));
        assert!(record_at_fault(&statement("23505")));
        assert!(record_at_fault(&statement("P0001")));
        assert!(!record_at_fault(&statement("42883")), "missing function");
        assert!(!record_at_fault(&statement("53100")), "disk full");
        assert!(!record_at_fault(&DbError::Unavailable(String::new())));
        assert!(!record_at_fault(&DbError::Timeout(String::new())));
        assert!(!record_at_fault(&DbError::Internal(String::new())));
    }
}
