//! The Markdown of a result directory (`README.md`) and of a scaling sweep (`scaling.md`).
//!
//! Tables put one run per column (usually `broker`, `raw` and, for push scenarios, `ceiling`), so
//! the figures of the targets sit side by side, followed by the ratio columns.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::figures::{headers, key_figures, ratio_pairs, table, verdict, Row};
use super::format::{self, cell};
use crate::model::{RunReport, ScalingPoint, TableStats, TelemetryReport};

fn environment(out: &mut String, run: &RunReport) {
    let env = &run.environment;
    out.push_str("## Environment\n\n");
    let _ = writeln!(
        out,
        "- CPU: {} ({} logical CPUs), memory {}",
        if env.cpu_model.is_empty() {
            "unknown"
        } else {
            &env.cpu_model
        },
        env.cpus,
        format::bytes(env.memory_bytes as f64)
    );
    if !env.kernel.is_empty() {
        let _ = writeln!(out, "- Kernel: {}", env.kernel);
    }
    if !env.postgres_version.is_empty() {
        // `PostgreSQL 15.6 on x86_64-pc-linux-gnu, compiled by …`: the part before the compiler.
        let short = env
            .postgres_version
            .split(", compiled by")
            .next()
            .unwrap_or(&env.postgres_version);
        let _ = writeln!(out, "- {short}");
    }
    if !env.regina_version.is_empty() {
        let _ = writeln!(out, "- Regina {}", env.regina_version);
    }
    out.push('\n');
    if !env.postgres_settings.is_empty() {
        out.push_str("PostgreSQL settings:\n\n");
        settings_table(out, &env.postgres_settings);
    }
}

fn settings_table(out: &mut String, settings: &BTreeMap<String, String>) {
    out.push_str("| setting | value |\n|---|---|\n");
    for (k, v) in settings {
        let _ = writeln!(out, "| {} | {} |", cell(k), cell(v));
    }
    out.push('\n');
}

fn latency_tables(out: &mut String, runs: &[RunReport], headers: &[String]) {
    if runs.iter().all(|r| r.latency.is_empty()) {
        return;
    }
    out.push_str("## Latency (whole run)\n\n");
    for (run, header) in runs.iter().zip(headers) {
        if run.latency.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{header}:\n");
        out.push_str("| series | count | mean | p50 | p90 | p99 | p99.9 | max |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for l in &run.latency {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&l.name),
                format::thousands(l.count),
                format::ms(l.mean_ms),
                format::ms(l.p50_ms),
                format::ms(l.p90_ms),
                format::ms(l.p99_ms),
                format::ms(l.p999_ms),
                format::ms(l.max_ms)
            );
        }
        out.push('\n');
    }
}

fn verification(out: &mut String, runs: &[RunReport], headers: &[String]) {
    out.push_str("## Delivery check\n\n");
    let groups: BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r.verification.delivered_per_group.keys())
        .collect();
    let mut rows = vec![Row {
        ratios: Vec::new(),
        label: "verdict".to_owned(),
        cells: runs
            .iter()
            .map(|r| {
                if r.verification.checked {
                    verdict(r).to_owned()
                } else {
                    format!("{} (database count only)", verdict(r))
                }
            })
            .collect(),
    }];
    let mut count = |label: String, f: &dyn Fn(&RunReport) -> u64| {
        rows.push(Row {
            label,
            cells: runs.iter().map(|r| format::thousands(f(r))).collect(),
            ratios: Vec::new(),
        });
    };
    count("pushed".to_owned(), &|r| r.verification.pushed);
    for g in groups {
        count(format!("delivered to {g}"), &|r| {
            r.verification
                .delivered_per_group
                .get(g)
                .copied()
                .unwrap_or(0)
        });
    }
    count("lost".to_owned(), &|r| r.verification.lost);
    count("out of order".to_owned(), &|r| r.verification.out_of_order);
    count("duplicates".to_owned(), &|r| r.verification.duplicates);
    count("redelivered (injected failures)".to_owned(), &|r| {
        r.verification.redelivered
    });
    count("dead-lettered".to_owned(), &|r| {
        r.verification.dead_lettered
    });
    table(out, "", headers, &[], &rows);
    for (run, header) in runs.iter().zip(headers) {
        for failure in &run.verification.failures {
            let _ = writeln!(out, "- {header}: {failure}");
        }
    }
    if runs.iter().any(|r| !r.verification.failures.is_empty()) {
        out.push('\n');
    }
}

/// `a → b`, or just `a` when equal.
fn change(a: String, b: String) -> String {
    if a == b {
        a
    } else {
        format!("{a} → {b}")
    }
}

fn hot_tables(out: &mut String, runs: &[RunReport], headers: &[String]) {
    let with_tables: Vec<(&TelemetryReport, &String)> = runs
        .iter()
        .zip(headers)
        .filter_map(|(r, h)| Some((r.telemetry.as_ref()?, h)))
        .filter(|(t, _)| !t.tables_after.is_empty())
        .collect();
    if with_tables.is_empty() {
        return;
    }
    out.push_str("## Hot tables (before → after)\n\n");
    out.push_str(
        "Cumulative statistics from `pg_stat_user_tables`; \"updates in run\" and its HOT share \
         are the difference. Tables without any change are left out.\n\n",
    );
    for (t, header) in with_tables {
        let _ = writeln!(out, "{header}:\n");
        out.push_str(
            "| table | live tuples | dead tuples | HOT ratio | updates in run (HOT) | autovacuums | size |\n\
             |---|---:|---:|---:|---:|---:|---:|\n",
        );
        let before: BTreeMap<&str, &TableStats> = t
            .tables_before
            .iter()
            .map(|s| (s.table.as_str(), s))
            .collect();
        let empty = TableStats::default();
        let mut unchanged = 0;
        for a in &t.tables_after {
            let b = before.get(a.table.as_str()).copied().unwrap_or(&empty);
            if a.live_tuples == b.live_tuples
                && a.dead_tuples == b.dead_tuples
                && a.updates == b.updates
                && a.autovacuums == b.autovacuums
                && a.total_bytes == b.total_bytes
            {
                unchanged += 1;
                continue;
            }
            let updates = a.updates - b.updates;
            let hot = a.hot_updates - b.hot_updates;
            let run_hot = if updates > 0 {
                format!(
                    "{} ({})",
                    format::thousands_signed(updates),
                    format::percent(hot as f64 / updates as f64)
                )
            } else {
                "0".to_owned()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&a.table),
                change(
                    format::thousands_signed(b.live_tuples),
                    format::thousands_signed(a.live_tuples)
                ),
                change(
                    format::thousands_signed(b.dead_tuples),
                    format::thousands_signed(a.dead_tuples)
                ),
                change(format::percent(b.hot_ratio), format::percent(a.hot_ratio)),
                run_hot,
                format::thousands_signed(a.autovacuums - b.autovacuums),
                change(
                    format::bytes(b.total_bytes as f64),
                    format::bytes(a.total_bytes as f64)
                ),
            );
        }
        out.push('\n');
        if unchanged > 0 {
            let _ = writeln!(
                out,
                "({unchanged} unchanged table{} left out.)\n",
                if unchanged == 1 { "" } else { "s" }
            );
        }
    }
}

fn wait_classes(out: &mut String, runs: &[RunReport], headers: &[String]) {
    let classes: BTreeSet<&String> = runs
        .iter()
        .filter_map(|r| r.telemetry.as_ref())
        .flat_map(|t| t.wait_totals.keys())
        .collect();
    if classes.is_empty() {
        return;
    }
    out.push_str("## Active sessions by wait class\n\n");
    out.push_str(
        "Average number of active sessions of the benchmark database per `pg_stat_activity` \
         snapshot (one per second; `CPU` = not waiting), and the class's share.\n\n",
    );
    let mut ordered: Vec<&String> = super::charts::WAIT_CLASSES
        .iter()
        .filter_map(|(c, _)| classes.iter().copied().find(|k| k.as_str() == *c))
        .collect();
    let others: Vec<&String> = classes
        .iter()
        .copied()
        .filter(|c| !ordered.contains(c))
        .collect();
    ordered.extend(others);
    let rows: Vec<Row> = ordered
        .iter()
        .map(|class| Row {
            label: (*class).clone(),
            cells: runs
                .iter()
                .map(|r| {
                    let Some(t) = &r.telemetry else {
                        return "–".to_owned();
                    };
                    let total: u64 = t.wait_totals.values().sum();
                    let n = t.wait_totals.get(*class).copied().unwrap_or(0);
                    if t.samples.is_empty() || total == 0 {
                        return "0".to_owned();
                    }
                    format!(
                        "{:.2} ({})",
                        n as f64 / t.samples.len() as f64,
                        format::percent(n as f64 / total as f64)
                    )
                })
                .collect(),
            ratios: Vec::new(),
        })
        .collect();
    table(out, "wait class", headers, &[], &rows);
}

fn statements(out: &mut String, runs: &[RunReport], headers: &[String]) {
    let with: Vec<(&TelemetryReport, &String)> = runs
        .iter()
        .zip(headers)
        .filter_map(|(r, h)| Some((r.telemetry.as_ref()?, h)))
        .filter(|(t, _)| !t.top_statements.is_empty())
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str("## Top statements (pg_stat_statements, during the run)\n\n");
    for (t, header) in with {
        let _ = writeln!(out, "{header}:\n");
        out.push_str("| calls | total | mean | rows | query |\n|---:|---:|---:|---:|---|\n");
        for s in &t.top_statements {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | `{}` |",
                format::thousands_signed(s.calls),
                format::ms(s.total_ms),
                format::ms(s.mean_ms),
                format::thousands_signed(s.rows),
                cell(&s.query.replace('`', "'"))
            );
        }
        out.push('\n');
    }
}

/// `README.md` of a result directory. `charts` lists, per run, the chart files that exist
/// (`(title, file name)`).
pub fn summary(runs: &[RunReport], charts: &[Vec<(String, String)>]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        out.push_str("# Benchmark results\n\nNo runs.\n");
        return out;
    };
    let date = first.started_at.get(..10).unwrap_or(&first.started_at);
    let _ = writeln!(out, "# {} — {}\n", first.scenario, date);
    if let Some(description) = first.settings.get("description").and_then(|d| d.as_str()) {
        let _ = writeln!(out, "{description}\n");
    }
    let env = &first.environment;
    let postgres = env
        .postgres_version
        .split(" on ")
        .next()
        .unwrap_or(&env.postgres_version);
    let _ = writeln!(
        out,
        "{} logical CPUs ({}), {} memory; {}; Regina {}. Details under [Environment](#environment).\n",
        env.cpus,
        if env.cpu_model.is_empty() { "unknown CPU" } else { &env.cpu_model },
        format::bytes(env.memory_bytes as f64),
        if postgres.is_empty() { "PostgreSQL version unknown" } else { postgres },
        if env.regina_version.is_empty() { "(version unknown)" } else { &env.regina_version },
    );
    let headers = headers(runs);
    for (run, header) in runs.iter().zip(&headers) {
        let _ = writeln!(
            out,
            "- {header}: started {}, measured {}, delivery check {}",
            run.started_at,
            format::secs(run.duration_secs),
            verdict(run)
        );
    }
    out.push('\n');

    out.push_str("## Results\n\n");
    let pairs = ratio_pairs(runs);
    if !pairs.is_empty() {
        out.push_str(
            "`raw` calls the broker's SQL functions directly; `ceiling` stores the same rows with \
             plain inserts into copies of Regina's tables, without queue logic (push scenarios \
             only). Ratios divide the figures of runs of this invocation.\n\n",
        );
    }
    table(&mut out, "", &headers, &pairs, &key_figures(runs, &pairs));
    out.push_str(
        "CPU in seconds over the measured interval (in brackets: average busy cores); \
         sizes in decimal units (1 MB = 10^6 bytes).\n\n",
    );

    latency_tables(&mut out, runs, &headers);
    verification(&mut out, runs, &headers);
    hot_tables(&mut out, runs, &headers);
    wait_classes(&mut out, runs, &headers);
    statements(&mut out, runs, &headers);

    if runs.iter().any(|r| !r.notes.is_empty()) {
        out.push_str("## Notes\n\n");
        for (run, header) in runs.iter().zip(&headers) {
            for note in &run.notes {
                let _ = writeln!(out, "- {header}: {note}");
            }
        }
        out.push('\n');
    }

    if charts.iter().any(|c| !c.is_empty()) {
        out.push_str("## Charts\n\n");
        for (header, files) in headers.iter().zip(charts) {
            if files.is_empty() {
                continue;
            }
            let _ = writeln!(out, "### {header}\n");
            for (title, file) in files {
                let _ = writeln!(out, "{title} ([{file}]({file})):\n\n![{title}]({file})\n");
            }
        }
    }

    environment(&mut out, first);
    for (run, header) in runs.iter().zip(&headers) {
        if !run.environment.broker_settings.is_empty() {
            let _ = writeln!(out, "Broker settings ({header}):\n");
            settings_table(&mut out, &run.environment.broker_settings);
        }
    }
    out.push_str("## Scenario settings\n\n");
    if runs.iter().all(|r| r.settings == first.settings) {
        let json = serde_json::to_string_pretty(&first.settings).unwrap_or_default();
        let _ = writeln!(out, "```json\n{json}\n```\n");
    } else {
        for (run, header) in runs.iter().zip(&headers) {
            let json = serde_json::to_string_pretty(&run.settings).unwrap_or_default();
            let _ = writeln!(out, "{header}:\n\n```json\n{json}\n```\n");
        }
    }
    out
}

/// `scaling.md`: the sweep as a table.
pub fn scaling(points: &[ScalingPoint], chart: Option<&str>) -> String {
    let mut out = String::from("# Partition scaling\n\n");
    if points.is_empty() {
        out.push_str("No points.\n");
        return out;
    }
    let mut sorted: Vec<&ScalingPoint> = points.iter().collect();
    sorted.sort_by_key(|p| p.partitions);
    let _ = write!(
        out,
        "| partitions | push | delivery | delivery / {} partitions | push p99 |\n|---:|---:|---:|---:|---:|\n",
        format::thousands(sorted[0].partitions)
    );
    for p in sorted {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            format::thousands(p.partitions),
            format::rate(p.push_rate),
            format::rate(p.deliver_rate),
            p.deliver_ratio_to_first
                .map_or_else(|| "–".to_owned(), format::ratio),
            format::ms(p.push_p99_ms)
        );
    }
    if let Some(file) = chart {
        let _ = write!(out, "\n![partition scaling]({file})\n");
    }
    out
}
