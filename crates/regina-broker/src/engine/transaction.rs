//! Transactions (http-api.md §4.12): one `regina.transaction` call each, never fused with another
//! (a fused call would commit or abort its neighbours with it). After commit, the same wake-ups as
//! the push and ack batchers: waiters of the pushed queues (here and, through the announcer, on
//! other instances) and of the groups whose leases ended.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Deserialize;

use super::announce::Announcer;
use super::ops::split_rows;
use super::repeat::{committed_or_refused, repeating_conflicts};
use crate::db::{AckRow, Db, DbError, IndexedRow};
use crate::metrics::{DbCallMetrics, Metrics};
use crate::waiters::Waiters;

/// One validated transaction.
pub(crate) struct TransactionRequest {
    /// The `regina.transaction` operations: a JSON array.
    pub(crate) operations: String,
    /// The payloads of every pushed item, in order: a JSON array.
    pub(crate) payloads: String,
    /// Ack operations plus pushed items (the number of results).
    pub(crate) count: usize,
    /// Distinct (queue, partition) pairs pushed to, for waking waiters after commit.
    pub(crate) targets: BTreeSet<(String, String)>,
}

/// Runs transactions, wakes the waiters their commits concern and counts what they did.
pub(crate) struct Transactions {
    pub(crate) db: Db,
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) announcer: Announcer,
    pub(crate) metrics: Arc<Metrics>,
    /// `op="transaction"`.
    pub(crate) calls: DbCallMetrics,
}

impl Transactions {
    /// Runs `request`; the result entries in order.
    ///
    /// # Errors
    /// [`DbError::TransactionAborted`] when an operation failed, or the error of the call.
    pub(crate) async fn run(&self, request: &TransactionRequest) -> Result<Vec<String>, DbError> {
        // The lock order of `regina.transaction` rules out deadlocks between transactions; the
        // repeats cover the rare ones with other kinds of work. An aborted transaction is an
        // answer, not a failed call.
        let rows = repeating_conflicts("transaction", &self.calls, 1, committed_or_refused, || {
            self.db.transaction(&request.operations, &request.payloads)
        })
        .await?;
        self.count(&rows);
        let mut lease_ends = BTreeSet::new();
        let rows: Vec<IndexedRow> = rows
            .into_iter()
            .map(|r| {
                if let Some(wake) = r.wake {
                    lease_ends.insert(wake);
                }
                r.row
            })
            .collect();
        let results = split_rows(rows, std::iter::once(request.count))?
            .pop()
            .unwrap_or_default();
        self.wake(request, &lease_ends);
        Ok(results)
    }

    /// Committed: the acks, the stored pushes, and one transaction for each queue touched.
    fn count(&self, rows: &[AckRow]) {
        #[derive(Deserialize)]
        struct PushStatus<'a> {
            #[serde(rename = "type")]
            kind: &'a str,
            status: Option<&'a str>,
        }
        for row in rows {
            self.metrics.ack_events(&row.events);
            let Some(queue) = row.events.queue.as_deref() else {
                continue;
            };
            let stored = serde_json::from_str::<PushStatus<'_>>(&row.row.result)
                .is_ok_and(|r| r.kind == "push" && r.status == Some("queued"));
            if stored {
                self.metrics.pushed(queue, 1);
            }
        }
        self.metrics
            .transaction_committed(rows.iter().filter_map(|r| r.events.queue.as_deref()));
    }

    /// Committed: waiters of every pushed partition and of every group whose lease ended.
    fn wake(&self, request: &TransactionRequest, lease_ends: &BTreeSet<(String, String)>) {
        let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (queue, partition) in &request.targets {
            by_queue.entry(queue).or_default().push(partition);
        }
        for (queue, partitions) in by_queue {
            self.waiters.push_committed(queue, &partitions);
            self.announcer.announce(queue, &partitions);
        }
        for (queue, group) in lease_ends {
            self.waiters.lease_ended(queue, group);
        }
    }
}
