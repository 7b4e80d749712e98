//! Resource accounting and database telemetry during a run: broker and PostgreSQL CPU and memory
//! from `/proc`, a once-a-second `pg_stat_activity` snapshot by wait class, WAL volume,
//! checkpoints, and hot-table statistics before and after.
//!
//! [`Telemetry::start`] takes the "before" readings and spawns a sampler task that, every
//! interval, reads `/proc` (broker, PostgreSQL's processes) and asks the database for its WAL
//! position and active sessions, over a connection of its own. [`Telemetry::finish`] stops it and
//! takes the "after" readings. A sample whose database queries fail keeps its `/proc` figures
//! (the failure is logged); only the before and after readings must succeed.

pub mod pgstat;
pub mod procfs;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_postgres::Client;

use crate::model::{Environment, TableStats, TelemetryReport, TelemetrySample};

use self::pgstat::StatementCounters;
use self::procfs::{GroupReading, ProcessReading, Selector};

/// How long [`Telemetry::finish`] waits before reading the hot-table statistics: backends publish
/// their table counters at the end of a transaction at most once a second, so a little over a
/// second after the "after" instant every busy backend has published what it did up to then.
/// (Other processes cannot force that flush; a backend that went idle publishes only after
/// several seconds or when it disconnects.)
pub const STATS_SETTLE: Duration = Duration::from_millis(1100);

/// A sample's database query may take at most the sampling interval, and never less than this.
const QUERY_TIMEOUT_MIN: Duration = Duration::from_secs(1);

/// `query`, failing after `limit`.
async fn bounded<T>(
    limit: Duration,
    query: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(limit, query)
        .await
        .map_err(|_| anyhow::anyhow!("telemetry: no answer within {limit:?}"))?
}

/// Which processes are PostgreSQL's.
#[derive(Clone, Debug)]
pub enum PostgresPids {
    /// The postmaster's pid: it and its children.
    Postmaster(u32),
    /// Every process whose name (`/proc/<pid>/comm`) is `postgres`.
    ByName,
}

impl PostgresPids {
    fn selector(&self) -> Selector {
        match *self {
            PostgresPids::Postmaster(pid) => Selector::Postmaster(pid),
            PostgresPids::ByName => Selector::ByName,
        }
    }
}

/// What to sample.
#[derive(Clone, Debug)]
pub struct TelemetryConfig {
    /// A connection URL to the benchmark database (the sampler opens its own connection).
    pub database_url: String,
    /// The broker's pid; None for the `raw` target.
    pub broker_pid: Option<u32>,
    /// PostgreSQL's processes.
    pub postgres: PostgresPids,
    /// Sampling interval (normally one second).
    pub interval: Duration,
}

/// A running sampler. Start it when the measured interval starts.
#[derive(Debug)]
pub struct Telemetry {
    config: TelemetryConfig,
    before: Before,
    stop: oneshot::Sender<()>,
    sampler: JoinHandle<Sampler>,
}

/// The readings taken when the run starts.
#[derive(Debug)]
struct Before {
    broker: Option<ProcessReading>,
    pg: GroupReading,
    harness_ticks: u64,
    wal: u64,
    checkpoints: (u64, u64),
    db_size: u64,
    tables: Vec<TableStats>,
    /// None when `pg_stat_statements` cannot be read.
    statements: Option<HashMap<i64, StatementCounters>>,
}

/// The sampler task's state; handed back when it stops.
#[derive(Debug)]
struct Sampler {
    client: Client,
    selector: Selector,
    broker_pid: Option<u32>,
    start: Instant,
    last_at: Instant,
    last_broker_ticks: Option<u64>,
    last_pg_ticks: u64,
    last_wal: Option<u64>,
    samples: Vec<TelemetrySample>,
}

impl Telemetry {
    /// Takes the "before" snapshot and starts sampling.
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn start(config: TelemetryConfig) -> anyhow::Result<Telemetry> {
        let client = pgstat::connect(&config.database_url).await?;
        let statements = if pgstat::statements_available(&client).await {
            pgstat::statement_counters(&client).await.ok()
        } else {
            None
        };
        let tables = pgstat::table_stats(&client).await?;
        let checkpoints = pgstat::checkpoints(&client).await?;
        let db_size = pgstat::database_size(&client).await?;
        let selector = config.postgres.selector();
        // The resource readings last, right before sampling starts.
        let wal = pgstat::wal_position(&client).await?;
        let broker = config.broker_pid.and_then(procfs::process_reading);
        if let Some(pid) = config.broker_pid {
            if broker.is_none() {
                tracing::warn!(pid, "telemetry: no such broker process in /proc");
            }
        }
        let pg = procfs::group_reading(selector, &procfs::scan());
        if pg.processes == 0 {
            tracing::warn!(?config.postgres, "telemetry: no PostgreSQL process found in /proc");
        }
        let harness_ticks = procfs::read_self_stat().map_or(0, |s| s.own_ticks());
        let at = Instant::now();
        let before = Before {
            broker,
            pg,
            harness_ticks,
            wal,
            checkpoints,
            db_size,
            tables,
            statements,
        };
        let sampler = Sampler {
            client,
            selector,
            broker_pid: config.broker_pid,
            start: at,
            last_at: at,
            last_broker_ticks: broker.map(|b| b.ticks),
            last_pg_ticks: pg.ticks,
            last_wal: Some(wal),
            samples: Vec::new(),
        };
        let (stop, stopped) = oneshot::channel();
        let sampler = tokio::spawn(sampler.run(config.interval, stopped));
        Ok(Telemetry {
            config,
            before,
            stop,
            sampler,
        })
    }

    /// Stops sampling and takes the "after" snapshot.
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn finish(self) -> anyhow::Result<TelemetryReport> {
        let Telemetry {
            config,
            before,
            stop,
            sampler,
        } = self;
        let _ = stop.send(());
        let sampler = sampler
            .await
            .map_err(|e| anyhow::anyhow!("telemetry: the sampler task failed: {e}"))?;
        let after_at = Instant::now();
        let broker = config.broker_pid.and_then(procfs::process_reading);
        let pg = procfs::group_reading(sampler.selector, &procfs::scan());
        let harness_ticks = procfs::read_self_stat().map_or(0, |s| s.own_ticks());
        let client = if sampler.client.is_closed() {
            pgstat::connect(&config.database_url).await?
        } else {
            sampler.client
        };
        let wal = pgstat::wal_position(&client).await?;
        let checkpoints = pgstat::checkpoints(&client).await?;
        let db_size = pgstat::database_size(&client).await?;
        let top_statements = match &before.statements {
            Some(b) => match pgstat::statement_counters(&client).await {
                Ok(a) => pgstat::top_statements(b, &a),
                Err(e) => {
                    tracing::warn!(error = %e, "telemetry: pg_stat_statements");
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        let settle = STATS_SETTLE.saturating_sub(after_at.elapsed());
        tokio::time::sleep(settle).await;
        let tables_after = pgstat::table_stats(&client).await?;
        let samples = sampler.samples;

        let broker_cpu_secs = match (before.broker, broker) {
            (Some(b), Some(a)) => Some(procfs::ticks_to_secs(a.ticks.saturating_sub(b.ticks))),
            _ => None,
        };
        let pg_cpu_secs = procfs::ticks_to_secs(pg.ticks.saturating_sub(before.pg.ticks));
        let rss_seen = before
            .broker
            .and_then(|b| b.rss_bytes)
            .into_iter()
            .chain(samples.iter().filter_map(|s| s.broker_rss_bytes))
            .chain(broker.and_then(|a| a.rss_bytes));
        let mut wait_totals: BTreeMap<String, u64> = BTreeMap::new();
        for s in &samples {
            for (class, n) in &s.active_sessions {
                *wait_totals.entry(class.clone()).or_default() += u64::from(*n);
            }
        }
        Ok(TelemetryReport {
            broker_cpu_secs,
            broker_rss_peak_bytes: rss_seen.max(),
            broker_rss_start_bytes: before.broker.and_then(|b| b.rss_bytes),
            pg_cpu_secs,
            harness_cpu_secs: procfs::ticks_to_secs(
                harness_ticks.saturating_sub(before.harness_ticks),
            ),
            broker_to_pg_cpu: broker_cpu_secs
                .filter(|_| pg_cpu_secs > 0.0)
                .map(|b| b / pg_cpu_secs),
            wal_bytes: wal.saturating_sub(before.wal),
            checkpoints_req: checkpoints.0.saturating_sub(before.checkpoints.0),
            checkpoints_timed: checkpoints.1.saturating_sub(before.checkpoints.1),
            db_size_before_bytes: before.db_size,
            db_size_after_bytes: db_size,
            tables_before: before.tables,
            tables_after,
            wait_totals,
            top_statements,
            samples,
        })
    }
}

impl Sampler {
    /// Samples every `interval` (the first one interval after the start) until `stopped` fires,
    /// then once more if at least half an interval has passed since the last sample.
    async fn run(mut self, interval: Duration, mut stopped: oneshot::Receiver<()>) -> Sampler {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = &mut stopped => {
                    // Close the last, partial interval unless it is too short to mean much.
                    if self.last_at.elapsed() >= interval / 2 {
                        let sample = self.sample(interval).await;
                        self.samples.push(sample);
                    }
                    break;
                }
                _ = tick.tick() => {
                    let sample = self.sample(interval).await;
                    self.samples.push(sample);
                }
            }
        }
        self
    }

    /// One sample: `/proc` first (cheap, and the interval it closes is the one measured), then
    /// the database.
    async fn sample(&mut self, interval: Duration) -> TelemetrySample {
        let now = Instant::now();
        let secs = now.duration_since(self.last_at).as_secs_f64();
        self.last_at = now;
        let broker = self.broker_pid.and_then(procfs::process_reading);
        let broker_cpu_pct = match (self.last_broker_ticks, broker) {
            (Some(last), Some(b)) => Some(procfs::cpu_pct(last, b.ticks, secs)),
            _ => None,
        };
        if let Some(b) = broker {
            self.last_broker_ticks = Some(b.ticks);
        }
        let pg = procfs::group_reading(self.selector, &procfs::scan());
        let pg_cpu_pct = procfs::cpu_pct(self.last_pg_ticks, pg.ticks, secs);
        self.last_pg_ticks = pg.ticks;

        // A slow database must not hold up the sampler (or `finish`, which waits for it).
        let limit = interval.max(QUERY_TIMEOUT_MIN);
        let wal_bytes_per_sec = match bounded(limit, pgstat::wal_position(&self.client)).await {
            Ok(wal) => {
                let rate = match self.last_wal {
                    Some(last) if secs > 0.0 => wal.saturating_sub(last) as f64 / secs,
                    _ => 0.0,
                };
                self.last_wal = Some(wal);
                rate
            }
            Err(e) => {
                tracing::warn!(error = %e, "telemetry sample");
                // The next rate is measured from the next good reading.
                self.last_wal = None;
                0.0
            }
        };
        let active_sessions = bounded(limit, pgstat::active_sessions(&self.client))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "telemetry sample");
                BTreeMap::new()
            });
        TelemetrySample {
            t_secs: now.duration_since(self.start).as_secs_f64(),
            broker_cpu_pct,
            broker_rss_bytes: broker.and_then(|b| b.rss_bytes),
            pg_cpu_pct,
            pg_rss_bytes: pg.rss_bytes,
            active_sessions,
            wal_bytes_per_sec,
        }
    }
}

/// Hardware, kernel and PostgreSQL facts of this machine and database.
///
/// # Errors
/// The database cannot be reached.
pub async fn environment(database_url: &str) -> anyhow::Result<Environment> {
    let client = pgstat::connect(database_url).await?;
    let postgres_version = pgstat::version(&client).await?;
    let postgres_settings = pgstat::settings(&client).await?;
    drop(client);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (cpu_model, cpus) = procfs::parse_cpuinfo(&cpuinfo);
    let cpus = if cpus > 0 {
        cpus
    } else {
        std::thread::available_parallelism().map_or(0, usize::from)
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_owned())
        .unwrap_or_else(|_| std::env::consts::OS.to_owned());
    Ok(Environment {
        cpu_model: cpu_model.unwrap_or_else(|| "unknown".to_owned()),
        cpus,
        memory_bytes: procfs::kib_field(&meminfo, "MemTotal:").unwrap_or(0),
        kernel,
        postgres_version,
        postgres_settings,
        regina_version: regina_version().await,
        broker_settings: BTreeMap::new(),
    })
}

/// The crate version, followed by ` (<commit>)` when `git rev-parse --short HEAD` answers in the
/// working directory (with `-dirty` when the tree has uncommitted changes).
pub async fn regina_version() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let git = |args: &'static [&'static str]| async move {
        let out = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::process::Command::new("git")
                .args(args)
                .stdin(std::process::Stdio::null())
                .output(),
        )
        .await
        .ok()?
        .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "--short", "HEAD"]).await {
        Some(commit) if !commit.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .await
                .is_some_and(|s| !s.is_empty());
            format!("{version} ({commit}{})", if dirty { "-dirty" } else { "" })
        }
        _ => version.to_owned(),
    }
}
