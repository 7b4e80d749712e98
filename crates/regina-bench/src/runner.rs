//! Runs a list of scenarios against the chosen targets, one fresh system per run, and writes
//! each scenario's reports; for the matrix, also the summary of ratios over all of them.

use std::path::{Path, PathBuf};

use regina_bench::model::{RunReport, ScalingPoint};
use regina_bench::report::{self, matrix::MatrixRow};

use crate::scenario::{self, Plan};
use crate::system::{Cluster, System, SystemOptions};
use crate::target::TargetKind;

/// A system a run drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The broker over HTTP.
    Broker,
    /// Regina's SQL functions called directly.
    Raw,
    /// Plain inserts of the same rows (push scenarios only).
    Ceiling,
}

/// Why the ceiling does not run a scenario that pops.
pub const CEILING_NA: &str = "ceiling: n/a (it models push and retention only; this scenario pops, and a pop's physical floor depends on the queue semantics measured here)";

/// Where and how the runs go.
pub struct Batch<'a> {
    /// The scenarios, in order.
    pub plans: Vec<Plan>,
    /// The targets, in order (the ceiling is skipped where it does not apply).
    pub drivers: Vec<Driver>,
    /// How to reach or build the system.
    pub options: SystemOptions,
    /// The harness's cluster (None with `--database-url`).
    pub cluster: Option<&'a Cluster>,
    /// Resource telemetry.
    pub telemetry: bool,
    /// PostgreSQL connections of the SQL targets, at most.
    pub sql_connections: usize,
    /// Result directory of each scenario.
    pub dir_of: Box<dyn Fn(&Plan) -> PathBuf + 'a>,
}

/// What a batch produced.
pub struct Outcome {
    /// Whether every check passed.
    pub passed: bool,
    /// The matrix rows, one per scenario.
    pub rows: Vec<MatrixRow>,
    /// The partition-scaling points (broker runs of `hi-part-*`).
    pub points: Vec<ScalingPoint>,
}

fn options_for(base: &SystemOptions, plan: &Plan) -> SystemOptions {
    let mut options = base.clone();
    if let Some(retention) = plan.retention {
        // The spawned broker runs retention as often as the scenario wants, unless told otherwise.
        for (key, value) in [
            (
                "RETENTION_INTERVAL",
                retention.interval.as_millis().to_string(),
            ),
            ("RETENTION_BATCH_SIZE", retention.batch.to_string()),
        ] {
            if !options.broker_env.iter().any(|(k, _)| k == key) {
                options.broker_env.push((key.to_owned(), value));
            }
        }
    }
    options
}

fn kind_of(driver: Driver, system: &System, plan: &Plan, connections: usize) -> TargetKind {
    let consumers: usize = plan.groups.iter().map(|g| g.consumers).sum();
    let n = connections.min(plan.producers.max(consumers)).max(1);
    match (driver, &system.url) {
        (Driver::Broker, Some(url)) => TargetKind::Broker(url.clone()),
        (Driver::Ceiling, _) => TargetKind::Ceiling(system.database_url.clone(), n),
        _ => TargetKind::Raw(system.database_url.clone(), n),
    }
}

/// Runs every plan on every driver that applies.
///
/// # Errors
/// A system cannot be started, a run's setup fails, or a report cannot be written.
pub async fn run(batch: &Batch<'_>) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome {
        passed: true,
        rows: Vec::new(),
        points: Vec::new(),
    };
    for plan in &batch.plans {
        let dir = (batch.dir_of)(plan);
        let mut runs: Vec<RunReport> = Vec::new();
        let ceiling_na = batch.drivers.contains(&Driver::Ceiling) && !plan.ceiling_applies();
        for &driver in &batch.drivers {
            if driver == Driver::Ceiling && ceiling_na {
                continue;
            }
            let options = options_for(&batch.options, plan);
            let system = System::start(&options, batch.cluster, driver == Driver::Broker).await?;
            let kind = kind_of(driver, &system, plan, batch.sql_connections);
            eprintln!(
                "regina-bench: {} on {} for {:.0} s",
                plan.name,
                kind.name(),
                plan.duration.as_secs_f64()
            );
            let result = scenario::run(plan, &kind, &system, batch.telemetry).await;
            system.stop().await;
            let mut report = result?;
            if ceiling_na {
                report.notes.push(CEILING_NA.to_owned());
            }
            print_line(&report);
            outcome.passed &= report.verification.passed;
            report::write_run(&dir, &report)?;
            if plan.name.starts_with("hi-part-") && driver == Driver::Broker {
                outcome.points.push(scaling_point(plan, &report));
            }
            runs.push(report);
        }
        report::write_summary(&dir, &runs)?;
        let row = MatrixRow::of(&plan.name, &plan.description, &dir_name(&dir), &runs);
        if !row.ratios.is_empty() {
            println!("{}", row.ratio_line());
        }
        outcome.rows.push(row);
        eprintln!("regina-bench: report in {}", dir.display());
    }
    Ok(outcome)
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn scaling_point(plan: &Plan, report: &RunReport) -> ScalingPoint {
    ScalingPoint {
        partitions: plan.partitions as u64,
        push_rate: report.summary.push_rate,
        deliver_rate: report.summary.deliver_rate,
        push_p99_ms: report
            .latency
            .iter()
            .find(|l| l.name == "push")
            .map_or(0.0, |l| l.p99_ms),
        deliver_ratio_to_first: None,
    }
}

fn latency(r: &RunReport, name: &str, label: &str) -> String {
    r.latency
        .iter()
        .find(|l| l.name == name)
        .map(|l| {
            format!(
                ", {label} p50 {:.1} ms p99 {:.1} ms p99.9 {:.1} ms",
                l.p50_ms, l.p99_ms, l.p999_ms
            )
        })
        .unwrap_or_default()
}

/// One line per run on stdout.
pub fn print_line(r: &RunReport) {
    let v = &r.verification;
    let s = &r.summary;
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
    let mut costs = String::new();
    if let Some(us) = s.pg_cpu_us_per_pushed {
        costs.push_str(&format!(", pg cpu {us:.1} µs/msg pushed"));
    }
    if let Some(ms) = s.pg_cpu_ms_per_push_call {
        costs.push_str(&format!(" {ms:.2} ms/push call"));
    }
    if let Some(us) = s.pg_cpu_us_per_delivered {
        costs.push_str(&format!(", pg cpu {us:.1} µs/msg delivered"));
    }
    if let (Some(ratio), Some(kept)) = (s.delivered_to_pushed, s.kept_pace) {
        costs.push_str(&format!(
            ", consumers {} ({:.2} of pushed)",
            if kept { "kept pace" } else { "fell behind" },
            ratio
        ));
    }
    if let Some(deleted) = s.retention_deleted {
        costs.push_str(&format!(", retention deleted {deleted}"));
    }
    println!(
        "{} {}: pushed {:.0} msg/s, delivered {:.0} msg/s{}{}{resources}{costs}; whole run: pushed {}, delivered {}; check: pushed {}, delivered {:?}, lost {}, out-of-order {}, duplicates {} -> {}",
        r.scenario,
        r.target,
        s.push_rate,
        s.deliver_rate,
        latency(r, "push", "push"),
        latency(r, "e2e", "e2e"),
        r.totals.pushed,
        r.totals.delivered,
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
