//! §4.13 retention and eviction, §4.15 background services: the leader deletes old messages in
//! short batches, spares leased ones, frees dedup keys, and no second instance runs a job too.

use std::time::{Duration, Instant};

use regina_testkit::{wait_until, TestBroker};
use serde_json::json;

use crate::support::{start_with, Api};

/// Jobs every 50 ms on this broker, with a worker id of its own.
fn fast_jobs(worker: &'static str) -> impl FnOnce(&mut regina_broker::Config) {
    move |c| {
        c.worker_id = Some(worker.to_owned());
        c.retention_interval_ms = 50;
        c.eviction_interval_ms = 50;
    }
}

/// Stored messages of `queue`.
async fn stored(b: &TestBroker, queue: &str) -> i64 {
    b.db()
        .await
        .query_one(
            "select count(*) from regina.messages m join regina.partitions p on p.id = m.partition_id
             join regina.queues q on q.id = p.queue_id where q.name = $1",
            &[&queue],
        )
        .await
        .unwrap()
        .get(0)
}

/// Passes recorded for `job`: (worker id, started, finished).
async fn runs(
    b: &TestBroker,
    job: &str,
) -> Vec<(String, time::OffsetDateTime, time::OffsetDateTime)> {
    let rows = b
        .db()
        .await
        .query(
            "select worker_id, started_at, finished_at from regina.job_runs where job = $1 order by id",
            &[&job],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_old_messages_and_frees_their_keys() {
    let (b, api) = start_with(fast_jobs("solo")).await;
    api.configure("r", json!({"retentionSeconds": 1})).await;
    api.push(json!([{"queue": "r", "transactionId": "k1", "payload": 1},
                    {"queue": "r", "transactionId": "k2", "payload": 2}]))
        .await;
    let dup = api
        .push(json!([{"queue": "r", "transactionId": "k1", "payload": 9}]))
        .await;
    assert_eq!(dup.body[0]["status"], "duplicate");
    wait_until("retention deleted both", || async {
        stored(&b, "r").await == 0
    })
    .await;
    let again = api
        .push(json!([{"queue": "r", "transactionId": "k1", "payload": 3}]))
        .await;
    assert_eq!(
        again.body[0]["status"], "queued",
        "the key is free: {again:?}"
    );
    assert_eq!(api.pop("r", "batch=10").await.data(), vec![json!(3)]);
    let passes = runs(&b, "retention").await;
    assert!(
        passes.iter().all(|(worker, _, _)| worker == "solo"),
        "{passes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_message_survives_retention_until_its_lease_ends() {
    let (b, api) = start_with(fast_jobs("solo")).await;
    api.configure("r", json!({"retentionSeconds": 1, "leaseTime": 60}))
        .await;
    api.push_to("r", "Default", &[json!("held")]).await;
    let pop = api.pop("r", "").await;
    // Several passes run after the message is old enough; none may take it.
    let old_since = Instant::now() + Duration::from_secs(1);
    wait_until("passes after the message aged", || async {
        runs(&b, "retention").await.len() >= 3
            && Instant::now() > old_since + Duration::from_millis(300)
    })
    .await;
    assert_eq!(stored(&b, "r").await, 1, "inside an active lease: spared");
    let ack = api.ack_msg(&pop.messages()[0], "completed").await;
    assert_eq!(ack["success"], true, "the ack finds its message: {ack}");
    wait_until("deleted once settled", || async {
        stored(&b, "r").await == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_deletes_unconsumed_messages_and_consumers_move_on() {
    let (b, api) = start_with(fast_jobs("solo")).await;
    api.configure("e", json!({"maxWaitTimeSeconds": 1})).await;
    api.pop("e", "consumerGroup=g").await.assert_empty("empty");
    api.push_to("e", "p", &[json!(1), json!(2)]).await;
    wait_until("eviction deleted both", || async {
        stored(&b, "e").await == 0
    })
    .await;
    api.push_to("e", "p", &[json!(3)]).await;
    let r = api.pop("e", "consumerGroup=g&batch=10").await;
    assert_eq!(r.data(), vec![json!(3)], "{r:?}");
    // A pass is recorded after its deletions commit.
    wait_until("the eviction's pass is recorded", || async {
        !runs(&b, "eviction").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_runs_the_jobs_and_another_instance_takes_over() {
    let (a, api_a) = start_with(fast_jobs("first")).await;
    api_a.configure("r", json!({"retentionSeconds": 1})).await;
    wait_until("the first instance leads", || async {
        !runs(&a, "retention").await.is_empty()
    })
    .await;
    let b = TestBroker::start_on(&a.database_url, fast_jobs("second")).await;
    let api_b = Api::new(&b);
    // Work for both: messages that age while both instances run.
    api_b.push_to("r", "p", &[json!(1), json!(2)]).await;
    wait_until("deleted by the leader", || async {
        stored(&a, "r").await == 0
    })
    .await;
    let before = runs(&a, "retention").await.len();
    wait_until("more passes", || async {
        runs(&a, "retention").await.len() >= before + 10
    })
    .await;
    for job in ["retention", "eviction", "partition_cleanup"] {
        let passes = runs(&a, job).await;
        assert!(
            passes.iter().all(|(worker, _, _)| worker == "first"),
            "{job} ran on the follower: {passes:?}"
        );
    }
    let stopped_at = crate::support::db_now(&a).await;
    a.shutdown().await;
    api_b.push_to("r", "p", &[json!(3)]).await;
    wait_until("the second instance took over", || async {
        runs(&b, "retention")
            .await
            .iter()
            .any(|(worker, _, _)| worker == "second")
    })
    .await;
    let passes = runs(&b, "retention").await;
    for (worker, started, _) in &passes {
        if worker == "second" {
            assert!(
                *started >= stopped_at,
                "second ran before the first stopped: {passes:?}"
            );
        }
    }
    // Never two passes of one job at once.
    for pair in passes.windows(2) {
        assert!(pair[0].2 <= pair[1].1, "passes overlap: {pair:?}");
    }
    wait_until("deleted by the new leader", || async {
        stored(&b, "r").await == 0
    })
    .await;
}
