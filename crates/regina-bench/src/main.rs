//! `regina-bench`: Regina's load generator and benchmark harness.
//!
//! Runs named scenarios against the broker (HTTP) and against the same SQL functions called
//! directly (`raw`, the ceiling), with resource telemetry, and writes reports under
//! `bench/results/<date>-<scenario>/`. See `bench/METHODOLOGY.md`.

mod explain;
mod faults;
mod scenario;
mod stats;
mod system;
mod target;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use regina_bench::model::{RunReport, ScalingPoint};
use regina_bench::report;

use crate::scenario::Plan;
use crate::system::{Cluster, System, SystemOptions};
use crate::target::TargetKind;

/// Regina's benchmark harness.
#[derive(Debug, Parser)]
#[command(name = "regina-bench", version)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// List the scenarios.
    List,
    /// Run scenarios and write their reports.
    Run {
        /// Scenario names (see `list`).
        #[arg(required = true)]
        scenarios: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Partition scaling: hi-part-10 … hi-part-100k, then the scaling curve.
    Sweep {
        #[command(flatten)]
        common: Common,
    },
    /// The standard matrix: bp-1/10/100, q-1/10, cg-5/10, pop-ack, e2e, app, app-overload.
    Matrix {
        #[command(flatten)]
        common: Common,
    },
    /// Fault runs: crash, outage, overload, two-brokers, hostile (all by default). Each prints a
    /// one-line summary; the exit status is non-zero when any of them loses, skips or misbehaves.
    Fault {
        /// Which runs, in order.
        #[arg(value_enum)]
        faults: Vec<faults::Fault>,
        /// Seconds of load per run.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Seed of the hostile-input generator (default: random, printed in the summary).
        #[arg(long)]
        seed: Option<u64>,
        /// Largest broker RSS the overload run accepts, MiB.
        #[arg(long, default_value_t = 100)]
        rss_max_mib: u64,
        /// The `regina` binary to run (default: next to this executable).
        #[arg(long)]
        regina_bin: Option<PathBuf>,
        /// Where the runs keep their clusters and buffers (deleted afterwards).
        #[arg(long, default_value = ".regina/faults")]
        work_dir: PathBuf,
    },
    /// EXPLAIN of every admin, status and analytics statement on a large fixture (millions of
    /// messages, 100 000 partitions); report in `<out>/<date>-explain/`.
    Explain {
        /// Queues; one holds half the partitions.
        #[arg(long, default_value_t = 10)]
        queues: u32,
        /// Partitions over all queues.
        #[arg(long, default_value_t = 100_000)]
        partitions: u32,
        /// Messages over all partitions (about).
        #[arg(long, default_value_t = 3_000_000)]
        messages: u64,
        /// Dead letters.
        #[arg(long, default_value_t = 50_000)]
        dead_letters: u32,
        /// Timed runs of each statement.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where result directories go.
        #[arg(long, default_value = "bench/results")]
        out: PathBuf,
        /// PostgreSQL settings for the harness's cluster.
        #[arg(long, default_value = "bench/postgresql.conf")]
        pg_conf: PathBuf,
        /// An existing, empty database instead of the harness's cluster.
        #[arg(long)]
        database_url: Option<String>,
        /// Leave the harness's cluster running afterwards.
        #[arg(long)]
        keep_db: bool,
    },
    /// The soak scenario for hours.
    Soak {
        /// Hours to run.
        #[arg(long, default_value_t = 1.0)]
        hours: f64,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Which {
    Broker,
    Raw,
    Both,
}

#[derive(Clone, Debug, Args)]
struct Common {
    /// Which system to drive.
    #[arg(long, value_enum, default_value_t = Which::Both)]
    target: Which,
    /// Measured seconds per run (overrides the scenario's).
    #[arg(long)]
    duration: Option<f64>,
    /// Unmeasured seconds at the start.
    #[arg(long)]
    warmup: Option<f64>,
    /// Producer connections (overrides the scenario's).
    #[arg(long)]
    connections: Option<usize>,
    /// Offered rate in messages per second (open loop; overrides the scenario's).
    #[arg(long)]
    rate: Option<f64>,
    /// Partitions per queue (overrides the scenario's).
    #[arg(long)]
    partitions: Option<usize>,
    /// Stop producing after this many messages.
    #[arg(long)]
    messages: Option<u64>,
    /// Backlog pushed before the pop+ack scenario measures (overrides the scenario's).
    #[arg(long)]
    prefill: Option<u64>,
    /// Longest drain after producers stop, seconds.
    #[arg(long)]
    drain: Option<f64>,
    /// Where result directories go.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// No resource telemetry.
    #[arg(long)]
    no_telemetry: bool,
    /// An existing broker instead of spawning one.
    #[arg(long)]
    url: Option<String>,
    /// An existing database instead of the harness's own cluster (its contents are used as is).
    #[arg(long)]
    database_url: Option<String>,
    /// The existing broker's pid (for its CPU and memory).
    #[arg(long)]
    broker_pid: Option<u32>,
    /// The `regina` binary to spawn (default: next to this executable).
    #[arg(long)]
    regina_bin: Option<PathBuf>,
    /// PostgreSQL settings for the harness's cluster.
    #[arg(long, default_value = "bench/postgresql.conf")]
    pg_conf: PathBuf,
    /// PostgreSQL connections of the raw target.
    #[arg(long, default_value_t = 64)]
    raw_connections: usize,
    /// Environment for the spawned broker, `KEY=VALUE` (repeatable), e.g. `DB_POOL_SIZE=8`.
    #[arg(long = "broker-env", value_parser = parse_env)]
    broker_env: Vec<(String, String)>,
    /// Leave the harness's cluster running afterwards.
    #[arg(long)]
    keep_db: bool,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

impl Common {
    fn apply(&self, mut plan: Plan) -> Plan {
        if let Some(d) = self.duration {
            plan.duration = Duration::from_secs_f64(d);
        }
        if let Some(w) = self.warmup {
            plan.warmup = Duration::from_secs_f64(w);
        }
        if let Some(c) = self.connections {
            plan.producers = c;
        }
        if let Some(r) = self.rate {
            plan.rate = Some(r);
        }
        if let Some(p) = self.partitions {
            plan.partitions = p;
        }
        if let Some(m) = self.messages {
            plan.messages = Some(m);
        }
        if let Some(p) = self.prefill {
            plan.prefill = p;
        }
        if let Some(d) = self.drain {
            plan.drain = Duration::from_secs_f64(d);
        }
        plan
    }

    /// Whether each run drives the broker (true) or raw SQL (false), in order.
    fn targets(&self) -> Vec<bool> {
        match self.target {
            Which::Broker => vec![true],
            Which::Raw => vec![false],
            Which::Both => vec![true, false],
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BENCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("regina-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("regina-bench: a check failed (see the summaries above and the reports)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("regina-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn plans(names: &[String], common: &Common) -> anyhow::Result<Vec<Plan>> {
    names
        .iter()
        .map(|n| {
            Plan::named(n)
                .map(|p| common.apply(p))
                .with_context(|| format!("unknown scenario `{n}` (see `regina-bench list`)"))
        })
        .collect()
}

async fn run(cli: Cli) -> anyhow::Result<bool> {
    let (plans, common, sweep) = match cli.verb {
        Verb::List => {
            for plan in Plan::catalogue() {
                println!("{:<14} {}", plan.name, plan.description);
            }
            return Ok(true);
        }
        Verb::Run { scenarios, common } => (plans(&scenarios, &common)?, common, false),
        Verb::Explain {
            queues,
            partitions,
            messages,
            dead_letters,
            runs,
            out,
            pg_conf,
            database_url,
            keep_db,
        } => {
            let options = explain::ExplainOptions {
                queues,
                partitions,
                messages,
                dead_letters,
                runs,
                out,
                pg_conf,
                database_url,
                keep_db,
            };
            let dir = explain::run(&options).await?;
            eprintln!("regina-bench: explain report in {}", dir.display());
            return Ok(true);
        }
        Verb::Fault {
            faults,
            seconds,
            seed,
            rss_max_mib,
            regina_bin,
            work_dir,
        } => {
            let all = [
                faults::Fault::Crash,
                faults::Fault::Outage,
                faults::Fault::Overload,
                faults::Fault::TwoBrokers,
                faults::Fault::Hostile,
            ];
            let options = faults::FaultOptions {
                seconds,
                regina_bin: system::regina_bin(regina_bin.as_deref())?,
                seed: seed.unwrap_or_else(rand::random),
                rss_max_mib,
                work_dir: std::path::absolute(work_dir)?,
            };
            let chosen = if faults.is_empty() {
                &all[..]
            } else {
                &faults[..]
            };
            return faults::run(chosen, &options).await;
        }
        Verb::Sweep { common } => {
            let names: Vec<String> = [
                "hi-part-10",
                "hi-part-100",
                "hi-part-1k",
                "hi-part-10k",
                "hi-part-100k",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            (plans(&names, &common)?, common, true)
        }
        Verb::Matrix { common } => {
            let names: Vec<String> = [
                "bp-1",
                "bp-10",
                "bp-100",
                "q-1",
                "q-10",
                "cg-5",
                "cg-10",
                "pop-ack",
                "e2e",
                "app",
                "app-overload",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            let mut common = common;
            if common.duration.is_none() {
                common.duration = Some(20.0);
            }
            (plans(&names, &common)?, common, false)
        }
        Verb::Soak { hours, common } => {
            let mut plan = common.apply(Plan::named("soak").context("soak plan")?);
            plan.duration = Duration::from_secs_f64(hours * 3600.0);
            let common = Common {
                target: Which::Broker,
                ..common
            };
            (vec![plan], common, false)
        }
    };
    let cluster = if common.database_url.is_none() {
        let conf = common.pg_conf.exists().then_some(common.pg_conf.as_path());
        Some(Cluster::start(conf).await?)
    } else {
        None
    };
    let options = SystemOptions {
        url: common.url.clone(),
        database_url: common.database_url.clone(),
        broker_pid: common.broker_pid,
        regina_bin: common.regina_bin.clone(),
        broker_env: common.broker_env.clone(),
    };
    let date = time::OffsetDateTime::now_utc().date();
    let mut all_passed = true;
    let mut points = Vec::new();
    let result = async {
        for plan in &plans {
            let dir = common.out.join(format!("{date}-{}", plan.name));
            let mut runs: Vec<RunReport> = Vec::new();
            for broker in common.targets() {
                let system = System::start(&options, cluster.as_ref(), broker).await?;
                let kind = match (&system.url, broker) {
                    (Some(url), true) => TargetKind::Broker(url.clone()),
                    _ => TargetKind::Raw(
                        system.database_url.clone(),
                        common
                            .raw_connections
                            .min(
                                plan.producers
                                    .max(plan.groups.iter().map(|g| g.consumers).sum()),
                            )
                            .max(1),
                    ),
                };
                eprintln!(
                    "regina-bench: {} on {} for {:.0} s",
                    plan.name,
                    kind.name(),
                    plan.duration.as_secs_f64()
                );
                let outcome = scenario::run(plan, &kind, &system, !common.no_telemetry).await;
                system.stop().await;
                let report = outcome?;
                print_line(&report);
                all_passed &= report.verification.passed;
                report::write_run(&dir, &report)?;
                if sweep && broker {
                    points.push(ScalingPoint {
                        partitions: plan.partitions as u64,
                        push_rate: report.summary.push_rate,
                        deliver_rate: report.summary.deliver_rate,
                        push_p99_ms: report
                            .latency
                            .iter()
                            .find(|l| l.name == "push")
                            .map_or(0.0, |l| l.p99_ms),
                    });
                }
                runs.push(report);
            }
            report::write_summary(&dir, &runs)?;
            eprintln!("regina-bench: report in {}", dir.display());
        }
        if sweep {
            let dir = common.out.join(format!("{date}-hi-part-sweep"));
            report::write_scaling(&dir, &points)?;
            eprintln!("regina-bench: scaling curve in {}", dir.display());
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    if let (Some(cluster), false) = (&cluster, common.keep_db) {
        cluster.stop()?;
    }
    result?;
    Ok(all_passed)
}

fn print_line(r: &RunReport) {
    let v = &r.verification;
    let e2e = r
        .latency
        .iter()
        .find(|l| l.name == "e2e")
        .map(|l| {
            format!(
                ", e2e p50 {:.1} ms p99 {:.1} ms p99.9 {:.1} ms",
                l.p50_ms, l.p99_ms, l.p999_ms
            )
        })
        .unwrap_or_default();
    let push = r
        .latency
        .iter()
        .find(|l| l.name == "push")
        .map(|l| format!(", push p50 {:.1} ms p99 {:.1} ms", l.p50_ms, l.p99_ms))
        .unwrap_or_default();
    let resources = r
        .telemetry
        .as_ref()
        .map(|t| {
            format!(
                ", broker cpu {:.1} s rss peak {:.1} MB, pg cpu {:.1} s",
                t.broker_cpu_secs.unwrap_or(0.0),
                t.broker_rss_peak_bytes.unwrap_or(0) as f64 / 1e6,
                t.pg_cpu_secs
            )
        })
        .unwrap_or_default();
    println!(
        "{} {}: pushed {:.0} msg/s, delivered {:.0} msg/s{push}{e2e}{resources}; check: pushed {}, delivered {:?}, lost {}, out-of-order {}, duplicates {} -> {}",
        r.scenario,
        r.target,
        r.summary.push_rate,
        r.summary.deliver_rate,
        v.pushed,
        v.delivered_per_group,
        v.lost,
        v.out_of_order,
        v.duplicates,
        if v.passed { "PASS" } else { "FAIL" }
    );
    for f in &v.failures {
        println!("  failure: {f}");
    }
}
