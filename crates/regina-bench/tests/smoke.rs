//! The harness runs end to end in a few seconds per scenario against a real broker and database,
//! and its delivery check passes: the CI proof that `regina-bench` works. Full runs are manual
//! (`make bench`).

use std::path::Path;
use std::process::Command;

use regina_testkit::TestBroker;
use serde_json::Value;

fn run(broker: &TestBroker, out: &Path, args: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_regina-bench"))
        .arg("run")
        .args(args)
        .args(["--duration", "2", "--warmup", "1", "--drain", "60", "--url"])
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

fn report(out: &Path, scenario: &str, target: &str) -> Value {
    let dir = std::fs::read_dir(out)
        .expect("results")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&format!("-{scenario}")))
        .unwrap_or_else(|| panic!("no result directory for {scenario}"));
    assert!(
        dir.join("README.md").exists(),
        "{} has no README.md",
        dir.display()
    );
    let text = std::fs::read_to_string(dir.join(format!("{target}.json"))).expect("report");
    serde_json::from_str(&text).expect("report JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_run_and_their_delivery_checks_pass() {
    let broker = TestBroker::start().await;
    let out = tempdir();
    run(
        &broker,
        &out,
        &["bp-10", "--target", "both", "--connections", "8"],
    );
    run(
        &broker,
        &out,
        &["cg-5", "--target", "broker", "--connections", "4"],
    );
    run(
        &broker,
        &out,
        &["pop-ack", "--target", "both", "--prefill", "20000"],
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

    for (scenario, target) in [("bp-10", "broker"), ("bp-10", "raw")] {
        let r = report(&out, scenario, target);
        assert!(
            r["summary"]["pushed"].as_u64().unwrap_or(0) > 0,
            "{scenario} {target}: {r}"
        );
        assert_eq!(r["verification"]["passed"], true, "{scenario} {target}");
        assert_eq!(r["verification"]["lost"], 0);
    }
    for (scenario, target) in [
        ("cg-5", "broker"),
        ("pop-ack", "broker"),
        ("pop-ack", "raw"),
        ("e2e", "broker"),
        ("app", "broker"),
    ] {
        let r = report(&out, scenario, target);
        assert!(
            r["summary"]["delivered"].as_u64().unwrap_or(0) > 0,
            "{scenario} {target}: {r}"
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
    }
    let app = report(&out, "app", "broker");
    assert!(app["latency"]
        .as_array()
        .expect("latency")
        .iter()
        .any(|l| l["name"] == "e2e"));
    let _ = std::fs::remove_dir_all(&out);
    broker.shutdown().await;
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("regina-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
