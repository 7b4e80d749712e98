//! The metrics history (http-api.md §3.12 sources, migration `0007_metrics_history.sql`): every
//! `STATS_INTERVAL_MS` this instance adds what its counters counted since its last write to the
//! current minute's rows of `regina.worker_metrics` (one row) and `regina.queue_metrics` (one row
//! per `queue` label), with the latest gauge samples, in one statement.
//!
//! The writer remembers the totals it has written. Each write sends the difference between the
//! counters now and those totals, and only a write that succeeded moves them: a failed write
//! leaves its counts to the next one, so an outage loses nothing and nothing is counted twice.
//! (A write whose commit is lost with its connection cannot be told from a failed one; it is
//! counted again.) The last counts are written when the broker stops.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use time::OffsetDateTime;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::process::ProcessSample;
use super::{AckStatus, Metrics, DB_OPS};
use crate::db::history::{HistoryWrite, QueueRow, Sample, WorkerRow};
use crate::db::{Db, DbError};
use crate::waiters::Waiters;

/// Cumulative counts of one `queue` label.
#[derive(Clone, Debug, Default, PartialEq)]
struct QueueTotals {
    pushed: u64,
    delivered: u64,
    acked: u64,
    ack_failed: u64,
    dead_lettered: u64,
    transactions: u64,
    expired: u64,
    evicted: u64,
    retention_deleted: u64,
    completed_deleted: u64,
    lag_ms_sum: f64,
    lag_samples: u64,
}

/// Cumulative counts of the instance.
#[derive(Clone, Debug, Default, PartialEq)]
struct WorkerTotals {
    requests: u64,
    push_messages: u64,
    pop_messages: u64,
    ack_messages: u64,
    db_calls: u64,
    batch_requests: u64,
    db_errors: u64,
    cpu_seconds: f64,
}

/// Everything counted since the start.
#[derive(Clone, Debug, Default, PartialEq)]
struct Totals {
    worker: WorkerTotals,
    queues: HashMap<String, QueueTotals>,
}

fn sub(now: u64, then: u64) -> i64 {
    i64::try_from(now.saturating_sub(then)).unwrap_or(i64::MAX)
}

impl Totals {
    fn read(metrics: &Metrics, cpu_seconds: f64) -> Totals {
        let mut worker = WorkerTotals {
            requests: metrics.requests.total(),
            push_messages: metrics.messages_pushed.total(),
            db_errors: metrics.db_errors.get(),
            cpu_seconds,
            ..WorkerTotals::default()
        };
        for op in DB_OPS {
            let calls = metrics.db_calls(op);
            worker.db_calls += calls.duration.get_sample_count();
            worker.batch_requests += calls.requests.get_sample_sum() as u64;
        }
        let mut queues = HashMap::new();
        for queue in metrics.queues.all() {
            let acked = |s: AckStatus| queue.acked[s as usize].get();
            let retention = queue.retention_deleted.get();
            let completed = queue
                .completed_deleted
                .load(std::sync::atomic::Ordering::Relaxed);
            let totals = QueueTotals {
                pushed: queue.pushed.get(),
                delivered: queue.delivered.get(),
                acked: acked(AckStatus::Completed) + acked(AckStatus::Dlq),
                ack_failed: acked(AckStatus::Failed),
                dead_lettered: queue.dead_lettered.get(),
                transactions: queue
                    .transactions
                    .load(std::sync::atomic::Ordering::Relaxed),
                expired: queue.expired.get(),
                evicted: queue.evicted.get(),
                retention_deleted: retention.saturating_sub(completed),
                completed_deleted: completed,
                lag_ms_sum: queue.end_to_end.get_sample_sum() * 1000.0,
                lag_samples: queue.end_to_end.get_sample_count(),
            };
            worker.pop_messages += totals.delivered;
            worker.ack_messages += AckStatus::ALL.into_iter().map(acked).sum::<u64>();
            queues.insert(queue.label.to_string(), totals);
        }
        Totals { worker, queues }
    }
}

/// What `queue` counted between the totals `then` and `now`.
fn queue_delta(queue: &str, now: &QueueTotals, then: &QueueTotals) -> QueueRow {
    QueueRow {
        queue: queue.to_owned(),
        pushed: sub(now.pushed, then.pushed),
        delivered: sub(now.delivered, then.delivered),
        acked: sub(now.acked, then.acked),
        ack_failed: sub(now.ack_failed, then.ack_failed),
        dead_lettered: sub(now.dead_lettered, then.dead_lettered),
        transactions: sub(now.transactions, then.transactions),
        expired: sub(now.expired, then.expired),
        evicted: sub(now.evicted, then.evicted),
        retention_deleted: sub(now.retention_deleted, then.retention_deleted),
        completed_deleted: sub(now.completed_deleted, then.completed_deleted),
        lag_ms_sum: (now.lag_ms_sum - then.lag_ms_sum).max(0.0),
        lag_samples: sub(now.lag_samples, then.lag_samples),
        lag_ms_max: 0.0,
        waiters: 0,
    }
}

/// Whether a queue row adds nothing (its waiter sample aside).
fn counted_nothing(row: &QueueRow) -> bool {
    let blank = QueueRow {
        queue: row.queue.clone(),
        waiters: row.waiters,
        ..QueueRow::default()
    };
    *row == blank
}

/// What the instance counted between the totals `then` and `now`.
fn worker_delta(now: &WorkerTotals, then: &WorkerTotals) -> WorkerRow {
    WorkerRow {
        requests: sub(now.requests, then.requests),
        push_messages: sub(now.push_messages, then.push_messages),
        pop_messages: sub(now.pop_messages, then.pop_messages),
        ack_messages: sub(now.ack_messages, then.ack_messages),
        db_calls: sub(now.db_calls, then.db_calls),
        batch_requests: sub(now.batch_requests, then.batch_requests),
        db_errors: sub(now.db_errors, then.db_errors),
        cpu_seconds: (now.cpu_seconds - then.cpu_seconds).max(0.0),
    }
}

/// What the writer remembers between writes.
#[derive(Default)]
pub(crate) struct HistoryState {
    /// Totals included in writes that succeeded.
    written: Totals,
    /// Largest latencies taken from the counters and not yet written, per label.
    lag_ms_max: HashMap<String, f64>,
    /// Labels whose last written waiter sample was not zero (a drop to zero is written too).
    waited: HashSet<String>,
    started_at: Option<OffsetDateTime>,
}

impl HistoryState {
    /// Builds the write of everything counted since the last successful one, runs `write`, and
    /// on success remembers what it wrote. Returns whether the write succeeded.
    pub(crate) async fn write_once<F, Fut>(
        &mut self,
        metrics: &Metrics,
        sample: Sample,
        uptime: Duration,
        write: F,
    ) -> bool
    where
        F: FnOnce(HistoryWrite) -> Fut,
        Fut: Future<Output = Result<OffsetDateTime, DbError>>,
    {
        let now = Totals::read(metrics, sample.cpu_seconds);
        for queue in metrics.queues.all() {
            let taken = queue.lag_ms_max_take();
            let kept = self.lag_ms_max.entry(queue.label.to_string()).or_default();
            *kept = kept.max(taken);
        }
        let waiters = waiters_by_label(metrics, &sample.waiters);
        let queues = self.rows(&now, &waiters);
        let request = HistoryWrite {
            worker: worker_delta(&now.worker, &self.written.worker),
            queues,
            sample,
            started_at: self.started_at,
            uptime_seconds: uptime.as_secs_f64(),
        };
        let labels_waited: HashSet<String> = waiters
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(label, _)| label.clone())
            .collect();
        match write(request).await {
            Ok(started_at) => {
                self.started_at = Some(started_at);
                self.written = now;
                self.lag_ms_max.clear();
                self.waited = labels_waited;
                true
            }
            Err(error) => {
                tracing::warn!(%error, "metrics history not written; its counts go with the next write");
                false
            }
        }
    }

    /// The queue rows of a write: labels that counted something, or have (or just lost)
    /// waiters.
    fn rows(&self, now: &Totals, waiters: &HashMap<String, usize>) -> Vec<QueueRow> {
        let blank = QueueTotals::default();
        let mut rows = Vec::new();
        for (label, totals) in &now.queues {
            let then = self.written.queues.get(label).unwrap_or(&blank);
            let mut row = queue_delta(label, totals, then);
            row.lag_ms_max = self.lag_ms_max.get(label).copied().unwrap_or(0.0);
            let parked = waiters.get(label).copied().unwrap_or(0);
            row.waiters = i32::try_from(parked).unwrap_or(i32::MAX);
            if !counted_nothing(&row) || parked > 0 || self.waited.contains(label) {
                rows.push(row);
            }
        }
        rows.sort_by(|a, b| a.queue.cmp(&b.queue));
        rows
    }
}

/// Parked long-polls per `queue` label (queues past the cap add up under `_other`).
fn waiters_by_label(
    metrics: &Metrics,
    by_queue: &HashMap<String, usize>,
) -> HashMap<String, usize> {
    let mut out: HashMap<String, usize> = HashMap::new();
    for (queue, count) in by_queue {
        *out.entry(metrics.queue(queue).label.to_string())
            .or_default() += count;
    }
    out
}

/// What the writer reads its samples from.
pub(crate) struct Sources {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) db: Db,
    pub(crate) waiters: Arc<Waiters>,
    /// Requests in flight now.
    pub(crate) inflight: Box<dyn Fn() -> usize + Send + Sync>,
    pub(crate) started: Instant,
}

impl Sources {
    async fn sample(&self) -> Sample {
        let process = ProcessSample::read(self.metrics.clock_ticks_per_second()).await;
        let pool = self.db.stats();
        let to_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        Sample {
            rss_bytes: i64::try_from(process.rss_bytes).unwrap_or(i64::MAX),
            db_pool_busy: to_i32(pool.busy()),
            db_pool_waiting: to_i32(pool.waiting),
            http_inflight: to_i32((self.inflight)()),
            longpoll_waiters: to_i32(self.waiters.len()),
            waiters: self.waiters.per_queue(),
            cpu_seconds: process.user_seconds + process.system_seconds,
        }
    }

    async fn write(&self, state: &mut HistoryState, identity: &Identity) {
        let sample = self.sample().await;
        let db = &self.db;
        state
            .write_once(
                &self.metrics,
                sample,
                self.started.elapsed(),
                |request| async move {
                    db.history_write(&identity.worker_id, &identity.hostname, &request)
                        .await
                },
            )
            .await;
    }
}

/// How this instance names itself in `worker_metrics`.
pub(crate) struct Identity {
    pub(crate) worker_id: String,
    pub(crate) hostname: String,
}

/// The running writer.
pub(crate) struct HistoryWriter {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl HistoryWriter {
    /// Writes every `interval` (`STATS_INTERVAL_MS`).
    pub(crate) fn start(sources: Sources, identity: Identity, interval: Duration) -> HistoryWriter {
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(sources, identity, interval, stopped));
        HistoryWriter { stop, task }
    }

    /// Writes the last counts and stops.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(error) = self.task.await {
            tracing::warn!(%error, "metrics history writer ended abnormally");
        }
    }
}

async fn run(
    sources: Sources,
    identity: Identity,
    interval: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let mut state = HistoryState::default();
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: the instance is on record from its start.
    loop {
        let stopping = tokio::select! {
            _ = ticker.tick() => false,
            _ = stopped.changed() => true,
        };
        sources.write(&mut state, &identity).await;
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
