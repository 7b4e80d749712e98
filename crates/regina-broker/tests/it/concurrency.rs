//! The checker: producers, consumers in two named groups plus queue mode, random `failed` acks
//! and crashes (leases left to expire), then a proof of invariants 1, 2 and 4 — no acknowledged
//! push lost, per-partition order per group, every duplicate explained.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::support::{start_with, Api};

const QUEUE: &str = "chk";
const PARTITIONS: usize = 40;
const PRODUCERS: usize = 4;
const GROUPS: [Option<&str>; 3] = [Some("g1"), Some("g2"), None];
const CONSUMERS_PER_GROUP: usize = 2;
const PRODUCE_FOR: Duration = Duration::from_secs(7);
/// Per partition of a delivery: ack a prefix `completed`, then the next message `failed`.
const FAIL_P: f64 = 0.05;
/// Per partition of a delivery: ack a prefix `completed`, abandon the rest to lease expiry.
const ABANDON_P: f64 = 0.03;
/// Per pop: "crash" — ack nothing at all.
const CRASH_P: f64 = 0.03;

/// What the checker knows about one (group, partition).
#[derive(Default)]
struct Lane {
    /// First sequence number not yet completed by an acknowledged ack (the group's head).
    head: u64,
    /// Every sequence number below this was delivered at least once.
    next_new: u64,
    /// Redeliveries explained by a `failed` ack or an abandoned/expired lease, per sequence number.
    released: HashMap<u64, u32>,
    /// The last lease ended with unsettled messages: a failed attempt was charged to the head.
    charged: bool,
}

#[derive(Default)]
struct Counters {
    pushed: AtomicU64,
    acked: AtomicU64,
    delivered: [AtomicU64; 3],
    redelivered: AtomicU64,
    failed_acks: AtomicU64,
    crashes: AtomicU64,
    abandoned: AtomicU64,
    out_of_order: AtomicU64,
    bad_retry_count: AtomicU64,
    unexplained: AtomicU64,
    anomalies: AtomicU64,
}

struct Model {
    lanes: Vec<Arc<Mutex<Lane>>>,
    /// Per partition: how many sequence numbers the producers got acknowledged (a prefix).
    pushed: Vec<AtomicU64>,
    counters: Counters,
    notes: StdMutex<Vec<String>>,
    stop_producing: AtomicBool,
    stop_consuming: AtomicBool,
}

impl Model {
    fn lane(&self, group: usize, partition: usize) -> Arc<Mutex<Lane>> {
        self.lanes[group * PARTITIONS + partition].clone()
    }

    fn note(&self, counter: &AtomicU64, text: String) {
        counter.fetch_add(1, SeqCst);
        let mut notes = self.notes.lock().unwrap();
        if notes.len() < 20 {
            notes.push(text);
        }
    }

    /// Checks one delivered run of a partition against the lane, under the lane's lock.
    fn check_delivery(&self, lane: &mut Lane, group: usize, partition: usize, run: &Run) {
        let seqs = &run.seqs;
        let where_ = format!("group {group} partition {partition} delivery {seqs:?}");
        self.check_retry_counts(lane, run, &where_);
        if seqs[0] != lane.head {
            self.note(
                &self.counters.out_of_order,
                format!("{where_}: head is {}", lane.head),
            );
        }
        if seqs.windows(2).any(|w| w[1] != w[0] + 1) {
            self.note(
                &self.counters.out_of_order,
                format!("{where_}: not consecutive"),
            );
        }
        for &s in seqs {
            if s < lane.next_new {
                self.counters.redelivered.fetch_add(1, SeqCst);
                match lane.released.get_mut(&s) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => self.note(&self.counters.unexplained, format!("{where_}: {s} again")),
                }
            } else {
                lane.next_new = s + 1;
            }
        }
    }

    /// §4.7: `retryCount` is the head's failed attempts — at least 1 right after a lease of the
    /// lane ended unsettled (failed ack or expiry), 0 on every other message.
    fn check_retry_counts(&self, lane: &mut Lane, run: &Run, where_: &str) {
        let counts: Vec<u64> = run
            .messages
            .iter()
            .map(|m| m["retryCount"].as_u64().unwrap_or(u64::MAX))
            .collect();
        let head_charged = lane.charged && run.seqs[0] == lane.head;
        lane.charged = false;
        let head_ok = if head_charged {
            counts[0] >= 1
        } else {
            counts[0] == 0
        };
        if !head_ok || counts[1..].iter().any(|&c| c != 0) {
            let text = format!("{where_}: retryCount {counts:?} (head charged: {head_charged})");
            self.note(&self.counters.bad_retry_count, text);
        }
    }
}

fn partition_name(p: usize) -> String {
    format!("p{p:02}")
}

async fn producer(api: Api, model: Arc<Model>, me: usize) {
    let mut rng = StdRng::from_entropy();
    let owned: Vec<usize> = (0..PARTITIONS).filter(|p| p % PRODUCERS == me).collect();
    let mut next: HashMap<usize, u64> = owned.iter().map(|&p| (p, 0)).collect();
    while !model.stop_producing.load(SeqCst) {
        let mut items = vec![];
        let mut counts: HashMap<usize, u64> = HashMap::new();
        for _ in 0..rng.gen_range(1..=3) {
            let p = owned[rng.gen_range(0..owned.len())];
            for _ in 0..rng.gen_range(1..=4) {
                let s = next[&p] + counts.get(&p).copied().unwrap_or(0);
                items.push(json!({"queue": QUEUE, "partition": partition_name(p),
                                  "transactionId": format!("p{p}-s{s}"), "payload": {"p": p, "s": s}}));
                *counts.entry(p).or_default() += 1;
            }
        }
        // Retried with the same transactionIds until acknowledged: dedup keeps it exactly-once.
        loop {
            let r = api.push(Value::Array(items.clone())).await;
            if r.status == 201 {
                let ok = r.body.as_array().is_some_and(|a| {
                    a.iter()
                        .all(|e| e["status"] == "queued" || e["status"] == "duplicate")
                });
                assert!(ok, "push entries: {r:?}");
                break;
            }
            model.note(
                &model.counters.anomalies,
                format!("push answered {}: {}", r.status, r.text),
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (p, n) in counts {
            *next.get_mut(&p).unwrap() += n;
            model.pushed[p].store(next[&p], SeqCst);
            model.counters.pushed.fetch_add(n, SeqCst);
        }
    }
}

/// One partition's part of a delivery, in delivery order.
struct Run {
    partition: usize,
    seqs: Vec<u64>,
    messages: Vec<Value>,
}

fn runs_of(r: &crate::support::Reply) -> Vec<Run> {
    let mut runs: Vec<Run> = vec![];
    for m in r.messages() {
        let p = m["data"]["p"].as_u64().expect("payload p") as usize;
        assert_eq!(
            m["partition"],
            partition_name(p),
            "message in the wrong partition: {m}"
        );
        let s = m["data"]["s"].as_u64().expect("payload s");
        match runs.last_mut() {
            Some(run) if run.partition == p => {
                run.seqs.push(s);
                run.messages.push(m);
            }
            _ => runs.push(Run {
                partition: p,
                seqs: vec![s],
                messages: vec![m],
            }),
        }
    }
    runs
}

async fn consumer(api: Api, model: Arc<Model>, group: usize) {
    let mut rng = StdRng::from_entropy();
    let group_query = GROUPS[group]
        .map(|g| format!("&consumerGroup={g}"))
        .unwrap_or_default();
    let query = format!("batch=10&partitions=3&wait=true&timeout=300{group_query}");
    while !model.stop_consuming.load(SeqCst) {
        let r = api.pop(QUEUE, &query).await;
        if r.status == 204 {
            continue;
        }
        if r.status != 200 {
            model.note(
                &model.counters.anomalies,
                format!("pop answered {}: {}", r.status, r.text),
            );
            continue;
        }
        let runs = runs_of(&r);
        let mut order: Vec<usize> = runs.iter().map(|run| run.partition).collect();
        order.sort_unstable();
        if order.windows(2).any(|w| w[0] == w[1]) {
            model.note(
                &model.counters.out_of_order,
                format!("partition split in one pop: {order:?}"),
            );
            continue;
        }
        // Lanes locked in partition order (no deadlock) and held until the ack is answered, so a
        // redelivery elsewhere is checked only after this consumer has recorded its outcome.
        let mut guards: HashMap<usize, OwnedMutexGuard<Lane>> = HashMap::new();
        for &p in &order {
            guards.insert(p, model.lane(group, p).lock_owned().await);
        }
        for run in &runs {
            let lane = guards.get_mut(&run.partition).unwrap();
            model.check_delivery(lane, group, run.partition, run);
            model.counters.delivered[group].fetch_add(run.seqs.len() as u64, SeqCst);
        }
        if rng.gen_bool(CRASH_P) {
            model.counters.crashes.fetch_add(1, SeqCst);
            for run in &runs {
                release(guards.get_mut(&run.partition).unwrap(), &run.seqs);
            }
            continue;
        }
        settle(
            &api,
            &model,
            &mut rng,
            group,
            &r.body["leaseId"],
            &runs,
            &mut guards,
        )
        .await;
    }
}

fn release(lane: &mut Lane, seqs: &[u64]) {
    lane.charged |= !seqs.is_empty();
    for &s in seqs {
        *lane.released.entry(s).or_default() += 1;
    }
}

/// Acks the runs (completed prefixes, some `failed`, some abandoned tails) and records outcomes.
async fn settle(
    api: &Api,
    model: &Model,
    rng: &mut StdRng,
    group: usize,
    lease: &Value,
    runs: &[Run],
    guards: &mut HashMap<usize, OwnedMutexGuard<Lane>>,
) {
    let mut acks = vec![];
    let mut plan = vec![]; // (run index, completed count sent, failed sent)
    for (i, run) in runs.iter().enumerate() {
        let roll: f64 = rng.gen();
        let n = run.seqs.len();
        let (completed, failed) = if roll < FAIL_P {
            (rng.gen_range(0..n), true)
        } else if roll < FAIL_P + ABANDON_P {
            model.counters.abandoned.fetch_add(1, SeqCst);
            (rng.gen_range(0..n), false)
        } else {
            (n, false)
        };
        for (j, m) in run
            .messages
            .iter()
            .enumerate()
            .take(completed + usize::from(failed))
        {
            let status = if j < completed { "completed" } else { "failed" };
            acks.push(
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                             "leaseId": lease, "status": status, "error": "checker"}),
            );
        }
        plan.push((i, completed, failed));
    }
    let mut body = json!({ "acknowledgments": acks });
    if let Some(g) = GROUPS[group] {
        body["consumerGroup"] = json!(g);
    }
    let r = api.ack_batch(body).await;
    if r.status != 200 {
        model.note(
            &model.counters.anomalies,
            format!("ack/batch answered {}: {}", r.status, r.text),
        );
    }
    let results = r.body.as_array().cloned().unwrap_or_default();
    let mut at = 0;
    for (i, completed, failed) in plan {
        let run = &runs[i];
        let lane = guards.get_mut(&run.partition).unwrap();
        let mut done = 0;
        for j in 0..completed + usize::from(failed) {
            let res = results.get(at + j).cloned().unwrap_or(Value::Null);
            let ok = res["success"] == true;
            if ok && j < completed && done == j {
                done += 1;
            } else if ok && j == completed {
                model.counters.failed_acks.fetch_add(1, SeqCst);
            } else if !ok && res["code"] != "lease_expired" {
                model.note(&model.counters.anomalies, format!("ack result {res}"));
            }
        }
        at += completed + usize::from(failed);
        model.counters.acked.fetch_add(done as u64, SeqCst);
        if done > 0 {
            lane.head = lane.head.max(run.seqs[done - 1] + 1);
        }
        release(lane, &run.seqs[done..]);
    }
}

async fn all_settled(model: &Model) -> bool {
    for g in 0..GROUPS.len() {
        for p in 0..PARTITIONS {
            if model.lane(g, p).lock().await.head < model.pushed[p].load(SeqCst) {
                return false;
            }
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checker_finds_no_loss_no_reordering_and_only_explained_duplicates() {
    check(|c| c.lease_sweep_interval_ms = 100).await;
}

/// The same with asynchronous ack commits and sessions that make their plans again all the
/// time (`ACK_COMMIT_ASYNC`, `DB_PLANS_REFRESH_MS`): neither changes what is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_ack_commits_and_plan_refreshes_keep_every_guarantee() {
    check(|c| {
        c.lease_sweep_interval_ms = 100;
        c.ack_commit_async = true;
        c.db_plans_refresh_ms = 20;
    })
    .await;
}

async fn check(configure: impl FnOnce(&mut regina_broker::Config)) {
    let (_b, api) = start_with(configure).await;
    api.configure(QUEUE, json!({"leaseTime": 1, "retryLimit": 10000}))
        .await;
    let model = Arc::new(Model {
        lanes: (0..GROUPS.len() * PARTITIONS)
            .map(|_| Arc::new(Mutex::new(Lane::default())))
            .collect(),
        pushed: (0..PARTITIONS).map(|_| AtomicU64::new(0)).collect(),
        counters: Counters::default(),
        notes: StdMutex::new(vec![]),
        stop_producing: AtomicBool::new(false),
        stop_consuming: AtomicBool::new(false),
    });
    let client = || api.with_own_pool();
    let started = Instant::now();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|i| tokio::spawn(producer(client(), model.clone(), i)))
        .collect();
    let mut consumers = vec![];
    for g in 0..GROUPS.len() {
        for _ in 0..CONSUMERS_PER_GROUP {
            consumers.push(tokio::spawn(consumer(client(), model.clone(), g)));
        }
    }
    tokio::time::sleep(PRODUCE_FOR).await;
    model.stop_producing.store(true, SeqCst);
    for p in producers {
        p.await.expect("producer panicked");
    }
    let drain_deadline = Instant::now() + regina_testkit::DEADLINE;
    while !all_settled(&model).await && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    model.stop_consuming.store(true, SeqCst);
    for c in consumers {
        c.await.expect("consumer panicked");
    }
    let mut lost = 0;
    for (g, name) in GROUPS.iter().enumerate() {
        for p in 0..PARTITIONS {
            let head = model.lane(g, p).lock().await.head;
            lost += model.pushed[p].load(SeqCst).saturating_sub(head);
        }
        // Nothing beyond what was pushed is left for the group.
        let q = name
            .map(|g| format!("&consumerGroup={g}"))
            .unwrap_or_default();
        let extra = api
            .pop(QUEUE, &format!("batch=1000&partitions=40{q}"))
            .await;
        assert_eq!(
            extra.status, 204,
            "group {g} has messages after the drain: {extra:?}"
        );
    }
    // retryLimit is far away: nothing may have been dead-lettered.
    let dlq = api.dlq(&format!("queue={QUEUE}")).await.body["total"].clone();
    let c = &model.counters;
    let load = |a: &AtomicU64| a.load(SeqCst);
    println!(
        "checker: pushed {}, acked {}, delivered g1={} g2={} queue-mode={}, redelivered {} \
         (failed acks {}, crashed pops {}, abandoned tails {}), lost {lost}, out-of-order {}, \
         unexplained duplicates {}, bad retryCount {}, anomalies {}, dlq {dlq}, in {:.1?}",
        load(&c.pushed),
        load(&c.acked),
        load(&c.delivered[0]),
        load(&c.delivered[1]),
        load(&c.delivered[2]),
        load(&c.redelivered),
        load(&c.failed_acks),
        load(&c.crashes),
        load(&c.abandoned),
        load(&c.out_of_order),
        load(&c.unexplained),
        load(&c.bad_retry_count),
        load(&c.anomalies),
        started.elapsed(),
    );
    let notes = model.notes.lock().unwrap().clone();
    assert!(
        load(&c.pushed) > 0 && load(&c.failed_acks) > 0 && load(&c.crashes) > 0,
        "no stress"
    );
    assert_eq!(
        lost, 0,
        "acknowledged pushes not completed by every group; notes: {notes:#?}"
    );
    assert_eq!(load(&c.out_of_order), 0, "order violations: {notes:#?}");
    assert_eq!(
        load(&c.unexplained),
        0,
        "unexplained duplicates: {notes:#?}"
    );
    assert_eq!(
        load(&c.bad_retry_count),
        0,
        "retryCount violations: {notes:#?}"
    );
    assert_eq!(load(&c.anomalies), 0, "unexpected answers: {notes:#?}");
    assert_eq!(dlq, 0, "nothing reaches the DLQ below retryLimit");
}
