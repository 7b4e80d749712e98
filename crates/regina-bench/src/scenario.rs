//! Named scenarios and the engine that runs one against a target: producers (closed- or
//! open-loop), consumer groups (long-poll pops, autoAck or explicit acks, injected failures,
//! poison messages, transactional forwarding), a per-second timeline, a drain phase and the
//! delivery check.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use regina_bench::model::{RunReport, Summary, Verification};
use regina_bench::telemetry::{self, PostgresPids, Telemetry, TelemetryConfig};
use serde_json::{json, Value};

use crate::stats::Stats;
use crate::system::System;
use crate::target::{Ack, Delivery, Item, Pop, Session, Target, TargetKind};
use crate::verify::{Ledger, Seen};

/// A consumer group of a scenario.
#[derive(Clone, Debug)]
pub struct GroupPlan {
    /// Group name; None: queue mode.
    pub name: Option<String>,
    /// Consumer connections.
    pub consumers: usize,
    /// Handler time per message.
    pub handler_delay: Duration,
    /// Share of deliveries failed on purpose (ack `failed`).
    pub fail_ratio: f64,
    /// Share of messages forwarded to the downstream queue through a transaction.
    pub forward_ratio: f64,
}

impl GroupPlan {
    fn named(name: &str, consumers: usize) -> GroupPlan {
        GroupPlan {
            name: Some(name.to_owned()),
            consumers,
            handler_delay: Duration::ZERO,
            fail_ratio: 0.0,
            forward_ratio: 0.0,
        }
    }

    fn key(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| "__QUEUE_MODE__".to_owned())
    }
}

/// A scenario's shape.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Scenario name.
    pub name: String,
    /// One line for `list`.
    pub description: String,
    /// Queues (`bench`, or `bench-0` …).
    pub queues: usize,
    /// Partitions per queue.
    pub partitions: usize,
    /// Producer connections.
    pub producers: usize,
    /// Messages per push request.
    pub items_per_push: usize,
    /// Open-loop offered rate (messages/s, all producers); None: closed loop.
    pub rate: Option<f64>,
    /// Consumer groups.
    pub groups: Vec<GroupPlan>,
    /// Pop `batch`.
    pub pop_batch: u32,
    /// Pop `partitions`.
    pub pop_partitions: u32,
    /// autoAck pops.
    pub auto_ack: bool,
    /// Messages pushed before the measured interval (the pop+ack scenario).
    pub prefill: u64,
    /// Share of poison messages (always failed: they must reach the dead-letter queue).
    pub poison_ratio: f64,
    /// Queue options sent with `configure`.
    pub queue_options: Value,
    /// Measured interval.
    pub duration: Duration,
    /// Unmeasured start.
    pub warmup: Duration,
    /// Longest wait for consumers to catch up after producers stop.
    pub drain: Duration,
    /// Stop producing after this many messages.
    pub messages: Option<u64>,
    /// Push-only: verify what the database holds instead of deliveries.
    pub verify_db: bool,
    /// Queue names start with this (unique per run, so runs can share a database).
    pub tag: String,
}

impl Plan {
    fn base(name: &str, description: &str) -> Plan {
        Plan {
            name: name.to_owned(),
            description: description.to_owned(),
            queues: 1,
            partitions: 1_000,
            producers: 50,
            items_per_push: 1,
            rate: None,
            groups: Vec::new(),
            pop_batch: 100,
            pop_partitions: 10,
            auto_ack: true,
            prefill: 0,
            poison_ratio: 0.0,
            queue_options: json!({}),
            duration: Duration::from_secs(30),
            warmup: Duration::from_secs(3),
            drain: Duration::from_secs(60),
            messages: None,
            verify_db: false,
            tag: "bench".to_owned(),
        }
    }

    /// The named scenario, or None.
    pub fn named(name: &str) -> Option<Plan> {
        let plan = match name {
            "bp-1" | "bp-10" | "bp-100" => {
                let n: usize = name[3..].parse().ok()?;
                Plan {
                    items_per_push: n,
                    verify_db: true,
                    ..Plan::base(name, &format!("push only: 50 connections, {n} message(s) per request, 1 000 partitions"))
                }
            }
            "q-1" | "q-10" => {
                let q: usize = name[2..].parse().ok()?;
                Plan {
                    queues: q,
                    partitions: 1_000 / q,
                    items_per_push: 10,
                    verify_db: true,
                    ..Plan::base(name, &format!("push only: 10 messages per request spread over {q} queue(s), 1 000 partitions in all"))
                }
            }
            "cg-5" | "cg-10" => {
                let g: usize = name[3..].parse().ok()?;
                Plan {
                    producers: 10,
                    items_per_push: 10,
                    groups: (0..g).map(|i| GroupPlan::named(&format!("g{i}"), 2)).collect(),
                    ..Plan::base(name, &format!("fan-out: 10 producers x 10 messages, {g} consumer groups draining with pop batch 100 (autoAck)"))
                }
            }
            "pop-ack" => Plan {
                producers: 10,
                items_per_push: 1_000,
                prefill: 200_000,
                auto_ack: false,
                groups: vec![GroupPlan::named("workers", 20)],
                ..Plan::base(name, "pop + explicit ack/batch: a 200 000-message backlog over 1 000 partitions, 20 consumers, batch 100")
            },
            "e2e" => Plan {
                producers: 20,
                rate: Some(1_000.0),
                partitions: 100,
                pop_batch: 10,
                pop_partitions: 1,
                groups: vec![GroupPlan::named("e2e", 10)],
                ..Plan::base(name, "end-to-end latency: 1 000 msg/s offered (open loop), 1 message per push, 10 long-polling consumers")
            },
            "app" | "app-overload" => {
                let overload = name == "app-overload";
                let worker = |name: &str, forward: f64| GroupPlan {
                    name: Some(name.to_owned()),
                    consumers: 8,
                    handler_delay: Duration::from_micros(500),
                    fail_ratio: 0.01,
                    forward_ratio: forward,
                };
                Plan {
                    producers: 20,
                    rate: Some(if overload { 6_000.0 } else { 1_000.0 }),
                    partitions: 200,
                    pop_batch: 20,
                    pop_partitions: 4,
                    auto_ack: false,
                    poison_ratio: 0.001,
                    queue_options: json!({"retryLimit": 2, "leaseTime": 30}),
                    groups: vec![worker("billing", 0.05), worker("audit", 0.0)],
                    drain: Duration::from_secs(if overload { 180 } else { 60 }),
                    ..Plan::base(name, if overload {
                        "application overload: 6 000 msg/s offered, above what two groups with handler delay consume; then the backlog must drain with nothing lost"
                    } else {
                        "application: 1 000 msg/s, two groups with 0.5 ms handlers, 1% transient failures, 0.1% poison to the DLQ, 5% of one group forwarded by transaction"
                    })
                }
            }
            "soak" => Plan {
                producers: 10,
                rate: Some(500.0),
                partitions: 1_000,
                pop_batch: 50,
                pop_partitions: 5,
                auto_ack: false,
                queue_options: json!({"retryLimit": 2, "leaseTime": 30}),
                poison_ratio: 0.001,
                groups: vec![
                    GroupPlan { fail_ratio: 0.01, ..GroupPlan::named("billing", 4) },
                    GroupPlan::named("audit", 4),
                ],
                duration: Duration::from_secs(3_600),
                ..Plan::base(name, "soak: 500 msg/s mixed push, pop and ack with failures for hours; per-interval throughput, latency, memory and database size")
            },
            _ => {
                let n = name.strip_prefix("hi-part-")?;
                let partitions: usize = match n {
                    "1k" => 1_000,
                    "10k" => 10_000,
                    "100k" => 100_000,
                    other => other.parse().ok()?,
                };
                Plan {
                    partitions,
                    producers: 500,
                    groups: vec![GroupPlan::named("drain", 20)],
                    pop_partitions: 100,
                    // The first pushes create the partitions: let that finish before measuring.
                    warmup: Duration::from_secs(if partitions >= 10_000 { 15 } else { 5 }),
                    ..Plan::base(name, &format!("partition scaling: {partitions} partitions, 500 connections x 1 message, 20 consumers draining (batch 100, 100 partitions per pop)"))
                }
            }
        };
        Some(plan)
    }

    /// Every named scenario, for `list`.
    pub fn catalogue() -> Vec<Plan> {
        [
            "bp-1",
            "bp-10",
            "bp-100",
            "q-1",
            "q-10",
            "cg-5",
            "cg-10",
            "hi-part-10",
            "hi-part-100",
            "hi-part-1k",
            "hi-part-10k",
            "hi-part-100k",
            "pop-ack",
            "e2e",
            "app",
            "app-overload",
            "soak",
        ]
        .iter()
        .filter_map(|n| Plan::named(n))
        .collect()
    }

    fn queue(&self, q: usize) -> String {
        if self.queues == 1 {
            self.tag.clone()
        } else {
            format!("{}-{q}", self.tag)
        }
    }

    /// The message for `seq` of `lane` (written to `slot`): the payload carries what the
    /// delivery check and the latency measurement need.
    fn item(
        &self,
        slot: usize,
        lane: u32,
        seq: u64,
        sent_us: u64,
        poison: bool,
        pad: &str,
    ) -> Item {
        Item {
            queue: self.queue(slot / self.partitions),
            partition: format!("p{}", slot % self.partitions),
            payload: format!(
                "{{\"l\":{lane},\"s\":{seq},\"t\":{sent_us},\"x\":{poison},\"pad\":\"{pad}\"}}"
            ),
        }
    }

    fn downstream(&self) -> String {
        format!("{}-out", self.tag)
    }

    fn lanes_total(&self) -> usize {
        self.queues * self.partitions
    }
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn hash01(lane: u32, seq: u64, salt: u64) -> f64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (lane, seq, salt).hash(&mut h);
    (h.finish() % 1_000_000) as f64 / 1_000_000.0
}

/// What the consumers share.
struct Shared {
    plan: Plan,
    stats: Stats,
    ledger: Ledger,
    stop_producers: AtomicBool,
    stop_consumers: AtomicBool,
    /// The downstream reader stops last: after the consumers, whose in-flight transactions
    /// may still forward messages when the ledger already counts them delivered.
    stop_downstream: AtomicBool,
    measuring: AtomicBool,
    forwarded: Mutex<HashSet<(u32, u64)>>,
    downstream: Mutex<HashMap<(u32, u64), u32>>,
    raw: bool,
}

fn seen_of(deliveries: &[Delivery]) -> Vec<(Seen, u64, bool)> {
    deliveries
        .iter()
        .filter_map(|d| {
            let lane = d.data["l"].as_u64()? as u32;
            let seq = d.data["s"].as_u64()?;
            let t = d.data["t"].as_u64().unwrap_or(0);
            let poison = d.data["x"].as_bool().unwrap_or(false);
            Some((Seen { lane, seq }, t, poison))
        })
        .collect()
}

async fn producer(shared: Arc<Shared>, mut session: Session, index: usize, start: Instant) {
    let plan = &shared.plan;
    let total = plan.lanes_total();
    let owned: Vec<usize> = if plan.producers <= total {
        (index..total).step_by(plan.producers).collect()
    } else {
        vec![index % total]
    };
    let mut next: HashMap<u32, u64> = HashMap::new();
    let mut cursor = 0usize;
    let per_producer = plan.rate.map(|r| r / plan.producers as f64);
    let mut sent = 0u64;
    let pad = "x".repeat(60);
    while !shared.stop_producers.load(Ordering::Relaxed) {
        let intended = match per_producer {
            Some(rate) => {
                // Producers are phase-shifted so the offered load is even, not bursts of all
                // producers at the same instants.
                let interval = plan.items_per_push as f64 / rate;
                let phase = interval * index as f64 / plan.producers as f64;
                let at = start + Duration::from_secs_f64(sent as f64 * interval + phase);
                if at > Instant::now() {
                    tokio::time::sleep_until(at.into()).await;
                }
                at
            }
            None => Instant::now(),
        };
        let mut items = Vec::with_capacity(plan.items_per_push);
        let mut keys = Vec::with_capacity(plan.items_per_push);
        let t = now_us();
        for _ in 0..plan.items_per_push {
            let slot = owned[cursor % owned.len()];
            cursor += 1;
            let lane = (index * total + slot) as u32;
            let seq = next.entry(lane).or_insert(0);
            let poison = plan.poison_ratio > 0.0 && hash01(lane, *seq, 7) < plan.poison_ratio;
            keys.push((lane, *seq, poison));
            items.push(plan.item(slot, lane, *seq, t, poison, &pad));
            *seq += 1;
        }
        let measured = shared.measuring.load(Ordering::Relaxed);
        match session.push(&items).await {
            Ok(queued) => {
                shared.stats.push.record(intended.elapsed(), measured);
                shared
                    .stats
                    .pushed
                    .fetch_add(queued as u64, Ordering::Relaxed);
                shared.stats.push_requests.fetch_add(1, Ordering::Relaxed);
                shared.ledger.pushed(&keys, true);
            }
            Err(e) => {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
                shared.ledger.pushed(&keys, false);
                tracing::warn!("push failed: {e:#}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        sent += 1;
        if plan
            .messages
            .is_some_and(|m| sent * plan.items_per_push as u64 * plan.producers as u64 >= m)
        {
            break;
        }
    }
}

async fn consumer(shared: Arc<Shared>, mut session: Session, group: GroupPlan) {
    let plan = &shared.plan;
    let key = group.key();
    let pop = Pop {
        queue: plan.queue(0),
        group: group.name.clone(),
        batch: plan.pop_batch,
        partitions: plan.pop_partitions,
        wait_ms: if shared.raw { 0 } else { 1_000 },
        auto_ack: plan.auto_ack,
    };
    let mut attempt = 0u64;
    while !shared.stop_consumers.load(Ordering::Relaxed) {
        let started = Instant::now();
        let deliveries = match session.pop(&pop).await {
            Ok(d) => d,
            Err(e) => {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("pop failed: {e:#}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if deliveries.is_empty() {
            if shared.raw {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            continue;
        }
        let measured = shared.measuring.load(Ordering::Relaxed);
        shared.stats.pop.record(started.elapsed(), measured);
        let seen = seen_of(&deliveries);
        let now = now_us();
        for (_, t, _) in &seen {
            shared
                .stats
                .e2e
                .record(Duration::from_micros(now.saturating_sub(*t)), measured);
        }
        shared
            .stats
            .delivered
            .fetch_add(deliveries.len() as u64, Ordering::Relaxed);
        let seen_only: Vec<Seen> = seen
            .iter()
            .map(|(s, _, _)| Seen {
                lane: s.lane,
                seq: s.seq,
            })
            .collect();
        shared.ledger.delivered(&key, &seen_only);
        if plan.auto_ack {
            continue;
        }
        if !group.handler_delay.is_zero() {
            tokio::time::sleep(group.handler_delay * deliveries.len() as u32).await;
        }
        // Per partition, in order: complete until the first failure, fail it, skip the rest
        // (they come back with the next claim).
        let mut failed_partitions: HashSet<String> = HashSet::new();
        let mut acks = Vec::new();
        let mut forwards = Vec::new();
        for (d, (s, _, poison)) in deliveries.iter().zip(seen.iter()) {
            if failed_partitions.contains(&d.partition_id) {
                continue;
            }
            attempt += 1;
            let fail = *poison
                || (group.fail_ratio > 0.0 && hash01(s.lane, s.seq, attempt) < group.fail_ratio);
            let ack = Ack {
                transaction_id: d.transaction_id.clone(),
                partition_id: d.partition_id.clone(),
                lease_id: d.lease_id.clone(),
                status: if fail { "failed" } else { "completed" },
            };
            if fail {
                failed_partitions.insert(d.partition_id.clone());
                acks.push(ack);
            } else if group.forward_ratio > 0.0 && hash01(s.lane, s.seq, 99) < group.forward_ratio {
                forwards.push((ack, d.clone(), (s.lane, s.seq)));
            } else {
                acks.push(ack);
            }
        }
        let mut completed = acks.iter().filter(|a| a.status == "completed").count() as u64;
        for (ack, d, key_ls) in forwards {
            let item = Item {
                queue: shared.plan.downstream(),
                partition: d.partition.clone(),
                payload: d.data.to_string(),
            };
            let result = session
                .transaction(
                    std::slice::from_ref(&ack),
                    group.name.as_deref(),
                    std::slice::from_ref(&item),
                )
                .await;
            let ok = match result {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("transaction failed: {e:#}");
                    false
                }
            };
            if ok {
                completed += 1;
                shared
                    .forwarded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key_ls);
            } else {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        let started = Instant::now();
        match session.ack(&acks, group.name.as_deref()).await {
            Ok(()) => {
                shared.stats.ack.record(started.elapsed(), measured);
                shared.stats.acked.fetch_add(completed, Ordering::Relaxed);
            }
            Err(e) => {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("ack failed: {e:#}");
            }
        }
    }
}

async fn downstream(shared: Arc<Shared>, mut session: Session) {
    let pop = Pop {
        queue: shared.plan.downstream(),
        group: None,
        batch: 100,
        partitions: 10,
        wait_ms: if shared.raw { 0 } else { 500 },
        auto_ack: true,
    };
    while !shared.stop_downstream.load(Ordering::Relaxed) {
        match session.pop(&pop).await {
            Ok(d) if !d.is_empty() => {
                let mut seen = shared
                    .downstream
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for (s, _, _) in seen_of(&d) {
                    *seen.entry((s.lane, s.seq)).or_insert(0) += 1;
                }
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
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

/// Runs `plan` against `system` through `kind`; returns the report.
///
/// # Errors
/// Setup failures (queue configuration, telemetry connection).
pub async fn run(
    plan: &Plan,
    kind: &TargetKind,
    system: &System,
    with_telemetry: bool,
) -> anyhow::Result<RunReport> {
    let target = Target::open(kind).await?;
    let raw = matches!(kind, TargetKind::Raw(..));
    let plan = &Plan {
        tag: format!(
            "bench-{}-{}",
            kind.name(),
            &uuid::Uuid::new_v4().simple().to_string()[..6]
        ),
        ..plan.clone()
    };
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        stats: Stats::new(),
        ledger: Ledger::new(!plan.auto_ack),
        stop_producers: AtomicBool::new(false),
        stop_consumers: AtomicBool::new(false),
        stop_downstream: AtomicBool::new(false),
        measuring: AtomicBool::new(false),
        forwarded: Mutex::new(HashSet::new()),
        downstream: Mutex::new(HashMap::new()),
        raw,
    });
    let mut setup = target.session();
    for q in 0..plan.queues {
        setup
            .configure(&plan.queue(q), plan.queue_options.clone())
            .await?;
    }
    let forwarding = plan.groups.iter().any(|g| g.forward_ratio > 0.0);
    if forwarding {
        setup.configure(&plan.downstream(), json!({})).await?;
    }
    let environment = telemetry::environment(&system.database_url).await?;

    let start = Instant::now();
    let mut tasks = Vec::new();
    let producers = if plan.prefill > 0 { 0 } else { plan.producers };
    if plan.prefill > 0 {
        // The backlog is pushed by the same producers before consumers start; it counts as
        // pushed for the check but not for the measured rates.
        let fill = Plan {
            messages: Some(plan.prefill),
            rate: None,
            ..plan.clone()
        };
        let per = fill
            .prefill
            .div_ceil(fill.producers as u64 * fill.items_per_push as u64);
        let mut fills = Vec::new();
        for i in 0..fill.producers {
            let shared = Arc::clone(&shared);
            let mut session = target.session();
            fills.push(tokio::spawn(async move {
                for round in 0..per {
                    producer_once(&shared, &mut session, i, round).await;
                }
            }));
        }
        for f in fills {
            f.await?;
        }
    }
    let filled = shared.stats.totals();
    for i in 0..producers {
        tasks.push(tokio::spawn(producer(
            Arc::clone(&shared),
            target.session(),
            i,
            start,
        )));
    }
    let mut consumers = Vec::new();
    for group in &plan.groups {
        for _ in 0..group.consumers {
            consumers.push(tokio::spawn(consumer(
                Arc::clone(&shared),
                target.session(),
                group.clone(),
            )));
        }
    }
    let reader =
        forwarding.then(|| tokio::spawn(downstream(Arc::clone(&shared), target.session())));

    let bar = progress(plan, kind.name());
    let mut timeline = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut telemetry_run: Option<Telemetry> = None;
    let mut measure_start = Instant::now();
    let mut at_measure = filled;
    let group_keys: Vec<String> = plan.groups.iter().map(GroupPlan::key).collect();
    loop {
        tick.tick().await;
        let elapsed = start.elapsed();
        if elapsed >= plan.warmup && !shared.measuring.load(Ordering::Relaxed) {
            shared.measuring.store(true, Ordering::Relaxed);
            measure_start = Instant::now();
            at_measure = shared.stats.totals();
            let _ = shared.stats.interval(0.0);
            if with_telemetry {
                telemetry_run = Some(
                    Telemetry::start(TelemetryConfig {
                        database_url: system.database_url.clone(),
                        broker_pid: system.broker_pid,
                        postgres: system
                            .postmaster_pid
                            .map_or(PostgresPids::ByName, PostgresPids::Postmaster),
                        interval: Duration::from_secs(1),
                    })
                    .await
                    .context("start telemetry")?,
                );
            }
        } else if shared.measuring.load(Ordering::Relaxed) {
            timeline.push(
                shared
                    .stats
                    .interval(measure_start.elapsed().as_secs_f64().round()),
            );
        }
        let [pushed, delivered, _, _] = shared.stats.totals();
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!("pushed {pushed}  delivered {delivered}"));
        let drained_early =
            plan.prefill > 0 && shared.ledger.expected() > 0 && shared.ledger.complete(&group_keys);
        let producers_done = producers > 0 && tasks.iter().all(|t| t.is_finished());
        if elapsed >= plan.warmup + plan.duration || drained_early || producers_done {
            break;
        }
    }
    bar.finish_and_clear();
    let measured_secs = measure_start.elapsed().as_secs_f64().max(0.001);
    let at_end = shared.stats.totals();
    let telemetry_report = match telemetry_run {
        Some(t) => Some(t.finish().await?),
        None => None,
    };

    // Drain: producers stop; consumers get `drain` to catch up.
    shared.stop_producers.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let drain_start = Instant::now();
    let mut notes = Vec::new();
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
        while drain_start.elapsed() < plan.drain {
            let forwarded = shared
                .forwarded
                .lock()
                .map(|f| f.clone())
                .unwrap_or_default();
            let all_arrived = shared
                .downstream
                .lock()
                .map(|d| forwarded.iter().all(|k| d.contains_key(k)))
                .unwrap_or(false);
            if all_arrived {
                break;
            }
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

    // The verdict.
    let explained: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.fail_ratio > 0.0 || plan.poison_ratio > 0.0)
        .map(GroupPlan::key)
        .collect();
    let mut verification = if plan.verify_db {
        verify_db(&system.database_url, &shared.ledger, &plan.tag).await?
    } else {
        shared.ledger.verdict(&group_keys, &explained)
    };
    if plan.poison_ratio > 0.0 {
        let poison = shared.ledger.poison();
        let mut dead = 0;
        for g in &group_keys {
            let n = setup.dlq_count(&plan.queue(0), g).await?;
            dead += n;
            if n != poison {
                verification.failures.push(format!(
                    "group {g}: {n} dead letters, {poison} poison messages pushed"
                ));
            }
        }
        verification.dead_lettered = dead;
    }
    if forwarding {
        let forwarded = shared
            .forwarded
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default();
        let arrived = shared
            .downstream
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default();
        let missing = forwarded
            .iter()
            .filter(|k| !arrived.contains_key(k))
            .count();
        let twice = arrived.values().filter(|n| **n > 1).count();
        notes.push(format!(
            "{} messages forwarded through {}; {} arrived downstream, {missing} missing, {twice} more than once",
            forwarded.len(),
            if raw {
                "one SQL transaction (ack + push)"
            } else {
                "POST /api/v1/transaction"
            },
            arrived.len()
        ));
        if missing > 0 || twice > 0 {
            verification
                .failures
                .push(format!("forwarding: {missing} missing, {twice} duplicated"));
        }
    }
    verification.passed = verification.failures.is_empty();
    if raw && !plan.groups.is_empty() {
        notes
            .push("raw consumers poll (no long-poll in SQL): an empty pop sleeps 10 ms".to_owned());
    }
    if let TargetKind::Raw(_, n) = kind {
        notes.push(format!(
            "raw target: {n} PostgreSQL connections shared by the virtual users"
        ));
    }

    let pushed = at_end[0] - at_measure[0];
    let delivered = at_end[1] - at_measure[1];
    let per_group = verification.delivered_per_group.clone();
    let expected = shared.ledger.expected();
    let backlog = per_group
        .values()
        .map(|d| expected.saturating_sub(*d))
        .max()
        .unwrap_or(0);
    Ok(RunReport {
        scenario: plan.name.clone(),
        target: kind.name().to_owned(),
        started_at: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        duration_secs: measured_secs,
        settings: json!({
            "description": plan.description,
            "queues": plan.queues,
            "partitions_per_queue": plan.partitions,
            "producers": plan.producers,
            "messages_per_push": plan.items_per_push,
            "offered_rate": plan.rate,
            "groups": plan.groups.iter().map(|g| json!({"name": g.key(), "consumers": g.consumers,
                "handler_delay_ms": g.handler_delay.as_secs_f64() * 1000.0,
                "fail_ratio": g.fail_ratio, "forward_ratio": g.forward_ratio})).collect::<Vec<_>>(),
            "pop_batch": plan.pop_batch,
            "pop_partitions": plan.pop_partitions,
            "auto_ack": plan.auto_ack,
            "prefill": plan.prefill,
            "poison_ratio": plan.poison_ratio,
            "warmup_secs": plan.warmup.as_secs_f64(),
        }),
        environment: regina_bench::model::Environment {
            broker_settings: system.broker_settings.iter().cloned().collect(),
            ..environment
        },
        summary: Summary {
            pushed,
            push_requests: shared.stats.push_requests.load(Ordering::Relaxed),
            delivered,
            acked: at_end[2] - at_measure[2],
            errors: at_end[3],
            push_rate: pushed as f64 / measured_secs,
            deliver_rate: delivered as f64 / measured_secs,
            delivered_per_group: per_group,
            backlog_at_end: backlog,
        },
        timeline,
        latency: shared.stats.series(),
        verification,
        telemetry: telemetry_report,
        notes,
    })
}

/// One push request of the prefill (closed loop, no timing).
async fn producer_once(shared: &Arc<Shared>, session: &mut Session, index: usize, round: u64) {
    let plan = &shared.plan;
    let total = plan.lanes_total();
    let owned: Vec<usize> = (index..total).step_by(plan.producers).collect();
    let mut items = Vec::with_capacity(plan.items_per_push);
    let mut keys = Vec::with_capacity(plan.items_per_push);
    let per_lane = (plan.items_per_push / owned.len().max(1)).max(1) as u64;
    for k in 0..plan.items_per_push {
        let slot = owned[k % owned.len()];
        let lane = (index * total + slot) as u32;
        let seq = round * per_lane + (k / owned.len()) as u64;
        keys.push((lane, seq, false));
        items.push(plan.item(slot, lane, seq, now_us(), false, ""));
    }
    let ok = session.push(&items).await.is_ok();
    if ok {
        shared
            .stats
            .pushed
            .fetch_add(items.len() as u64, Ordering::Relaxed);
    }
    shared.ledger.pushed(&keys, ok);
}

/// Push-only check: the database holds every acknowledged push once, in order per lane.
async fn verify_db(database_url: &str, ledger: &Ledger, tag: &str) -> anyhow::Result<Verification> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let row = client
        .query_one(
            "select count(*)::bigint,
                    count(distinct (payload->>'l', payload->>'s'))::bigint,
                    count(*) filter (where s <= prev)::bigint
             from (select (payload->>'s')::bigint as s, payload,
                          lag((payload->>'s')::bigint) over (
                              partition by partition_id, payload->>'l' order by seq) as prev
                   from regina.messages
                   where partition_id in (select p.id from regina.partitions p
                                          join regina.queues q on q.id = p.queue_id
                                          where q.name = $1 or q.name like $1 || '-%')) x",
            &[&tag],
        )
        .await?;
    let (stored, distinct, out_of_order): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let expected = ledger.expected();
    let mut v = Verification {
        checked: true,
        pushed: expected,
        lost: expected.saturating_sub(distinct as u64),
        out_of_order: out_of_order as u64,
        duplicates: (stored - distinct) as u64,
        ..Verification::default()
    };
    v.delivered_per_group
        .insert("stored".to_owned(), stored as u64);
    if v.lost > 0 {
        v.failures.push(format!(
            "{} acknowledged pushes not in the database",
            v.lost
        ));
    }
    if v.out_of_order > 0 {
        v.failures
            .push(format!("{} messages stored out of order", v.out_of_order));
    }
    if v.duplicates > 0 {
        v.failures
            .push(format!("{} messages stored twice", v.duplicates));
    }
    v.passed = v.failures.is_empty();
    Ok(v)
}
