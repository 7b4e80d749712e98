//! Run reports: JSON, a Markdown summary and SVG charts under `bench/results/<date>-<scenario>/`.
//!
//! Per run (`<target>` is `broker`, `raw` or `ceiling`):
//! - `<target>.json`: the whole [`RunReport`];
//! - `<target>-throughput.svg`: pushed, delivered and acked messages per second;
//! - `<target>-latency.svg`: push and end-to-end p50/p99 per interval;
//! - `<target>-sessions.svg`: PostgreSQL active sessions stacked by wait class;
//! - `<target>-resources.svg`: broker and PostgreSQL CPU, broker RSS, WAL MB/s.
//!
//! A chart without data is not written (and an older file of that name is removed). The
//! directory's `README.md` ([`write_summary`]) puts the runs side by side and embeds the charts.

pub mod charts;
mod figures;
pub mod format;
pub mod markdown;
pub mod matrix;

use std::path::Path;

use anyhow::Context as _;

use crate::model::{RunReport, ScalingPoint};

/// The charts of a run: file suffix and title.
const RUN_CHARTS: &[(&str, &str)] = &[
    ("throughput", "Throughput"),
    ("latency", "Latency per interval"),
    ("sessions", "Active sessions by wait class"),
    ("resources", "CPU, memory and WAL"),
];

/// File name of a run's chart, e.g. `broker-throughput.svg`.
pub fn chart_file(target: &str, chart: &str) -> String {
    format!("{target}-{chart}.svg")
}

fn write(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("write {}", path.display()))
}

/// Writes `svg` to `path`, or removes an old `path` when there is nothing to draw.
fn write_chart(path: &Path, svg: Option<String>) -> anyhow::Result<()> {
    match svg {
        Some(svg) => write(path, svg.as_bytes()),
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("remove {}", path.display()))
            }
            _ => Ok(()),
        },
    }
}

/// Writes one run: `<target>.json` and its charts into `dir` (created if missing).
///
/// # Errors
/// A file cannot be written.
pub fn write_run(dir: &Path, report: &RunReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!("{}.json", report.target));
    let json = serde_json::to_vec_pretty(report)?;
    write(&path, &json)?;
    let samples = report
        .telemetry
        .as_ref()
        .map_or(&[][..], |t| t.samples.as_slice());
    for (chart, _) in RUN_CHARTS {
        let svg = match *chart {
            "throughput" => charts::throughput(&report.timeline)?,
            "latency" => charts::latency(&report.timeline)?,
            "sessions" => charts::active_sessions(samples)?,
            _ => charts::resources(samples)?,
        };
        write_chart(&dir.join(chart_file(&report.target, chart)), svg)?;
    }
    Ok(())
}

/// Writes `README.md` of a result directory: every run in it side by side, with the ratios
/// broker ÷ raw, broker ÷ ceiling and raw ÷ ceiling of the throughput figures where both ran.
///
/// # Errors
/// A file cannot be written.
pub fn write_summary(dir: &Path, runs: &[RunReport]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let charts: Vec<Vec<(String, String)>> = runs
        .iter()
        .map(|r| {
            RUN_CHARTS
                .iter()
                .map(|(chart, title)| ((*title).to_owned(), chart_file(&r.target, chart)))
                .filter(|(_, file)| dir.join(file).is_file())
                .collect()
        })
        .collect();
    write(
        &dir.join("README.md"),
        markdown::summary(runs, &charts).as_bytes(),
    )
}

/// Writes the partition-scaling curve (`scaling.svg`, `scaling.json`) of a `hi-part` sweep,
/// and the same figures as a table (`scaling.md`); each point's delivery rate is also given as a
/// ratio of the first point's (the fewest partitions).
///
/// # Errors
/// A file cannot be written.
pub fn write_scaling(dir: &Path, points: &[ScalingPoint]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.partitions);
    let first = points.first().map_or(0.0, |p| p.deliver_rate);
    for p in &mut points {
        p.deliver_ratio_to_first = (first > 0.0).then(|| p.deliver_rate / first);
    }
    let points = &points[..];
    write(
        &dir.join("scaling.json"),
        &serde_json::to_vec_pretty(points)?,
    )?;
    let svg = charts::scaling(points)?;
    let drawn = svg.is_some();
    write_chart(&dir.join("scaling.svg"), svg)?;
    write(
        &dir.join("scaling.md"),
        markdown::scaling(points, drawn.then_some("scaling.svg")).as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::model::{
        Environment, IntervalSample, LatencySeries, StatementStats, Summary, TableStats,
        TelemetryReport, TelemetrySample, Verification,
    };

    /// A fresh directory under the system temp dir, removed by the caller.
    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "regina-bench-report-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ))
    }

    fn table(name: &str, live: i64, dead: i64, upd: i64, hot: i64, bytes: i64) -> TableStats {
        TableStats {
            table: format!("regina.{name}"),
            live_tuples: live,
            dead_tuples: dead,
            updates: upd,
            hot_updates: hot,
            hot_ratio: crate::telemetry::pgstat::hot_ratio(hot, upd),
            autovacuums: 0,
            total_bytes: bytes,
        }
    }

    pub(crate) fn synthetic(target: &str, push_rate: f64) -> RunReport {
        let seconds = 10;
        let timeline = (1..=seconds)
            .map(|t| IntervalSample {
                t_secs: f64::from(t),
                pushed: push_rate as u64 + u64::from(t) * 10,
                delivered: push_rate as u64 - 5,
                acked: 0,
                errors: 0,
                push_p50_ms: 1.2,
                push_p99_ms: 4.5 + f64::from(t) / 10.0,
                e2e_p50_ms: 3.0,
                e2e_p99_ms: 9.75,
            })
            .collect();
        let samples = (1..=seconds)
            .map(|t| TelemetrySample {
                t_secs: f64::from(t),
                broker_cpu_pct: (target == "broker").then_some(85.0),
                broker_rss_bytes: (target == "broker").then_some(52_100_000),
                pg_cpu_pct: 140.0,
                pg_rss_bytes: 900_000_000,
                active_sessions: BTreeMap::from([
                    ("CPU".to_owned(), 3),
                    ("LWLock".to_owned(), t % 3),
                    ("IO".to_owned(), 1),
                ]),
                wal_bytes_per_sec: 7_500_000.0,
            })
            .collect();
        let broker = target == "broker";
        RunReport {
            scenario: "bp-100".to_owned(),
            target: target.to_owned(),
            started_at: "2025-03-04T10:11:12Z".to_owned(),
            duration_secs: f64::from(seconds),
            settings: serde_json::json!({"producers": 4, "batch": 100}),
            environment: Environment {
                cpu_model: "Test CPU @ 3.0GHz".to_owned(),
                cpus: 2,
                memory_bytes: 8_000_000_000,
                kernel: "6.1.0".to_owned(),
                postgres_version: "PostgreSQL 15.6 on x86_64-pc-linux-gnu, compiled by gcc"
                    .to_owned(),
                postgres_settings: BTreeMap::from([
                    ("shared_buffers".to_owned(), "128MB".to_owned()),
                    ("synchronous_commit".to_owned(), "on".to_owned()),
                ]),
                regina_version: "0.1.0 (abc1234)".to_owned(),
                broker_settings: if broker {
                    BTreeMap::from([("DB_POOL_SIZE".to_owned(), "16".to_owned())])
                } else {
                    BTreeMap::new()
                },
            },
            summary: Summary {
                pushed: (push_rate * 10.0) as u64,
                push_requests: (push_rate / 10.0) as u64 * 10,
                delivered: (push_rate * 10.0) as u64,
                acked: 0,
                errors: 2,
                push_rate,
                deliver_rate: push_rate - 5.0,
                delivered_per_group: BTreeMap::from([("g1".to_owned(), 1)]),
                backlog_at_end: 0,
                pg_cpu_us_per_pushed: Some(14.0 * 1e6 / (push_rate * 10.0)),
                pg_cpu_ms_per_push_call: Some(1.25),
                pg_cpu_us_per_delivered: None,
                broker_cpu_us_per_pushed: broker.then_some(68.9),
                delivered_to_pushed: None,
                kept_pace: None,
                retention_deleted: None,
            },
            timeline,
            latency: vec![LatencySeries {
                name: "push".to_owned(),
                count: 1234,
                mean_ms: 1.5,
                p50_ms: 1.25,
                p90_ms: 3.0,
                p99_ms: 4.75,
                p999_ms: 12.0,
                max_ms: 1500.0,
            }],
            verification: Verification {
                checked: true,
                pushed: 123_450,
                delivered_per_group: BTreeMap::from([("g1".to_owned(), 123_450)]),
                lost: 0,
                out_of_order: 0,
                duplicates: u64::from(!broker),
                redelivered: 0,
                dead_lettered: 0,
                passed: broker,
                failures: if broker {
                    Vec::new()
                } else {
                    vec!["1 duplicate in g1".to_owned()]
                },
            },
            telemetry: Some(TelemetryReport {
                samples,
                broker_cpu_secs: broker.then_some(8.5),
                broker_rss_peak_bytes: broker.then_some(52_100_000),
                broker_rss_start_bytes: broker.then_some(20_000_000),
                pg_cpu_secs: 14.0,
                harness_cpu_secs: 3.0,
                broker_to_pg_cpu: broker.then_some(8.5 / 14.0),
                wal_bytes: 75_000_000,
                checkpoints_req: 1,
                checkpoints_timed: 0,
                db_size_before_bytes: 8_000_000,
                db_size_after_bytes: 60_000_000,
                tables_before: vec![
                    table("messages", 0, 0, 0, 0, 24_576),
                    table("cursors", 1, 0, 10, 10, 40_960),
                    table("queues", 1, 0, 0, 0, 16_384),
                ],
                tables_after: vec![
                    table("messages", 123_450, 0, 0, 0, 48_000_000),
                    table("cursors", 1, 250, 1010, 810, 81_920),
                    table("queues", 1, 0, 0, 0, 16_384),
                ],
                wait_totals: BTreeMap::from([
                    ("CPU".to_owned(), 30),
                    ("LWLock".to_owned(), 10),
                    ("IO".to_owned(), 10),
                ]),
                top_statements: vec![StatementStats {
                    query: "select idx from regina.push($1::text::jsonb, $2::text::json) | x"
                        .to_owned(),
                    calls: 12_345,
                    total_ms: 9_876.5,
                    mean_ms: 0.8,
                    rows: 123_450,
                }],
            }),
            notes: vec!["after producers stopped, consumers caught up in 0.4 s".to_owned()],
            totals: Default::default(),
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn run_and_summary_files() {
        let dir = scratch("run").join("2025-03-04-bp-100");
        let broker = synthetic("broker", 12_345.0);
        let raw = synthetic("raw", 24_690.0);
        write_run(&dir, &broker).expect("write broker");
        write_run(&dir, &raw).expect("write raw");
        write_summary(&dir, &[broker.clone(), raw]).expect("write summary");

        let json: RunReport =
            serde_json::from_str(&read(&dir.join("broker.json"))).expect("JSON report");
        assert_eq!(json.summary.pushed, broker.summary.pushed);
        assert_eq!(json.telemetry.map(|t| t.wal_bytes), Some(75_000_000));

        for target in ["broker", "raw"] {
            for (chart, _) in RUN_CHARTS {
                let svg = read(&dir.join(chart_file(target, chart)));
                assert!(svg.starts_with("<svg"), "{target}-{chart}");
                assert!(svg.trim_end().ends_with("</svg>"), "{target}-{chart}");
            }
        }
        let throughput = read(&dir.join("broker-throughput.svg"));
        assert!(throughput.contains("pushed") && throughput.contains("delivered"));
        // No acks in this run: no line for them.
        assert!(!throughput.contains(">acked<"));
        let latency = read(&dir.join("broker-latency.svg"));
        assert!(latency.contains("push p99") && latency.contains("e2e p50"));
        let sessions = read(&dir.join("broker-sessions.svg"));
        assert!(sessions.contains("LWLock") && sessions.contains("<polygon"));
        let resources = read(&dir.join("broker-resources.svg"));
        assert!(resources.contains("PostgreSQL") && resources.contains("broker RSS"));
        assert!(!read(&dir.join("raw-resources.svg")).contains("broker RSS"));

        let md = read(&dir.join("README.md"));
        for expected in [
            "# bp-100 — 2025-03-04",
            "|  | broker | raw | broker / raw |",
            "| push | 12 345 msg/s | 24 690 msg/s | 0.50× |",
            "1.2 ms / 4.8 ms",
            "8.50 s (0.85 cores)",
            "0.61×",
            "20.0 MB → 52.1 MB",
            "7.50 MB/s (75.0 MB)",
            "| checkpoints requested / timed | 1 / 0 | 1 / 0 |",
            "52.0 MB (to 60.0 MB)",
            "**FAIL**",
            "1 duplicate in g1",
            "| delivered to g1 | 123 450 | 123 450 |",
            "| regina.cursors | 1 | 0 → 250 | 100 % → 80.2 % | 1 000 (80.0 %) | 0 | 41.0 kB → 81.9 kB |",
            "(1 unchanged table left out.)",
            "| CPU | 3.00 (60.0 %) | 3.00 (60.0 %) |",
            "regina.push($1::text::jsonb, $2::text::json) \\| x",
            "caught up in 0.4 s",
            "![Throughput](broker-throughput.svg)",
            "![Active sessions by wait class](raw-sessions.svg)",
            "| shared_buffers | 128MB |",
            "PostgreSQL 15.6 on x86_64-pc-linux-gnu\n",
            "\"producers\": 4",
            "2 logical CPUs (Test CPU @ 3.0GHz), 8.00 GB memory; PostgreSQL 15.6; Regina 0.1.0 (abc1234).",
        ] {
            assert!(md.contains(expected), "README.md lacks {expected:?}:\n{md}");
        }
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
    }

    #[test]
    fn empty_charts_are_skipped_and_removed() {
        let dir = scratch("empty");
        let full = synthetic("broker", 100.0);
        write_run(&dir, &full).expect("write");
        assert!(dir.join("broker-sessions.svg").is_file());
        let bare = RunReport {
            target: "broker".to_owned(),
            scenario: "x".to_owned(),
            ..RunReport::default()
        };
        write_run(&dir, &bare).expect("write");
        for (chart, _) in RUN_CHARTS {
            assert!(!dir.join(chart_file("broker", chart)).exists(), "{chart}");
        }
        write_summary(&dir, &[bare]).expect("summary");
        let md = read(&dir.join("README.md"));
        assert!(!md.contains("## Charts"), "{md}");
        assert!(!md.contains("## Hot tables"));
        write_summary(&dir, &[]).expect("summary of nothing");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn scaling_files() {
        let dir = scratch("scaling");
        let points: Vec<ScalingPoint> = [
            (1, 9_000.0),
            (10, 20_000.0),
            (100, 31_000.0),
            (1000, 28_000.0),
        ]
        .into_iter()
        .map(|(partitions, rate)| ScalingPoint {
            partitions,
            push_rate: rate,
            deliver_rate: rate * 0.9,
            push_p99_ms: 5.5,
            deliver_ratio_to_first: None,
        })
        .collect();
        write_scaling(&dir, &points).expect("write");
        let svg = read(&dir.join("scaling.svg"));
        assert!(svg.starts_with("<svg") && svg.contains("push") && svg.contains("delivery"));
        let md = read(&dir.join("scaling.md"));
        assert!(
            md.contains("| 1 000 | 28 000 msg/s | 25 200 msg/s | 3.11× | 5.5 ms |"),
            "{md}"
        );
        assert!(md.contains("| 1 | 9 000 msg/s | 8 100 msg/s | 1.00× | 5.5 ms |"));
        assert!(md.contains("![partition scaling](scaling.svg)"));
        let json: Vec<ScalingPoint> =
            serde_json::from_str(&read(&dir.join("scaling.json"))).expect("JSON");
        assert_eq!(json.len(), 4);
        let ratio = json[3].deliver_ratio_to_first.expect("ratio");
        assert!((ratio - 28.0 / 9.0).abs() < 1e-9, "{ratio}");
        write_scaling(&dir, &[]).expect("write nothing");
        assert!(!dir.join("scaling.svg").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
