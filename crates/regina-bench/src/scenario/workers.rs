//! The virtual users of a run: producers (closed- or open-loop), consumers (long-poll pops,
//! autoAck or explicit acks, injected failures, poison messages, transactional forwarding) and
//! the downstream reader of forwarded messages.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::lanes::{decode, Lanes};
use crate::plan::Item;
use crate::plan::{GroupPlan, Plan};
use crate::stats::Stats;
use crate::target::{Ack, Delivery, Pop, Session};
use crate::verify::{Ledger, Seen};

/// Microseconds since the Unix epoch (the send time payloads carry).
pub fn now_us() -> u64 {
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

/// What the virtual users of a run share.
pub struct Shared {
    pub plan: Plan,
    pub stats: Stats,
    pub ledger: Ledger,
    pub stop_producers: AtomicBool,
    pub stop_consumers: AtomicBool,
    /// The downstream reader stops last: after the consumers, whose in-flight transactions
    /// may still forward messages when the ledger already counts them delivered.
    pub stop_downstream: AtomicBool,
    /// Set during the measured interval: latencies recorded then make the report's series.
    pub measuring: AtomicBool,
    pub forwarded: Mutex<HashSet<(u32, u64)>>,
    pub downstream: Mutex<HashMap<(u32, u64), u32>>,
    /// The target speaks SQL: consumers cannot long-poll.
    pub sql: bool,
}

impl Shared {
    /// Fresh state for `plan`.
    pub fn new(plan: &Plan, sql: bool) -> Shared {
        Shared {
            plan: plan.clone(),
            stats: Stats::new(),
            ledger: Ledger::new(!plan.auto_ack),
            stop_producers: AtomicBool::new(false),
            stop_consumers: AtomicBool::new(false),
            stop_downstream: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            forwarded: Mutex::new(HashSet::new()),
            downstream: Mutex::new(HashMap::new()),
            sql,
        }
    }
}

fn seen_of(deliveries: &[Delivery]) -> Vec<(Seen, u64, bool)> {
    deliveries
        .iter()
        .filter_map(|d| {
            let (lane, seq, t, poison) = decode(&d.data)?;
            Some((Seen { lane, seq }, t, poison))
        })
        .collect()
}

/// Producer `index`: pushes until told to stop (or `plan.messages`).
pub async fn producer(shared: Arc<Shared>, mut session: Session, index: usize, start: Instant) {
    let plan = &shared.plan;
    let mut lanes = Lanes::new(plan, index);
    let per_producer = plan.rate.map(|r| r / plan.producers as f64);
    let mut sent = 0u64;
    let poison_ratio = plan.poison_ratio;
    let poison = |lane: u32, seq: u64| poison_ratio > 0.0 && hash01(lane, seq, 7) < poison_ratio;
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
        let (items, keys) = lanes.request(plan, now_us(), poison);
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

/// One push request of a backlog pushed through the target (closed loop, no timing).
pub async fn producer_once(shared: &Arc<Shared>, session: &mut Session, index: usize, round: u64) {
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
        shared.stats.push_requests.fetch_add(1, Ordering::Relaxed);
    }
    shared.ledger.pushed(&keys, ok);
}

/// A consumer of `group`: pops, records, acks (or fails, or forwards) until told to stop.
/// `number` tells it from the run's other consumers: an injected failure is drawn per delivery,
/// from the message, the consumer and how many deliveries it handled.
pub async fn consumer(shared: Arc<Shared>, mut session: Session, group: GroupPlan, number: u64) {
    let plan = &shared.plan;
    let key = group.key();
    let pop = Pop {
        queue: plan.queue(0),
        group: group.name.clone(),
        batch: plan.pop_batch,
        partitions: plan.pop_partitions,
        wait_ms: if shared.sql { 0 } else { 1_000 },
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
            if shared.sql {
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
            // Keyed by the consumer too: consumers that handled as many deliveries would
            // otherwise draw alike, and a message failed by one would fail again at the next
            // whose count stood at the same value (three in a row: dead-lettered).
            let fail = *poison
                || (group.fail_ratio > 0.0
                    && hash01(s.lane, s.seq, number << 32 | attempt) < group.fail_ratio);
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

/// Reads the downstream queue of forwarded messages until told to stop.
pub async fn downstream(shared: Arc<Shared>, mut session: Session) {
    let pop = Pop {
        queue: shared.plan.downstream(),
        group: None,
        batch: 100,
        partitions: 10,
        wait_ms: if shared.sql { 0 } else { 500 },
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
