//! §3.13 stats refresh, §4.15 the leader's refresh and the trim of the metrics history: passes
//! recorded, skipped while another session holds the lock, following changes from one pass to
//! the next, run by the leader every interval.

use regina_testkit::eventually;
use serde_json::json;
use time::OffsetDateTime;

use crate::stats_support::{midnight, minute, queue_metrics, worker_metrics, STATS_LOCK_KEY};
use crate::support::{enc, start, start_with, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_refresh_runs_a_pass_and_records_it() {
    let (b, api) = start_with(|c| c.worker_id = Some("refresher".into())).await;
    let body = api.refresh_stats().await;
    assert!(body["durationMs"].as_u64().is_some(), "{body}");
    let runs: i64 = b
        .db()
        .await
        .query_one(
            "select count(*) from regina.job_runs where job = 'stats_refresh' and worker_id = 'refresher'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(runs >= 1, "the pass is recorded in job_runs");
    let overview = api.get("/api/v1/resources/overview").await;
    let age = overview.body["statsAge"].as_i64().expect("statsAge");
    assert!((0..=2).contains(&age), "{overview:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_refresh_is_skipped_while_another_session_holds_the_lock() {
    let (b, api) = start().await;
    let holder = b.db().await;
    holder
        .execute("select pg_advisory_lock($1)", &[&STATS_LOCK_KEY])
        .await
        .unwrap();
    let r = api.post("/api/v1/stats/refresh", &json!({})).await;
    assert_eq!(
        (r.status, &r.body),
        (
            200,
            &json!({"skipped": true, "reason": "another_instance_running"})
        )
    );
    holder
        .execute("select pg_advisory_unlock($1)", &[&STATS_LOCK_KEY])
        .await
        .unwrap();
    assert_eq!(api.refresh_stats().await["refreshed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_recounts_every_partition_when_batches_are_cut_by_their_rows() {
    // Batches of at most 5 message rows: partitions of 3 messages go two at a time, so the pass
    // runs batches that take fewer partitions than STATS_BATCH_SIZE and must not stop at the
    // first of them.
    let (b, api) = start_with(|c| {
        c.worker_id = Some("rows".into());
        c.stats_batch_rows = 5;
    })
    .await;
    api.configure("deep", json!({})).await;
    for p in ["p1", "p2", "p3", "p4", "p5"] {
        api.push_to("deep", p, &[json!(1), json!(2), json!(3)])
            .await;
    }
    api.refresh_stats().await;
    let d = api.get("/api/v1/status/queues/deep").await;
    assert_eq!(d.body["totals"]["total"], 15, "{d:?}");
    let db = b.db().await;
    let unrecounted: i64 = db
        .query_one(
            "select count(*) from regina.partitions p
             join regina.queues q on q.id = p.queue_id
             left join regina.partition_stats s on s.partition_id = p.id
             where q.name = 'deep' and p.name like 'p_' and s.total is distinct from 3",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(unrecounted, 0, "every partition counted in one pass");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_follow_pops_acks_and_deletes_from_one_refresh_to_the_next() {
    let (_b, api) = start().await;
    api.configure("f", json!({"retryLimit": 5})).await;
    let pushed = api.push_to("f", "p", &[json!(1), json!(2), json!(3)]).await;
    api.push_to("f", "quiet", &[json!(4)]).await;
    api.refresh_stats().await;
    let totals = |r: &Reply| r.body["totals"].clone();
    let d = api.get("/api/v1/status/queues/f").await;
    assert_eq!(
        totals(&d),
        json!({"total": 4, "pending": 4, "processing": 0, "completed": 0, "failed": 0, "deadLetter": 0})
    );

    let leased = api.pop_partition("f", "p", "batch=2").await;
    api.refresh_stats().await;
    let d = api.get("/api/v1/status/queues/f").await;
    assert_eq!(totals(&d)["processing"], 2);

    api.ack_msg(&leased.messages()[0], "completed").await;
    api.ack_msg(&leased.messages()[1], "failed").await;
    api.refresh_stats().await;
    let d = api.get("/api/v1/status/queues/f").await;
    assert_eq!(
        totals(&d),
        json!({"total": 4, "pending": 3, "processing": 0, "completed": 1, "failed": 1, "deadLetter": 0})
    );

    let partition_id = pushed[2]["partition_id"].as_str().unwrap();
    let tx = pushed[2]["transaction_id"].as_str().unwrap();
    let del = api
        .send(
            reqwest::Method::DELETE,
            &format!("/api/v1/messages/{partition_id}/{}", enc(tx)),
            None,
            &[],
        )
        .await;
    assert_eq!(del.status, 200, "{del:?}");
    api.refresh_stats().await;
    let d = api.get("/api/v1/status/queues/f").await;
    assert_eq!(totals(&d)["total"], 3, "the delete is seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_refreshes_the_stats_every_interval() {
    let (b, api) = start_with(|c| {
        c.worker_id = Some("leader-1".into());
        c.stats_interval_ms = 200;
    })
    .await;
    api.push_to("auto", "p", &[json!(1), json!(2)]).await;
    eventually("the leader refreshes the stats", || async {
        let o = api.get("/api/v1/resources/overview").await;
        // A queue's totals follow each batch of a pass; statsAge counts from a complete pass.
        if o.body["messages"]["total"] != 2 || o.body["statsAge"].is_null() {
            return Err(o);
        }
        assert!(o.body["statsAge"].as_i64().is_some_and(|a| a <= 2), "{o:?}");
        Ok(())
    })
    .await;
    let workers: Vec<String> = b
        .db()
        .await
        .query(
            "select distinct worker_id from regina.job_runs where job = 'stats_refresh'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(workers, ["leader-1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_trims_metrics_history_older_than_the_retention() {
    let (b, _api) = start_with(|c| {
        c.retention_interval_ms = 100;
        c.metrics_retention_days = 1;
        c.retention_batch_size = 2;
    })
    .await;
    let old = midnight(&b, 3).await;
    let fresh = minute(&b, 5).await;
    for t in [
        old,
        old + time::Duration::minutes(1),
        old + time::Duration::minutes(2),
        fresh,
    ] {
        worker_metrics(&b, t, "w", t, json!({})).await;
        queue_metrics(&b, t, "q", "w", json!({})).await;
        b.db()
            .await
            .execute(
                "insert into regina.queue_lag_history (bucket, queue_name, depth) values ($1, 'q', 1)",
                &[&t],
            )
            .await
            .unwrap();
    }
    eventually("the history trim keeps the recent rows", || async {
        let left: Vec<i64> = b
            .db()
            .await
            .query_one(
                // The fixture's rows only: this broker writes its own history meanwhile.
                "select (select count(*) from regina.worker_metrics where worker_id = 'w'),
                        (select count(*) from regina.queue_metrics where worker_id = 'w'),
                        (select count(*) from regina.queue_lag_history where queue_name = 'q')",
                &[],
            )
            .await
            .map(|r| vec![r.get(0), r.get(1), r.get(2)])
            .unwrap();
        if left == [1, 1, 1] {
            Ok(())
        } else {
            Err(left)
        }
    })
    .await;
    let kept: OffsetDateTime = b
        .db()
        .await
        .query_one(
            "select bucket from regina.worker_metrics where worker_id = 'w'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, fresh, "recent history stays");
    // The pass is recorded after its deletions commit: a reader can see the rows gone first.
    eventually("the trim's pass is recorded", || async {
        let trims: i64 = b
            .db()
            .await
            .query_one(
                "select count(*) from regina.job_runs where job = 'metrics_trim'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if trims >= 1 {
            Ok(())
        } else {
            Err(trims)
        }
    })
    .await;
}
