//! The stats refresh (sql/functions/91_stats_refresh.sql, ADR 0012) and the SQL of the dashboard
//! feeds that read its tables (overview, status, analytics).
//!
//! A pass runs on a session of its own (the leader's stats session, or one opened for `POST
//! /api/v1/stats/refresh`) and holds the stats lock, a session advisory lock, from start to end,
//! so no two passes run at once anywhere. It is a series of short transactions: one to find the
//! partitions to recount, one per batch of them, one to sum them up.

use std::time::{Duration, Instant};

use time::OffsetDateTime;
use tokio_postgres::Client;

use super::error::{classify, DbError};
use super::jobs::{self, Job};
use super::{single_text, Db};

/// Batches of one pass at most; partitions left over wait for the next pass.
const PASS_BATCHES_MAX: usize = 10_000;

/// How much one batch of a pass recounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// Partitions per batch (`STATS_BATCH_SIZE`).
    pub(crate) partitions: i32,
    /// Stored messages whose partitions a batch recounts, about (`STATS_BATCH_ROWS`): a batch of
    /// deep partitions takes fewer of them.
    pub(crate) rows: i64,
}

/// The outcome of a refresh attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// A pass ran: how long it took and how many partitions it recounted.
    Done {
        /// Wall time of the pass.
        duration: Duration,
        /// Partitions recounted.
        recounted: u64,
    },
    /// Another session holds the stats lock: a pass runs elsewhere.
    Busy,
}

/// Runs one pass unless one runs elsewhere: recounts changed partitions in batches within `batch`
/// while `keep_going()` holds, and records the pass in `regina.job_runs` under `worker_id`.
///
/// # Errors
/// Any database error; the lock is released before it is returned (or dies with the session).
pub(crate) async fn refresh(
    client: &Client,
    batch: BatchLimits,
    worker_id: &str,
    keep_going: impl Fn() -> bool,
) -> Result<Refresh, DbError> {
    if !jobs::try_lock(client, Job::StatsRefresh).await? {
        return Ok(Refresh::Busy);
    }
    let started_at = OffsetDateTime::now_utc();
    let started = Instant::now();
    let recounted = pass(client, batch, keep_going).await;
    let unlocked = jobs::unlock(client, Job::StatsRefresh).await;
    let recounted = recounted?;
    unlocked?;
    jobs::record(client, Job::StatsRefresh, worker_id, started_at, recounted).await?;
    Ok(Refresh::Done {
        duration: started.elapsed(),
        recounted,
    })
}

/// Begin, batches, end; the number of partitions recounted.
async fn pass(
    client: &Client,
    batch: BatchLimits,
    keep_going: impl Fn() -> bool,
) -> Result<u64, DbError> {
    client
        .query_one("select regina.stats_refresh_begin()", &[])
        .await
        .map_err(|e| classify(&e))?;
    let mut recounted: u64 = 0;
    for _ in 0..PASS_BATCHES_MAX {
        let row = client
            .query_one(
                "select regina.stats_refresh_batch($1::int, null, $2::bigint)",
                &[&batch.partitions, &batch.rows],
            )
            .await
            .map_err(|e| classify(&e))?;
        // Negative: cut at the row bound with partitions left waiting.
        let taken: i32 = row
            .try_get(0)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        recounted += u64::from(taken.unsigned_abs());
        if (0..batch.partitions).contains(&taken) || !keep_going() {
            break;
        }
    }
    let total = i64::try_from(recounted).unwrap_or(i64::MAX);
    client
        .execute("select regina.stats_refresh_end($1::bigint)", &[&total])
        .await
        .map_err(|e| classify(&e))?;
    Ok(recounted)
}

impl Db {
    /// `regina.overview(query)`: the overview body.
    pub(crate) async fn overview(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.overview($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.status(query)`: the status body.
    pub(crate) async fn status(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.status($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.status_queues(query)`: the status queue listing body.
    pub(crate) async fn status_queues(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.status_queues($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.status_queue(query)`: one queue's status body, `None` for an unknown queue.
    pub(crate) async fn status_queue(&self, query: &str) -> Result<Option<String>, DbError> {
        let sql = "select regina.status_queue($1::text::jsonb)::text";
        let rows = self.query_unprepared(sql, &[&query]).await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => row.try_get(0).map_err(|e| DbError::Internal(e.to_string())),
        }
    }

    /// `regina.status_queue_messages(query)`: the queue's message count (stats) and one page,
    /// `None` for an unknown queue.
    pub(crate) async fn status_queue_messages(
        &self,
        query: &str,
    ) -> Result<Option<(i64, String)>, DbError> {
        let sql = "select total, body::text from regina.status_queue_messages($1::text::jsonb)";
        let rows = self.query_unprepared(sql, &[&query]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let total: i64 = row
            .try_get(0)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        let body: String = row
            .try_get(1)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        Ok(Some((total, body)))
    }

    /// `regina.status_analytics(query)`: messages pushed per interval.
    pub(crate) async fn status_analytics(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.status_analytics($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.analytics(feed, query)`: one analytics feed's series.
    pub(crate) async fn analytics(&self, feed: &str, query: &str) -> Result<String, DbError> {
        let sql = "select regina.analytics($1::text, $2::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&feed, &query]).await?)
    }
}

/// One cluster gauge of the Prometheus output, as `regina.metrics_cluster_gauges` reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterGauge {
    /// `queue_depth`, `dlq_depth`, `consumer_lag_messages` or `consumer_lag_seconds`.
    pub(crate) metric: String,
    /// The queue label (`_other` beyond the label cap).
    pub(crate) queue: String,
    /// The group label of the lag gauges.
    pub(crate) group: Option<String>,
    /// The value as of the last stats refresh.
    pub(crate) value: f64,
}

impl Db {
    /// `regina.metrics_cluster_gauges(labels_max)`: the cluster gauges from the stats tables.
    pub(crate) async fn cluster_gauges(
        &self,
        queue_labels_max: i32,
    ) -> Result<Vec<ClusterGauge>, DbError> {
        let sql = "select metric, queue, consumer_group, value \
                   from regina.metrics_cluster_gauges($1::int)";
        let column = |e: tokio_postgres::Error| DbError::Internal(e.to_string());
        self.query_unprepared(sql, &[&queue_labels_max])
            .await?
            .iter()
            .map(|row| {
                Ok(ClusterGauge {
                    metric: row.try_get(0).map_err(column)?,
                    queue: row.try_get(1).map_err(column)?,
                    group: row.try_get(2).map_err(column)?,
                    value: row.try_get(3).map_err(column)?,
                })
            })
            .collect()
    }
}
