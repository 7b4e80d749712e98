//! `regina-bench`: Regina's load generator and benchmark harness.
//!
//! Runs named scenarios against the broker (HTTP), against the same SQL functions called
//! directly (`raw`) and, for push scenarios, against plain inserts of the same rows (`ceiling`),
//! with resource telemetry, and writes reports under `bench/results/`. See
//! `bench/METHODOLOGY.md`.

mod ceiling;
mod explain;
mod faults;
mod http;
mod lanes;
mod plan;
mod runner;
mod scenario;
mod stats;
mod steady;
mod system;
mod target;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use regina_bench::report;

use crate::runner::{Batch, Driver};
use crate::scenario::Plan;
use crate::system::{Cluster, SystemOptions};

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
    /// The matrix: every push shape (bp-1 … bp-10kb, q-1/10, steady-state) and every pop
    /// shape (cg-5/10, pop-ack, mixed, e2e, app, app-overload), on broker, raw and (push shapes)
    /// ceiling; one dated directory with a summary of ratios.
    Matrix {
        /// Only these shapes (comma-separated), in matrix order.
        #[arg(long, value_delimiter = ',')]
        shapes: Vec<String>,
        /// Only the push shapes (each on broker, raw and ceiling by default).
        #[arg(long)]
        push_only: bool,
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
    /// The broker over HTTP.
    Broker,
    /// Regina's SQL functions called directly.
    Raw,
    /// Plain inserts of the same rows (push scenarios).
    Ceiling,
    /// Broker and raw.
    Both,
    /// Broker, raw and (where it applies) ceiling.
    All,
}

#[derive(Clone, Debug, Args)]
struct Common {
    /// Which systems to drive (`all`: broker, raw and, for push scenarios, ceiling).
    #[arg(long, value_enum, default_value_t = Which::All)]
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
    /// Messages per push request (overrides the scenario's).
    #[arg(long)]
    items: Option<usize>,
    /// Messages a consumer asks for per pop, `batch` (overrides the scenario's).
    #[arg(long)]
    pop_batch: Option<u32>,
    /// Partitions a consumer's pop may claim, `partitions` (overrides the scenario's).
    #[arg(long)]
    pop_partitions: Option<u32>,
    /// Consumers of each group (overrides the scenario's).
    #[arg(long)]
    consumers: Option<usize>,
    /// Messages written straight into the tables before the run (steady-state; overrides; other
    /// scenarios have none).
    #[arg(long)]
    stored: Option<u64>,
    /// Seconds the stored messages' created_at spans (steady-state; overrides). Retention then
    /// deletes about stored / span messages per second.
    #[arg(long)]
    retention_span: Option<f64>,
    /// Milliseconds between retention runs (steady-state; overrides).
    #[arg(long)]
    retention_interval: Option<u64>,
    /// Stop producing after this many messages.
    #[arg(long)]
    messages: Option<u64>,
    /// Backlog pushed before the pop+ack scenario measures (overrides the scenario's; other
    /// scenarios have none).
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
    /// PostgreSQL connections of the raw and ceiling targets, at most.
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
        // Backlog sizes apply to the scenarios that have a backlog of that kind.
        if let Some(p) = self.prefill.filter(|_| plan.prefill > 0) {
            plan.prefill = p;
        }
        if let Some(d) = self.drain {
            plan.drain = Duration::from_secs_f64(d);
        }
        if let Some(n) = self.items {
            plan.items_per_push = n.max(1);
        }
        if let Some(n) = self.pop_batch {
            plan.pop_batch = n.max(1);
        }
        if let Some(n) = self.pop_partitions {
            plan.pop_partitions = n.max(1);
        }
        if let Some(n) = self.consumers {
            for g in &mut plan.groups {
                g.consumers = n.max(1);
            }
        }
        if let Some(n) = self.stored.filter(|_| plan.stored > 0) {
            plan.stored = n;
        }
        if let Some(r) = &mut plan.retention {
            if let Some(s) = self.retention_span {
                r.span = Duration::from_secs_f64(s);
            }
            if let Some(ms) = self.retention_interval {
                r.interval = Duration::from_millis(ms.max(1));
            }
        }
        plan
    }

    /// The systems each scenario runs on, in order.
    fn drivers(&self) -> Vec<Driver> {
        match self.target {
            Which::Broker => vec![Driver::Broker],
            Which::Raw => vec![Driver::Raw],
            Which::Ceiling => vec![Driver::Ceiling],
            Which::Both => vec![Driver::Broker, Driver::Raw],
            Which::All => vec![Driver::Broker, Driver::Raw, Driver::Ceiling],
        }
    }
}

/// Where results go: one directory per scenario (`run`, `sweep`), or one dated directory for a
/// whole matrix with a directory per scenario inside.
#[derive(Clone, Debug)]
enum Layout {
    PerScenario,
    Matrix { dir: PathBuf, title: String },
}

/// The matrix's scenarios: `shapes` (in matrix order) or all, push shapes only with `push_only`.
fn matrix_names(shapes: &[String], push_only: bool) -> anyhow::Result<Vec<String>> {
    for s in shapes {
        anyhow::ensure!(
            plan::MATRIX.contains(&s.as_str()),
            "`{s}` is not a matrix shape (one of {})",
            plan::MATRIX.join(", ")
        );
    }
    Ok(plan::MATRIX
        .iter()
        .filter(|n| shapes.is_empty() || shapes.iter().any(|s| s == *n))
        .filter(|n| !push_only || Plan::named(n).is_some_and(|p| p.is_push_only()))
        .map(|n| (*n).to_owned())
        .collect())
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
    let mut sweep = false;
    let (plans, common, layout) = match cli.verb {
        Verb::List => {
            for plan in Plan::catalogue() {
                println!("{:<15} {}", plan.name, plan.description);
            }
            return Ok(true);
        }
        Verb::Run { scenarios, common } => {
            (plans(&scenarios, &common)?, common, Layout::PerScenario)
        }
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
            sweep = true;
            let names: Vec<String> = plan::SWEEP.iter().map(|s| (*s).to_owned()).collect();
            (plans(&names, &common)?, common, Layout::PerScenario)
        }
        Verb::Matrix {
            shapes,
            push_only,
            mut common,
        } => {
            let names = matrix_names(&shapes, push_only)?;
            if common.duration.is_none() {
                common.duration = Some(20.0);
            }
            let date = time::OffsetDateTime::now_utc().date();
            let (suffix, title) = if push_only {
                ("push", "Push shapes: broker, raw and ceiling")
            } else {
                ("matrix", "Benchmark matrix")
            };
            let dir = common.out.join(format!("{date}-{suffix}"));
            let title = format!("{title} — {date}");
            (
                plans(&names, &common)?,
                common,
                Layout::Matrix { dir, title },
            )
        }
        Verb::Soak { hours, common } => {
            let mut plan = common.apply(Plan::named("soak").context("soak plan")?);
            plan.duration = Duration::from_secs_f64(hours * 3600.0);
            let common = Common {
                target: Which::Broker,
                ..common
            };
            (vec![plan], common, Layout::PerScenario)
        }
    };
    let cluster = if common.database_url.is_none() {
        let conf = common.pg_conf.exists().then_some(common.pg_conf.as_path());
        Some(Cluster::start(conf).await?)
    } else {
        None
    };
    let date = time::OffsetDateTime::now_utc().date();
    let out = common.out.clone();
    let batch = Batch {
        plans,
        drivers: common.drivers(),
        options: SystemOptions {
            url: common.url.clone(),
            database_url: common.database_url.clone(),
            broker_pid: common.broker_pid,
            regina_bin: common.regina_bin.clone(),
            broker_env: common.broker_env.clone(),
        },
        cluster: cluster.as_ref(),
        telemetry: !common.no_telemetry,
        sql_connections: common.raw_connections,
        dir_of: match &layout {
            Layout::PerScenario => Box::new(move |p: &Plan| out.join(format!("{date}-{}", p.name))),
            Layout::Matrix { dir, .. } => {
                let dir = dir.clone();
                Box::new(move |p: &Plan| dir.join(&p.name))
            }
        },
    };
    let result = async {
        let outcome = runner::run(&batch).await?;
        if let Layout::Matrix { dir, title } = &layout {
            report::matrix::write(dir, title, &outcome.rows)?;
            eprintln!(
                "regina-bench: matrix summary in {}",
                dir.join("README.md").display()
            );
        }
        if sweep && !outcome.points.is_empty() {
            let dir = common.out.join(format!("{date}-hi-part-sweep"));
            report::write_scaling(&dir, &outcome.points)?;
            eprintln!("regina-bench: scaling curve in {}", dir.display());
        }
        Ok::<_, anyhow::Error>(outcome.passed)
    }
    .await;
    if let (Some(cluster), false) = (&cluster, common.keep_db) {
        cluster.stop()?;
    }
    result
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Verb};
    use crate::scenario::Plan;

    /// The run options as `regina-bench run` parses them from `args`.
    fn common(args: &[&str]) -> super::Common {
        let cli = Cli::try_parse_from(["regina-bench", "run", "app"].iter().chain(args))
            .expect("the arguments parse");
        match cli.verb {
            Verb::Run { common, .. } => common,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn consumers_and_pop_shape_override_every_group_of_a_scenario() {
        let plan = Plan::named("app").expect("plan");
        assert!(plan.groups.len() > 1, "app has several groups");
        let set = common(&[
            "--consumers",
            "1",
            "--pop-batch",
            "1",
            "--pop-partitions",
            "3",
        ])
        .apply(plan.clone());
        assert!(
            set.groups.iter().all(|g| g.consumers == 1),
            "{:?}",
            set.groups
        );
        assert_eq!((set.pop_batch, set.pop_partitions), (1, 3));
        // Without the options the scenario keeps its own.
        let kept = common(&[]).apply(plan.clone());
        let consumers = |p: &Plan| p.groups.iter().map(|g| g.consumers).collect::<Vec<_>>();
        assert_eq!(consumers(&kept), consumers(&plan));
        assert_eq!(kept.pop_batch, plan.pop_batch);
    }
}
