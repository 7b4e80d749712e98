//! The engine that runs one scenario against a target: setup (queues, a stored backlog,
//! retention), producers and consumers, a warm-up, the measured interval with its per-second
//! timeline and telemetry, a drain phase, and the delivery or storage check.

mod outcome;
mod workers;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use regina_bench::model::{IntervalSample, RunReport, TelemetryReport};
use regina_bench::telemetry::{self, PostgresPids, Telemetry, TelemetryConfig};
use serde_json::json;
use tokio::task::JoinHandle;

pub use crate::plan::Plan;
use crate::plan::{GroupPlan, Retention};
use crate::steady::{self, Stored};
use crate::system::System;
use crate::target::{Session, Target, TargetKind};

use self::workers::Shared;

/// Counters read at an instant: pushed, delivered, acked, errors, push requests.
type Counts = [u64; 5];

fn counts(shared: &Shared) -> Counts {
    let [pushed, delivered, acked, errors] = shared.stats.totals();
    let requests = shared.stats.push_requests.load(Ordering::Relaxed);
    [pushed, delivered, acked, errors, requests]
}

/// Retention of a run with a stored backlog.
#[derive(Clone, Copy, Debug)]
struct RetentionRun {
    retention: Retention,
    /// The queue's `retentionSeconds`.
    seconds: i64,
    stored: Stored,
}

/// What the measured interval produced.
struct Window {
    secs: f64,
    start: Counts,
    end: Counts,
    timeline: Vec<IntervalSample>,
    telemetry: Option<TelemetryReport>,
    /// Slowest group's backlog when the interval ended.
    backlog: u64,
    /// Messages retention deleted during the interval.
    retention_deleted: Option<u64>,
}

fn progress(plan: &Plan, target: &str) -> ProgressBar {
    if std::env::var_os("CI").is_some() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(plan.warmup.as_secs() + plan.duration.as_secs());
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:30} {pos}/{len}s {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} {target}", plan.name));
    bar
}

/// Creates the run's queues; with a stored backlog, writes it and turns retention on.
async fn setup(
    plan: &Plan,
    kind: &TargetKind,
    system: &System,
    session: &mut Session,
) -> anyhow::Result<Option<RetentionRun>> {
    for q in 0..plan.queues {
        session
            .configure(&plan.queue(q), plan.queue_options.clone())
            .await?;
    }
    if plan.groups.iter().any(|g| g.forward_ratio > 0.0) {
        session.configure(&plan.downstream(), json!({})).await?;
    }
    let Some(retention) = plan.retention else {
        if plan.stored > 0 {
            steady::fill(
                &system.database_url,
                steady::schema(kind),
                plan,
                Duration::ZERO,
            )
            .await?;
        }
        return Ok(None);
    };
    let stored = steady::fill(
        &system.database_url,
        steady::schema(kind),
        plan,
        retention.span,
    )
    .await?;
    let seconds = steady::retention_seconds(&stored, retention.span);
    // The ceiling has no queue options: its delete loop uses `seconds` directly.
    if !matches!(kind, TargetKind::Ceiling(..)) {
        for q in 0..plan.queues {
            let mut options = plan.queue_options.clone();
            options["retentionEnabled"] = json!(true);
            options["retentionSeconds"] = json!(seconds);
            session.configure(&plan.queue(q), options).await?;
        }
    }
    Ok(Some(RetentionRun {
        retention,
        seconds,
        stored,
    }))
}

/// Pushes the `prefill` backlog through the target with every producer, before consumers start.
async fn prefill(shared: &Arc<Shared>, target: &Target) -> anyhow::Result<()> {
    let plan = &shared.plan;
    let per = plan
        .prefill
        .div_ceil(plan.producers as u64 * plan.items_per_push as u64);
    let mut fills = Vec::new();
    for i in 0..plan.producers {
        let shared = Arc::clone(shared);
        let mut session = target.session();
        fills.push(tokio::spawn(async move {
            for round in 0..per {
                workers::producer_once(&shared, &mut session, i, round).await;
            }
        }));
    }
    for f in fills {
        f.await?;
    }
    Ok(())
}

/// Waits out the warm-up, then measures for `plan.duration` (or until a prefilled backlog is
/// drained or bounded producers are done); stops measuring before returning.
async fn measure(
    shared: &Arc<Shared>,
    kind: &TargetKind,
    system: &System,
    with_telemetry: bool,
    tasks: &[JoinHandle<()>],
    retention: Option<&RetentionRun>,
) -> anyhow::Result<Window> {
    let plan = &shared.plan;
    let start = Instant::now();
    let bar = progress(plan, kind.name());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut timeline = Vec::new();
    let mut telemetry_run: Option<Telemetry> = None;
    let mut window_start = Instant::now();
    let mut at_start = counts(shared);
    let group_keys: Vec<String> = plan.groups.iter().map(GroupPlan::key).collect();
    let probe = match retention {
        Some(_) => Some(steady_client(&system.database_url).await?),
        None => None,
    };
    let mut deleted_start = 0;
    loop {
        tick.tick().await;
        let elapsed = start.elapsed();
        // A window ends at a later tick than the one it starts at (never empty).
        let was_measuring = shared.measuring.load(Ordering::Relaxed);
        if elapsed >= plan.warmup && !was_measuring {
            if let Some(client) = &probe {
                deleted_start =
                    steady::deleted(client, steady::schema(kind), &plan.queue(0)).await?;
            }
            shared.measuring.store(true, Ordering::Relaxed);
            window_start = Instant::now();
            at_start = counts(shared);
            let _ = shared.stats.interval(0.0);
            if with_telemetry {
                telemetry_run = Some(start_telemetry(system).await?);
            }
        } else if shared.measuring.load(Ordering::Relaxed) {
            timeline.push(
                shared
                    .stats
                    .interval(window_start.elapsed().as_secs_f64().round()),
            );
        }
        let [pushed, delivered, ..] = counts(shared);
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!("pushed {pushed}  delivered {delivered}"));
        let drained_early = was_measuring
            && plan.prefill > 0
            && shared.ledger.expected() > 0
            && shared.ledger.complete(&group_keys);
        let producers_done = !tasks.is_empty() && tasks.iter().all(JoinHandle::is_finished);
        if elapsed >= plan.warmup + plan.duration || drained_early || producers_done {
            break;
        }
    }
    // The measured interval ends here: what comes after (the drain) is not in its figures.
    shared.measuring.store(false, Ordering::Relaxed);
    let secs = window_start.elapsed().as_secs_f64().max(0.001);
    let end = counts(shared);
    let expected = shared.ledger.expected();
    let backlog = group_keys
        .iter()
        .map(|g| expected.saturating_sub(shared.ledger.distinct_delivered(g)))
        .max()
        .unwrap_or(0);
    bar.finish_and_clear();
    let telemetry = match telemetry_run {
        Some(t) => Some(t.finish().await?),
        None => None,
    };
    let retention_deleted = match &probe {
        Some(client) => Some(
            steady::deleted(client, steady::schema(kind), &plan.queue(0))
                .await?
                .saturating_sub(deleted_start),
        ),
        None => None,
    };
    Ok(Window {
        secs,
        start: at_start,
        end,
        timeline,
        telemetry,
        backlog,
        retention_deleted,
    })
}

async fn steady_client(database_url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls)
        .await
        .context("connect for the retention figures")?;
    tokio::spawn(connection);
    Ok(client)
}

async fn start_telemetry(system: &System) -> anyhow::Result<Telemetry> {
    Telemetry::start(TelemetryConfig {
        database_url: system.database_url.clone(),
        broker_pid: system.broker_pid,
        postgres: system
            .postmaster_pid
            .map_or(PostgresPids::ByName, PostgresPids::Postmaster),
        interval: Duration::from_secs(1),
    })
    .await
    .context("start telemetry")
}

/// After producers stopped: consumers get `plan.drain` to receive everything (and poison
/// messages to reach the dead-letter queue), then stop; the downstream reader catches up last.
async fn drain(
    shared: &Arc<Shared>,
    setup: &mut Session,
    consumers: Vec<JoinHandle<()>>,
    reader: Option<JoinHandle<()>>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let plan = &shared.plan;
    let group_keys: Vec<String> = plan.groups.iter().map(GroupPlan::key).collect();
    let drain_start = Instant::now();
    if !plan.groups.is_empty() {
        while drain_start.elapsed() < plan.drain && !shared.ledger.complete(&group_keys) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut poison_ok = plan.poison_ratio == 0.0;
        while !poison_ok && drain_start.elapsed() < plan.drain {
            let mut all = true;
            for g in &group_keys {
                if setup.dlq_count(&plan.queue(0), g).await? < shared.ledger.poison() {
                    all = false;
                }
            }
            poison_ok = all;
            if !poison_ok {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    // Consumers stop first and finish what they hold (a forward transaction may still be in
    // flight for a message the ledger counts delivered); then the downstream reader catches up
    // with every message they forwarded.
    shared.stop_consumers.store(true, Ordering::Relaxed);
    for c in consumers {
        let _ = tokio::time::timeout(Duration::from_secs(5), c).await;
    }
    if let Some(reader) = reader {
        while drain_start.elapsed() < plan.drain && !outcome::forwarded_arrived(shared) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        shared.stop_downstream.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    }
    if !plan.groups.is_empty() {
        notes.push(format!(
            "after producers stopped, consumers caught up in {:.1} s",
            drain_start.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// Waits (at most `plan.drain`) until retention has deleted every message older than
/// `retentionSeconds` as of now; returns a failure when it has not.
async fn retention_caught_up(
    plan: &Plan,
    kind: &TargetKind,
    system: &System,
    run: &RetentionRun,
) -> anyhow::Result<Option<String>> {
    let client = steady_client(&system.database_url).await?;
    let cutoff = SystemTime::now() - Duration::from_secs(run.seconds.unsigned_abs());
    let started = Instant::now();
    loop {
        let overdue =
            steady::overdue(&client, steady::schema(kind), &plan.queue(0), cutoff).await?;
        if overdue == 0 {
            return Ok(None);
        }
        if started.elapsed() >= plan.drain {
            return Ok(Some(format!(
                "retention: {overdue} partitions still hold messages older than retentionSeconds ({} s) after {:.0} s",
                run.seconds,
                plan.drain.as_secs_f64()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `plan` against `system` through `kind`; returns the report.
///
/// # Errors
/// Setup failures (queue configuration, stored backlog, telemetry connection).
pub async fn run(
    plan: &Plan,
    kind: &TargetKind,
    system: &System,
    with_telemetry: bool,
) -> anyhow::Result<RunReport> {
    let target = Target::open(kind).await?;
    let plan = &Plan {
        tag: format!(
            "bench-{}-{}",
            kind.name(),
            &uuid::Uuid::new_v4().simple().to_string()[..6]
        ),
        ..plan.clone()
    };
    let shared = Arc::new(Shared::new(plan, kind.is_sql()));
    let mut session = target.session();
    let retention = setup(plan, kind, system, &mut session).await?;
    let environment = telemetry::environment(&system.database_url).await?;

    let start = Instant::now();
    if plan.prefill > 0 {
        // Pushed by the same producers before consumers start; it counts as pushed for the
        // check but not for the measured rates.
        prefill(&shared, &target).await?;
    }
    let producers = if plan.prefill > 0 { 0 } else { plan.producers };
    let tasks: Vec<JoinHandle<()>> = (0..producers)
        .map(|i| {
            let shared = Arc::clone(&shared);
            tokio::spawn(workers::producer(shared, target.session(), i, start))
        })
        .collect();
    let mut consumers = Vec::new();
    for group in &plan.groups {
        for _ in 0..group.consumers {
            let number = consumers.len() as u64;
            consumers.push(tokio::spawn(workers::consumer(
                Arc::clone(&shared),
                target.session(),
                group.clone(),
                number,
            )));
        }
    }
    let reader = plan
        .groups
        .iter()
        .any(|g| g.forward_ratio > 0.0)
        .then(|| tokio::spawn(workers::downstream(Arc::clone(&shared), target.session())));
    let retention_loop = match &retention {
        Some(r) => {
            steady::Loop::start(
                kind,
                &system.database_url,
                plan.queue(0),
                r.retention,
                r.seconds,
            )
            .await?
        }
        None => None,
    };

    let window = measure(
        &shared,
        kind,
        system,
        with_telemetry,
        &tasks,
        retention.as_ref(),
    )
    .await;
    shared.stop_producers.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let window = window?;
    let mut notes = Vec::new();
    if plan.prefill > 0 && window.end[1] == window.start[1] {
        notes.push(
            "the pushed backlog was consumed before the measured interval began (during the \
             warm-up): raise --prefill or lower --warmup to measure it"
                .to_owned(),
        );
    }
    drain(&shared, &mut session, consumers, reader, &mut notes).await?;
    let first_seq = retention.as_ref().map_or(0, |r| r.stored.per_partition);
    let mut verification =
        outcome::verdict(&shared, kind, system, &mut session, first_seq, &mut notes).await?;
    let mut retention_total = None;
    if let Some(run) = &retention {
        if let Some(failure) = retention_caught_up(plan, kind, system, run).await? {
            verification.failures.push(failure);
        }
        let client = steady_client(&system.database_url).await?;
        retention_total =
            Some(steady::deleted(&client, steady::schema(kind), &plan.queue(0)).await?);
        notes.push(format!(
            "{} messages stored before the run (set-based); retentionSeconds {} s, run every {} ms",
            run.stored.messages,
            run.seconds,
            run.retention.interval.as_millis()
        ));
    }
    if let Some(l) = retention_loop {
        l.stop().await;
    }
    verification.passed = verification.failures.is_empty();
    Ok(outcome::report(
        &shared,
        kind,
        system,
        environment,
        window,
        verification,
        retention_total,
        notes,
    ))
}
