//! `regina-bench explain`: builds a large fixture on the benchmark cluster (millions of messages,
//! 100 000 partitions, consumer groups at every stage, dead letters, 31 days of metrics history)
//! with set-based SQL, times a full and an incremental stats refresh, then runs every statement
//! of the admin, status and analytics endpoints and records its time and, through
//! `auto_explain`, the plans of the statements it runs. The report goes to
//! `bench/results/<date>-explain/`.

mod queries;
mod report;
mod session;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::system::{Cluster, System, SystemOptions};
use queries::{Query, Targets};
use session::{Plan, Session};

/// The fixture's SQL, one `-- step:` per timed part.
const FIXTURE_SQL: &str = include_str!("fixture.sql");
/// Partitions recounted per stats transaction (the broker's default `STATS_BATCH_SIZE`).
const STATS_BATCH: i32 = 1_000;
/// Stored messages whose partitions one stats transaction recounts, about (the broker's default
/// `STATS_BATCH_ROWS`).
const STATS_BATCH_ROWS: i64 = 2_000_000;
/// Plans of statements shorter than this are not recorded, milliseconds.
const PLAN_MIN_MS: u32 = 1;
/// Pushes, and pops of a group, made between the full and the incremental refresh.
const ACTIVITY_PUSHES: u32 = 1_000;
const ACTIVITY_POPS: u32 = 5;

/// What to build and where to report.
#[derive(Debug, Clone)]
pub struct ExplainOptions {
    /// Queues (one holds half the partitions).
    pub queues: u32,
    /// Partitions over all queues.
    pub partitions: u32,
    /// Messages over all partitions (about).
    pub messages: u64,
    /// Dead letters.
    pub dead_letters: u32,
    /// Timed runs of each statement after a first one.
    pub runs: usize,
    /// Where the dated result directory goes.
    pub out: PathBuf,
    /// PostgreSQL settings of the harness's cluster.
    pub pg_conf: PathBuf,
    /// An existing, empty database instead of the harness's cluster.
    pub database_url: Option<String>,
    /// Leave the cluster running afterwards.
    pub keep_db: bool,
}

/// One measured statement.
pub struct Measured {
    pub query: Query,
    pub first: Duration,
    pub runs: Vec<Duration>,
    pub plans: Vec<Plan>,
}

/// The timed parts of the fixture and of the stats refresh.
pub struct Preparation {
    pub steps: Vec<(String, Duration)>,
    pub sizes: Vec<(String, i64)>,
    pub refreshes: Vec<(String, Duration, i64)>,
    pub refresh_plans: Vec<Plan>,
}

/// Builds the fixture, measures, writes the report; returns its directory.
///
/// # Errors
/// The cluster, the fixture or a statement fails.
pub async fn run(options: &ExplainOptions) -> anyhow::Result<PathBuf> {
    let cluster = match options.database_url {
        None => {
            let conf = options
                .pg_conf
                .exists()
                .then_some(options.pg_conf.as_path());
            Some(Cluster::start(conf).await?)
        }
        Some(_) => None,
    };
    let result = async {
        let system_options = SystemOptions {
            url: None,
            database_url: options.database_url.clone(),
            broker_pid: None,
            regina_bin: None,
            broker_env: Vec::new(),
        };
        let system = System::start(&system_options, cluster.as_ref(), false).await?;
        let session = Session::connect(&system.database_url).await?;
        let preparation = prepare(&session, options).await?;
        let targets = Targets::find(&session).await?;
        let mut measured = Vec::new();
        for query in queries::stats_feeds()
            .into_iter()
            .chain(queries::admin(&targets))
        {
            eprintln!("regina-bench: explain {}", query.name);
            measured.push(measure(&session, query, options.runs).await?);
        }
        let date = time::OffsetDateTime::now_utc().date();
        let dir = options.out.join(format!("{date}-explain"));
        report::write(&dir, options, &preparation, &measured)?;
        system.stop().await;
        Ok::<_, anyhow::Error>(dir)
    }
    .await;
    if let (Some(cluster), false) = (&cluster, options.keep_db) {
        cluster.stop()?;
    }
    result
}

/// Builds the fixture and times the stats refresh: a full pass, one after some activity, one
/// with nothing changed.
async fn prepare(session: &Session, options: &ExplainOptions) -> anyhow::Result<Preparation> {
    session
        .client
        .batch_execute(&format!(
            "select set_config('fixture.queues', '{}', false),
                    set_config('fixture.partitions', '{}', false),
                    set_config('fixture.messages', '{}', false),
                    set_config('fixture.dead_letters', '{}', false)",
            options.queues.max(2),
            options.partitions,
            options.messages,
            options.dead_letters
        ))
        .await?;
    let mut steps = Vec::new();
    for (name, sql) in fixture_steps() {
        eprintln!("regina-bench: fixture {name}");
        steps.push((name.to_owned(), session.timed(sql).await?));
    }
    let sizes = sizes(session).await?;
    let mut refreshes = Vec::new();
    eprintln!("regina-bench: full stats refresh");
    let (took, recounted) = refresh(session).await?;
    refreshes.push(("full (every partition)".to_owned(), took, recounted));
    session.timed(&activity_sql()).await?;
    let (took, recounted) = refresh(session).await?;
    refreshes.push((
        format!("after {ACTIVITY_PUSHES} pushes and {ACTIVITY_POPS} pops"),
        took,
        recounted,
    ));
    let (took, recounted) = refresh(session).await?;
    refreshes.push(("nothing changed".to_owned(), took, recounted));
    session.timed(&activity_sql()).await?;
    session.record_plans(PLAN_MIN_MS).await?;
    let planned = refresh(session).await;
    let refresh_plans = session
        .recorded_plans()
        .await
        .context("plans of an incremental refresh")?;
    planned?;
    Ok(Preparation {
        steps,
        sizes,
        refreshes,
        refresh_plans,
    })
}

/// The fixture's steps: `(name, sql)`.
fn fixture_steps() -> Vec<(&'static str, &'static str)> {
    FIXTURE_SQL
        .split("-- step: ")
        .skip(1)
        .filter_map(|chunk| {
            let (name, sql) = chunk.split_once('\n')?;
            Some((name.trim(), sql))
        })
        .collect()
}

/// Row counts of the fixture's tables.
async fn sizes(session: &Session) -> anyhow::Result<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for table in [
        "queues",
        "partitions",
        "messages",
        "cursors",
        "ready",
        "subscriptions",
        "dead_letters",
        "worker_metrics",
        "queue_metrics",
        "queue_lag_history",
    ] {
        let row = session
            .client
            .query_one(&format!("select count(*) from regina.{table}"), &[])
            .await?;
        out.push((table.to_owned(), row.get(0)));
    }
    Ok(out)
}

/// One stats pass as the leader runs it (begin, batches, end, each a transaction of its own):
/// wall time and partitions recounted.
async fn refresh(session: &Session) -> anyhow::Result<(Duration, i64)> {
    let started = Instant::now();
    let client = &session.client;
    client
        .query_one("select regina.stats_refresh_begin()", &[])
        .await?;
    let mut total: i64 = 0;
    loop {
        let row = client
            .query_one(
                "select regina.stats_refresh_batch($1::int, null, $2::bigint)",
                &[&STATS_BATCH, &STATS_BATCH_ROWS],
            )
            .await?;
        // Negative: cut at the row bound with partitions left waiting.
        let taken: i32 = row.get(0);
        total += i64::from(taken.unsigned_abs());
        if (0..STATS_BATCH).contains(&taken) {
            break;
        }
    }
    client
        .execute("select regina.stats_refresh_end($1::bigint)", &[&total])
        .await?;
    Ok((started.elapsed(), total))
}

/// Pushes to partitions of `fx.big` and pops of `analytics` with leases.
fn activity_sql() -> String {
    format!(
        "select regina.push((select jsonb_agg(jsonb_build_object(
                     'queue', 'fx.big', 'partition', p.name, 'payload', 1,
                     'transactionId', 'act-' || gen_random_uuid(), 'messageId', gen_random_uuid()))
                 from (select p.name from regina.partitions p
                       join regina.queues q on q.id = p.queue_id and q.name = 'fx.big'
                       order by random() limit {ACTIVITY_PUSHES}) p));
         select regina.pop((select jsonb_agg(jsonb_build_object(
                     'queue', 'fx.big', 'consumerGroup', 'analytics', 'batch', 100,
                     'partitions', 100, 'leaseId', gen_random_uuid()))
                 from generate_series(1, {ACTIVITY_POPS})))"
    )
}

/// Runs `query` once, then `runs` timed times, then once more with its plans recorded.
async fn measure(session: &Session, query: Query, runs: usize) -> anyhow::Result<Measured> {
    let sql = if query.changes {
        format!("begin; {}; rollback", query.sql)
    } else {
        query.sql.clone()
    };
    let first = session.timed(&sql).await?;
    let mut timed = Vec::with_capacity(runs);
    for _ in 0..runs {
        timed.push(session.timed(&sql).await?);
    }
    let plans = session.plans(&sql, PLAN_MIN_MS).await?;
    Ok(Measured {
        query,
        first,
        runs: timed,
        plans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_has_its_steps_in_order() {
        let names: Vec<&str> = fixture_steps().iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "queues",
                "partitions",
                "messages",
                "groups",
                "dead_letters",
                "metrics_history",
                "rollup",
                "analyze"
            ]
        );
    }
}
