//! Statements of the background jobs' sessions (retention, eviction, partition cleanup, trimming
//! of the metrics history, and the locks and records the stats refresh shares with them): each
//! call is one short transaction of its own.

use time::OffsetDateTime;
use tokio_postgres::Client;

use super::error::{classify, DbError};

/// What one batch of a deletion job did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Batch {
    /// Messages (or partitions, for cleanup) deleted.
    pub(crate) removed: u64,
    /// Partitions left alone because someone else held them; a later batch takes them.
    pub(crate) busy: u64,
    /// Per queue where something was deleted: (queue, removed, removed for
    /// `completedRetentionSeconds` only).
    pub(crate) queues: Vec<(String, u64, u64)>,
    /// The job's scan has not reached its end yet: each call examines a bounded window of
    /// partitions, and the next one resumes after it.
    pub(crate) more: bool,
}

/// A deletion job of the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Job {
    /// `regina.retention_run`.
    Retention,
    /// `regina.eviction_run`.
    Eviction,
    /// `regina.partition_cleanup`.
    PartitionCleanup,
    /// `regina.metrics_trim`: the metrics history older than `METRICS_RETENTION_DAYS`.
    MetricsTrim,
    /// The stats refresh (`regina.stats_refresh_*`, see `db::stats`).
    StatsRefresh,
}

impl Job {
    /// The name recorded in `regina.job_runs`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Job::Retention => "retention",
            Job::Eviction => "eviction",
            Job::PartitionCleanup => "partition_cleanup",
            Job::MetricsTrim => "metrics_trim",
            Job::StatsRefresh => "stats_refresh",
        }
    }

    /// Key of the session advisory lock a pass of this job holds, so that no two passes of it run
    /// at once anywhere (ASCII "regina" + 0x10…).
    fn lock_key(self) -> i64 {
        match self {
            Job::Retention => 0x7265_6769_6e61_0010,
            Job::Eviction => 0x7265_6769_6e61_0011,
            Job::PartitionCleanup => 0x7265_6769_6e61_0012,
            Job::MetricsTrim => 0x7265_6769_6e61_0014,
            // Also taken by POST /api/v1/stats/refresh, and by sql/tests to keep passes away.
            Job::StatsRefresh => 0x7265_6769_6e61_0013,
        }
    }
}

/// Takes the job's lock for this session; false when another session holds it.
pub(crate) async fn try_lock(client: &Client, job: Job) -> Result<bool, DbError> {
    let row = client
        .query_one("select pg_try_advisory_lock($1)", &[&job.lock_key()])
        .await
        .map_err(|e| classify(&e))?;
    row.try_get(0).map_err(|e| DbError::Internal(e.to_string()))
}

/// Releases the job's lock.
pub(crate) async fn unlock(client: &Client, job: Job) -> Result<(), DbError> {
    client
        .execute("select pg_advisory_unlock($1)", &[&job.lock_key()])
        .await
        .map(drop)
        .map_err(|e| classify(&e))
}

/// One batch of a deletion job: at most `limit` messages (partitions, for cleanup; history rows,
/// for the trim), `days` being the age the job deletes at (cleanup and trim).
pub(crate) async fn batch(
    client: &Client,
    job: Job,
    limit: i32,
    days: i32,
) -> Result<Batch, DbError> {
    let rows = match job {
        Job::Retention => {
            let sql = "select queue_name, removed, busy, completed, more \
                 from regina.retention_run($1::int)";
            client.query(sql, &[&limit]).await
        }
        Job::Eviction => {
            let sql = "select queue_name, removed, busy, completed, more \
                 from regina.eviction_run($1::int)";
            client.query(sql, &[&limit]).await
        }
        Job::PartitionCleanup => {
            let sql = "select queue_name, removed, 0, 0::bigint, more \
                       from regina.partition_cleanup($1::int, $2::int)";
            client.query(sql, &[&days, &limit]).await
        }
        Job::MetricsTrim => {
            let sql =
                "select null::text, regina.metrics_trim($1::int, $2::int), 0, 0::bigint, false";
            client.query(sql, &[&days, &limit]).await
        }
        // A stats pass has batches of its own (db::stats); it deletes nothing.
        Job::StatsRefresh => return Ok(Batch::default()),
    }
    .map_err(|e| classify(&e))?;
    let mut batch = Batch::default();
    let column = |e: tokio_postgres::Error| DbError::Internal(e.to_string());
    for row in rows {
        // Null for the metrics trim, which deletes history rows of no one queue.
        let queue: Option<String> = row.try_get(0).map_err(column)?;
        let removed = row.try_get::<_, i64>(1).map_err(column)?.unsigned_abs();
        let busy: i32 = row.try_get(2).map_err(column)?;
        let completed = row.try_get::<_, i64>(3).map_err(column)?.unsigned_abs();
        batch.more |= row.try_get::<_, bool>(4).map_err(column)?;
        batch.removed += removed;
        batch.busy += u64::from(busy.unsigned_abs());
        if let Some(queue) = queue.filter(|_| removed > 0) {
            batch.queues.push((queue, removed, completed));
        }
    }
    Ok(batch)
}

/// Records one pass of `job` in `regina.job_runs` and keeps the job's latest passes only.
pub(crate) async fn record(
    client: &Client,
    job: Job,
    worker_id: &str,
    started: OffsetDateTime,
    removed: u64,
) -> Result<(), DbError> {
    const KEPT: i64 = 100;
    let removed = i64::try_from(removed).unwrap_or(i64::MAX);
    client
        .execute(
            "insert into regina.job_runs (job, worker_id, started_at, finished_at, removed)
             values ($1, $2, $3, clock_timestamp(), $4)",
            &[&job.name(), &worker_id, &started, &removed],
        )
        .await
        .map_err(|e| classify(&e))?;
    client
        .execute(
            "delete from regina.job_runs r
             where r.job = $1
               and r.id < (select k.id from regina.job_runs k where k.job = $1
                           order by k.id desc offset $2::bigint - 1 limit 1)",
            &[&job.name(), &KEPT],
        )
        .await
        .map(drop)
        .map_err(|e| classify(&e))
}
