//! The key-figures table of a result directory's `README.md`: one column per run, then the ratio
//! columns (broker ÷ raw, broker ÷ ceiling, raw ÷ ceiling).

use std::fmt::Write as _;

use super::format::{self, cell};
use crate::model::RunReport;

/// One row of a per-run table: a label, one cell per run, and one cell per ratio column.
pub(super) struct Row {
    pub(super) label: String,
    pub(super) cells: Vec<String>,
    pub(super) ratios: Vec<String>,
}

/// A ratio column: its header (`broker / raw`) and the indices of the two runs.
pub(super) type Pair = (String, usize, usize);

/// A Markdown table of `rows`, one column per run, then one per ratio pair.
pub(super) fn table(
    out: &mut String,
    first: &str,
    headers: &[String],
    pairs: &[Pair],
    rows: &[Row],
) {
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
pub(super) fn headers(runs: &[RunReport]) -> Vec<String> {
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

type Figure = (f64, String);

/// Rows being built: one cell per run, ratios over `pairs`.
struct Figures<'a> {
    runs: &'a [RunReport],
    pairs: &'a [Pair],
    rows: Vec<Row>,
}

impl Figures<'_> {
    /// A row of `f` for every run; `ratio`: the ratio columns divide its values.
    fn add(&mut self, label: &str, ratio: bool, f: &dyn Fn(&RunReport) -> Option<Figure>) {
        let values: Vec<Option<Figure>> = self.runs.iter().map(f).collect();
        // A figure no run has (e.g. end-to-end latency of a push-only scenario) gets no row.
        if values.iter().all(Option::is_none) {
            return;
        }
        let ratios = self
            .pairs
            .iter()
            .map(
                |(_, a, b)| match (values[*a].as_ref(), values[*b].as_ref()) {
                    (Some(x), Some(y)) if ratio && y.0 > 0.0 => format::ratio(x.0 / y.0),
                    _ => String::new(),
                },
            )
            .collect();
        self.rows.push(Row {
            label: label.to_owned(),
            cells: values
                .into_iter()
                .map(|v| v.map_or_else(|| "–".to_owned(), |v| v.1))
                .collect(),
            ratios,
        });
    }
}

/// Key figures of every run; `pairs` are the ratio columns.
pub(super) fn key_figures(runs: &[RunReport], pairs: &[Pair]) -> Vec<Row> {
    let mut f = Figures {
        runs,
        pairs,
        rows: Vec::new(),
    };
    throughput(&mut f);
    latency_and_costs(&mut f);
    resources(&mut f);
    f.rows
}

/// Rates and counts of the measured interval.
fn throughput(f: &mut Figures<'_>) {
    f.add("measured", false, &|r| {
        Some((r.duration_secs, format::secs(r.duration_secs)))
    });
    f.add("push", true, &|r| {
        Some((r.summary.push_rate, format::rate(r.summary.push_rate)))
    });
    f.add("push requests", true, &|r| {
        let v = per_sec(r.summary.push_requests, r);
        Some((v, format::req_rate(v)))
    });
    f.add("delivered", true, &|r| {
        Some((r.summary.deliver_rate, format::rate(r.summary.deliver_rate)))
    });
    f.add("acked", true, &|r| {
        let v = per_sec(r.summary.acked, r);
        Some((v, format::rate(v)))
    });
    f.add("messages pushed", false, &|r| {
        Some((r.summary.pushed as f64, format::thousands(r.summary.pushed)))
    });
    f.add("errors", false, &|r| {
        Some((r.summary.errors as f64, format::thousands(r.summary.errors)))
    });
    f.add("backlog at end", false, &|r| {
        Some((
            r.summary.backlog_at_end as f64,
            format::thousands(r.summary.backlog_at_end),
        ))
    });
}

/// Latency percentiles, pace, and CPU per message and per call.
fn latency_and_costs(f: &mut Figures<'_>) {
    for (name, label) in [
        ("push", "push latency p50 / p99 / p99.9"),
        ("e2e", "end-to-end p50 / p99 / p99.9 (producing window)"),
    ] {
        f.add(label, false, &|r| {
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
    f.add("consumers kept pace", false, &|r| {
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
    f.add("PostgreSQL CPU per pushed message", true, &|r| {
        r.summary
            .pg_cpu_us_per_pushed
            .map(|us| (us, format!("{us:.1} µs")))
    });
    f.add("PostgreSQL CPU per push call", true, &|r| {
        r.summary
            .pg_cpu_ms_per_push_call
            .map(|ms| (ms, format!("{ms:.3} ms")))
    });
    f.add("PostgreSQL CPU per delivered message", true, &|r| {
        r.summary
            .pg_cpu_us_per_delivered
            .map(|us| (us, format!("{us:.1} µs")))
    });
    f.add("broker CPU per pushed message", false, &|r| {
        r.summary
            .broker_cpu_us_per_pushed
            .map(|us| (us, format!("{us:.1} µs")))
    });
    f.add("retention deleted", false, &|r| {
        r.summary.retention_deleted.map(|n| {
            (
                n as f64,
                format!("{} ({})", format::thousands(n), format::rate(per_sec(n, r))),
            )
        })
    });
    f.add("whole run: pushed / delivered", false, &|r| {
        Some((
            r.totals.pushed as f64,
            format!(
                "{} / {}",
                format::thousands(r.totals.pushed),
                format::thousands(r.totals.delivered)
            ),
        ))
    });
}

/// CPU, memory, WAL, database growth and the check.
fn resources(f: &mut Figures<'_>) {
    f.add("broker CPU", false, &|r| {
        r.telemetry
            .as_ref()?
            .broker_cpu_secs
            .map(|s| (s, format!("{} ({})", format::secs(s), cores(s, r))))
    });
    f.add("PostgreSQL CPU", false, &|r| {
        let s = r.telemetry.as_ref()?.pg_cpu_secs;
        Some((s, format!("{} ({})", format::secs(s), cores(s, r))))
    });
    f.add("broker / PostgreSQL CPU", false, &|r| {
        r.telemetry
            .as_ref()?
            .broker_to_pg_cpu
            .map(|x| (x, format::ratio(x)))
    });
    f.add("harness CPU", false, &|r| {
        let s = r.telemetry.as_ref()?.harness_cpu_secs;
        Some((s, format::secs(s)))
    });
    f.add("broker RSS start → peak", false, &|r| {
        let t = r.telemetry.as_ref()?;
        let peak = t.broker_rss_peak_bytes? as f64;
        let start = t.broker_rss_start_bytes.map_or(0.0, |b| b as f64);
        Some((
            peak,
            format!("{} → {}", format::bytes(start), format::bytes(peak)),
        ))
    });
    f.add("WAL", false, &|r| {
        let t = r.telemetry.as_ref()?;
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
    f.add("checkpoints requested / timed", false, &|r| {
        let t = r.telemetry.as_ref()?;
        Some((
            t.checkpoints_req as f64,
            format!("{} / {}", t.checkpoints_req, t.checkpoints_timed),
        ))
    });
    f.add("database growth", false, &|r| {
        let t = r.telemetry.as_ref()?;
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
    f.add("delivery check", false, &|r| {
        Some((0.0, verdict(r).to_owned()))
    });
}

/// CPU seconds as an average number of busy cores over the run: `1.4 cores`.
fn cores(cpu_secs: f64, run: &RunReport) -> String {
    if run.duration_secs > 0.0 {
        format!("{:.2} cores", cpu_secs / run.duration_secs)
    } else {
        "–".to_owned()
    }
}

pub(super) fn verdict(run: &RunReport) -> &'static str {
    if run.verification.passed {
        "PASS"
    } else {
        "**FAIL**"
    }
}

/// The ratio columns: broker ÷ raw, broker ÷ ceiling, raw ÷ ceiling, where both runs exist.
pub(super) fn ratio_pairs(runs: &[RunReport]) -> Vec<Pair> {
    super::matrix::RATIOS
        .iter()
        .filter_map(|(a, b)| {
            let x = runs.iter().position(|r| r.target == *a)?;
            let y = runs.iter().position(|r| r.target == *b)?;
            Some((format!("{a} / {b}"), x, y))
        })
        .collect()
}
