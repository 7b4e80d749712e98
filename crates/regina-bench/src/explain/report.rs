//! The explain report: `README.md` (fixture, stats refresh, one line per statement) and
//! `plans/<name>.txt` (the statement, its times, and the plans `auto_explain` recorded).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use super::session::Plan;
use super::{ExplainOptions, Measured, Preparation, PLAN_MIN_MS};

/// Statements slower than this (median) are flagged in the summary, milliseconds.
const SLOW_MS: f64 = 100.0;
/// Plans written per statement at most (the slowest).
const PLANS_MAX: usize = 12;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(runs: &[Duration]) -> Duration {
    let mut sorted = runs.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// Writes the report into `dir`.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write(
    dir: &Path,
    options: &ExplainOptions,
    preparation: &Preparation,
    measured: &[Measured],
) -> anyhow::Result<()> {
    let plans_dir = dir.join("plans");
    std::fs::create_dir_all(&plans_dir)
        .with_context(|| format!("create {}", plans_dir.display()))?;
    std::fs::write(
        dir.join("README.md"),
        summary(options, preparation, measured),
    )?;
    for m in measured {
        std::fs::write(
            plans_dir.join(format!("{}.txt", m.query.name)),
            plans_file(m),
        )?;
    }
    let mut refresh = String::from("# An incremental stats refresh (begin, batches, end)\n\n");
    push_plans(&mut refresh, &preparation.refresh_plans);
    std::fs::write(plans_dir.join("stats-refresh.txt"), refresh)?;
    Ok(())
}

fn summary(options: &ExplainOptions, preparation: &Preparation, measured: &[Measured]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# EXPLAIN of the admin, status and analytics statements\n\n\
         `regina-bench explain --queues {} --partitions {} --messages {} --dead-letters {} \
         --runs {}`: a fixture built with set-based SQL on the benchmark cluster \
         (`bench/postgresql.conf`), then each statement once, {} times timed (client wall time, \
         milliseconds), and once more under `auto_explain` (ANALYZE, BUFFERS, nested statements \
         of at least {PLAN_MIN_MS} ms; plans in `plans/`). Statements that change data run inside \
         a rolled-back transaction.\n",
        options.queues,
        options.partitions,
        options.messages,
        options.dead_letters,
        options.runs,
        options.runs
    );
    out.push_str("## Fixture\n\n| table | rows |\n|---|---:|\n");
    for (table, rows) in &preparation.sizes {
        let _ = writeln!(out, "| {table} | {rows} |");
    }
    out.push_str("\n| build step | seconds |\n|---|---:|\n");
    for (step, took) in &preparation.steps {
        let _ = writeln!(out, "| {step} | {:.1} |", took.as_secs_f64());
    }
    out.push_str(
        "\n## Stats refresh\n\n| pass | seconds | partitions recounted |\n|---|---:|---:|\n",
    );
    for (pass, took, recounted) in &preparation.refreshes {
        let _ = writeln!(out, "| {pass} | {:.2} | {recounted} |", took.as_secs_f64());
    }
    let _ = writeln!(
        out,
        "\n## Statements\n\nmedian of {} runs; flagged when over {SLOW_MS} ms.\n\n\
         | statement | endpoint | first ms | median ms | max ms | slowest inner statement ms | |\n\
         |---|---|---:|---:|---:|---:|---|",
        options.runs
    );
    for m in measured {
        let median = ms(median(&m.runs));
        let max = m.runs.iter().copied().max().map_or(0.0, ms);
        // The statement sent is the slowest plan; the next one is the slowest inside it.
        let inner = m.plans.get(1).map_or(0.0, |p| p.duration_ms);
        let flag = if median > SLOW_MS { "slow" } else { "" };
        let _ = writeln!(
            out,
            "| [{}](plans/{}.txt) | `{}` | {:.1} | {median:.1} | {max:.1} | {inner:.1} | {flag} |",
            m.query.name,
            m.query.name,
            m.query.endpoint,
            ms(m.first)
        );
    }
    out
}

fn plans_file(m: &Measured) -> String {
    let mut out = format!(
        "# {} ({})\n\n{}\n\n",
        m.query.name, m.query.endpoint, m.query.sql
    );
    let runs: Vec<String> = m.runs.iter().map(|d| format!("{:.1}", ms(*d))).collect();
    let _ = writeln!(
        out,
        "first run {:.1} ms; timed runs (ms): {}\n",
        ms(m.first),
        runs.join(", ")
    );
    push_plans(&mut out, &m.plans);
    out
}

fn push_plans(out: &mut String, plans: &[Plan]) {
    let _ = writeln!(
        out,
        "{} statement(s) of at least {PLAN_MIN_MS} ms; the {} slowest:\n",
        plans.len(),
        plans.len().min(PLANS_MAX)
    );
    for plan in plans.iter().take(PLANS_MAX) {
        let _ = writeln!(out, "---- {:.3} ms\n{}\n", plan.duration_ms, plan.text);
    }
}
