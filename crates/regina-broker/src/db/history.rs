//! The metrics history write (migration `0007_metrics_history.sql`): one statement adds an
//! instance's counts to the current minute's `worker_metrics` row and `queue_metrics` rows (the
//! minute of the database clock), and replaces the gauge samples.

use std::collections::HashMap;

use time::OffsetDateTime;

use super::{Db, DbError};

/// `$1` worker id, `$2` hostname, `$3` version, `$4` start (null: `now() − $5` seconds), `$6`–`$18`
/// the worker row, `$19`–`$33` the queue rows as parallel arrays. Returns the row's start.
const HISTORY_WRITE: &str = "
with minute as (
    select (date_trunc('minute', now() at time zone 'UTC') at time zone 'UTC') as bucket
), worker as (
    insert into regina.worker_metrics as w
        (bucket, worker_id, hostname, version, started_at, last_seen, requests, push_messages,
         pop_messages, ack_messages, db_calls, batch_requests, db_errors, cpu_seconds, rss_bytes,
         db_pool_busy, db_pool_waiting, http_inflight, longpoll_waiters)
    select m.bucket, $1::text, $2::text, $3::text,
           coalesce($4::timestamptz, now() - $5::float8 * interval '1 second'), now(),
           $6::int8, $7::int8, $8::int8, $9::int8, $10::int8, $11::int8, $12::int8, $13::float8,
           $14::int8, $15::int4, $16::int4, $17::int4, $18::int4
    from minute m
    on conflict (bucket, worker_id) do update set
        last_seen = excluded.last_seen,
        requests = w.requests + excluded.requests,
        push_messages = w.push_messages + excluded.push_messages,
        pop_messages = w.pop_messages + excluded.pop_messages,
        ack_messages = w.ack_messages + excluded.ack_messages,
        db_calls = w.db_calls + excluded.db_calls,
        batch_requests = w.batch_requests + excluded.batch_requests,
        db_errors = w.db_errors + excluded.db_errors,
        cpu_seconds = w.cpu_seconds + excluded.cpu_seconds,
        rss_bytes = excluded.rss_bytes,
        db_pool_busy = excluded.db_pool_busy,
        db_pool_waiting = excluded.db_pool_waiting,
        http_inflight = excluded.http_inflight,
        longpoll_waiters = excluded.longpoll_waiters
    returning w.started_at
), queues as (
    insert into regina.queue_metrics as q
        (bucket, queue_name, worker_id, pushed, delivered, acked, ack_failed, dead_lettered,
         transactions, expired, evicted, retention_deleted, completed_deleted, lag_ms_sum,
         lag_samples, lag_ms_max, waiters)
    select m.bucket, u.queue_name, $1::text, u.pushed, u.delivered, u.acked, u.ack_failed,
           u.dead_lettered, u.transactions, u.expired, u.evicted, u.retention_deleted,
           u.completed_deleted, u.lag_ms_sum, u.lag_samples, u.lag_ms_max, u.waiters
    from minute m
    cross join unnest($19::text[], $20::int8[], $21::int8[], $22::int8[], $23::int8[],
                      $24::int8[], $25::int8[], $26::int8[], $27::int8[], $28::int8[],
                      $29::int8[], $30::float8[], $31::int8[], $32::float8[], $33::int4[])
        as u(queue_name, pushed, delivered, acked, ack_failed, dead_lettered, transactions,
             expired, evicted, retention_deleted, completed_deleted, lag_ms_sum, lag_samples,
             lag_ms_max, waiters)
    on conflict (bucket, queue_name, worker_id) do update set
        pushed = q.pushed + excluded.pushed,
        delivered = q.delivered + excluded.delivered,
        acked = q.acked + excluded.acked,
        ack_failed = q.ack_failed + excluded.ack_failed,
        dead_lettered = q.dead_lettered + excluded.dead_lettered,
        transactions = q.transactions + excluded.transactions,
        expired = q.expired + excluded.expired,
        evicted = q.evicted + excluded.evicted,
        retention_deleted = q.retention_deleted + excluded.retention_deleted,
        completed_deleted = q.completed_deleted + excluded.completed_deleted,
        lag_ms_sum = q.lag_ms_sum + excluded.lag_ms_sum,
        lag_samples = q.lag_samples + excluded.lag_samples,
        lag_ms_max = greatest(q.lag_ms_max, excluded.lag_ms_max),
        waiters = excluded.waiters
)
select started_at from worker";

/// The counts of one `queue_metrics` row to add, with its gauge sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QueueRow {
    pub(crate) queue: String,
    pub(crate) pushed: i64,
    pub(crate) delivered: i64,
    pub(crate) acked: i64,
    pub(crate) ack_failed: i64,
    pub(crate) dead_lettered: i64,
    pub(crate) transactions: i64,
    pub(crate) expired: i64,
    pub(crate) evicted: i64,
    pub(crate) retention_deleted: i64,
    pub(crate) completed_deleted: i64,
    pub(crate) lag_ms_sum: f64,
    pub(crate) lag_samples: i64,
    pub(crate) lag_ms_max: f64,
    pub(crate) waiters: i32,
}

/// The counts of the `worker_metrics` row to add.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct WorkerRow {
    pub(crate) requests: i64,
    pub(crate) push_messages: i64,
    pub(crate) pop_messages: i64,
    pub(crate) ack_messages: i64,
    pub(crate) db_calls: i64,
    pub(crate) batch_requests: i64,
    pub(crate) db_errors: i64,
    pub(crate) cpu_seconds: f64,
}

/// The gauges of this instance at the time of a write.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Sample {
    pub(crate) rss_bytes: i64,
    pub(crate) db_pool_busy: i32,
    pub(crate) db_pool_waiting: i32,
    pub(crate) http_inflight: i32,
    pub(crate) longpoll_waiters: i32,
    /// Parked long-polls per queue name.
    pub(crate) waiters: HashMap<String, usize>,
    /// User + system CPU since the process started, seconds.
    pub(crate) cpu_seconds: f64,
}

/// One write: what the statement of [`Db::history_write`] adds.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct HistoryWrite {
    pub(crate) worker: WorkerRow,
    pub(crate) queues: Vec<QueueRow>,
    pub(crate) sample: Sample,
    /// The instance's start on the database clock, once a write has told it.
    pub(crate) started_at: Option<OffsetDateTime>,
    /// Seconds since the start, from which the first write computes `started_at`.
    pub(crate) uptime_seconds: f64,
}

impl Db {
    /// Adds one history write of instance `worker_id` on `hostname`; returns the instance's
    /// start as recorded (the database clock).
    ///
    /// # Errors
    /// The [`DbError`] of the statement; nothing was added then.
    pub(crate) async fn history_write(
        &self,
        worker_id: &str,
        hostname: &str,
        write: &HistoryWrite,
    ) -> Result<OffsetDateTime, DbError> {
        let w = &write.worker;
        let s = &write.sample;
        let q = &write.queues;
        let column = |f: fn(&QueueRow) -> i64| -> Vec<i64> { q.iter().map(f).collect() };
        let names: Vec<&str> = q.iter().map(|r| r.queue.as_str()).collect();
        let lag_ms_sum: Vec<f64> = q.iter().map(|r| r.lag_ms_sum).collect();
        let lag_ms_max: Vec<f64> = q.iter().map(|r| r.lag_ms_max).collect();
        let waiters: Vec<i32> = q.iter().map(|r| r.waiters).collect();
        let counts = [
            column(|r| r.pushed),
            column(|r| r.delivered),
            column(|r| r.acked),
            column(|r| r.ack_failed),
            column(|r| r.dead_lettered),
            column(|r| r.transactions),
            column(|r| r.expired),
            column(|r| r.evicted),
            column(|r| r.retention_deleted),
            column(|r| r.completed_deleted),
        ];
        let lag_samples = column(|r| r.lag_samples);
        let rows = self
            .query_unprepared(
                HISTORY_WRITE,
                &[
                    &worker_id,
                    &hostname,
                    &env!("CARGO_PKG_VERSION"),
                    &write.started_at,
                    &write.uptime_seconds,
                    &w.requests,
                    &w.push_messages,
                    &w.pop_messages,
                    &w.ack_messages,
                    &w.db_calls,
                    &w.batch_requests,
                    &w.db_errors,
                    &w.cpu_seconds,
                    &s.rss_bytes,
                    &s.db_pool_busy,
                    &s.db_pool_waiting,
                    &s.http_inflight,
                    &s.longpoll_waiters,
                    &names,
                    &counts[0],
                    &counts[1],
                    &counts[2],
                    &counts[3],
                    &counts[4],
                    &counts[5],
                    &counts[6],
                    &counts[7],
                    &counts[8],
                    &counts[9],
                    &lag_ms_sum,
                    &lag_samples,
                    &lag_ms_max,
                    &waiters,
                ],
            )
            .await?;
        let row = rows
            .first()
            .ok_or_else(|| DbError::Internal("history write returned no row".to_owned()))?;
        row.try_get(0).map_err(|e| DbError::Internal(e.to_string()))
    }
}
