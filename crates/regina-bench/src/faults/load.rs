//! The mixed load of a fault run: producers that own lanes and retry each push with the same
//! transactionIds until it is acknowledged, and consumers in several groups that pop with
//! long-polls, record what they see and acknowledge explicitly. Transport errors and `5xx`
//! answers are retried after a pause: the broker may be dead, restarting or without its database.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::checker::FaultLedger;
use crate::target::HttpConn;

/// Pause before retrying a failed request.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Long-poll deadline of each consumer pop, milliseconds.
const POP_WAIT_MS: u64 = 1_000;

/// The shape of the load.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Queue every lane lives in.
    pub queue: String,
    /// Lanes (partitions `lane-<n>`).
    pub lanes: u32,
    /// Producer tasks; producer `p` owns the lanes `l` with `l % producers == p`.
    pub producers: u32,
    /// Consecutive messages of one lane per push request.
    pub items_per_push: u32,
    /// Pause after each acknowledged push, per producer.
    pub push_pause: Duration,
    /// Consumer groups.
    pub groups: Vec<String>,
    /// Consumer tasks per group.
    pub consumers_per_group: u32,
    /// Pop `batch`.
    pub batch: u32,
    /// Handler time per delivered batch while producers run (none while draining).
    pub handler_delay: Duration,
}

/// Request outcomes, for the summary.
#[derive(Default)]
pub struct Counters {
    /// Distinct messages sent at least once.
    pub items_sent: AtomicU64,
    /// Push requests answered `201`.
    pub pushes: AtomicU64,
    /// Push attempts that failed (transport error or a non-`201` answer).
    pub push_errors: AtomicU64,
    /// Pop attempts that failed.
    pub pop_errors: AtomicU64,
    /// Ack requests that failed as a whole.
    pub ack_errors: AtomicU64,
}

/// A started load; stop the producers first, then the consumers.
pub struct Running {
    producing: Arc<AtomicBool>,
    consuming: Arc<AtomicBool>,
    producers: Vec<JoinHandle<()>>,
    consumers: Vec<JoinHandle<()>>,
}

impl Running {
    /// Stops the producers (each abandons its unacknowledged request) and waits for them.
    pub async fn stop_producers(&mut self) {
        self.producing.store(false, Ordering::Relaxed);
        for handle in self.producers.drain(..) {
            let _ = handle.await;
        }
    }

    /// Stops the consumers and waits for them.
    pub async fn stop_consumers(&mut self) {
        self.consuming.store(false, Ordering::Relaxed);
        for handle in self.consumers.drain(..) {
            let _ = handle.await;
        }
    }
}

/// Configures the queue (short leases, so crashed consumers' messages come back soon; a retry
/// limit no crash sequence reaches) through the first URL.
///
/// # Errors
/// The broker refuses or cannot be reached.
pub async fn configure(url: &str, queue: &str, lease_seconds: u32) -> anyhow::Result<()> {
    let body =
        json!({"queue": queue, "options": {"leaseTime": lease_seconds, "retryLimit": 10_000}});
    let (status, text) = HttpConn::new(url)
        .send(
            "POST",
            "/api/v1/configure",
            Some(body.to_string().into_bytes()),
        )
        .await?;
    if status >= 300 {
        bail!("configure: {status} {}", String::from_utf8_lossy(&text));
    }
    Ok(())
}

/// Starts producers and consumers; task `i` of each kind talks to `urls[i % urls.len()]`.
pub fn start(
    workload: &Workload,
    urls: &[String],
    ledger: &Arc<FaultLedger>,
    counters: &Arc<Counters>,
) -> Running {
    let producing = Arc::new(AtomicBool::new(true));
    let consuming = Arc::new(AtomicBool::new(true));
    let producers = (0..workload.producers)
        .map(|p| {
            let url = urls[p as usize % urls.len()].clone();
            let (w, ledger, counters, producing) = (
                workload.clone(),
                ledger.clone(),
                counters.clone(),
                producing.clone(),
            );
            tokio::spawn(async move { produce(p, &w, &url, &ledger, &counters, &producing).await })
        })
        .collect();
    let mut consumers = Vec::new();
    for (g, group) in workload.groups.iter().enumerate() {
        for c in 0..workload.consumers_per_group {
            let url = urls[(g + c as usize) % urls.len()].clone();
            let consumer = Consumer {
                url,
                group: group.clone(),
                workload: workload.clone(),
                ledger: ledger.clone(),
                counters: counters.clone(),
                producing: producing.clone(),
                consuming: consuming.clone(),
            };
            consumers.push(tokio::spawn(async move { consumer.run().await }));
        }
    }
    Running {
        producing,
        consuming,
        producers,
        consumers,
    }
}

async fn produce(
    p: u32,
    w: &Workload,
    url: &str,
    ledger: &FaultLedger,
    counters: &Counters,
    producing: &AtomicBool,
) {
    let lanes: Vec<u32> = (0..w.lanes).filter(|l| l % w.producers == p).collect();
    if lanes.is_empty() {
        return;
    }
    let mut next = vec![0_u64; lanes.len()];
    let mut conn = HttpConn::new(url);
    for turn in 0.. {
        let i = turn % lanes.len();
        let lane = lanes[i];
        let seqs: Vec<u64> = (next[i]..next[i] + u64::from(w.items_per_push)).collect();
        let body = push_body(&w.queue, lane, &seqs);
        counters
            .items_sent
            .fetch_add(seqs.len() as u64, Ordering::Relaxed);
        loop {
            if !producing.load(Ordering::Relaxed) {
                return;
            }
            match push_once(&mut conn, &body, seqs.len()).await {
                Ok(buffered) => {
                    counters.pushes.fetch_add(1, Ordering::Relaxed);
                    ledger.acknowledged(lane, seqs.iter().copied(), buffered);
                    break;
                }
                Err(_) => {
                    counters.push_errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
        next[i] += u64::from(w.items_per_push);
        tokio::time::sleep(w.push_pause).await;
    }
}

fn push_body(queue: &str, lane: u32, seqs: &[u64]) -> Vec<u8> {
    let items: Vec<Value> = seqs
        .iter()
        .map(|seq| {
            json!({"queue": queue, "partition": format!("lane-{lane}"),
                   "transactionId": format!("{lane}-{seq}"), "payload": {"lane": lane, "seq": seq}})
        })
        .collect();
    json!({ "items": items }).to_string().into_bytes()
}

/// One push attempt; `Ok(buffered items)` when every item was acknowledged.
async fn push_once(conn: &mut HttpConn, body: &[u8], items: usize) -> anyhow::Result<u64> {
    let (status, text) = conn
        .send("POST", "/api/v1/push", Some(body.to_vec()))
        .await?;
    if status != 201 {
        bail!("push: {status} {}", String::from_utf8_lossy(&text));
    }
    let entries: Vec<Value> = serde_json::from_slice(&text).context("push answer")?;
    if entries.len() != items {
        bail!("push answered {} entries for {items} items", entries.len());
    }
    let mut buffered = 0;
    for entry in &entries {
        match entry["status"].as_str() {
            Some("queued" | "duplicate") => {}
            Some("buffered") => buffered += 1,
            other => bail!("push item status {other:?}"),
        }
    }
    Ok(buffered)
}

struct Consumer {
    url: String,
    group: String,
    workload: Workload,
    ledger: Arc<FaultLedger>,
    counters: Arc<Counters>,
    producing: Arc<AtomicBool>,
    consuming: Arc<AtomicBool>,
}

/// A delivered message: where it comes from and how to ack it.
struct Delivered {
    lane: u32,
    seq: u64,
    ack: Value,
}

impl Consumer {
    async fn run(&self) {
        let mut conn = HttpConn::new(&self.url);
        let path = format!(
            "/api/v1/pop/queue/{}?batch={}&consumerGroup={}&wait=true&timeout={POP_WAIT_MS}",
            self.workload.queue, self.workload.batch, self.group
        );
        while self.consuming.load(Ordering::Relaxed) {
            let delivered = match pop_once(&mut conn, &path).await {
                Ok(d) => d,
                Err(_) => {
                    self.counters.pop_errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            };
            if delivered.is_empty() {
                continue;
            }
            let seen: Vec<(u32, u64)> = delivered.iter().map(|d| (d.lane, d.seq)).collect();
            self.ledger.delivered(&self.group, &seen);
            if self.producing.load(Ordering::Relaxed) && !self.workload.handler_delay.is_zero() {
                tokio::time::sleep(self.workload.handler_delay).await;
            }
            match ack_once(&mut conn, &self.group, &delivered).await {
                Ok(confirmed) => self.ledger.acked(&self.group, &confirmed),
                Err(_) => {
                    self.counters.ack_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

async fn pop_once(conn: &mut HttpConn, path: &str) -> anyhow::Result<Vec<Delivered>> {
    let (status, text) = conn.send("GET", path, None).await?;
    match status {
        204 => return Ok(Vec::new()),
        200 => {}
        _ => bail!("pop: {status} {}", String::from_utf8_lossy(&text)),
    }
    let body: Value = serde_json::from_slice(&text).context("pop answer")?;
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .map(|m| {
            let lane = m["data"]["lane"].as_u64().context("message without lane")? as u32;
            let seq = m["data"]["seq"].as_u64().context("message without seq")?;
            let ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                             "leaseId": m["leaseId"], "status": "completed"});
            Ok(Delivered { lane, seq, ack })
        })
        .collect()
}

/// Acks every delivered message; returns those the broker confirmed.
async fn ack_once(
    conn: &mut HttpConn,
    group: &str,
    delivered: &[Delivered],
) -> anyhow::Result<Vec<(u32, u64)>> {
    let acks: Vec<&Value> = delivered.iter().map(|d| &d.ack).collect();
    let body = json!({"acknowledgments": acks, "consumerGroup": group});
    let (status, text) = conn
        .send(
            "POST",
            "/api/v1/ack/batch",
            Some(body.to_string().into_bytes()),
        )
        .await?;
    if status != 200 {
        bail!("ack: {status} {}", String::from_utf8_lossy(&text));
    }
    let results: Vec<Value> = serde_json::from_slice(&text).context("ack answer")?;
    Ok(results
        .iter()
        .filter(|r| r["success"] == true)
        .filter_map(|r| r["index"].as_u64())
        .filter_map(|i| delivered.get(i as usize))
        .map(|d| (d.lane, d.seq))
        .collect())
}
