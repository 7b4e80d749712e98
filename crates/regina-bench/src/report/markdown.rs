//! The Markdown of a result directory (`README.md`) and of a scaling sweep (`scaling.md`).
//!
//! Tables put one run per column (usually `broker`, `raw` and, for push scenarios, `ceiling`), so
//! the figures of the targets sit side by side, followed by the ratio columns.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::format::{self, cell};
use crate::model::{RunReport, ScalingPoint, TableStats, TelemetryReport};

/// One row of a per-run table: a label, one cell per run, and one cell per ratio column.
struct Row {
    label: String,
    cells: Vec<String>,
    ratios: Vec<String>,
}

/// A ratio column: its header (`broker / raw`) and the indices of the two runs.
type Pair = (String, usize, usize);

/// A Markdown table of `rows`, one column per run, then one per ratio pair.
fn table(out: &mut String, first: &str, headers: &[String], pairs: &[Pair], rows: &[Row]) {
    let mut line = format!("| {first} |");
    for h in headers {
        let _ = write!(line, " {} |", cell(h));
    }
    for (h, _, _) in pairs {
        let _ = write!(line, " {h} |");
    }
    out.push_str(&line);
    out.push('\n');
    out.push_str("|---|");
    for _ in headers.iter().map(|_| ()).chain(pairs.iter().map(|_| ())) {
        out.push_str("---:|");
    }
    out.push('\n');
    for row in rows {
        let _ = write!(out, "| {} |", cell(&row.label));
        for c in &row.cells {
            let _ = write!(out, " {} |", cell(c));
        }
        for i in 0..pairs.len() {
            let _ = write!(out, " {} |", row.ratios.get(i).map_or("", String::as_str));
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Column headers: the target, numbered when a target ran more than once.
fn headers(runs: &[RunReport]) -> Vec<String> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| {
            let same = runs.iter().filter(|o| o.target == r.target).count();
            if same > 1 {
                let n = runs[..=i].iter().filter(|o| o.target == r.target).count();
                format!("{} ({n})", r.target)
            } else {
                r.target.clone()
            }
        })
        .collect()
}

fn latency_of(run: &RunReport, name: &str) -> Option<(f64, f64, f64)> {
    run.latency
        .iter()
        .find(|l| l.name == name && l.count > 0)
        .map(|l| (l.p50_ms, l.p99_ms, l.p999_ms))
}

fn per_sec(n: u64, run: &RunReport) -> f64 {
    if run.duration_secs > 0.0 {
        n as f64 / run.duration_secs
    } else {
        0.0
    }
}

/// Key figures of every run; `pairs` are the ratio columns.
fn key_figures(runs: &[RunReport], pairs: &[Pair]) -> Vec<Row> {
    type Figure = (f64, String);
    let mut rows = Vec::new();
    let mut add = |label: &str, ratio: bool, f: &dyn Fn(&RunReport) -> Option<Figure>| {
        let values: Vec<Option<Figure>> = runs.iter().map(f).collect();
        // A figure no run has (e.g. end-to-end latency of a push-only scenario) gets no row.
        if values.iter().all(Option::is_none) {
            return;
        }
        let ratios = pairs
            .iter()
            .map(|(_, a, b)| {
                let (Some(x), Some(y)) = (values[*a].as_ref(), values[*b].as_ref()) else {
                    return String::new();
                };
                if ratio && y.0 > 0.0 {
                    format::ratio(x.0 / y.0)
                } else {
                    String::new()
                }
            })
            .collect();
        rows.push(Row {
            label: label.to_owned(),
            cells: values
                .into_iter()
                .map(|v| v.map_or_else(|| "–".to_owned(), |v| v.1))
                .collect(),
            ratios,
        });
    };
    let tel = |r: &RunReport| r.telemetry.clone();
    add("measured", false, &|r| {
        Some((r.duration_secs, format::secs(r.duration_secs)))
    });
    add("push", true, &|r| {
        Some((r.summary.push_rate, format::rate(r.summary.push_rate)))
    });
    add("push requests", true, &|r| {
        let v = per_sec(r.summary.push_requests, r);
        Some((v, format::req_rate(v)))
    });
    add("delivered", true, &|r| {
        Some((r.summary.deliver_rate, format::rate(r.summary.deliver_rate)))
    });
    add("acked", true, &|r| {
        let v = per_sec(r.summary.acked, r);
        Some((v, format::rate(v)))
    });
    add("messages pushed", false, &|r| {
        Some((r.summary.pushed as f64, format::thousands(r.summary.pushed)))
    });
    add("errors", false, &|r| {
        Some((r.summary.errors as f64, format::thousands(r.summary.errors)))
    });
    add("backlog at end", false, &|r| {
        Some((
            r.summary.backlog_at_end as f64,
            format::thousands(r.summary.backlog_at_end),
        ))
    });
    for (name, label) in [
        ("push", "push latency p50 / p99 / p99.9"),
        ("e2e", "end-to-end p50 / p99 / p99.9 (producing window)"),
    ] {
        add(label, false, &|r| {
            latency_of(r, name).map(|(p50, p99, p999)| {
                (
                    p99,
                    format!(
                        "{} / {} / {}",
                        format::ms(p50),
                        format::ms(p99),
                        format::ms(p999)
                    ),
                )
            })
        });
    }
    add("consumers kept pace", false, &|r| {
        let ratio = r.summary.delivered_to_pushed?;
        let kept = r.summary.kept_pace?;
        Some((
            ratio,
            format!(
                "{} ({} of pushed)",
                if kept { "yes" } else { "**no**" },
                format::percent(ratio)
            ),
        ))
    });
    add("PostgreSQL CPU per pushed message", true, &|r| {
        r.summary
            .pg_cpu_us_per_pushed
            .map(|us| (us, format!("{us:.1} µs")))
    });
    add("PostgreSQL CPU per push call", true, &|r| {
        r.summary
            .pg_cpu_ms_per_push_call
            .map(|ms| (ms, format!("{ms:.3} ms")))
    });
    add("PostgreSQL CPU per delivered message", true, &|r| {
        r.summary
            .pg_cpu_us_per_delivered
            .map(|us| (us, format!("{us:.1} µs")))
    });
    add("broker CPU per pushed message", false, &|r| {
        r.summary
            .broker_cpu_us_per_pushed
            .map(|us| (us, format!("{us:.1} µs")))
    });
    add("retention deleted", false, &|r| {
        r.summary.retention_deleted.map(|n| {
            (
                n as f64,
                format!("{} ({})", format::thousands(n), format::rate(per_sec(n, r))),
            )
        })
    });
    add("whole run: pushed / delivered", false, &|r| {
        Some((
            r.totals.pushed as f64,
            format!(
                "{} / {}",
                format::thousands(r.totals.pushed),
                format::thousands(r.totals.delivered)
            ),
        ))
    });
    add("broker CPU", false, &|r| {
        tel(r)?
            .broker_cpu_secs
            .map(|s| (s, format!("{} ({})", format::secs(s), cores(s, r))))
    });
    add("PostgreSQL CPU", false, &|r| {
        let s = tel(r)?.pg_cpu_secs;
        Some((s, format!("{} ({})", format::secs(s), cores(s, r))))
    });
    add("broker / PostgreSQL CPU", false, &|r| {
        tel(r)?.broker_to_pg_cpu.map(|x| (x, format::ratio(x)))
    });
    add("harness CPU", false, &|r| {
        let s = tel(r)?.harness_cpu_secs;
        Some((s, format::secs(s)))
    });
    add("broker RSS start → peak", false, &|r| {
        let t = tel(r)?;
        let peak = t.broker_rss_peak_bytes? as f64;
        let start = t.broker_rss_start_bytes.map_or(0.0, |b| b as f64);
        Some((
            peak,
            format!("{} → {}", format::bytes(start), format::bytes(peak)),
        ))
    });
    add("WAL", false, &|r| {
        let t = tel(r)?;
        let v = per_sec(t.wal_bytes, r);
        Some((
            v,
            format!(
                "{} ({})",
                format::byte_rate(v),
                format::bytes(t.wal_bytes as f64)
            ),
        ))
    });
    add("checkpoints requested / timed", false, &|r| {
        let t = tel(r)?;
        Some((
            t.checkpoints_req as f64,
            format!("{} / {}", t.checkpoints_req, t.checkpoints_timed),
        ))
    });
    add("database growth", false, &|r| {
        let t = tel(r)?;
        let growth = t.db_size_after_bytes as f64 - t.db_size_before_bytes as f64;
        Some((
            growth,
            format!(
                "{} (to {})",
                format::bytes(growth),
                format::bytes(t.db_size_after_bytes as f64)
            ),
        ))
    });
    add("delivery check", false, &|r| {
        Some((0.0, verdict(r).to_owned()))
    });
    rows
}

/// CPU seconds as an average number of busy cores over the run: `1.4 cores`.
fn cores(cpu_secs: f64, run: &RunReport) -> String {
    if run.duration_secs > 0.0 {
        format!("{:.2} cores", cpu_secs / run.duration_secs)
    } else {
        "–".to_owned()
    }
}

fn verdict(run: &RunReport) -> &'static str {
    if run.verification.passed {
        "PASS"
    } else {
        "**FAIL**"
    }
}

/// The ratio columns: broker ÷ raw, broker ÷ ceiling, raw ÷ ceiling, where both runs exist.
fn ratio_pairs(runs: &[RunReport]) -> Vec<Pair> {
    super::matrix::RATIOS
        .iter()
        .filter_map(|(a, b)| {
            let x = runs.iter().position(|r| r.target == *a)?;
            let y = runs.iter().position(|r| r.target == *b)?;
            Some((format!("{a} / {b}"), x, y))
        })
        .collect()
}

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
