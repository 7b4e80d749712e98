//! The telemetry sampler against a real database under a little load: samples arrive, and the
//! before/after readings see the pushed rows, the WAL they wrote and the CPU PostgreSQL spent.
//!
//! How many samples fall inside the load, and whether one catches a session at work, depends on
//! how the machine schedules the sampler: a run that saw too little to tell is made again.

use std::time::{Duration, Instant};

use regina_bench::telemetry::{self, PostgresPids, Telemetry, TelemetryConfig};
use regina_testkit::TestBroker;

const LOAD: Duration = Duration::from_millis(1500);
const WRITERS: usize = 3;

/// Pushes batches of 50 messages from one connection until `LOAD` has passed; returns how many
/// calls succeeded.
async fn writer(broker: &TestBroker, id: usize) -> u64 {
    let db = broker.db().await;
    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed() < LOAD {
        db.query(
            "select * from regina.push(
                 (select jsonb_agg(jsonb_build_object(
                          'queue', 'telemetry', 'partition', 'p' || $1::int4,
                          'transactionId', gen_random_uuid()::text,
                          'messageId', gen_random_uuid(),
                          'payload', jsonb_build_object('n', i)))
                    from generate_series(1, 50) i))",
            &[&i32::try_from(id).expect("small")],
        )
        .await
        .expect("push");
        calls += 1;
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_sees_the_load() {
    let broker = TestBroker::start().await;
    let env = telemetry::environment(&broker.database_url)
        .await
        .expect("environment");
    assert!(env.cpus > 0);
    assert!(env.postgres_version.starts_with("PostgreSQL"), "{env:?}");
    assert!(env.postgres_settings.contains_key("shared_buffers"));

    let report = regina_testkit::conclusive("samples that saw the load", |_| async {
        let run = Telemetry::start(TelemetryConfig {
            database_url: broker.database_url.clone(),
            broker_pid: Some(std::process::id()),
            postgres: PostgresPids::ByName,
            interval: Duration::from_millis(200),
        })
        .await
        .expect("start telemetry");
        let calls: u64 = futures::future::join_all((0..WRITERS).map(|i| writer(&broker, i)))
            .await
            .into_iter()
            .sum();
        assert!(calls > 0);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let report = run.finish().await.expect("finish telemetry");
        let busy = report
            .samples
            .iter()
            .any(|s| s.active_sessions.values().sum::<u32>() >= 1);
        if report.samples.len() < 4 || !busy {
            return Err(format!(
                "{} samples, a session at work seen: {busy}",
                report.samples.len()
            ));
        }
        Ok(report)
    })
    .await;

    let live = |tables: &[regina_bench::model::TableStats]| {
        tables
            .iter()
            .find(|t| t.table == "regina.messages")
            .map(|t| t.live_tuples)
    };
    let before = live(&report.tables_before).expect("regina.messages before");
    let after = live(&report.tables_after).expect("regina.messages after");
    assert!(after > before, "live tuples {before} → {after}");
    assert!(report.wal_bytes > 0);
    assert!(report.pg_cpu_secs > 0.0, "{report:?}");
    assert!(report.broker_rss_peak_bytes.is_some_and(|r| r > 0));
    assert!(report.broker_rss_start_bytes.is_some_and(|r| r > 0));
    assert!(report.broker_cpu_secs.is_some());
    assert!(report.wait_totals.values().sum::<u64>() >= 1);
    assert!(report.db_size_after_bytes > 0);
    let t: Vec<f64> = report.samples.iter().map(|s| s.t_secs).collect();
    assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    broker.shutdown().await;
}
