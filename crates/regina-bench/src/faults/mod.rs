//! Fault runs: the broker under `kill -9`, a database outage, overload, two instances on one
//! database, and hostile input. Each run gets its own PostgreSQL cluster and brokers, ends with a
//! delivery check, and prints one summary line; the run fails on any loss, skip or violation.

mod checker;
mod env;
mod hostile;
mod load;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use rand::Rng as _;
use serde_json::{json, Value};
use tokio::time::Instant;

use self::checker::{FaultLedger, Verdict};
use self::env::{Broker, Database};
use self::load::{Counters, Workload};
use crate::target::HttpConn;

/// The fault runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Fault {
    /// `kill -9` the broker again and again during mixed push/pop/ack load with two groups.
    Crash,
    /// Stop PostgreSQL mid-load for several seconds, then start it again.
    Outage,
    /// Producers above the consume rate, then the backlog drains.
    Overload,
    /// Producers and consumers spread over two brokers on one database; cross-instance wake-ups.
    TwoBrokers,
    /// Malformed, oversized, mistyped and forged requests; stored data must survive them.
    Hostile,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Crash => "crash",
            Fault::Outage => "outage",
            Fault::Overload => "overload",
            Fault::TwoBrokers => "two-brokers",
            Fault::Hostile => "hostile",
        }
    }
}

/// Settings of a fault invocation.
#[derive(Clone, Debug)]
pub struct FaultOptions {
    /// Seconds of load (and of hostile probing) per run.
    pub seconds: f64,
    /// The `regina` binary.
    pub regina_bin: PathBuf,
    /// Seed of the hostile generator.
    pub seed: u64,
    /// Largest broker RSS the overload run accepts, MiB.
    pub rss_max_mib: u64,
    /// Where the runs keep their clusters and buffers (deleted afterwards).
    pub work_dir: PathBuf,
}

/// The outcome of one run.
struct Summary {
    verdict: Verdict,
    pushed: u64,
    notes: Vec<String>,
    failures: Vec<String>,
}

impl Summary {
    fn line(&self, name: &str) -> String {
        let v = &self.verdict;
        let per_group = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(g, n)| format!("{g}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        let mut line = format!(
            "fault {name}: pushed {}, acknowledged {}, delivered {}, redelivered {}, lost {}, \
             out-of-order {}, redelivered-after-ack {}",
            self.pushed,
            v.acknowledged,
            per_group(&v.delivered),
            per_group(&v.redelivered),
            v.lost,
            v.out_of_order,
            v.redelivered_after_ack
        );
        for note in &self.notes {
            line.push_str("; ");
            line.push_str(note);
        }
        line.push_str(" — ");
        line.push_str(verdict);
        line
    }

    fn passed(&self) -> bool {
        self.verdict.passed() && self.failures.is_empty()
    }
}

/// Runs `faults` in order; prints a summary line per run (and the failures); returns whether all
/// passed.
///
/// # Errors
/// Only for problems of the harness itself (the work directory cannot be made).
pub async fn run(faults: &[Fault], options: &FaultOptions) -> anyhow::Result<bool> {
    let mut passed = true;
    for &fault in faults {
        let dir = options
            .work_dir
            .join(format!("{}-{}", fault.name(), std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let started = Instant::now();
        let outcome = run_one(fault, options, &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
        match outcome {
            Ok(summary) => {
                println!(
                    "{} ({:.0} s)",
                    summary.line(fault.name()),
                    started.elapsed().as_secs_f64()
                );
                for failure in &summary.failures {
                    println!("  - {failure}");
                }
                passed &= summary.passed();
            }
            Err(error) => {
                println!("fault {}: ERROR {error:#} — FAIL", fault.name());
                passed = false;
            }
        }
    }
    Ok(passed)
}

async fn run_one(
    fault: Fault,
    options: &FaultOptions,
    dir: &std::path::Path,
) -> anyhow::Result<Summary> {
    let mut db = Database::start(dir).await?;
    let result = match fault {
        Fault::Hostile => hostile_run(options, &db, dir).await,
        _ => mixed_run(fault, options, &mut db, dir).await,
    };
    db.remove();
    result
}

/// The mixed-load runs: the same producers, consumers and checker; what differs is the fault.
async fn mixed_run(
    fault: Fault,
    options: &FaultOptions,
    db: &mut Database,
    dir: &std::path::Path,
) -> anyhow::Result<Summary> {
    let instances = if fault == Fault::TwoBrokers { 2 } else { 1 };
    let extra: &[(&str, &str)] = match fault {
        // Pool acquisition gives up quickly, so pushes fail over to the buffer within the run.
        Fault::Outage => &[
            ("DB_CONNECTION_TIMEOUT", "500"),
            ("FILE_BUFFER_FLUSH_MS", "100"),
        ],
        // No periodic re-check of parked pops: only a notification can answer one before its
        // timeout, so the wake-up trials test the cross-instance notification itself.
        Fault::TwoBrokers => &[("LONGPOLL_RECHECK_MS", "0")],
        _ => &[],
    };
    let mut brokers = Vec::new();
    for _ in 0..instances {
        brokers.push(Broker::start(&options.regina_bin, &db.url(), dir, extra).await?);
    }
    let urls: Vec<String> = brokers.iter().map(Broker::url).collect();
    let mut notes = Vec::new();
    let mut failures = Vec::new();
    if fault == Fault::TwoBrokers {
        cross_instance_wake(&urls[0], &urls[1], &mut notes, &mut failures).await?;
    }
    let workload = workload_for(fault);
    load::configure(&urls[0], &workload.queue, 2).await?;
    let ledger = Arc::new(FaultLedger::default());
    let counters = Arc::new(Counters::default());
    let rss = RssSampler::start(brokers.iter().filter_map(Broker::pid).collect());
    let mut running = load::start(&workload, &urls, &ledger, &counters);
    let load_time = Duration::from_secs_f64(options.seconds);
    apply_fault(fault, load_time, &mut brokers, db, &ledger, &mut notes).await?;
    running.stop_producers().await;
    let drained = drain(&ledger, &workload.groups, DRAIN_STALL).await;
    running.stop_consumers().await;
    let peak_rss = rss.stop().await;
    let verdict = ledger.verdict(&workload.groups);
    judge(fault, options, &verdict, &counters, peak_rss, &mut failures);
    if fault == Fault::Outage {
        notes.push(format!("buffered {}", verdict.buffered));
    }
    if let Some(seconds) = drained {
        notes.push(format!("drained in {seconds:.1} s"));
    } else {
        failures.push(format!(
            "the backlog stopped draining: nothing new was delivered for {} s",
            DRAIN_STALL.as_secs()
        ));
    }
    notes.push(format!(
        "push errors {}, pop errors {}, ack errors {}",
        counters.push_errors.load(Ordering::Relaxed),
        counters.pop_errors.load(Ordering::Relaxed),
        counters.ack_errors.load(Ordering::Relaxed),
    ));
    // A killed broker's successor has another pid: the sample covers only unkilled runs.
    if fault != Fault::Crash {
        notes.push(format!("peak broker RSS {:.1} MB", peak_rss as f64 / 1e6));
    }
    // The shutdown grace period (10 s by default) bounds the exit; the wait for it is generous.
    for mut broker in brokers {
        if !broker.terminate(WAIT_MAX).await? {
            failures.push(format!(
                "a broker did not exit cleanly within {WAIT_MAX:?} of SIGTERM"
            ));
        }
    }
    Ok(Summary {
        pushed: counters.items_sent.load(Ordering::Relaxed),
        verdict,
        notes,
        failures,
    })
}

fn workload_for(fault: Fault) -> Workload {
    let base = Workload {
        queue: format!("fault-{}", fault.name()),
        lanes: 40,
        producers: 8,
        items_per_push: 3,
        push_pause: Duration::from_millis(10),
        groups: vec!["g1".to_owned(), "g2".to_owned()],
        consumers_per_group: 4,
        batch: 10,
        handler_delay: Duration::ZERO,
    };
    match fault {
        // Producers offer more than one slow consumer per group takes while they run.
        Fault::Overload => Workload {
            items_per_push: 10,
            push_pause: Duration::from_millis(5),
            consumers_per_group: 1,
            batch: 20,
            handler_delay: Duration::from_millis(50),
            ..base
        },
        _ => base,
    }
}

/// Longest PostgreSQL outage: the outage lasts until a push was buffered, at most this long.
const OUTAGE_MAX: Duration = Duration::from_secs(60);

async fn apply_fault(
    fault: Fault,
    load_time: Duration,
    brokers: &mut [Broker],
    db: &mut Database,
    ledger: &FaultLedger,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + load_time;
    match fault {
        Fault::Crash => {
            while Instant::now() + Duration::from_millis(1_500) < deadline {
                let pause = rand::thread_rng().gen_range(1_000..2_500);
                tokio::time::sleep(Duration::from_millis(pause)).await;
                brokers[0].kill().await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
                brokers[0].restart().await?;
            }
            notes.push(format!("broker killed {} times", brokers[0].kills));
        }
        Fault::Outage => {
            tokio::time::sleep(load_time / 3).await;
            let outage = (load_time / 3).max(Duration::from_secs(3));
            let before = ledger.buffered();
            db.stop().await?;
            let down = Instant::now();
            tokio::time::sleep(outage).await;
            // The database stays down until the broker has buffered a push (producers push
            // all along), however slowly the machine gets there; the verdict checks it did.
            while ledger.buffered() == before && down.elapsed() < OUTAGE_MAX {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            db.restart().await?;
            notes.push(format!(
                "PostgreSQL down for {:.1} s",
                down.elapsed().as_secs_f64()
            ));
        }
        _ => {}
    }
    tokio::time::sleep_until(deadline).await;
    Ok(())
}

/// How long the drain after the load may go without a single new delivery before the run fails.
/// The drain itself has no deadline: the backlog is finite once the producers stop, so a drain
/// that keeps delivering ends, however slow the machine (a debug build drains an overload run's
/// backlog in minutes).
const DRAIN_STALL: Duration = Duration::from_secs(60);

/// Waits until every group has everything; returns the seconds it took, `None` when no new
/// message was delivered for `stall`.
async fn drain(ledger: &FaultLedger, groups: &[String], stall: Duration) -> Option<f64> {
    let started = Instant::now();
    let mut progress = (ledger.distinct_deliveries(), Instant::now());
    loop {
        if ledger.complete(groups) {
            return Some(started.elapsed().as_secs_f64());
        }
        let delivered = ledger.distinct_deliveries();
        if delivered != progress.0 {
            progress = (delivered, Instant::now());
        } else if progress.1.elapsed() >= stall {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn judge(
    fault: Fault,
    options: &FaultOptions,
    verdict: &Verdict,
    counters: &Counters,
    peak_rss: u64,
    failures: &mut Vec<String>,
) {
    if verdict.acknowledged == 0 {
        failures.push("no push was acknowledged".to_owned());
    }
    match fault {
        Fault::Outage if verdict.buffered == 0 => {
            failures.push("no push was buffered while PostgreSQL was down".to_owned());
        }
        Fault::Overload => {
            let errors = counters.push_errors.load(Ordering::Relaxed);
            if errors > 0 {
                failures.push(format!("{errors} push errors under overload"));
            }
            if peak_rss > options.rss_max_mib * 1024 * 1024 {
                failures.push(format!(
                    "broker RSS peaked at {:.1} MiB (limit {} MiB)",
                    peak_rss as f64 / 1048576.0,
                    options.rss_max_mib
                ));
            }
        }
        _ => {}
    }
}

/// A parked pop on instance `a` is answered with the message pushed to instance `b`: with the
/// periodic re-check off, only the cross-instance notification (LISTEN/NOTIFY) can wake it
/// before its timeout. Wake-up latencies are reported, not judged (they depend on the machine).
async fn cross_instance_wake(
    a: &str,
    b: &str,
    notes: &mut Vec<String>,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    const TRIALS: usize = 20;
    let mut latencies = Vec::with_capacity(TRIALS);
    for trial in 0..TRIALS {
        let queue = format!("wake-{trial}");
        load::configure(a, &queue, 30).await?;
        let path = format!(
            "/api/v1/pop/queue/{queue}?wait=true&timeout={WAKE_POP_TIMEOUT_MS}&autoAck=true"
        );
        let a_url = a.to_owned();
        let parked = tokio::spawn(async move {
            let answer = HttpConn::new(&a_url).send("GET", &path, None).await;
            (answer, Instant::now())
        });
        // Push only once the pop is known to be parked: a push before would be found by the
        // pop's first attempt, and prove nothing about the notification.
        parked_wait(a).await?;
        let body = json!({"items": [{"queue": queue, "payload": trial}]});
        let sent = Instant::now();
        let (status, _) = HttpConn::new(b)
            .send("POST", "/api/v1/push", Some(body.to_string().into_bytes()))
            .await?;
        anyhow::ensure!(status == 201, "push to the second broker answered {status}");
        let (answer, woke) = parked.await?;
        let (status, text) = answer?;
        let data: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
        if status != 200 || data["messages"][0]["data"] != json!(trial) {
            failures.push(format!(
                "wake trial {trial}: the parked pop answered {status} without the message pushed to the other instance"
            ));
            continue;
        }
        latencies.push(woke.saturating_duration_since(sent));
    }
    latencies.sort();
    if let (Some(median), Some(max)) = (latencies.get(latencies.len() / 2), latencies.last()) {
        notes.push(format!(
            "cross-instance wake p50 {:.1} ms, max {:.1} ms",
            median.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

/// Timeout of a wake-up trial's parked pop, ms: far beyond any notification delay, so a pop that
/// times out (204) was not woken.
const WAKE_POP_TIMEOUT_MS: u64 = 30_000;

/// How long a wait for something that happens by itself may last before the run fails: a guard
/// against a broken broker, not a claim about speed.
const WAIT_MAX: Duration = Duration::from_secs(60);

/// Waits until the broker at `base` reports a parked pop (`GET /metrics`, `longPoll.parked`:
/// past its first attempt, which an outage would still answer with `503`).
async fn parked_wait(base: &str) -> anyhow::Result<()> {
    let mut metrics = HttpConn::new(base);
    let started = Instant::now();
    loop {
        let (status, body) = metrics.send("GET", "/metrics", None).await?;
        let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status == 200 && parsed["longPoll"]["parked"].as_u64().unwrap_or(0) >= 1 {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < WAIT_MAX,
            "no parked pop on {base} after {WAIT_MAX:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Samples the brokers' RSS every 100 ms; `stop` returns the peak.
struct RssSampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<u64>,
}

impl RssSampler {
    fn start(pids: Vec<u32>) -> RssSampler {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut peak = 0;
            loop {
                for &pid in &pids {
                    peak = peak.max(regina_bench::telemetry::procfs::read_rss(pid).unwrap_or(0));
                }
                tokio::select! {
                    _ = stopped.changed() => return peak,
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        });
        RssSampler { stop, task }
    }

    async fn stop(self) -> u64 {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or(0)
    }
}

/// Hostile input against one broker holding sentinel messages that must survive it.
async fn hostile_run(
    options: &FaultOptions,
    db: &Database,
    dir: &std::path::Path,
) -> anyhow::Result<Summary> {
    let body_max = hostile::BODY_BYTES_MAX.to_string();
    let mut broker = Broker::start(
        &options.regina_bin,
        &db.url(),
        dir,
        &[("BODY_BYTES_MAX", &body_max)],
    )
    .await?;
    let url = broker.url();
    let sentinel = Sentinel::push(&url).await?;
    let mut outcome = hostile::Outcome::default();
    hostile::send_all(&url, &hostile::corpus(sentinel.known()), &mut outcome).await;
    let generated = (options.seconds * 100.0).max(200.0) as usize;
    hostile::send_all(
        &url,
        &hostile::generated(options.seed, generated),
        &mut outcome,
    )
    .await;
    let mut failures = outcome.violations.clone();
    let (status, _) = HttpConn::new(&url).send("GET", "/health", None).await?;
    if status != 200 {
        failures.push(format!("/health answered {status} after the probes"));
    }
    let ledger = FaultLedger::default();
    sentinel.verify(&url, &ledger).await?;
    if !broker.terminate(Duration::from_secs(15)).await? {
        failures.push("the broker did not exit cleanly after the probes".to_owned());
    }
    let groups = ["__QUEUE_MODE__".to_owned(), "verify".to_owned()];
    Ok(Summary {
        pushed: sentinel.count(),
        verdict: ledger.verdict(&groups),
        notes: vec![format!(
            "probes {} (2xx {}, 4xx {}), seed {}",
            outcome.probes, outcome.ok, outcome.rejected, options.seed
        )],
        failures,
    })
}

/// Messages stored before the hostile probes, read back afterwards.
struct Sentinel {
    queue: String,
    /// Per lane (partition `lane-<n>`): the partition id and the pushed payloads.
    lanes: Vec<(String, Vec<Value>)>,
}

const SENTINEL_LANES: u32 = 5;
const SENTINEL_PER_LANE: u64 = 20;

impl Sentinel {
    async fn push(url: &str) -> anyhow::Result<Sentinel> {
        let queue = format!("sentinel-{}", uuid::Uuid::new_v4().simple());
        let mut lanes = Vec::new();
        let mut conn = HttpConn::new(url);
        for lane in 0..SENTINEL_LANES {
            let payloads: Vec<Value> = (0..SENTINEL_PER_LANE)
                .map(|seq| json!({"lane": lane, "seq": seq, "text": "é\u{1}\"\\👍", "n": [1.5, -2, null]}))
                .collect();
            let items: Vec<Value> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    json!({"queue": queue, "partition": format!("lane-{lane}"),
                                     "transactionId": format!("s-{lane}-{i}"), "payload": p})
                })
                .collect();
            let (status, text) = conn
                .send(
                    "POST",
                    "/api/v1/push",
                    Some(json!({"items": items}).to_string().into_bytes()),
                )
                .await?;
            anyhow::ensure!(status == 201, "sentinel push answered {status}");
            let answer: Value = serde_json::from_slice(&text)?;
            let partition_id = answer[0]["partition_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            lanes.push((partition_id, payloads));
        }
        Ok(Sentinel { queue, lanes })
    }

    fn known(&self) -> (&str, &str) {
        (self.lanes[0].0.as_str(), "s-0-0")
    }

    fn count(&self) -> u64 {
        u64::from(SENTINEL_LANES) * SENTINEL_PER_LANE
    }

    /// Reads every lane in queue mode and with a fresh group; records what came back (payload
    /// equality is part of the check: a changed payload counts as lost).
    async fn verify(&self, url: &str, ledger: &FaultLedger) -> anyhow::Result<()> {
        let mut conn = HttpConn::new(url);
        for (lane, (_, payloads)) in self.lanes.iter().enumerate() {
            let lane = lane as u32;
            ledger.acknowledged(lane, 0..payloads.len() as u64, 0);
            for group in ["__QUEUE_MODE__", "verify"] {
                let path = format!(
                    "/api/v1/pop/queue/{}/partition/lane-{lane}?batch=1000&autoAck=true&consumerGroup={group}",
                    self.queue
                );
                let (status, text) = conn.send("GET", &path, None).await?;
                let body: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
                let empty = Vec::new();
                let messages = if status == 200 {
                    body["messages"].as_array().unwrap_or(&empty)
                } else {
                    &empty
                };
                let seen: Vec<(u32, u64)> = messages
                    .iter()
                    .filter(|m| {
                        payloads.get(m["data"]["seq"].as_u64().unwrap_or(u64::MAX) as usize)
                            == Some(&m["data"])
                    })
                    .map(|m| (lane, m["data"]["seq"].as_u64().unwrap_or(0)))
                    .collect();
                ledger.delivered(group, &seen);
            }
        }
        Ok(())
    }
}
