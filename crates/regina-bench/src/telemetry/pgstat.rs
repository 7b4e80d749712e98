//! The database side of telemetry: the queries against PostgreSQL's statistics views.

use std::collections::{BTreeMap, HashMap};

use anyhow::Context as _;
use tokio_postgres::Client;

use crate::model::{StatementStats, TableStats};

/// The schema whose tables are the hot tables.
pub const HOT_SCHEMA: &str = "regina";

/// The schemas whose tables are reported: Regina's and the `ceiling` target's copies.
pub const REPORTED_SCHEMAS: [&str; 2] = [HOT_SCHEMA, "bench_ceiling"];

/// How many statements of `pg_stat_statements` a report keeps.
pub const TOP_STATEMENTS: usize = 10;

/// Longest query text kept in a report, characters.
const QUERY_TEXT_MAX: usize = 160;

/// The `pg_settings` the environment records.
pub const SETTINGS: &[&str] = &[
    "server_version",
    "max_connections",
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "huge_pages",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_buffers",
    "wal_compression",
    "wal_writer_delay",
    "commit_delay",
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "effective_io_concurrency",
    "random_page_cost",
    "jit",
    "max_worker_processes",
    "max_parallel_workers_per_gather",
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_max_workers",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_scale_factor",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_vacuum_cost_delay",
    "track_io_timing",
    "shared_preload_libraries",
];

/// Opens the sampler's own connection; its connection task runs on the current runtime.
///
/// # Errors
/// The database cannot be reached.
pub async fn connect(url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("telemetry: connect to the database")?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "telemetry connection ended");
        }
    });
    // Its statements are not part of the workload.
    let _ = client
        .batch_execute("set application_name = 'regina-bench telemetry'")
        .await;
    Ok(client)
}

/// The current WAL insert position, bytes from `0/0`.
///
/// # Errors
/// The query fails.
pub async fn wal_position(client: &Client) -> anyhow::Result<u64> {
    let row = client
        .query_one(
            "select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::int8",
            &[],
        )
        .await
        .context("telemetry: pg_current_wal_lsn")?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// Active sessions of the current database by wait class (`CPU` when not waiting), from one
/// `pg_stat_activity` snapshot.
///
/// Counted: client backends (no background workers, autovacuum or walsender) in state `active`,
/// except the sampler's own session.
///
/// # Errors
/// The query fails.
pub async fn active_sessions(client: &Client) -> anyhow::Result<BTreeMap<String, u32>> {
    let rows = client
        .query(
            "select coalesce(wait_event_type, 'CPU'), count(*)::int4
               from pg_stat_activity
              where datname = current_database()
                and state = 'active'
                and backend_type = 'client backend'
                and pid <> pg_backend_pid()
              group by 1",
            &[],
        )
        .await
        .context("telemetry: pg_stat_activity")?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get::<_, String>(0),
                u32::try_from(r.get::<_, i32>(1)).unwrap_or(0),
            )
        })
        .collect())
}

/// Checkpoints requested and timed since the statistics were reset: `pg_stat_bgwriter` (up to
/// PostgreSQL 16), else `pg_stat_checkpointer` (17 and later).
///
/// # Errors
/// Neither view can be read.
pub async fn checkpoints(client: &Client) -> anyhow::Result<(u64, u64)> {
    let row = match client
        .query_one(
            "select checkpoints_req, checkpoints_timed from pg_stat_bgwriter",
            &[],
        )
        .await
    {
        Ok(row) => row,
        Err(_) => client
            .query_one(
                "select num_requested, num_timed from pg_stat_checkpointer",
                &[],
            )
            .await
            .context("telemetry: checkpoint statistics")?,
    };
    let count = |i| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    Ok((count(0), count(1)))
}

/// `pg_database_size(current_database())`, bytes.
///
/// # Errors
/// The query fails.
pub async fn database_size(client: &Client) -> anyhow::Result<u64> {
    let row = client
        .query_one("select pg_database_size(current_database())", &[])
        .await
        .context("telemetry: pg_database_size")?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// Statistics and total size of every table of [`REPORTED_SCHEMAS`], by schema and name.
///
/// Reads after `pg_stat_clear_snapshot()`, so the values are the shared statistics as of now,
/// not a snapshot cached earlier in this session. Backends publish their counts when a
/// transaction ends at most once a second (and an idle one after a few more seconds), so the
/// caller waits a little over a second after the load before the "after" reading.
///
/// # Errors
/// The query fails.
pub async fn table_stats(client: &Client) -> anyhow::Result<Vec<TableStats>> {
    client
        .batch_execute("select pg_stat_clear_snapshot()")
        .await
        .context("telemetry: pg_stat_clear_snapshot")?;
    let rows = client
        .query(
            "select schemaname::text || '.' || relname::text, n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd,
                    autovacuum_count, pg_total_relation_size(relid)
               from pg_stat_user_tables
              where schemaname = any($1)
              order by schemaname <> 'regina', schemaname, relname",
            &[&&REPORTED_SCHEMAS[..]],
        )
        .await
        .context("telemetry: pg_stat_user_tables")?;
    Ok(rows
        .iter()
        .map(|r| {
            let updates: i64 = r.get(3);
            let hot_updates: i64 = r.get(4);
            TableStats {
                table: r.get::<_, String>(0),
                live_tuples: r.get(1),
                dead_tuples: r.get(2),
                updates,
                hot_updates,
                hot_ratio: hot_ratio(hot_updates, updates),
                autovacuums: r.get(5),
                // Null when the table was dropped since the statistics were read.
                total_bytes: r.get::<_, Option<i64>>(6).unwrap_or(0),
            }
        })
        .collect())
}

/// `hot / updates`, 1 when there were no updates.
pub fn hot_ratio(hot: i64, updates: i64) -> f64 {
    if updates <= 0 {
        1.0
    } else {
        hot as f64 / updates as f64
    }
}

/// Cumulative `pg_stat_statements` counters of one statement of the current database.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatementCounters {
    /// Normalised query text.
    pub query: String,
    /// Calls.
    pub calls: i64,
    /// Total execution time, milliseconds.
    pub total_ms: f64,
    /// Rows.
    pub rows: i64,
}

/// Makes `pg_stat_statements` usable in this database if the library is loaded: creates the
/// extension when missing (which fails harmlessly without the privilege) and tries to read it.
/// Returns whether it can be read.
pub async fn statements_available(client: &Client) -> bool {
    // `shared_preload_libraries` may only be readable by privileged roles: unknown means "try".
    let preloaded = client
        .query_one("select current_setting('shared_preload_libraries')", &[])
        .await
        .ok()
        .map(|r| r.get::<_, String>(0).contains("pg_stat_statements"));
    if preloaded == Some(false) {
        return false;
    }
    let _ = client
        .batch_execute("create extension if not exists pg_stat_statements")
        .await;
    client
        .query_one("select count(*) from pg_stat_statements", &[])
        .await
        .is_ok()
}

/// Counters of every statement of the current database, by query id (top-level and nested
/// entries of one query id summed).
///
/// # Errors
/// The view cannot be read.
pub async fn statement_counters(
    client: &Client,
) -> anyhow::Result<HashMap<i64, StatementCounters>> {
    let rows = client
        .query(
            "select queryid, min(query), sum(calls)::int8, sum(total_exec_time)::float8,
                    sum(rows)::int8
               from pg_stat_statements
              where dbid = (select oid from pg_database where datname = current_database())
                and queryid is not null
              group by queryid",
            &[],
        )
        .await
        .context("telemetry: pg_stat_statements")?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get::<_, i64>(0),
                StatementCounters {
                    query: r.get::<_, Option<String>>(1).unwrap_or_default(),
                    calls: r.get(2),
                    total_ms: r.get(3),
                    rows: r.get(4),
                },
            )
        })
        .collect())
}

/// The [`TOP_STATEMENTS`] statements with the most execution time between two readings of
/// [`statement_counters`]. Statements that appear only in `after` (new, or evicted and back)
/// count in full.
pub fn top_statements(
    before: &HashMap<i64, StatementCounters>,
    after: &HashMap<i64, StatementCounters>,
) -> Vec<StatementStats> {
    let mut delta: Vec<StatementStats> = after
        .iter()
        .filter_map(|(id, a)| {
            let b = before.get(id).cloned().unwrap_or_default();
            let (calls, total_ms, rows) = if a.calls >= b.calls {
                (a.calls - b.calls, a.total_ms - b.total_ms, a.rows - b.rows)
            } else {
                // Reset in between: everything after the reset.
                (a.calls, a.total_ms, a.rows)
            };
            (calls > 0).then(|| StatementStats {
                query: shorten(&a.query),
                calls,
                total_ms: total_ms.max(0.0),
                mean_ms: total_ms.max(0.0) / calls as f64,
                rows,
            })
        })
        .collect();
    delta.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    delta.truncate(TOP_STATEMENTS);
    delta
}

/// Whitespace collapsed, at most `QUERY_TEXT_MAX` characters (with `…` when cut).
pub fn shorten(query: &str) -> String {
    let flat = query.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= QUERY_TEXT_MAX {
        return flat;
    }
    let mut cut: String = flat.chars().take(QUERY_TEXT_MAX - 1).collect();
    cut.push('…');
    cut
}

/// `select version()`.
///
/// # Errors
/// The query fails.
pub async fn version(client: &Client) -> anyhow::Result<String> {
    let row = client
        .query_one("select version()", &[])
        .await
        .context("telemetry: version()")?;
    Ok(row.get(0))
}

/// The [`SETTINGS`] this server has, as `current_setting` shows them (with units, e.g. `128MB`).
///
/// # Errors
/// The query fails.
pub async fn settings(client: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    let names: Vec<String> = SETTINGS.iter().map(|s| (*s).to_owned()).collect();
    let rows = client
        .query(
            "select name, current_setting(name) from pg_settings where name = any($1)",
            &[&names],
        )
        .await
        .context("telemetry: pg_settings")?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(query: &str, calls: i64, total_ms: f64, rows: i64) -> StatementCounters {
        StatementCounters {
            query: query.to_owned(),
            calls,
            total_ms,
            rows,
        }
    }

    #[test]
    fn statements_by_time_during_the_run() {
        let before = HashMap::from([
            (1, counters("select 1", 10, 100.0, 10)),
            (2, counters("select 2", 5, 50.0, 5)),
            (3, counters("idle", 7, 70.0, 7)),
        ]);
        let after = HashMap::from([
            (1, counters("select 1", 12, 130.0, 12)),
            (2, counters("select  2\n  from x", 25, 450.0, 25)),
            (3, counters("idle", 7, 70.0, 7)),
            (4, counters("new", 1, 5.0, 0)),
            (5, counters("reset", 2, 8.0, 2)),
        ]);
        let before = {
            let mut b = before;
            b.insert(5, counters("reset", 100, 1000.0, 100));
            b
        };
        let top = top_statements(&before, &after);
        let names: Vec<&str> = top.iter().map(|s| s.query.as_str()).collect();
        assert_eq!(names, ["select 2 from x", "select 1", "reset", "new"]);
        assert_eq!(top[0].calls, 20);
        assert_eq!(top[0].total_ms, 400.0);
        assert_eq!(top[0].mean_ms, 20.0);
        assert_eq!(top[2].calls, 2);
    }

    #[test]
    fn top_is_bounded_and_texts_short() {
        let after: HashMap<i64, StatementCounters> = (0..30)
            .map(|i| (i, counters(&"x ".repeat(200), 1, i as f64, 1)))
            .collect();
        let top = top_statements(&HashMap::new(), &after);
        assert_eq!(top.len(), TOP_STATEMENTS);
        assert_eq!(top[0].total_ms, 29.0);
        assert_eq!(top[0].query.chars().count(), QUERY_TEXT_MAX);
        assert!(top[0].query.ends_with('…'));
    }

    #[test]
    fn hot_ratios() {
        assert_eq!(hot_ratio(0, 0), 1.0);
        assert_eq!(hot_ratio(3, 4), 0.75);
    }
}
