//! The metrics history (§3.12 sources): each instance adds what it counted to the minute rows of
//! `regina.worker_metrics` and `regina.queue_metrics` every `STATS_INTERVAL_MS`, once, also
//! across a failed write, and a last time when it stops.

use std::time::Duration;

use regina_testkit::{eventually, wait_until, TestBroker, PARKED_POP_TIMEOUT_MS};
use serde_json::json;

use crate::support::{start_with, Api};

/// A broker writing its history every 100 ms as `worker`.
fn fast_history(worker: &'static str) -> impl FnOnce(&mut regina_broker::Config) {
    move |c| {
        c.worker_id = Some(worker.to_owned());
        c.stats_interval_ms = 100;
    }
}

/// Sums of `queue`'s history rows of `worker`: pushed, delivered, acked, ack_failed,
/// dead_lettered, transactions, lag_samples.
async fn queue_sums(b: &TestBroker, worker: &str, queue: &str) -> [i64; 7] {
    let row = b
        .db()
        .await
        .query_one(
            "select coalesce(sum(pushed), 0)::int8, coalesce(sum(delivered), 0)::int8,
                    coalesce(sum(acked), 0)::int8, coalesce(sum(ack_failed), 0)::int8,
                    coalesce(sum(dead_lettered), 0)::int8, coalesce(sum(transactions), 0)::int8,
                    coalesce(sum(lag_samples), 0)::int8
             from regina.queue_metrics where worker_id = $1 and queue_name = $2",
            &[&worker, &queue],
        )
        .await
        .unwrap();
    std::array::from_fn(|i| row.get(i))
}

/// Waits until `queue_sums` equals `expected`, then for three more write intervals, so that a
/// count written twice would show.
async fn sums_settle_at(b: &TestBroker, worker: &str, queue: &str, expected: [i64; 7]) {
    eventually(&format!("history of {queue} is {expected:?}"), || async {
        let sums = queue_sums(b, worker, queue).await;
        if sums == expected {
            Ok(())
        } else {
            Err(sums)
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        queue_sums(b, worker, queue).await,
        expected,
        "counted twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_rows_hold_what_the_instance_counted() {
    let (b, api) = start_with(fast_history("hist-a")).await;
    api.configure("h", json!({"retryLimit": 0})).await;
    api.push_to("h", "p", &[json!(1), json!(2), json!(3)]).await;
    let pop = api.pop("h", "batch=3").await;
    let messages = pop.messages();
    assert_eq!(
        api.ack_msg(&messages[1], "completed").await["success"],
        true
    );
    assert_eq!(
        api.ack_msg(&messages[2], "completed").await["success"],
        true
    );
    assert_eq!(api.ack_msg(&messages[0], "failed").await["dlq"], true);
    let tx = api
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [{"queue": "h", "payload": 4}]}]}),
        )
        .await;
    assert_eq!(tx.status, 200, "{tx:?}");
    sums_settle_at(&b, "hist-a", "h", [4, 3, 2, 1, 1, 1, 3]).await;

    let db = b.db().await;
    let worker = db
        .query_one(
            "select sum(push_messages)::int8, sum(pop_messages)::int8, sum(ack_messages)::int8,
                    sum(requests)::int8, sum(db_calls)::int8, sum(batch_requests)::int8,
                    min(hostname), min(version), bool_and(started_at <= last_seen),
                    bool_and(bucket = date_trunc('minute', bucket)), max(rss_bytes),
                    sum(cpu_seconds)
             from regina.worker_metrics where worker_id = 'hist-a'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(worker.get::<_, i64>(0), 4, "push_messages");
    assert_eq!(worker.get::<_, i64>(1), 3, "pop_messages");
    assert_eq!(worker.get::<_, i64>(2), 3, "ack_messages");
    assert!(worker.get::<_, i64>(3) >= 7, "requests");
    assert!(worker.get::<_, i64>(4) >= 5, "db_calls");
    assert!(
        worker.get::<_, i64>(5) >= worker.get::<_, i64>(4),
        "batch_requests"
    );
    assert!(!worker.get::<_, String>(6).is_empty(), "hostname");
    assert_eq!(worker.get::<_, String>(7), env!("CARGO_PKG_VERSION"));
    assert!(worker.get::<_, bool>(8) && worker.get::<_, bool>(9));
    assert!(worker.get::<_, i64>(10) > 0, "rss_bytes");
    assert!(worker.get::<_, f64>(11) >= 0.0, "cpu_seconds");
    let lag = db
        .query_one(
            "select max(lag_ms_max), sum(lag_ms_sum) from regina.queue_metrics
             where worker_id = 'hist-a' and queue_name = 'h'",
            &[],
        )
        .await
        .unwrap();
    let (max, sum): (f64, f64) = (lag.get(0), lag.get(1));
    assert!(max > 0.0 && sum >= max, "lag max {max}, sum {sum}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_waiters_are_sampled_per_queue() {
    let (b, api) = start_with(fast_history("hist-w")).await;
    let parked = {
        let api = api.clone();
        let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}");
        tokio::spawn(async move { api.pop("idle", &query).await })
    };
    api.wait_for_waiters(1).await;
    wait_until("the parked pop is sampled", || async {
        let row = b
            .db()
            .await
            .query_opt(
                "select waiters from regina.queue_metrics
                 where worker_id = 'hist-w' and queue_name = 'idle'
                 order by bucket desc limit 1",
                &[],
            )
            .await
            .unwrap();
        row.is_some_and(|r| r.get::<_, i32>(0) == 1)
    })
    .await;
    let longpoll: i32 = b
        .db()
        .await
        .query_one(
            "select max(longpoll_waiters) from regina.worker_metrics where worker_id = 'hist-w'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(longpoll, 1);
    parked.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_of_failed_writes_arrive_with_the_next_one_and_only_once() {
    let (b, api) = start_with(fast_history("hist-f")).await;
    api.push_one("f", "p", json!(0)).await;
    sums_settle_at(&b, "hist-f", "f", [1, 0, 0, 0, 0, 0, 0]).await;
    // Without its table every write fails; the counts wait in the instance.
    let db = b.db().await;
    db.batch_execute("alter table regina.queue_metrics rename to queue_metrics_away")
        .await
        .unwrap();
    api.push_to("f", "p", &[json!(1), json!(2)]).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let away: i64 = db
        .query_one(
            "select coalesce(sum(pushed), 0)::int8 from regina.queue_metrics_away
             where worker_id = 'hist-f'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(away, 1, "nothing was written meanwhile");
    db.batch_execute("alter table regina.queue_metrics_away rename to queue_metrics")
        .await
        .unwrap();
    sums_settle_at(&b, "hist-f", "f", [3, 0, 0, 0, 0, 0, 0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_counts_are_written_at_shutdown() {
    // One write at the start, the next an hour later: only the one at shutdown can carry these.
    let b = TestBroker::start_with(|c| {
        c.worker_id = Some("hist-s".to_owned());
        c.stats_interval_ms = 3_600_000;
    })
    .await;
    let api = Api::new(&b);
    api.push_to("s", "p", &[json!(1), json!(2)]).await;
    // The handle keeps the database after the broker is gone.
    let database = b.database().expect("a database of the test kit");
    b.shutdown().await;
    let client = database.connect().await;
    let pushed: i64 = client
        .query_one(
            "select coalesce(sum(pushed), 0)::int8 from regina.queue_metrics
             where worker_id = 'hist-s' and queue_name = 's'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(pushed, 2);
}
