//! Transactions (spec §4.12): one `regina.transaction` call each, never fused with another (a
//! fused call would commit or abort its neighbours with it). After commit, the same wake-ups as
//! the push and ack batchers: waiters of the pushed queues (here and, through the announcer, on
//! other instances) and of the groups whose leases ended.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::announce::Announcer;
use super::ops::split_rows;
use crate::db::{Db, DbError, IndexedRow};
use crate::waiters::Waiters;

/// Calls of one transaction that a deadlock or serialization failure may cost. The lock order of
/// `regina.transaction` rules out deadlocks between transactions; this covers the rare ones with
/// other kinds of work. Repeating is safe: nothing was applied, and every pushed item already
/// carries its ids.
const ATTEMPTS_MAX: usize = 3;

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

/// Runs transactions and wakes the waiters their commits concern.
pub(crate) struct Transactions {
    pub(crate) db: Db,
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) announcer: Announcer,
}

impl Transactions {
    /// Runs `request`; the result entries in order.
    ///
    /// # Errors
    /// [`DbError::TransactionAborted`] when an operation failed, or the error of the call.
    pub(crate) async fn run(&self, request: &TransactionRequest) -> Result<Vec<String>, DbError> {
        let mut attempt = 1;
        let rows = loop {
            match self
                .db
                .transaction(&request.operations, &request.payloads)
                .await
            {
                Err(DbError::Conflict(message)) if attempt < ATTEMPTS_MAX => {
                    tracing::info!(attempt, %message, "transaction repeated after a conflict");
                    attempt += 1;
                }
                outcome => break outcome?,
            }
        };
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
