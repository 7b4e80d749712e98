//! The batching engine: one batcher per hot operation kind (push, pop, ack, lease extension).
//! Concurrent HTTP requests of one kind are fused into few SQL calls; each request gets back
//! exactly its own results, and one bad request never fails its neighbours. Transactions are
//! never fused (each is its own all-or-nothing SQL call) but wake waiters the same way.

pub(crate) mod announce;
mod batcher;
pub(crate) mod json;
mod lanes;
mod ops;
mod repeat;
mod streams;
mod transaction;

use std::sync::Arc;
use std::time::Duration;

use announce::Announcer;
use batcher::{BatchSettings, Batcher, Company, HoldRule};
pub(crate) use ops::{
    push_arrays, push_committed, AckRequest, ExtendRequest, PopRequest, PushItem, PushRequest,
};
use ops::{AckOp, ExtendOp, PopOp, PushOp};
pub(crate) use repeat::{repeating_conflicts, succeeded};
use streams::Cycles;
pub(crate) use streams::{CycleOutcome, CycleRequest};
pub(crate) use transaction::TransactionRequest;
use transaction::Transactions;

use crate::config::Config;
use crate::db::{Db, DbError, PopOutcome};
use crate::maintenance::Maintenance;
use crate::metrics::Metrics;
use crate::waiters::Waiters;

/// In-flight lease-extension calls (rare, small).
const EXTEND_SLOTS: usize = 2;

/// The batchers of the hot operations.
pub(crate) struct Engine {
    /// One batcher per push lane, each with one call in flight (see `lanes`).
    push: Vec<Batcher<PushOp>>,
    /// `PUSH_SPLIT_ITEMS_MIN`.
    push_split_min: usize,
    pop: Batcher<PopOp>,
    ack: Batcher<AckOp>,
    extend: Batcher<ExtendOp>,
    transactions: Transactions,
    cycles: Cycles,
}

impl Engine {
    /// Starts one dispatcher per operation kind.
    pub(crate) fn start(
        db: &Db,
        waiters: &Arc<Waiters>,
        metrics: &Arc<Metrics>,
        maintenance: &Arc<Maintenance>,
        config: &Config,
    ) -> Engine {
        let settings = |slots| BatchSettings {
            slots,
            requests_max: config.batch_requests_max,
            items_max: config.batch_items_max,
            bytes_max: config.batch_bytes_max,
            hold: Duration::from_micros(config.batch_hold_us),
            hold_rule: HoldRule::Lone {
                busy_gap: Duration::from_micros(config.batch_hold_gap_us),
            },
            company: None,
        };
        let lanes = Company::new(config.push_parallel_items_min);
        let announcer = Announcer::start(db.clone());
        Engine {
            transactions: Transactions {
                db: db.clone(),
                waiters: waiters.clone(),
                announcer: announcer.clone(),
                metrics: metrics.clone(),
                calls: metrics.db_calls("transaction"),
            },
            cycles: Cycles {
                db: db.clone(),
                waiters: waiters.clone(),
                announcer: announcer.clone(),
                metrics: metrics.clone(),
                calls: metrics.db_calls("stream_cycle"),
            },
            push: (0..config.db_calls_push.max(1))
                .map(|_| {
                    Batcher::start(
                        Arc::new(PushOp {
                            waiters: waiters.clone(),
                            announcer: announcer.clone(),
                            metrics: metrics.clone(),
                            maintenance: maintenance.clone(),
                            long_poll_pops: config.longpoll_push_pops,
                            quiet_ttl: Duration::from_millis(config.longpoll_quiet_ms),
                        }),
                        db.clone(),
                        BatchSettings {
                            company: Some(lanes.clone()),
                            ..settings(1)
                        },
                        metrics,
                    )
                })
                .collect(),
            push_split_min: config.push_split_items_min,
            pop: Batcher::start(
                Arc::new(PopOp {
                    waiters: waiters.clone(),
                    metrics: metrics.clone(),
                    commit_async: config.auto_ack_commit_async,
                }),
                db.clone(),
                BatchSettings {
                    hold: Duration::from_micros(config.pop_hold_us),
                    hold_rule: HoldRule::Gather,
                    ..settings(config.db_calls_pop)
                },
                metrics,
            ),
            ack: Batcher::start(
                Arc::new(AckOp {
                    waiters: waiters.clone(),
                    metrics: metrics.clone(),
                    commit_async: config.ack_commit_async,
                }),
                db.clone(),
                BatchSettings {
                    company: Some(Company::new(config.ack_parallel_items_min)),
                    ..settings(config.db_calls_ack)
                },
                metrics,
            ),
            extend: Batcher::start(
                Arc::new(ExtendOp),
                db.clone(),
                settings(EXTEND_SLOTS),
                metrics,
            ),
        }
    }

    /// Stores the items of one push request, in the lanes of their partitions (see `lanes`); one
    /// result entry per item, in order.
    ///
    /// # Errors
    /// The [`DbError`] of the call (after isolation from its neighbours); with a request split
    /// over lanes, the other lanes' parts may have been stored.
    pub(crate) async fn push(&self, request: PushRequest) -> Result<Vec<String>, DbError> {
        let of = lanes::lanes_of(&request.items, self.push.len());
        let first = of.first().copied().unwrap_or(0);
        if of.len() < self.push_split_min || of.iter().all(|lane| *lane == first) {
            return self.push[first].submit(request).await;
        }
        let parts = (0..self.push.len())
            .filter(|lane| of.contains(lane))
            .map(|lane| {
                let positions = (0..of.len()).filter(|k| of[*k] == lane).collect();
                let part = PushRequest::part(request.items.clone(), positions);
                async move { (lane, self.push[lane].submit(part).await) }
            });
        let answers = futures::future::join_all(parts).await;
        lanes::merge(&of, answers)
    }

    /// Runs one pop attempt.
    ///
    /// # Errors
    /// The [`DbError`] of the call (after isolation from its neighbours).
    pub(crate) async fn pop(&self, request: PopRequest) -> Result<PopOutcome, DbError> {
        self.pop.submit(request).await
    }

    /// Applies the items of one ack request; one result entry per item, in order.
    ///
    /// # Errors
    /// The [`DbError`] of the call (after isolation from its neighbours).
    pub(crate) async fn ack(&self, request: AckRequest) -> Result<Vec<String>, DbError> {
        self.ack.submit(request).await
    }

    /// Extends one lease; the result entry.
    ///
    /// # Errors
    /// The [`DbError`] of the call (after isolation from its neighbours).
    pub(crate) async fn extend(&self, request: ExtendRequest) -> Result<String, DbError> {
        self.extend.submit(request).await
    }

    /// Runs one transaction; one result entry per ack operation and pushed item, in order.
    ///
    /// # Errors
    /// [`DbError::TransactionAborted`] when an operation failed (nothing applied), or the
    /// [`DbError`] of the call.
    pub(crate) async fn transaction(
        &self,
        request: &TransactionRequest,
    ) -> Result<Vec<String>, DbError> {
        self.transactions.run(request).await
    }

    /// Commits one streams cycle.
    ///
    /// # Errors
    /// [`DbError::TransactionAborted`] when the cycle was refused (nothing applied), or the
    /// [`DbError`] of the call.
    pub(crate) async fn stream_cycle(
        &self,
        request: &CycleRequest,
    ) -> Result<CycleOutcome, DbError> {
        self.cycles.run(request).await
    }
}
