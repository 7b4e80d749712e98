//! PostgreSQL access: the connection pool, the migration runner and every SQL text of the broker.
//!
//! Requests travel as one JSON array per fused call (`$1::text::jsonb`, sql/README.md) and results
//! come back as `result::text`, so payloads are never parsed into trees on the way through.

mod access;
mod admin;
mod error;
mod failover;
pub(crate) mod history;
pub(crate) mod jobs;
mod listen;
mod maintenance;
pub(crate) mod migrate;
mod outcome;
mod pool;
pub(crate) mod stats;
mod streams;
mod traces;

use tokio_postgres::{Client, Row};
use uuid::Uuid;

pub(crate) use admin::Cleared;
pub(crate) use error::DbError;
pub(crate) use listen::{Notice, LISTEN_ROLE};
pub(crate) use outcome::{delay_until, PopOutcome};
pub(crate) use pool::{ConnectSettings, Db};
pub(crate) use streams::CycleRow;

/// The prepared statements of a pool session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stmt {
    /// `regina.push_text` (`regina.push` with its results as text).
    Push,
    /// `regina.pop_text` (`regina.pop` with its results as text).
    Pop,
    /// `regina.push_pop_text`: a push and the pops of the long-polls it would wake.
    PushPop,
    /// `regina.ack_text` (`regina.ack` with its results as text).
    Ack,
    /// `regina.lease_extend`.
    LeaseExtend,
    /// `regina.lease_release`.
    LeaseRelease,
    /// `regina.configure`.
    Configure,
    /// `regina.dlq_list`.
    DlqList,
    /// Health probe.
    Ping,
    /// Announcement of committed pushes to other instances.
    NotifyPushes,
    /// `regina.transaction`.
    Transaction,
    /// `regina.consumer_groups_list`.
    GroupsList,
    /// `regina.consumer_groups_lagging`.
    GroupsLagging,
    /// `regina.consumer_group_detail`.
    GroupDetail,
    /// `regina.consumer_group_delete`.
    GroupDelete,
    /// `regina.consumer_group_subscription`.
    GroupSubscription,
    /// `regina.consumer_group_seek`.
    GroupSeek,
    /// `regina.failover_replay`.
    FailoverReplay,
    /// `regina.maintenance_set`.
    MaintenanceSet,
    /// `regina.maintenance_get`.
    MaintenanceGet,
    /// `regina.trace_record`.
    TraceRecord,
    /// `regina.stream_cycle`.
    StreamCycle,
    /// `regina.stream_state_get`.
    StreamStateGet,
    /// `regina.stream_source_queue`.
    StreamSourceQueue,
}

impl Stmt {
    /// Number of variants (size of a session's statement cache).
    pub(crate) const COUNT: usize = 24;

    fn sql(self) -> &'static str {
        match self {
            Stmt::Push => {
                "select idx, result from regina.push_text($1::text::jsonb, $2::text::json, $3::boolean)"
            }
            Stmt::Pop => {
                // With $2, the call's transaction does not wait for its commit to reach the disk
                // (AUTO_ACK_COMMIT_ASYNC; a call that only claims never does, regina.pop).
                "select idx, result::text, events::text, quiet, \
                 case when $2::boolean then set_config('synchronous_commit', 'off', true) end \
                 from regina.pop_text($1::text::jsonb)"
            }
            Stmt::PushPop => {
                "select pop, idx, result, events::text, quiet \
                 from regina.push_pop_text($1::text::jsonb, $2::text::json, $3::text::jsonb)"
            }
            Stmt::Ack => {
                "select idx, result, wake_queue, wake_group, queue_name, acked, dead_lettered, \
                 leases_expired from regina.ack_text($1::text::jsonb, null, $2::boolean)"
            }
            Stmt::LeaseExtend => {
                "select idx, result::text from regina.lease_extend($1::text::jsonb)"
            }
            Stmt::LeaseRelease => {
                "select queue_name, consumer_group from regina.lease_release($1::uuid[])"
            }
            Stmt::NotifyPushes => "select pg_notify('regina_push', n) from unnest($1::text[]) n",
            Stmt::Configure => "select regina.configure($1::text::jsonb)::text",
            Stmt::DlqList => "select regina.dlq_list($1::text::jsonb)::text",
            Stmt::Ping => "select 1",
            Stmt::Transaction => {
                "select idx, result::text, wake_queue, wake_group, queue_name, acked, \
                 dead_lettered, leases_expired \
                 from regina.transaction($1::text::jsonb, $2::text::json)"
            }
            Stmt::GroupsList => {
                "select total, body::text from regina.consumer_groups_list($1::text::jsonb)"
            }
            Stmt::GroupsLagging => {
                "select total, body::text from regina.consumer_groups_lagging($1::text::jsonb)"
            }
            Stmt::GroupDetail => {
                "select regina.consumer_group_detail($1::text, $2::text::jsonb)::text"
            }
            Stmt::GroupDelete => {
                "select regina.consumer_group_delete($1::text, $2::text, $3::boolean)::text"
            }
            Stmt::GroupSubscription => {
                "select regina.consumer_group_subscription($1::text, $2::text::timestamptz)::text"
            }
            Stmt::GroupSeek => "select regina.consumer_group_seek($1::text::jsonb)::text",
            Stmt::FailoverReplay => {
                "select idx, result::text from regina.failover_replay($1::text::jsonb, $2::text::json)"
            }
            Stmt::MaintenanceSet => "select regina.maintenance_set($1::text, $2::boolean)",
            Stmt::MaintenanceGet => maintenance::MAINTENANCE_GET,
            Stmt::TraceRecord => "select regina.trace_record($1::text::jsonb, $2::text::json)::text",
            Stmt::StreamCycle => streams::CYCLE,
            Stmt::StreamStateGet => "select regina.stream_state_get($1::text::jsonb)::text",
            Stmt::StreamSourceQueue => "select regina.stream_source_queue($1::uuid)",
        }
    }
}

/// One result row of a batch function: the input index and the wire-ready JSON text.
#[derive(Debug)]
pub(crate) struct IndexedRow {
    /// 0-based position in the input array.
    pub(crate) idx: usize,
    /// `result::text`.
    pub(crate) result: String,
}

/// One row of `regina.pop`: the result and what the metrics count (a JSON array, or none).
#[derive(Debug)]
pub(crate) struct PopRow {
    /// The indexed result.
    pub(crate) row: IndexedRow,
    /// `events`.
    pub(crate) events: Option<String>,
    /// `quiet`: none, `infinity` or an RFC 3339 instant.
    pub(crate) quiet: Option<String>,
}

/// The metrics columns of one `regina.ack` or `regina.transaction` row.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct AckEvents {
    /// The item's queue (null when the message was unknown).
    pub(crate) queue: Option<String>,
    /// The status the item applied (none when it failed).
    pub(crate) acked: Option<String>,
    /// Heads dead-lettered by the item.
    pub(crate) dead_lettered: u64,
    /// Expired leases the item accounted.
    pub(crate) leases_expired: u64,
}

/// One row of `regina.ack` (or `regina.transaction`): the result plus the waiters to wake when an
/// ack ended a lease, and what the metrics count.
#[derive(Debug)]
pub(crate) struct AckRow {
    /// The indexed result.
    pub(crate) row: IndexedRow,
    /// Queue and group whose waiters should retry, when the ack ended a lease.
    pub(crate) wake: Option<(String, String)>,
    /// The metrics columns.
    pub(crate) events: AckEvents,
}

pub(crate) fn indexed(row: &Row) -> Result<IndexedRow, DbError> {
    indexed_from(row, 0)
}

/// The indexed result whose `idx` is column `first` and `result` the next.
fn indexed_from(row: &Row, first: usize) -> Result<IndexedRow, DbError> {
    let idx: i32 = column(row, first)?;
    let result: Option<String> = column(row, first + 1)?;
    let idx = usize::try_from(idx).map_err(|_| DbError::Internal(format!("negative idx {idx}")))?;
    Ok(IndexedRow {
        idx,
        result: result.unwrap_or_else(|| "null".to_owned()),
    })
}

fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, DbError> {
    row.try_get(index)
        .map_err(|e| DbError::Internal(e.to_string()))
}

fn pop_row(row: &Row) -> Result<PopRow, DbError> {
    pop_row_from(row, 0)
}

/// A `regina.pop_text` row whose `idx` is column `first`.
fn pop_row_from(row: &Row, first: usize) -> Result<PopRow, DbError> {
    Ok(PopRow {
        row: indexed_from(row, first)?,
        events: column(row, first + 2)?,
        quiet: column(row, first + 3)?,
    })
}

fn ack_row(row: &Row) -> Result<AckRow, DbError> {
    let queue: Option<String> = column(row, 2)?;
    let group: Option<String> = column(row, 3)?;
    let dead_lettered: i32 = column(row, 6)?;
    let leases_expired: i32 = column(row, 7)?;
    Ok(AckRow {
        row: indexed(row)?,
        wake: queue.zip(group),
        events: AckEvents {
            queue: column(row, 4)?,
            acked: column(row, 5)?,
            dead_lettered: u64::from(dead_lettered.unsigned_abs()),
            leases_expired: u64::from(leases_expired.unsigned_abs()),
        },
    })
}

/// The first two columns of every row.
pub(super) fn pairs<A, B>(rows: &[Row]) -> Result<Vec<(A, B)>, DbError>
where
    A: for<'a> tokio_postgres::types::FromSql<'a>,
    B: for<'a> tokio_postgres::types::FromSql<'a>,
{
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get(0).map_err(|e| DbError::Internal(e.to_string()))?,
                r.try_get(1).map_err(|e| DbError::Internal(e.to_string()))?,
            ))
        })
        .collect()
}

fn single_text(rows: &[Row]) -> Result<String, DbError> {
    let row = rows
        .first()
        .ok_or_else(|| DbError::Internal("no row returned".to_owned()))?;
    row.try_get(0).map_err(|e| DbError::Internal(e.to_string()))
}

impl Db {
    /// `regina.push_text(items, payloads, notify)`: one row per item.
    pub(crate) async fn push(
        &self,
        items: &str,
        payloads: &str,
        notify: bool,
    ) -> Result<Vec<IndexedRow>, DbError> {
        let rows = self
            .query(Stmt::Push, &[&items, &payloads, &notify])
            .await?;
        rows.iter().map(indexed).collect()
    }

    /// `regina.pop(requests)`: one row per pop request; with `commit_async`, a call with autoAck
    /// requests does not wait for the WAL flush either (`AUTO_ACK_COMMIT_ASYNC`).
    pub(crate) async fn pop(
        &self,
        requests: &str,
        commit_async: bool,
    ) -> Result<Vec<PopRow>, DbError> {
        let rows = self.query(Stmt::Pop, &[&requests, &commit_async]).await?;
        rows.iter().map(pop_row).collect()
    }

    /// `regina.push_pop_text(items, payloads, requests)`: one row per item, as [`Db::push`], and
    /// one per pop request that ran, as [`Db::pop`] (a request whose group has not subscribed to
    /// its queue does not run).
    pub(crate) async fn push_pop(
        &self,
        items: &str,
        payloads: &str,
        requests: &str,
    ) -> Result<(Vec<IndexedRow>, Vec<PopRow>), DbError> {
        let rows = self
            .query(Stmt::PushPop, &[&items, &payloads, &requests])
            .await?;
        let mut pushed = Vec::with_capacity(rows.len());
        let mut popped = Vec::new();
        for row in &rows {
            if column::<bool>(row, 0)? {
                popped.push(pop_row_from(row, 1)?);
            } else {
                pushed.push(indexed_from(row, 1)?);
            }
        }
        Ok((pushed, popped))
    }

    /// `regina.ack_text(acks)`: one row per ack item; with `commit_async`, its commit does not wait
    /// for the WAL flush (`ACK_COMMIT_ASYNC`).
    pub(crate) async fn ack(&self, acks: &str, commit_async: bool) -> Result<Vec<AckRow>, DbError> {
        let rows = self.query(Stmt::Ack, &[&acks, &commit_async]).await?;
        rows.iter().map(ack_row).collect()
    }

    /// `regina.transaction(operations, payloads)`: one row per ack operation and pushed item,
    /// all committed; or [`DbError::TransactionAborted`] with nothing applied.
    pub(crate) async fn transaction(
        &self,
        operations: &str,
        payloads: &str,
    ) -> Result<Vec<AckRow>, DbError> {
        let rows = self
            .query(Stmt::Transaction, &[&operations, &payloads])
            .await?;
        rows.iter().map(ack_row).collect()
    }

    /// `regina.lease_extend(requests)`: one row per request.
    pub(crate) async fn lease_extend(&self, requests: &str) -> Result<Vec<IndexedRow>, DbError> {
        let rows = self.query(Stmt::LeaseExtend, &[&requests]).await?;
        rows.iter().map(indexed).collect()
    }

    /// `regina.lease_release(ids)`: the (queue, group) pairs whose lease ended.
    pub(crate) async fn lease_release(
        &self,
        lease_ids: &[Uuid],
    ) -> Result<Vec<(String, String)>, DbError> {
        let ids = lease_ids.to_vec();
        let rows = self.query(Stmt::LeaseRelease, &[&ids]).await?;
        pairs(&rows)
    }

    /// One `regina_push` notification per element of `notices`, in one statement; none while no
    /// other instance listens (each costs PostgreSQL a transaction, and its own listener a
    /// wake-up, for nothing).
    pub(crate) async fn notify_pushes(&self, notices: &[String]) -> Result<(), DbError> {
        if self.skip_announcement() {
            return Ok(());
        }
        self.query(Stmt::NotifyPushes, &[&notices]).await.map(drop)
    }

    /// `regina.configure(request)`: the configure response body (with `created`).
    pub(crate) async fn configure(&self, request: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::Configure, &[&request]).await?)
    }

    /// `regina.dlq_list(query)`: the DLQ listing body.
    pub(crate) async fn dlq_list(&self, query: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::DlqList, &[&query]).await?)
    }

    /// A consumer-group listing of one page (`query` = `{limit, offset, …}`): the unpaged row
    /// count and the page as a JSON array.
    async fn group_rows(&self, stmt: Stmt, query: &str) -> Result<(i64, String), DbError> {
        let rows = self.query(stmt, &[&query]).await?;
        let row = rows
            .first()
            .ok_or_else(|| DbError::Internal("no row returned".to_owned()))?;
        let total: i64 = row
            .try_get(0)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        let body: String = row
            .try_get(1)
            .map_err(|e| DbError::Internal(e.to_string()))?;
        Ok((total, body))
    }

    /// `regina.consumer_groups_list(page)`: the unpaged count and one page.
    pub(crate) async fn groups_list(&self, page: &str) -> Result<(i64, String), DbError> {
        self.group_rows(Stmt::GroupsList, page).await
    }

    /// `regina.consumer_groups_lagging(page)`: the unpaged count and one page.
    pub(crate) async fn groups_lagging(&self, page: &str) -> Result<(i64, String), DbError> {
        self.group_rows(Stmt::GroupsLagging, page).await
    }

    /// `regina.consumer_group_detail(group, page)`: a page of the group's partitions per queue.
    pub(crate) async fn group_detail(&self, group: &str, page: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::GroupDetail, &[&group, &page]).await?)
    }

    /// `regina.consumer_group_delete(group, queue, delete_metadata)`.
    pub(crate) async fn group_delete(
        &self,
        group: &str,
        queue: Option<&str>,
        delete_metadata: bool,
    ) -> Result<String, DbError> {
        let rows = self
            .query(Stmt::GroupDelete, &[&group, &queue, &delete_metadata])
            .await?;
        single_text(&rows)
    }

    /// `regina.consumer_group_subscription(group, start)` (`start`: ISO-8601 text).
    pub(crate) async fn group_subscription(
        &self,
        group: &str,
        start: &str,
    ) -> Result<String, DbError> {
        single_text(
            &self
                .query(Stmt::GroupSubscription, &[&group, &start])
                .await?,
        )
    }

    /// `regina.consumer_group_seek(request)`.
    pub(crate) async fn group_seek(&self, request: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::GroupSeek, &[&request]).await?)
    }

    /// Runs a trivial query (health).
    pub(crate) async fn ping(&self) -> Result<(), DbError> {
        self.query(Stmt::Ping, &[]).await.map(|_| ())
    }
}

/// Key of the session advisory lock held by the leader (ASCII "regina" + 1).
const LEADER_LOCK_KEY: i64 = 0x7265_6769_6e61_0001;

/// Statements of the leader's dedicated session (not pooled: the lock lives with the session).
pub(crate) mod leader {
    use super::*;

    /// Tries to become leader; true when this session holds the leader lock.
    pub(crate) async fn try_lock(client: &Client) -> Result<bool, DbError> {
        let row = client
            .query_one("select pg_try_advisory_lock($1)", &[&LEADER_LOCK_KEY])
            .await
            .map_err(|e| error::classify(&e))?;
        row.try_get(0).map_err(|e| DbError::Internal(e.to_string()))
    }

    /// A lease the sweep ended.
    #[derive(Debug)]
    pub(crate) struct SweptLease {
        /// Its queue and group, whose waiters should retry.
        pub(crate) queue: String,
        pub(crate) group: String,
        /// The expiry dead-lettered the head.
        pub(crate) dead_lettered: bool,
    }

    /// `regina.lease_sweep(limit)`: the leases whose expiry it accounted.
    pub(crate) async fn lease_sweep(
        client: &Client,
        limit: i32,
    ) -> Result<Vec<SweptLease>, DbError> {
        let rows = client
            .query(
                "select queue_name, consumer_group, dead_lettered from regina.lease_sweep($1::int)",
                &[&limit],
            )
            .await
            .map_err(|e| error::classify(&e))?;
        rows.iter()
            .map(|row| {
                Ok(SweptLease {
                    queue: column(row, 0)?,
                    group: column(row, 1)?,
                    dead_lettered: column(row, 2)?,
                })
            })
            .collect()
    }
}
