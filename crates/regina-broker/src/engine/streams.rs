//! Streams cycles (streams-api.md §3.3): one `regina.stream_cycle` call each, never fused (like
//! a transaction, it commits or aborts as a whole). After commit, the wake-ups and counts of a
//! transaction: waiters of the sink partitions (here and, through the announcer, on other
//! instances) and of the group whose lease ended; stored sink items and acked messages.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::announce::Announcer;
use super::repeat::{committed_or_refused, repeating_conflicts};
use crate::db::{CycleRow, Db, DbError};
use crate::metrics::{AckStatus, DbCallMetrics, Metrics};
use crate::waiters::Waiters;

/// The member `key` of the JSON object `text`, when it has that type.
fn field<T: serde::de::DeserializeOwned>(text: &str, key: &str) -> Option<T> {
    let mut object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
    serde_json::from_value(object.remove(key)?).ok()
}

/// One validated cycle.
pub(crate) struct CycleRequest {
    /// The `regina.stream_cycle` request: a JSON object.
    pub(crate) request: String,
    /// The payloads of the sink items, in order: a JSON array.
    pub(crate) payloads: String,
    /// Distinct (queue, partition) pairs pushed to, for waking waiters after commit.
    pub(crate) targets: BTreeSet<(String, String)>,
}

/// What a committed cycle answers: the push entries, the ack result and the summary.
#[derive(Debug, Default)]
pub(crate) struct CycleOutcome {
    /// Push result entries, in item order (JSON texts).
    pub(crate) pushes: Vec<String>,
    /// The `ack_result` (JSON text), when the cycle acked.
    pub(crate) ack: Option<String>,
    /// `{queueName, state_ops_applied, replayed}` (JSON text).
    pub(crate) summary: String,
}

/// Runs cycles, wakes the waiters their commits concern and counts what they did.
pub(crate) struct Cycles {
    pub(crate) db: Db,
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) announcer: Announcer,
    pub(crate) metrics: Arc<Metrics>,
    /// `op="stream_cycle"`.
    pub(crate) calls: DbCallMetrics,
}

impl Cycles {
    /// Runs `request`.
    ///
    /// # Errors
    /// [`DbError::TransactionAborted`] when the cycle was refused, or the error of the call.
    pub(crate) async fn run(&self, request: &CycleRequest) -> Result<CycleOutcome, DbError> {
        // The lock order rules out deadlocks between cycles and transactions; the repeats cover
        // the rare ones with other kinds of work. A refused cycle is an answer, not a failed call.
        let rows =
            repeating_conflicts("stream_cycle", &self.calls, 1, committed_or_refused, || {
                self.db.stream_cycle(&request.request, &request.payloads)
            })
            .await?;
        let mut outcome = CycleOutcome::default();
        let mut lease_end = None;
        let mut stored = BTreeMap::<String, u64>::new();
        let mut touched = BTreeSet::new();
        for CycleRow { kind, row } in rows {
            match kind.as_str() {
                "push" => {
                    if let Some(queue) = row.events.queue.clone() {
                        if field::<String>(&row.row.result, "status").as_deref() == Some("queued") {
                            *stored.entry(queue.clone()).or_default() += 1;
                        }
                        touched.insert(queue);
                    }
                    outcome.pushes.push(row.row.result);
                }
                "ack" => {
                    self.count_ack(&row);
                    touched.extend(row.events.queue.clone());
                    lease_end = row.wake.clone();
                    outcome.ack = Some(row.row.result);
                }
                _ => outcome.summary = row.row.result,
            }
        }
        for (queue, count) in &stored {
            self.metrics.pushed(queue, *count);
        }
        self.metrics
            .transaction_committed(touched.iter().map(String::as_str));
        self.wake(request, lease_end);
        Ok(outcome)
    }

    /// Counts the ack: a cumulative `completed` ack counts every message it settled.
    fn count_ack(&self, row: &crate::db::AckRow) {
        self.metrics.ack_events(&row.events);
        let settled = field::<u64>(&row.row.result, "count").unwrap_or(0);
        if let (Some(queue), Some("completed")) =
            (row.events.queue.as_deref(), row.events.acked.as_deref())
        {
            self.metrics
                .acked_more(queue, AckStatus::Completed, settled.saturating_sub(1));
        }
    }

    /// Committed: waiters of every sink partition and of the group whose lease ended.
    fn wake(&self, request: &CycleRequest, lease_end: Option<(String, String)>) {
        let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (queue, partition) in &request.targets {
            by_queue.entry(queue).or_default().push(partition);
        }
        for (queue, partitions) in by_queue {
            self.waiters.push_committed(queue, &partitions);
            self.announcer.announce(queue, &partitions);
        }
        if let Some((queue, group)) = lease_end {
            self.waiters.lease_ended(&queue, &group);
        }
    }
}
