//! The `steady-state` scenario's stored backlog and retention.
//!
//! The backlog is written straight into the tables with set-based SQL (`insert … select` over
//! `generate_series`), not through the target: millions of rows in a minute or two instead of
//! the run's own push rate. The rows are what a push would have stored: partitions `p0 … pN-1`
//! of the run's queue with `next_seq` equal to their message count, messages at offsets
//! `0 … count-1` with `created_at` growing along the offsets, spread over `span` seconds up to
//! the fill instant, and payloads of the pushed messages' size. No consumer group exists, so
//! nothing else (cursors, ready set) refers to them. Then `vacuum (analyze)` settles the table
//! (visibility map, hint bits, statistics), as a table that has held its rows for a while is.
//!
//! Retention: the broker runs its own (`RETENTION_INTERVAL`); for `raw` the harness calls
//! `regina.retention_run` on the same interval, for `ceiling` it deletes the same rows with a
//! plain `delete` (see [`crate::ceiling::delete_old`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use tokio_postgres::{Client, NoTls};

use crate::ceiling;
use crate::plan::{Plan, Retention};
use crate::target::TargetKind;

/// Partitions written per statement while filling (bounds the size of one transaction).
const FILL_PARTITIONS_PER_STATEMENT: usize = 50;

/// The stored backlog of a run.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    /// When the fill started; the newest stored message is this old.
    pub at: SystemTime,
    /// Messages stored.
    pub messages: u64,
    /// Messages stored per partition (offsets `0 … per_partition-1`): pushes come after.
    pub per_partition: i64,
}

/// The schema whose tables a target writes.
pub fn schema(kind: &TargetKind) -> &'static str {
    match kind {
        TargetKind::Ceiling(..) => ceiling::SCHEMA,
        _ => "regina",
    }
}

async fn connect(database_url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(database_url, NoTls)
        .await
        .context("steady state: connect")?;
    tokio::spawn(connection);
    Ok(client)
}

async fn queue_id(client: &Client, schema: &str, queue: &str) -> anyhow::Result<i64> {
    let row = client
        .query_one(
            &format!("select id from {schema}.queues where name = $1"),
            &[&queue],
        )
        .await
        .with_context(|| format!("steady state: queue {queue} in {schema}"))?;
    Ok(row.get(0))
}

/// Writes `plan.stored` messages over the partitions of queue 0, set-based; `span` is how far
/// back the oldest `created_at` lies.
///
/// # Errors
/// A statement fails.
pub async fn fill(
    database_url: &str,
    schema: &str,
    plan: &Plan,
    span: Duration,
) -> anyhow::Result<Stored> {
    let client = connect(database_url).await?;
    client.batch_execute("set statement_timeout = 0").await?;
    let queue = queue_id(&client, schema, &plan.queue(0)).await?;
    let partitions = plan.partitions.max(1);
    let per = plan.stored.div_ceil(partitions as u64) as i64;
    let at = SystemTime::now();
    client
        .execute(
            &format!(
                "insert into {schema}.partitions (queue_id, name, next_seq, last_created_at, last_push_at)
                 select $1, 'p' || i, $2, $3, $3 from generate_series(0, $4::bigint - 1) i
                 on conflict (queue_id, name) do nothing"
            ),
            &[&queue, &per, &at, &(partitions as i64)],
        )
        .await
        .context("steady state: partitions")?;
    let insert = format!(
        "insert into {schema}.messages (partition_id, seq, id, transaction_id, created_at, payload)
         select p.id, s.seq, gen_random_uuid(), 'stored-' || p.id || '-' || s.seq,
                $3::timestamptz - $4::float8 * (1 - s.seq::float8 / $2) * interval '1 second',
                ('{{\"stored\":' || s.seq || ',\"pad\":\"' || repeat('x', $5) || '\"}}')::json
         from {schema}.partitions p cross join generate_series(0, $2::bigint - 1) as s(seq)
         where p.queue_id = $1 and p.name = any($6)
         order by p.id, s.seq"
    );
    let span_secs = span.as_secs_f64();
    let pad = plan.pad as i32;
    let started = std::time::Instant::now();
    for chunk in (0..partitions)
        .collect::<Vec<_>>()
        .chunks(FILL_PARTITIONS_PER_STATEMENT)
    {
        let names: Vec<String> = chunk.iter().map(|i| format!("p{i}")).collect();
        client
            .execute(&insert, &[&queue, &per, &at, &span_secs, &pad, &names])
            .await
            .context("steady state: messages")?;
        let done = (chunk[chunk.len() - 1] + 1) as u64 * per as u64;
        eprint!(
            "\rregina-bench: stored {done} of {} messages ({:.0} s)",
            per as u64 * partitions as u64,
            started.elapsed().as_secs_f64()
        );
    }
    eprintln!();
    client
        .batch_execute(&format!(
            "vacuum (analyze) {schema}.messages, {schema}.partitions"
        ))
        .await
        .context("steady state: vacuum")?;
    Ok(Stored {
        at,
        messages: per as u64 * partitions as u64,
        per_partition: per,
    })
}

/// The `retentionSeconds` that starts deletion at the oldest stored message now: the span plus
/// the time since the fill instant, rounded up.
pub fn retention_seconds(stored: &Stored, span: Duration) -> i64 {
    let since = stored.at.elapsed().unwrap_or_default();
    (span + since).as_secs_f64().ceil() as i64
}

/// Messages deleted so far from queue `queue` of `schema`: retention deletes a prefix of each
/// partition, so that is the sum of every partition's oldest remaining offset (its `next_seq`
/// when nothing remains).
///
/// # Errors
/// The query fails.
pub async fn deleted(client: &Client, schema: &str, queue: &str) -> anyhow::Result<u64> {
    let row = client
        .query_one(
            &format!(
                "select coalesce(sum(coalesce(o.seq, p.next_seq)), 0)::bigint
                 from {schema}.partitions p
                 left join lateral (select m.seq from {schema}.messages m
                                    where m.partition_id = p.id order by m.seq limit 1) o on true
                 where p.queue_id = (select q.id from {schema}.queues q where q.name = $1)"
            ),
            &[&queue],
        )
        .await
        .context("steady state: deleted count")?;
    Ok(row.get::<_, i64>(0).unsigned_abs())
}

/// Partitions of `queue` whose oldest message was created before `cutoff`.
///
/// # Errors
/// The query fails.
pub async fn overdue(
    client: &Client,
    schema: &str,
    queue: &str,
    cutoff: SystemTime,
) -> anyhow::Result<u64> {
    let row = client
        .query_one(
            &format!(
                "select count(*)::bigint from {schema}.partitions p
                 cross join lateral (select m.created_at from {schema}.messages m
                                     where m.partition_id = p.id order by m.seq limit 1) o
                 where p.queue_id = (select q.id from {schema}.queues q where q.name = $1)
                   and o.created_at < $2"
            ),
            &[&queue, &cutoff],
        )
        .await
        .context("steady state: overdue count")?;
    Ok(row.get::<_, i64>(0).unsigned_abs())
}

/// The retention loop of a SQL target, until `stop`.
pub struct Loop {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Loop {
    /// Runs retention every `retention.interval`: `regina.retention_run` for `raw`, the ceiling's
    /// delete of `queue`'s messages older than `seconds` for `ceiling`; None for the broker (it
    /// runs its own).
    ///
    /// # Errors
    /// The loop's connection cannot be opened.
    pub async fn start(
        kind: &TargetKind,
        database_url: &str,
        queue: String,
        retention: Retention,
        seconds: i64,
    ) -> anyhow::Result<Option<Loop>> {
        let ceiling = match kind {
            TargetKind::Broker(_) => return Ok(None),
            TargetKind::Raw(..) => false,
            TargetKind::Ceiling(..) => true,
        };
        let client = connect(database_url).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let task = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(retention.interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let pass = if ceiling {
                        let cutoff = SystemTime::now() - Duration::from_secs(seconds as u64);
                        ceiling::delete_old(&client, &queue, cutoff, i64::from(retention.batch))
                            .await
                    } else {
                        retention_pass(&client, retention.batch).await
                    };
                    if let Err(e) = pass {
                        tracing::warn!("retention: {e:#}");
                    }
                }
            })
        };
        Ok(Some(Loop { stop, task }))
    }

    /// Stops after the current pass.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.task).await;
    }
}

/// One retention pass as the broker's leader runs it: batches until one deletes fewer than
/// `batch` messages.
async fn retention_pass(client: &Client, batch: u32) -> anyhow::Result<u64> {
    let limit = batch as i32;
    let mut total = 0u64;
    loop {
        let row = client
            .query_one(
                "select coalesce(sum(removed), 0)::bigint from regina.retention_run($1::int)",
                &[&limit],
            )
            .await
            .context("raw retention")?;
        let n: i64 = row.get(0);
        total += n.unsigned_abs();
        if n < i64::from(limit) {
            return Ok(total);
        }
    }
}
