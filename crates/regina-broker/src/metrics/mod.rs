//! This instance's metrics: one registry for `GET /metrics/prometheus` (http-api.md §3.1), the
//! figures of `GET /metrics`, and the counters the history writer adds to `regina.worker_metrics`
//! and
//! `regina.queue_metrics`.
//!
//! Counting costs the hot paths an atomic add after a sharded-map read: per-queue, per-route and
//! per-operation series are resolved once and kept. Gauges are read when scraped.
//!
//! - `queues`: the bounded `queue` label and each label's counters;
//! - `http`: requests by route template, method and status;
//! - `events`: what the SQL functions report beside their results;
//! - `history`: the periodic write of the counters' deltas;
//! - `process`, `rate`: `/proc` readers and the per-minute rates of `GET /metrics`.

pub(crate) mod cluster;
mod events;
pub(crate) mod history;
mod http;
pub(crate) mod process;
mod queues;
mod rate;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus::core::Collector;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

pub(crate) use http::UNMATCHED;
pub(crate) use queues::{AckStatus, QueueMetrics};
use queues::{QueueFamilies, QueueLabels};
use rate::RateCounter;

/// Prefix of every metric name.
const NAMESPACE: &str = "regina";
/// Request and call durations, seconds (long-polls last up to `POP_TIMEOUT_MS_MAX`).
const DURATION_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];
/// Requests fused into one database call (`BATCH_REQUESTS_MAX` defaults to 1 000).
const BATCH_BUCKETS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];
/// createdAt → first delivery, seconds: from an idle queue's milliseconds to a day of backlog.
const END_TO_END_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
    3600.0, 21600.0, 86400.0,
];
/// The `op` values of the database call families: the engine's batchers, transactions, streams
/// cycles and the failover replay.
pub(crate) const DB_OPS: &[&str] = &[
    "push",
    "pop",
    "ack",
    "lease_extend",
    "transaction",
    "stream_cycle",
    "failover_replay",
];

/// The series of one kind of database call, resolved once.
#[derive(Clone)]
pub(crate) struct DbCallMetrics {
    duration: Histogram,
    requests: Histogram,
    holds: IntCounter,
    errors: IntCounter,
}

impl DbCallMetrics {
    /// Counts one call carrying `requests` requests, which took `elapsed` and failed or not.
    pub(crate) fn call(&self, requests: usize, elapsed: Duration, ok: bool) {
        self.duration.observe(elapsed.as_secs_f64());
        self.requests.observe(requests as f64);
        if !ok {
            self.errors.inc();
        }
    }

    /// Counts one call that waited its hold for company before going out.
    pub(crate) fn held(&self) {
        self.holds.inc();
    }
}

/// The gauges sampled at each scrape.
struct Gauges {
    pool_connections: IntGaugeVec,
    pool_waiting: IntGauge,
    longpoll_waiters: IntGauge,
    http_inflight: IntGauge,
    body_bytes_held: IntGauge,
    buffer_records: IntGauge,
    buffer_bytes: IntGauge,
    maintenance: IntGaugeVec,
    push_announcing: IntGauge,
    announcements_skipped: IntCounter,
    /// The skipped count already added to `announcements_skipped`.
    announcements_skipped_seen: AtomicU64,
}

/// The local state the gauges report, read by the caller at scrape time.
pub(crate) struct GaugeSample {
    /// Pool sessions busy and idle.
    pub(crate) pool_busy: u64,
    pub(crate) pool_idle: u64,
    /// Callers waiting for a pool session.
    pub(crate) pool_waiting: u64,
    /// Parked long-polls.
    pub(crate) longpoll_waiters: u64,
    /// Requests holding an in-flight permit.
    pub(crate) http_inflight: u64,
    /// Bytes of request bodies held (counted against `BODY_BYTES_HELD_MAX`).
    pub(crate) body_bytes_held: u64,
    /// Failover buffer records pending and bytes on disk.
    pub(crate) buffer_records: u64,
    pub(crate) buffer_bytes: u64,
    /// The maintenance switches.
    pub(crate) push_maintenance: bool,
    pub(crate) pop_maintenance: bool,
    /// Whether committed pushes are announced, and announcements skipped so far.
    pub(crate) push_announcing: bool,
    pub(crate) announcements_skipped: u64,
}

/// The metrics of this instance, shared by every task.
pub(crate) struct Metrics {
    registry: Registry,
    http: http::HttpMetrics,
    db_call_duration: HistogramVec,
    batch_requests: HistogramVec,
    batch_holds: IntCounterVec,
    queues: QueueLabels,
    push_rejected: IntCounterVec,
    failover_buffered: IntCounter,
    failover_replayed: IntCounter,
    longpoll_quiet_parks: IntCounter,
    longpoll_push_pops: IntCounter,
    gauges: Gauges,
    /// Failed database calls (history only: not a Prometheus family of the spec).
    db_errors: IntCounter,
    origin: Instant,
    clock_ticks_per_second: u64,
    requests: RateCounter,
    messages_pushed: RateCounter,
}

/// Registers `collector` (the names are fixed and distinct, so registering cannot fail).
fn register<C: Collector + Clone + 'static>(registry: &Registry, collector: C) -> C {
    registry
        .register(Box::new(collector.clone()))
        .expect("metric names are distinct and valid");
    collector
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let family = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    register(registry, family)
}

fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(
        registry,
        HistogramVec::new(opts, labels).expect("valid metric"),
    )
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    register(registry, IntGauge::new(name, help).expect("valid metric"))
}

fn queue_families(registry: &Registry) -> QueueFamilies {
    let per_queue = |name: &str, help: &str| counter_vec(registry, name, help, &["queue"]);
    QueueFamilies {
        pushed: per_queue("messages_pushed_total", "Messages stored by pushes."),
        delivered: per_queue(
            "messages_delivered_total",
            "Messages handed out by pops, redeliveries included.",
        ),
        dead_lettered: per_queue(
            "messages_dead_lettered_total",
            "Messages dead-lettered (by acks, expired leases, or discarded without a DLQ).",
        ),
        expired: per_queue(
            "messages_expired_total",
            "Messages settled unread because their ttl passed.",
        ),
        evicted: per_queue(
            "messages_evicted_total",
            "Messages deleted by maxWaitTimeSeconds eviction.",
        ),
        retention_deleted: per_queue(
            "messages_retention_deleted_total",
            "Messages deleted by retentionSeconds or completedRetentionSeconds.",
        ),
        leases_expired: per_queue(
            "leases_expired_total",
            "Leases that expired before their messages were settled.",
        ),
        acked: counter_vec(
            registry,
            "messages_acked_total",
            "Ack items applied, by status.",
            &["queue", "status"],
        ),
        end_to_end: histogram_vec(
            registry,
            "end_to_end_seconds",
            "Time from a message's createdAt to its first delivery to a consumer group.",
            END_TO_END_BUCKETS,
            &["queue"],
        ),
    }
}

fn gauges(registry: &Registry) -> Gauges {
    let pool_connections = IntGaugeVec::new(
        Opts::new(
            "db_pool_connections",
            "Pool sessions by state (busy, idle).",
        ),
        &["state"],
    )
    .expect("valid metric");
    let maintenance = IntGaugeVec::new(
        Opts::new("maintenance_mode", "1 while a maintenance switch is on."),
        &["kind"],
    )
    .expect("valid metric");
    Gauges {
        pool_connections: register(registry, pool_connections),
        pool_waiting: gauge(
            registry,
            "db_pool_waiting",
            "Callers waiting for a pool session.",
        ),
        longpoll_waiters: gauge(registry, "longpoll_waiters", "Parked long-poll pops."),
        http_inflight: gauge(
            registry,
            "http_inflight_requests",
            "Requests in flight (counted against HTTP_INFLIGHT_MAX).",
        ),
        body_bytes_held: gauge(
            registry,
            "http_body_bytes_held",
            "Bytes of request bodies held (counted against BODY_BYTES_HELD_MAX).",
        ),
        buffer_records: gauge(
            registry,
            "failover_buffer_records",
            "Failover buffer records not yet replayed.",
        ),
        buffer_bytes: gauge(
            registry,
            "failover_buffer_bytes",
            "Failover buffer size on disk.",
        ),
        maintenance: register(registry, maintenance),
        push_announcing: gauge(
            registry,
            "push_announcing",
            "1 while another broker instance listens on the database, so this one announces its committed pushes; 0 while it is alone.",
        ),
        announcements_skipped: counter(
            registry,
            "push_announcements_skipped_total",
            "Push announcements not sent because no other broker instance listened.",
        ),
        announcements_skipped_seen: AtomicU64::new(0),
    }
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    register(registry, IntCounter::new(name, help).expect("valid metric"))
}

fn http_families(registry: &Registry) -> http::HttpMetrics {
    http::HttpMetrics::new(
        counter_vec(
            registry,
            "http_requests_total",
            "HTTP requests answered, by route template, method and status.",
            &["route", "method", "status"],
        ),
        histogram_vec(
            registry,
            "http_request_duration_seconds",
            "Time to answer an HTTP request, long-polls included.",
            DURATION_BUCKETS,
            &["route"],
        ),
    )
}

/// `db_call_duration_seconds{op}`, `batch_requests{op}` and `batch_holds_total{op}`, with a series
/// for every op.
fn db_families(registry: &Registry) -> (HistogramVec, HistogramVec, IntCounterVec) {
    let duration = histogram_vec(
        registry,
        "db_call_duration_seconds",
        "Duration of database calls of the engine, transactions and failover replay.",
        DURATION_BUCKETS,
        &["op"],
    );
    let requests = histogram_vec(
        registry,
        "batch_requests",
        "Requests fused into one database call.",
        BATCH_BUCKETS,
        &["op"],
    );
    let holds = counter_vec(
        registry,
        "batch_holds_total",
        "Database calls that waited BATCH_HOLD_US (pops: POP_HOLD_US) for more requests to fuse \
         with before going out.",
        &["op"],
    );
    for op in DB_OPS {
        duration.with_label_values(&[op]);
        requests.with_label_values(&[op]);
        holds.with_label_values(&[op]);
    }
    (duration, requests, holds)
}

fn register_build_info(registry: &Registry) {
    let build_info = IntGaugeVec::new(
        Opts::new("build_info", "1, labelled with the broker's version."),
        &["version"],
    )
    .expect("valid metric");
    register(registry, build_info)
        .with_label_values(&[env!("CARGO_PKG_VERSION")])
        .set(1);
}

impl Metrics {
    /// Every family registered, counting from zero; `origin` is the instance's start and
    /// `queue_labels_max` is `METRICS_QUEUE_LABELS_MAX`.
    pub(crate) fn new(origin: Instant, queue_labels_max: usize) -> Metrics {
        let registry =
            Registry::new_custom(Some(NAMESPACE.to_owned()), None).expect("valid namespace");
        let (db_call_duration, batch_requests, batch_holds) = db_families(&registry);
        register_build_info(&registry);
        register_process(&registry);
        Metrics {
            http: http_families(&registry),
            db_call_duration,
            batch_requests,
            batch_holds,
            queues: QueueLabels::new(queue_families(&registry), queue_labels_max),
            push_rejected: counter_vec(
                &registry,
                "push_rejected_total",
                "Push items refused in-band, by code (e.g. queue_full).",
                &["queue", "code"],
            ),
            failover_buffered: counter(
                &registry,
                "failover_buffered_total",
                "Push items written to the failover buffer.",
            ),
            failover_replayed: counter(
                &registry,
                "failover_replayed_total",
                "Failover buffer records replayed into the database.",
            ),
            longpoll_quiet_parks: counter(
                &registry,
                "longpoll_quiet_parks_total",
                "Long-poll pop attempts that parked without a database call: their group was known \
                 to have nothing due on the queue (LONGPOLL_QUIET_MS).",
            ),
            longpoll_push_pops: counter(
                &registry,
                "longpoll_push_pops_total",
                "Long-poll pops that ran in the transaction of the push that would have woken them \
                 (LONGPOLL_PUSH_POPS).",
            ),
            gauges: gauges(&registry),
            db_errors: IntCounter::new("db_errors", "history only").expect("valid metric"),
            registry,
            origin,
            clock_ticks_per_second: process::clock_ticks_per_second(),
            requests: RateCounter::default(),
            messages_pushed: RateCounter::default(),
        }
    }

    /// The counters of `queue` (its own label, or `_other` past the cap).
    pub(crate) fn queue(&self, queue: &str) -> Arc<QueueMetrics> {
        self.queues.get(queue)
    }

    /// The series of database calls of kind `op` (one of [`DB_OPS`]).
    pub(crate) fn db_calls(&self, op: &str) -> DbCallMetrics {
        DbCallMetrics {
            duration: self.db_call_duration.with_label_values(&[op]),
            requests: self.batch_requests.with_label_values(&[op]),
            holds: self.batch_holds.with_label_values(&[op]),
            errors: self.db_errors.clone(),
        }
    }

    /// Counts one HTTP request received (`GET /metrics`, the history's `requests`).
    pub(crate) fn http_received(&self) {
        self.requests.add(self.second(), 1);
    }

    /// Counts one answered HTTP request; `route` is its template, or [`UNMATCHED`].
    pub(crate) fn http_answered(
        &self,
        route: &str,
        method: &axum::http::Method,
        status: axum::http::StatusCode,
        elapsed: Duration,
    ) {
        self.http.answered(route, method, status, elapsed);
    }

    /// Counts `count` messages stored in `queue` by a push, a transaction or a replay.
    pub(crate) fn pushed(&self, queue: &str, count: u64) {
        if count > 0 {
            self.queue(queue).pushed.inc_by(count);
            self.messages_pushed.add(self.second(), count);
        }
    }

    /// Counts `count` more messages acked with `status` on `queue` beyond the one an ack item
    /// counts ([`Metrics::ack_events`]): a streams cycle's cumulative ack settles several.
    pub(crate) fn acked_more(&self, queue: &str, status: AckStatus, count: u64) {
        if count > 0 {
            self.queue(queue).acked[status as usize].inc_by(count);
        }
    }

    /// Counts one push item refused in-band with `code`.
    pub(crate) fn push_rejected(&self, queue: &str, code: &str) {
        let label = self.queue(queue);
        self.push_rejected
            .with_label_values(&[&label.label, code])
            .inc();
    }

    /// Counts push items written to the failover buffer.
    pub(crate) fn buffered(&self, count: u64) {
        self.failover_buffered.inc_by(count);
    }

    /// Counts a long-poll attempt answered by what this instance knew (`LONGPOLL_QUIET_MS`).
    pub(crate) fn longpoll_quiet_park(&self) {
        self.longpoll_quiet_parks.inc();
    }

    /// Counts a long-poll pop that a push ran in its transaction (`LONGPOLL_PUSH_POPS`).
    pub(crate) fn longpoll_push_pop(&self) {
        self.longpoll_push_pops.inc();
    }

    /// Counts failover records whose replay committed.
    pub(crate) fn replayed(&self, count: u64) {
        self.failover_replayed.inc_by(count);
    }

    /// Counts one committed transaction for each queue it pushed to or acked on.
    pub(crate) fn transaction_committed<'a>(&self, queues: impl IntoIterator<Item = &'a str>) {
        let mut seen: Vec<&str> = queues.into_iter().collect();
        seen.sort_unstable();
        seen.dedup();
        for queue in seen {
            self.queue(queue)
                .transactions
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The text exposition (format 0.0.4) of every family, the gauges set from `sample`.
    pub(crate) fn render(&self, sample: &GaugeSample) -> String {
        let g = &self.gauges;
        let set =
            |gauge: &IntGauge, value: u64| gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
        set(
            &g.pool_connections.with_label_values(&["busy"]),
            sample.pool_busy,
        );
        set(
            &g.pool_connections.with_label_values(&["idle"]),
            sample.pool_idle,
        );
        set(&g.pool_waiting, sample.pool_waiting);
        set(&g.longpoll_waiters, sample.longpoll_waiters);
        set(&g.http_inflight, sample.http_inflight);
        set(&g.body_bytes_held, sample.body_bytes_held);
        set(&g.buffer_records, sample.buffer_records);
        set(&g.buffer_bytes, sample.buffer_bytes);
        set(
            &g.maintenance.with_label_values(&["push"]),
            u64::from(sample.push_maintenance),
        );
        set(
            &g.maintenance.with_label_values(&["pop"]),
            u64::from(sample.pop_maintenance),
        );
        set(&g.push_announcing, u64::from(sample.push_announcing));
        let seen = g
            .announcements_skipped_seen
            .fetch_max(sample.announcements_skipped, Ordering::Relaxed);
        if sample.announcements_skipped > seen {
            g.announcements_skipped
                .inc_by(sample.announcements_skipped - seen);
        }
        let mut out = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(%error, "metrics could not be encoded");
        }
        String::from_utf8(out).unwrap_or_default()
    }

    /// Requests since the start, and per second over the last minute.
    pub(crate) fn requests_total_and_rate(&self) -> (u64, f64) {
        self.requests.total_and_rate(self.origin.elapsed())
    }

    /// Messages pushed since the start, and per second over the last minute.
    pub(crate) fn pushed_total_and_rate(&self) -> (u64, f64) {
        self.messages_pushed.total_and_rate(self.origin.elapsed())
    }

    /// The kernel's clock tick rate (for `/proc` CPU times).
    pub(crate) fn clock_ticks_per_second(&self) -> u64 {
        self.clock_ticks_per_second
    }

    fn second(&self) -> u32 {
        u32::try_from(self.origin.elapsed().as_secs()).unwrap_or(u32::MAX)
    }
}

/// `process_*`: CPU seconds, resident and virtual memory, start time, open and maximum file
/// descriptors, threads — where the platform has `/proc`.
fn register_process(registry: &Registry) {
    #[cfg(target_os = "linux")]
    {
        let collector = prometheus::process_collector::ProcessCollector::for_self();
        if let Err(error) = registry.register(Box::new(collector)) {
            tracing::warn!(%error, "process metrics unavailable");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = registry;
}
