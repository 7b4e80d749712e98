//! The harness runs end to end in a few seconds per scenario against a real broker and database,
//! on every target, and its checks pass: the CI proof that `regina-bench` works. Full runs are
//! manual (`make bench`, `make bench-push`).
//!
//! What is asserted is what a scenario guarantees whatever the machine's speed: the delivery or
//! storage check passed, and work was done over the whole run (`totals`: prefill, warm-up,
//! measured interval and drain). Nothing here depends on what happened to fall inside the
//! measured interval, which on a busy machine may see little or nothing of a short run.

use std::path::Path;
use std::process::Command;

use regina_testkit::TestBroker;
use serde_json::Value;

/// Runs `regina-bench run <args>` against `broker` with `timing` (duration, warm-up, drain).
fn run_timed(broker: &TestBroker, out: &Path, args: &[&str], timing: [&str; 3]) {
    let output = Command::new(env!("CARGO_BIN_EXE_regina-bench"))
        .arg("run")
        .args(args)
        .args(["--duration", timing[0], "--warmup", timing[1]])
        .args(["--drain", timing[2], "--url"])
        .arg(broker.url(""))
        .arg("--database-url")
        .arg(&broker.database_url)
        .arg("--broker-pid")
        .arg(std::process::id().to_string())
        .arg("--out")
        .arg(out)
        .env("CI", "true")
        .output()
        .expect("run regina-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "regina-bench {args:?} failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("PASS"), "{stdout}");
}

fn run(broker: &TestBroker, out: &Path, args: &[&str]) {
    run_timed(broker, out, args, ["2", "1", "60"]);
}

/// The new shapes are short: one measured second after half a second of warm-up.
fn run_short(broker: &TestBroker, out: &Path, args: &[&str]) {
    run_timed(broker, out, args, ["1", "0.5", "60"]);
}

fn result_dir(out: &Path, scenario: &str) -> std::path::PathBuf {
    std::fs::read_dir(out)
        .expect("results")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&format!("-{scenario}")))
        .unwrap_or_else(|| panic!("no result directory for {scenario}"))
}

fn report(out: &Path, scenario: &str, target: &str) -> Value {
    let dir = result_dir(out, scenario);
    assert!(
        dir.join("README.md").exists(),
        "{} has no README.md",
        dir.display()
    );
    let text = std::fs::read_to_string(dir.join(format!("{target}.json")))
        .unwrap_or_else(|e| panic!("{scenario} {target}: {e}"));
    serde_json::from_str(&text).expect("report JSON")
}

fn total(r: &Value, field: &str) -> u64 {
    r["totals"][field].as_u64().unwrap_or(0)
}

/// A push-only run: stored every acknowledged push once and in order, and pushed something.
fn assert_stored(out: &Path, scenario: &str, target: &str) -> Value {
    let r = report(out, scenario, target);
    assert_eq!(
        r["verification"]["passed"], true,
        "{scenario} {target}: {}",
        r["verification"]
    );
    assert_eq!(r["verification"]["lost"], 0, "{scenario} {target}");
    assert!(
        total(&r, "pushed") > 0,
        "{scenario} {target}: {}",
        r["totals"]
    );
    assert!(total(&r, "push_requests") > 0, "{scenario} {target}");
    assert_eq!(
        r["verification"]["delivered_per_group"]["stored"], r["verification"]["pushed"],
        "{scenario} {target}: one stored row per acknowledged push"
    );
    r
}

/// A run with consumers: every group received every acknowledged push, and something was
/// delivered over the run.
fn assert_delivered(out: &Path, scenario: &str, target: &str) -> Value {
    let r = report(out, scenario, target);
    assert!(
        total(&r, "delivered") > 0,
        "{scenario} {target}: {}",
        r["totals"]
    );
    assert_eq!(r["verification"]["passed"], true, "{scenario} {target}");
    let groups = r["verification"]["delivered_per_group"]
        .as_object()
        .expect("groups");
    assert!(
        !groups.is_empty()
            && groups
                .values()
                .all(|d| d.as_u64() == r["verification"]["pushed"].as_u64()),
        "{scenario} {target}: every group got every message: {}",
        r["verification"]
    );
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_run_and_their_delivery_checks_pass() {
    // Retention every 200 ms, for the steady-state scenario.
    let broker = TestBroker::start_with(|c| c.retention_interval_ms = 200).await;
    let out = tempdir();
    run(
        &broker,
        &out,
        &["bp-10", "--target", "all", "--connections", "8"],
    );
    run(
        &broker,
        &out,
        &["cg-5", "--target", "broker", "--connections", "4"],
    );
    run(
        &broker,
        &out,
        &["pop-ack", "--target", "all", "--prefill", "20000"],
    );
    run(
        &broker,
        &out,
        &["e2e", "--target", "broker", "--rate", "200"],
    );
    run(
        &broker,
        &out,
        &["app", "--target", "broker", "--rate", "300"],
    );
    for target in ["broker", "raw", "ceiling"] {
        assert_stored(&out, "bp-10", target);
    }
    let summary =
        std::fs::read_to_string(result_dir(&out, "bp-10").join("README.md")).expect("README.md");
    for ratio in ["broker / raw", "broker / ceiling", "raw / ceiling"] {
        assert!(summary.contains(ratio), "bp-10 README lacks {ratio}");
    }
    for (scenario, target) in [
        ("cg-5", "broker"),
        ("pop-ack", "broker"),
        ("pop-ack", "raw"),
        ("e2e", "broker"),
        ("app", "broker"),
    ] {
        assert_delivered(&out, scenario, target);
    }
    // The ceiling models push only: a pop scenario has none, and says so.
    assert!(!result_dir(&out, "pop-ack").join("ceiling.json").exists());
    let pop_ack = report(&out, "pop-ack", "raw");
    assert!(
        pop_ack["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("ceiling: n/a"))),
        "{}",
        pop_ack["notes"]
    );
    // Every delivery carries its send time: the end-to-end latency was observed.
    let app = report(&out, "app", "broker");
    assert!(
        app["totals"]["latency_observations"]["e2e"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{}",
        app["totals"]
    );
    let _ = std::fs::remove_dir_all(&out);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_shapes_run_on_every_target() {
    let broker = TestBroker::start_with(|c| c.retention_interval_ms = 200).await;
    let out = tempdir();
    let shapes: [(&str, &[&str]); 5] = [
        ("bp-100-spread", &["--connections", "4"]),
        ("bp-1000", &["--connections", "2"]),
        (
            "bp-random-100k",
            &["--connections", "4", "--partitions", "5000"],
        ),
        ("bp-hot", &["--connections", "8"]),
        ("bp-10kb", &["--connections", "4"]),
    ];
    for (shape, extra) in shapes {
        let mut args = vec![shape, "--target", "all"];
        args.extend_from_slice(extra);
        run_short(&broker, &out, &args);
        for target in ["broker", "raw", "ceiling"] {
            assert_stored(&out, shape, target);
        }
    }
    // A stored backlog (small here) with retention deleting while producers push; the check
    // includes that retention caught up with every message older than retentionSeconds, which
    // the stored backlog always has by then: it deleted some.
    run_short(
        &broker,
        &out,
        &[
            "steady-state",
            "--target",
            "all",
            "--connections",
            "4",
            "--partitions",
            "100",
            "--stored",
            "20000",
            "--retention-span",
            "30",
            "--retention-interval",
            "200",
        ],
    );
    for target in ["broker", "raw", "ceiling"] {
        let r = assert_stored(&out, "steady-state", target);
        assert!(
            r["totals"]["retention_deleted"].as_u64().unwrap_or(0) > 0,
            "steady-state {target}: {}",
            r["totals"]
        );
    }
    run_short(
        &broker,
        &out,
        &["mixed", "--target", "all", "--connections", "4"],
    );
    for target in ["broker", "raw"] {
        let r = assert_delivered(&out, "mixed", target);
        assert!(total(&r, "acked") > 0, "mixed {target}: {}", r["totals"]);
    }
    let _ = std::fs::remove_dir_all(&out);
    broker.shutdown().await;
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "regina-bench-smoke-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A distinct suffix per call: the two tests of this file run at the same time in one process.
fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
