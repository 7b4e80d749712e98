//! What one benchmark run produces. Scenarios fill in the counts and latencies, the telemetry
//! sampler the resource figures, and the report writer turns it into JSON, Markdown and charts.
//!
//! Every figure is what was measured in this run; nothing here is derived from another run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One run of one scenario against one target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunReport {
    /// Scenario name, e.g. `bp-100`.
    pub scenario: String,
    /// `broker` (HTTP) or `raw` (the same SQL functions called directly).
    pub target: String,
    /// Start of the measured interval, RFC 3339 UTC.
    pub started_at: String,
    /// Length of the measured interval in seconds (warm-up excluded).
    pub duration_secs: f64,
    /// The scenario's parameters (connections, batch sizes, partitions, rates, …).
    pub settings: serde_json::Value,
    /// Hardware, software and PostgreSQL settings of the run.
    pub environment: Environment,
    /// Totals and rates over the measured interval.
    pub summary: Summary,
    /// One sample per interval (normally one second) of the measured interval.
    pub timeline: Vec<IntervalSample>,
    /// Latency distributions by name (`push`, `pop`, `ack`, `e2e`, …).
    pub latency: Vec<LatencySeries>,
    /// The delivery check: counts and per-partition order.
    pub verification: Verification,
    /// Resource use and database signals; absent when telemetry was turned off.
    pub telemetry: Option<TelemetryReport>,
    /// Free-form observations the scenario wants in the summary (e.g. "backlog drained in 4.1 s").
    pub notes: Vec<String>,
    /// Counts over the whole run (prefill, warm-up, measured interval and drain): what the run
    /// did, whatever fell inside the measured interval.
    #[serde(default)]
    pub totals: Totals,
}

impl RunReport {
    /// Whether the scenario only pushes (its settings list no consumer group).
    pub fn is_push_only(&self) -> bool {
        self.settings
            .get("groups")
            .and_then(|g| g.as_array())
            .is_none_or(|g| g.is_empty())
    }

    /// The scenario's headline rate: pushes for a push-only scenario, deliveries otherwise.
    pub fn primary_rate(&self) -> f64 {
        if self.is_push_only() {
            self.summary.push_rate
        } else {
            self.summary.deliver_rate
        }
    }
}

/// Counts over the whole run, from its first request to the end of the drain.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Messages acknowledged by push responses (the pushed backlog included).
    pub pushed: u64,
    /// Successful push requests.
    pub push_requests: u64,
    /// Messages handed to consumers, all groups together.
    pub delivered: u64,
    /// Messages acknowledged by consumers (explicit acks).
    pub acked: u64,
    /// Failed requests.
    pub errors: u64,
    /// Observations per latency series (`push`, `pop`, `ack`, `e2e`).
    pub latency_observations: BTreeMap<String, u64>,
    /// Messages retention deleted (scenarios with retention), from the tables' oldest offsets.
    pub retention_deleted: Option<u64>,
}

/// Where a run happened.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Total memory in bytes, from `/proc/meminfo`.
    pub memory_bytes: u64,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// `select version()`.
    pub postgres_version: String,
    /// Selected `pg_settings` (shared_buffers, synchronous_commit, wal settings, autovacuum, …).
    pub postgres_settings: BTreeMap<String, String>,
    /// Regina's version (crate version) and, when known, the git commit.
    pub regina_version: String,
    /// Broker settings the harness passed (pool size, batch caps, …), empty for `raw`.
    pub broker_settings: BTreeMap<String, String>,
}

/// Totals and rates over the measured interval.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Messages acknowledged by push responses (`queued`).
    pub pushed: u64,
    /// Push requests (HTTP requests, or SQL calls for `raw`) that succeeded.
    pub push_requests: u64,
    /// Messages handed to consumers, all groups together.
    pub delivered: u64,
    /// Messages acknowledged by consumers (explicit acks; autoAck deliveries are not counted here).
    pub acked: u64,
    /// Requests that failed (transport error, 5xx, unexpected 4xx).
    pub errors: u64,
    /// `pushed / duration_secs`.
    pub push_rate: f64,
    /// `delivered / duration_secs`.
    pub deliver_rate: f64,
    /// Messages delivered per consumer group.
    pub delivered_per_group: BTreeMap<String, u64>,
    /// Messages pushed but not yet delivered to the slowest group when the measured interval
    /// ended (producers stop then; the drain that follows is not measured).
    pub backlog_at_end: u64,
    /// PostgreSQL CPU per message pushed in the measured interval, microseconds.
    #[serde(default)]
    pub pg_cpu_us_per_pushed: Option<f64>,
    /// PostgreSQL CPU per successful push request (HTTP request, or SQL call) in the measured
    /// interval, milliseconds.
    #[serde(default)]
    pub pg_cpu_ms_per_push_call: Option<f64>,
    /// PostgreSQL CPU per message delivered in the measured interval (pop and ack together),
    /// microseconds. In a scenario that pushes and pops at once, the same CPU is divided by
    /// either count: the two figures do not add up.
    #[serde(default)]
    pub pg_cpu_us_per_delivered: Option<f64>,
    /// Broker CPU per message pushed in the measured interval, microseconds.
    #[serde(default)]
    pub broker_cpu_us_per_pushed: Option<f64>,
    /// Deliveries in the measured interval divided by pushes in it times the number of groups
    /// (None when nothing was pushed in the interval or nobody consumes).
    #[serde(default)]
    pub delivered_to_pushed: Option<f64>,
    /// Whether consumers kept pace with producers during the measured interval:
    /// `delivered_to_pushed` at least [`KEPT_PACE_MIN`].
    #[serde(default)]
    pub kept_pace: Option<bool>,
    /// Messages retention deleted during the measured interval (scenarios with retention).
    #[serde(default)]
    pub retention_deleted: Option<u64>,
}

/// The share of pushed messages consumers must have received during the measured interval to
/// count as keeping pace (the rest is what was in flight when it ended).
pub const KEPT_PACE_MIN: f64 = 0.95;

/// One interval of the timeline.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Seconds since the start of the measured interval (end of this interval).
    pub t_secs: f64,
    /// Messages pushed in this interval.
    pub pushed: u64,
    /// Messages delivered in this interval.
    pub delivered: u64,
    /// Messages acknowledged in this interval.
    pub acked: u64,
    /// Failed requests in this interval.
    pub errors: u64,
    /// Push request latency percentiles in this interval, milliseconds (0 when none).
    pub push_p50_ms: f64,
    /// See `push_p50_ms`.
    pub push_p99_ms: f64,
    /// End-to-end (push sent → delivered) percentiles in this interval, milliseconds.
    pub e2e_p50_ms: f64,
    /// See `e2e_p50_ms`.
    pub e2e_p99_ms: f64,
}

/// A latency distribution over the whole measured interval.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LatencySeries {
    /// `push`, `pop`, `ack`, `e2e`, …
    pub name: String,
    /// Observations.
    pub count: u64,
    /// Mean, milliseconds.
    pub mean_ms: f64,
    /// Percentiles, milliseconds.
    pub p50_ms: f64,
    /// See `p50_ms`.
    pub p90_ms: f64,
    /// See `p50_ms`.
    pub p99_ms: f64,
    /// See `p50_ms`.
    pub p999_ms: f64,
    /// Largest observation, milliseconds.
    pub max_ms: f64,
}

/// The delivery check of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Verification {
    /// Whether this scenario checks delivery (push-only scenarios check what the database holds).
    pub checked: bool,
    /// Messages whose push was acknowledged.
    pub pushed: u64,
    /// Distinct messages delivered per group.
    pub delivered_per_group: BTreeMap<String, u64>,
    /// Acknowledged pushes that a group that should have received them never did (must be 0).
    pub lost: u64,
    /// Deliveries that came before an earlier offset of the same partition for the same group,
    /// outside a redelivery (must be 0).
    pub out_of_order: u64,
    /// Deliveries of a message already settled for that group (must be 0 with autoAck and clean acks).
    pub duplicates: u64,
    /// Redeliveries explained by a failure the scenario injected (failed ack, handler error).
    pub redelivered: u64,
    /// Messages in the dead-letter queue at the end (the `app` scenario expects its poison ones).
    pub dead_lettered: u64,
    /// `lost == 0 && out_of_order == 0 && duplicates == 0` and the scenario's own expectations.
    pub passed: bool,
    /// Why it failed, when it did.
    pub failures: Vec<String>,
}

/// Resource use and database signals over a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TelemetryReport {
    /// One sample per second.
    pub samples: Vec<TelemetrySample>,
    /// CPU seconds the broker process used during the run (None for `raw` or unknown pid).
    pub broker_cpu_secs: Option<f64>,
    /// Largest broker RSS seen, bytes.
    pub broker_rss_peak_bytes: Option<u64>,
    /// Broker RSS at the start of the run, bytes.
    pub broker_rss_start_bytes: Option<u64>,
    /// CPU seconds all PostgreSQL processes used during the run.
    pub pg_cpu_secs: f64,
    /// CPU seconds the harness itself used (it shares the machine).
    pub harness_cpu_secs: f64,
    /// `broker_cpu_secs / pg_cpu_secs`.
    pub broker_to_pg_cpu: Option<f64>,
    /// WAL bytes written during the run (`pg_current_wal_lsn` difference).
    pub wal_bytes: u64,
    /// Checkpoints requested and timed during the run (`pg_stat_bgwriter` difference).
    pub checkpoints_req: u64,
    /// See `checkpoints_req`.
    pub checkpoints_timed: u64,
    /// Database size before and after, bytes (`pg_database_size`).
    pub db_size_before_bytes: u64,
    /// See `db_size_before_bytes`.
    pub db_size_after_bytes: u64,
    /// Hot-table statistics before the run.
    pub tables_before: Vec<TableStats>,
    /// Hot-table statistics after the run.
    pub tables_after: Vec<TableStats>,
    /// Active sessions by wait class, summed over all samples (`CPU` when not waiting).
    pub wait_totals: BTreeMap<String, u64>,
    /// `pg_stat_statements` top statements by total time, when the extension is available.
    pub top_statements: Vec<StatementStats>,
}

/// One telemetry sample.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TelemetrySample {
    /// Seconds since the start of the measured interval.
    pub t_secs: f64,
    /// Broker CPU over the last interval, percent of one core.
    pub broker_cpu_pct: Option<f64>,
    /// Broker resident set size, bytes.
    pub broker_rss_bytes: Option<u64>,
    /// CPU of all PostgreSQL processes over the last interval, percent of one core.
    pub pg_cpu_pct: f64,
    /// Resident memory of all PostgreSQL processes (sum of RSS, shared pages counted per process).
    pub pg_rss_bytes: u64,
    /// Active sessions of the benchmark database by `wait_event_type` (`CPU` when null),
    /// from one `pg_stat_activity` snapshot.
    pub active_sessions: BTreeMap<String, u32>,
    /// WAL bytes per second over the last interval.
    pub wal_bytes_per_sec: f64,
}

/// Statistics of one table (`pg_stat_user_tables` and sizes).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TableStats {
    /// `regina.<name>`.
    pub table: String,
    /// `n_live_tup`.
    pub live_tuples: i64,
    /// `n_dead_tup`.
    pub dead_tuples: i64,
    /// `n_tup_upd`.
    pub updates: i64,
    /// `n_tup_hot_upd`.
    pub hot_updates: i64,
    /// `hot_updates / updates` (1 when there were no updates).
    pub hot_ratio: f64,
    /// `autovacuum_count`.
    pub autovacuums: i64,
    /// `pg_total_relation_size`, bytes.
    pub total_bytes: i64,
}

/// One statement from `pg_stat_statements`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StatementStats {
    /// Query text, shortened.
    pub query: String,
    /// Calls during the run.
    pub calls: i64,
    /// Total execution time, milliseconds.
    pub total_ms: f64,
    /// Mean execution time, milliseconds.
    pub mean_ms: f64,
    /// Rows returned or affected.
    pub rows: i64,
}

/// One point of the partition-scaling curve (`hi-part-*` sweep).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Partitions in the queue.
    pub partitions: u64,
    /// Push rate, messages per second.
    pub push_rate: f64,
    /// Delivery rate, messages per second.
    pub deliver_rate: f64,
    /// Push latency p99, milliseconds.
    pub push_p99_ms: f64,
    /// Delivery rate as a ratio of the sweep's first point (10 partitions).
    #[serde(default)]
    pub deliver_ratio_to_first: Option<f64>,
}
