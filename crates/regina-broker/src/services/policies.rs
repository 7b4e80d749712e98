//! The deletion jobs of the leader (http-api.md §4.13, §4.15): retention, partition cleanup and the
//! trim of the metrics history every `RETENTION_INTERVAL`, eviction every `EVICTION_INTERVAL`. They
//! run on a session of their own, with its own statement timeout, only while this instance leads. A
//! pass is a loop of short transactions (one batch each) with a pause between them, and holds a
//! lock of its job for the pass, so no two passes of one job ever run at once, whichever instance
//! starts them.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio_postgres::Client;

use crate::config::Config;
use crate::db::jobs::{self, Job};
use crate::db::{ConnectSettings, DbError};
use crate::metrics::Metrics;

/// `statement_timeout` of the jobs' session, milliseconds: one batch must fit.
const JOB_STATEMENT_TIMEOUT_MS: u64 = 60_000;
/// Pause between two batches of a pass, so that request work gets the database in between.
const BATCH_PAUSE: Duration = Duration::from_millis(10);
/// Batches of one pass at most; a larger backlog is worked off by the next passes.
const PASS_BATCHES_MAX: usize = 1_000;
/// Times a pass goes back for partitions that were busy, and the pause before each.
const BUSY_RETRIES_MAX: usize = 3;
const BUSY_PAUSE: Duration = Duration::from_millis(100);

/// The jobs' settings, from `Config`.
#[derive(Clone, Debug)]
pub(crate) struct PolicySettings {
    /// `RETENTION_INTERVAL`.
    pub(crate) retention_interval: Duration,
    /// `RETENTION_BATCH_SIZE`.
    pub(crate) retention_batch: i32,
    /// `EVICTION_INTERVAL`.
    pub(crate) eviction_interval: Duration,
    /// `EVICTION_BATCH_SIZE`.
    pub(crate) eviction_batch: i32,
    /// `PARTITION_CLEANUP_DAYS` (0: no cleanup).
    pub(crate) cleanup_days: i32,
    /// `METRICS_RETENTION_DAYS`.
    pub(crate) metrics_retention_days: i32,
    /// This instance's `WORKER_ID`, recorded with each pass.
    pub(crate) worker_id: String,
}

impl PolicySettings {
    /// The jobs' settings in `config`.
    pub(crate) fn new(config: &Config) -> PolicySettings {
        PolicySettings {
            retention_interval: Duration::from_millis(config.retention_interval_ms.max(1)),
            retention_batch: i32::try_from(config.retention_batch_size.max(1)).unwrap_or(i32::MAX),
            eviction_interval: Duration::from_millis(config.eviction_interval_ms.max(1)),
            eviction_batch: i32::try_from(config.eviction_batch_size.max(1)).unwrap_or(i32::MAX),
            cleanup_days: i32::try_from(config.partition_cleanup_days).unwrap_or(i32::MAX),
            metrics_retention_days: i32::try_from(config.metrics_retention_days)
                .unwrap_or(i32::MAX),
            worker_id: config.worker_id(),
        }
    }
}

pub(super) async fn run(
    settings: ConnectSettings,
    policy: PolicySettings,
    metrics: Arc<Metrics>,
    leader: watch::Receiver<bool>,
    stopped: watch::Receiver<bool>,
) {
    let jobs = Jobs { policy, metrics };
    let settings = settings.with_statement_timeout_ms(JOB_STATEMENT_TIMEOUT_MS);
    super::while_leading(settings, jobs, leader, stopped).await;
}

impl super::LeaderTask for Jobs {
    const SESSION: &'static str = "jobs";

    fn run<'a>(
        &'a self,
        client: &'a Client,
        leader: &'a mut watch::Receiver<bool>,
        stopped: &'a mut watch::Receiver<bool>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(run_while_leader(client, self, leader, stopped))
    }
}

/// Runs each job when it is due. Returns true when asked to stop, false when leadership or the
/// session was lost.
async fn run_while_leader(
    client: &Client,
    jobs: &Jobs,
    leader: &mut watch::Receiver<bool>,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let policy = &jobs.policy;
    let mut retention = tokio::time::interval(policy.retention_interval);
    let mut eviction = tokio::time::interval(policy.eviction_interval);
    for ticker in [&mut retention, &mut eviction] {
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        let due: &[Job] = tokio::select! {
            _ = retention.tick() => &[Job::Retention, Job::PartitionCleanup, Job::MetricsTrim],
            _ = eviction.tick() => &[Job::Eviction],
            changed = leader.changed() => {
                if changed.is_err() || !*leader.borrow_and_update() {
                    return false;
                }
                continue;
            }
            _ = stopped.changed() => return true,
        };
        for &job in due {
            if job == Job::PartitionCleanup && policy.cleanup_days == 0 {
                continue;
            }
            if let Err(error) = jobs.pass(client, job, leader, stopped).await {
                tracing::warn!(%error, job = job.name(), "background job failed");
                if matches!(error, DbError::Unavailable(_)) || client.is_closed() {
                    return false;
                }
            }
        }
    }
}

/// The jobs' settings and the metrics they count into.
struct Jobs {
    policy: PolicySettings,
    metrics: Arc<Metrics>,
}

impl Jobs {
    /// One pass of `job`, unless another session runs one now.
    async fn pass(
        &self,
        client: &Client,
        job: Job,
        leader: &watch::Receiver<bool>,
        stopped: &watch::Receiver<bool>,
    ) -> Result<(), DbError> {
        if !jobs::try_lock(client, job).await? {
            tracing::debug!(job = job.name(), "a pass of this job runs elsewhere");
            return Ok(());
        }
        let started = OffsetDateTime::now_utc();
        let batches = self.batches(client, job, leader, stopped).await;
        let unlocked = jobs::unlock(client, job).await;
        let removed = batches?;
        unlocked?;
        if removed > 0 {
            tracing::info!(job = job.name(), removed, "background job deleted");
        }
        jobs::record(client, job, &self.policy.worker_id, started, removed).await
    }

    /// Counts what one committed batch deleted, per queue.
    fn count(&self, job: Job, batch: &jobs::Batch) {
        for (queue, removed, completed) in &batch.queues {
            match job {
                Job::Retention => self.metrics.retention_deleted(queue, *removed, *completed),
                Job::Eviction => self.metrics.evicted(queue, *removed),
                Job::PartitionCleanup | Job::MetricsTrim | Job::StatsRefresh => {}
            }
        }
    }

    /// The batches of one pass, while each deletes a full batch or has more partitions to examine
    /// (or met busy partitions, a few times) and this instance still leads; the number of rows
    /// deleted.
    async fn batches(
        &self,
        client: &Client,
        job: Job,
        leader: &watch::Receiver<bool>,
        stopped: &watch::Receiver<bool>,
    ) -> Result<u64, DbError> {
        let policy = &self.policy;
        let limit = match job {
            Job::Eviction => policy.eviction_batch,
            _ => policy.retention_batch,
        };
        let days = match job {
            Job::MetricsTrim => policy.metrics_retention_days,
            _ => policy.cleanup_days,
        };
        let full = u64::from(limit.unsigned_abs());
        let mut removed = 0;
        let mut busy_retries = 0;
        for _ in 0..PASS_BATCHES_MAX {
            let batch = jobs::batch(client, job, limit, days).await?;
            self.count(job, &batch);
            removed += batch.removed;
            let pause = if batch.removed >= full || batch.more {
                BATCH_PAUSE
            } else if batch.busy > 0 && busy_retries < BUSY_RETRIES_MAX {
                busy_retries += 1;
                BUSY_PAUSE
            } else {
                break;
            };
            if *stopped.borrow() || !*leader.borrow() {
                break;
            }
            tokio::time::sleep(pause).await;
        }
        Ok(removed)
    }
}
