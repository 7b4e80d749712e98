//! The summary of a matrix: one row per scenario with each target's headline rate, the ratios
//! broker ÷ raw, broker ÷ ceiling and raw ÷ ceiling (all from the same invocation), PostgreSQL
//! CPU per message, and the checks. Written as `README.md` and `matrix.json` at the top of the
//! matrix's dated directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::format::{self, cell};
use crate::model::RunReport;

/// The targets, in column order.
pub const TARGETS: [&str; 3] = ["broker", "raw", "ceiling"];

/// The ratios a row reports: (numerator, denominator).
pub const RATIOS: [(&str, &str); 3] =
    [("broker", "raw"), ("broker", "ceiling"), ("raw", "ceiling")];

/// One target's figures in a row.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TargetFigures {
    /// Push rate for push-only scenarios, delivery rate otherwise (msg/s).
    pub rate: f64,
    /// PostgreSQL CPU per pushed message (push-only) or per delivered message, µs.
    pub pg_cpu_us_per_message: Option<f64>,
    /// PostgreSQL CPU per push request, ms.
    pub pg_cpu_ms_per_push_call: Option<f64>,
    /// Broker RSS peak, bytes.
    pub broker_rss_peak_bytes: Option<u64>,
    /// The run's check passed.
    pub passed: bool,
}

/// One scenario of a matrix.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MatrixRow {
    /// Scenario name.
    pub scenario: String,
    /// What it does.
    pub description: String,
    /// Its result directory (relative to the matrix directory's parent or to itself).
    pub dir: String,
    /// Whether the headline rate is the push rate (else the delivery rate).
    pub push_only: bool,
    /// Figures per target that ran.
    pub targets: BTreeMap<String, TargetFigures>,
    /// `broker/raw`, `broker/ceiling`, `raw/ceiling` of the headline rate, where both ran.
    pub ratios: BTreeMap<String, f64>,
}

impl MatrixRow {
    /// The row of a scenario's runs.
    pub fn of(scenario: &str, description: &str, dir: &str, runs: &[RunReport]) -> MatrixRow {
        let mut targets = BTreeMap::new();
        for run in runs {
            let s = &run.summary;
            let per_message = if run.is_push_only() {
                s.pg_cpu_us_per_pushed
            } else {
                s.pg_cpu_us_per_delivered
            };
            targets.insert(
                run.target.clone(),
                TargetFigures {
                    rate: run.primary_rate(),
                    pg_cpu_us_per_message: per_message,
                    pg_cpu_ms_per_push_call: s.pg_cpu_ms_per_push_call,
                    broker_rss_peak_bytes: run
                        .telemetry
                        .as_ref()
                        .and_then(|t| t.broker_rss_peak_bytes),
                    passed: run.verification.passed,
                },
            );
        }
        let mut ratios = BTreeMap::new();
        for (a, b) in RATIOS {
            if let (Some(x), Some(y)) = (targets.get(a), targets.get(b)) {
                if y.rate > 0.0 {
                    ratios.insert(format!("{a}/{b}"), x.rate / y.rate);
                }
            }
        }
        MatrixRow {
            scenario: scenario.to_owned(),
            description: description.to_owned(),
            dir: dir.to_owned(),
            push_only: runs.first().is_none_or(RunReport::is_push_only),
            targets,
            ratios,
        }
    }

    /// `bp-100 ratios: broker/raw 1.54×, broker/ceiling 0.80×, raw/ceiling 0.52×` (n/a where a
    /// target did not run).
    pub fn ratio_line(&self) -> String {
        let parts: Vec<String> = RATIOS
            .iter()
            .map(|(a, b)| {
                let key = format!("{a}/{b}");
                format!(
                    "{key} {}",
                    self.ratios
                        .get(&key)
                        .map_or_else(|| "n/a".to_owned(), |r| format::ratio(*r))
                )
            })
            .collect();
        format!("{} ratios: {}", self.scenario, parts.join(", "))
    }

    fn passed(&self) -> bool {
        self.targets.values().all(|t| t.passed)
    }
}

/// The Markdown summary of a matrix.
pub fn markdown(title: &str, rows: &[MatrixRow]) -> String {
    let mut out = format!("# {title}\n\n");
    out.push_str(
        "Headline rate: pushed messages per second for push scenarios, delivered messages per \
         second for the others. Ratios divide the headline rates of runs of the same invocation. \
         `ceiling` is plain inserts of the same rows into copies of Regina's tables (push and \
         retention scenarios only; n/a elsewhere). PostgreSQL CPU is per pushed message for push \
         scenarios and per delivered message (pop and ack) for the others. See \
         `bench/METHODOLOGY.md`.\n\n",
    );
    out.push_str("| scenario | broker | raw | ceiling | broker / raw | broker / ceiling | raw / ceiling | PostgreSQL CPU per message (broker / raw / ceiling) | broker RSS peak | check |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for row in rows {
        let _ = write!(out, "| [{}]({}/README.md) |", cell(&row.scenario), row.dir);
        for t in TARGETS {
            let v = row
                .targets
                .get(t)
                .map_or_else(|| "n/a".to_owned(), |f| format::rate(f.rate));
            let _ = write!(out, " {v} |");
        }
        for (a, b) in RATIOS {
            let v = row
                .ratios
                .get(&format!("{a}/{b}"))
                .map_or_else(|| "n/a".to_owned(), |r| format::ratio(*r));
            let _ = write!(out, " {v} |");
        }
        let cpu: Vec<String> = TARGETS
            .iter()
            .map(|t| {
                row.targets
                    .get(*t)
                    .and_then(|f| f.pg_cpu_us_per_message)
                    .map_or_else(|| "n/a".to_owned(), |us| format!("{us:.1} µs"))
            })
            .collect();
        let rss = row
            .targets
            .get("broker")
            .and_then(|f| f.broker_rss_peak_bytes)
            .map_or_else(|| "–".to_owned(), |b| format::bytes(b as f64));
        let _ = writeln!(
            out,
            " {} | {rss} | {} |",
            cpu.join(" / "),
            if row.passed() { "pass" } else { "**FAIL**" }
        );
    }
    out.push('\n');
    for row in rows {
        let _ = writeln!(out, "- **{}**: {}", cell(&row.scenario), row.description);
    }
    out
}

/// Writes `README.md` and `matrix.json` into `dir`.
///
/// # Errors
/// A file cannot be written.
pub fn write(dir: &Path, title: &str, rows: &[MatrixRow]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("README.md"), markdown(title, rows))?;
    std::fs::write(dir.join("matrix.json"), serde_json::to_vec_pretty(rows)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::synthetic;

    #[test]
    fn rows_ratios_and_table() {
        let mut ceiling = synthetic("ceiling", 49_380.0);
        ceiling.verification.passed = true;
        let runs = [
            synthetic("broker", 12_345.0),
            synthetic("raw", 24_690.0),
            ceiling,
        ];
        let row = MatrixRow::of("bp-100", "push", "bp-100", &runs);
        assert!(row.push_only);
        assert!((row.ratios["broker/raw"] - 0.5).abs() < 1e-9);
        assert!((row.ratios["broker/ceiling"] - 0.25).abs() < 1e-9);
        assert!((row.ratios["raw/ceiling"] - 0.5).abs() < 1e-9);
        assert_eq!(
            row.ratio_line(),
            "bp-100 ratios: broker/raw 0.50×, broker/ceiling 0.25×, raw/ceiling 0.50×"
        );
        let two = MatrixRow::of("x", "y", "x", &runs[..2]);
        assert!(two
            .ratio_line()
            .ends_with("broker/ceiling n/a, raw/ceiling n/a"));
        let md = markdown("Matrix", &[row, two]);
        assert!(
            md.contains("| [bp-100](bp-100/README.md) | 12 345 msg/s | 24 690 msg/s | 49 380 msg/s | 0.50× | 0.25× | 0.50× |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| [x](x/README.md) | 12 345 msg/s | 24 690 msg/s | n/a | 0.50× | n/a | n/a |"
            ),
            "{md}"
        );
        // The raw synthetic run failed its check.
        assert!(md.contains("**FAIL**"));
    }
}
