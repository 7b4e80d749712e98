//! §4.9, §4.11, invariant 3 across instances: several brokers on one database.

use std::sync::Arc;
use std::time::Instant;

use regina_testkit::PARKED_POP_TIMEOUT_MS;

use serde_json::json;
use tokio::sync::Barrier;

use crate::support::{start, Api};

async fn second(b: &regina_testkit::TestBroker) -> (regina_testkit::TestBroker, Api) {
    let other = regina_testkit::TestBroker::start_on(&b.database_url, |_| {}).await;
    let api = Api::new(&other);
    (other, api)
}

/// `regina_push_announcing` of an instance: 1 while it announces its pushes.
async fn announcing(api: &Api) -> f64 {
    crate::prometheus::scrape::Metrics::scrape(api)
        .await
        .value("regina_push_announcing", &[])
}

/// Waits until an instance announces its pushes (`on`) or knows it is alone.
async fn wait_announcing(api: &Api, on: bool) {
    let want = if on { 1.0 } else { 0.0 };
    regina_testkit::eventually("the instance knows whether it is alone", || async {
        let now = announcing(api).await;
        if now == want {
            Ok(())
        } else {
            Err(now)
        }
    })
    .await;
}

/// The waiter's instance has no periodic re-check and the waiter a timeout far away: only the
/// notification from the other instance can answer it with the message. Latency is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_on_one_instance_wakes_a_waiter_on_another() {
    let (b, api_a) = start().await;
    let other = regina_testkit::TestBroker::start_on(&b.database_url, |c| {
        c.longpoll_recheck_ms = 0;
    })
    .await;
    let api_b = Api::new(&other);
    // The first instance may have found itself alone before the second started: it hears of
    // the second's listen session and announces again.
    wait_announcing(&api_a, true).await;
    api_a.configure("x", json!({})).await;
    let mut samples = vec![];
    for i in 0..5 {
        let waiter = {
            let api_b = api_b.clone();
            tokio::spawn(async move {
                let r = api_b
                    .pop(
                        "x",
                        &format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true"),
                    )
                    .await;
                (r, Instant::now())
            })
        };
        api_b.wait_for_waiters(1).await;
        api_a.push_one("x", "Default", json!(i)).await;
        let pushed = Instant::now();
        let (r, got) = waiter.await.unwrap();
        assert_eq!(
            r.status, 200,
            "woken by the notification, not timed out: {r:?}"
        );
        assert_eq!(r.data(), vec![json!(i)], "{r:?}");
        samples.push(got.saturating_duration_since(pushed));
    }
    samples.sort();
    println!(
        "cross-instance long-poll latency: median {:?}, max {:?}",
        samples[2], samples[4]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_on_one_instance_holds_on_the_other() {
    let (b, api_a) = start().await;
    let (_other, api_b) = second(&b).await;
    api_a.push_to("x", "p", &[json!(1), json!(2)]).await;
    let held = api_a.pop("x", "consumerGroup=g").await;
    assert_eq!(held.status, 200);
    api_b
        .pop_partition("x", "p", "consumerGroup=g")
        .await
        .assert_empty("lease_held");
    let res = api_b.ack_msg(&held.messages()[0], "completed").await;
    assert_eq!(res["success"], true, "acks work on any instance: {res}");
    let next = api_b.pop("x", "consumerGroup=g").await;
    assert_eq!(next.data(), vec![json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_duplicates_across_instances_store_one_message() {
    let (b, api_a) = start().await;
    let (_other, api_b) = second(&b).await;
    for round in 0..5 {
        let barrier = Arc::new(Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let base = if i % 2 == 0 { &api_a.base } else { &api_b.base };
                let api = Api {
                    base: base.clone(),
                    http: regina_testkit::http(),
                };
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    api.push(json!([{"queue": "x", "transactionId": format!("k{round}"),
                                     "payload": i}]))
                        .await
                })
            })
            .collect();
        let mut queued = 0;
        for t in tasks {
            let r = t.await.unwrap();
            assert_eq!(r.status, 201, "{r:?}");
            queued += usize::from(r.body[0]["status"] == "queued");
        }
        assert_eq!(queued, 1, "round {round}");
    }
    assert_eq!(api_b.pop("x", "batch=100").await.messages().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_pops_across_instances_claim_a_partition_once() {
    let (b, api_a) = start().await;
    let (_other, api_b) = second(&b).await;
    api_a
        .push_to("x", "only", &[json!(1), json!(2), json!(3)])
        .await;
    let barrier = Arc::new(Barrier::new(16));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let base = if i % 2 == 0 { &api_a.base } else { &api_b.base };
            let api = Api {
                base: base.clone(),
                http: regina_testkit::http(),
            };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                api.pop("x", "batch=10").await
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r.status == 200 {
            winners += 1;
            assert_eq!(r.data(), vec![json!(1), json!(2), json!(3)]);
        }
    }
    assert_eq!(
        winners, 1,
        "one lease per (partition, group) across instances"
    );
}

/// An instance alone on its database does not announce its pushes (nobody would hear them); a
/// second instance's listen session turns announcing on for the first at once, and its waiters
/// are then woken by the first one's pushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_alone_skips_announcements_until_another_listens() {
    let (b, api_a) = start().await;
    wait_announcing(&api_a, false).await;
    api_a.push_one("x", "Default", json!(0)).await;
    regina_testkit::eventually("the announcement is skipped", || async {
        let m = crate::prometheus::scrape::Metrics::scrape(&api_a).await;
        let skipped = m.value("regina_push_announcements_skipped_total", &[]);
        if skipped >= 1.0 {
            Ok(())
        } else {
            Err(skipped)
        }
    })
    .await;
    let other = regina_testkit::TestBroker::start_on(&b.database_url, |c| {
        c.longpoll_recheck_ms = 0;
    })
    .await;
    let api_b = Api::new(&other);
    wait_announcing(&api_a, true).await;
    wait_announcing(&api_b, true).await;
    assert_eq!(api_b.pop("x", "autoAck=true").await.data(), vec![json!(0)]);
    let waiter = api_b.pop_in_background(
        "x",
        &format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true"),
    );
    api_b.wait_for_waiters(1).await;
    api_a.push_one("x", "Default", json!(1)).await;
    let r = waiter.await.unwrap();
    assert_eq!(r.status, 200, "woken by the announcement: {r:?}");
    assert_eq!(r.data(), vec![json!(1)], "{r:?}");
}
