//! §3.3, §4.13: stored options that gate pushes and deliveries — `maxSize` (429) and `ttl`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::support::start;

fn items(queue: &str, from: usize, n: usize) -> Value {
    Value::Array(
        (from..from + n)
            .map(|i| json!({"queue": queue, "transactionId": format!("t{i}"), "payload": i}))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_beyond_max_size_answers_429_and_admits_a_prefix() {
    let (_b, api) = start().await;
    api.configure("cap", json!({"maxSize": 3})).await;
    let r = api.push(items("cap", 0, 5)).await;
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    let e = r.body.as_array().expect("the full array comes with a 429");
    assert_eq!(e.len(), 5);
    for (i, entry) in e.iter().enumerate() {
        assert_eq!(entry["index"], i);
        if i < 3 {
            assert_eq!(entry["status"], "queued", "{entry}");
        } else {
            assert_eq!(entry["status"], "failed", "{entry}");
            assert_eq!(entry["code"], "queue_full");
            assert_eq!(entry["error"], "Queue is full (maxSize 3)");
            assert_eq!(entry["queueName"], "cap");
            assert_eq!(entry["transaction_id"], format!("t{i}"));
        }
    }
    let pop = api.pop("cap", "batch=10").await;
    assert_eq!(pop.data(), vec![json!(0), json!(1), json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_messages_free_capacity_and_duplicates_never_count() {
    let (_b, api) = start().await;
    api.configure("cap", json!({"maxSize": 2})).await;
    assert_eq!(api.push(items("cap", 0, 2)).await.status, 201);
    let dup = api.push(items("cap", 0, 2)).await;
    assert_eq!(
        dup.status, 201,
        "duplicates are never rejected for capacity: {dup:?}"
    );
    assert!(dup
        .body
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "duplicate"));
    assert_eq!(api.push(items("cap", 2, 1)).await.status, 429);
    let r = api.pop("cap", "batch=2").await;
    api.ack_all(&r).await;
    let r = api.push(items("cap", 2, 2)).await;
    assert_eq!(r.status, 201, "depth counts only unsettled messages: {r:?}");
    assert_eq!(api.push(items("cap", 4, 1)).await.status, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_rejection_is_per_queue_within_one_request() {
    let (_b, api) = start().await;
    api.configure("cap", json!({"maxSize": 1})).await;
    let r = api
        .push(
            json!([{"queue": "cap", "payload": 1}, {"queue": "free", "payload": 2},
                     {"queue": "cap", "payload": 3}, {"queue": "free", "payload": 4}]),
        )
        .await;
    assert_eq!(r.status, 429, "{r:?}");
    let status: Vec<&str> = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["queued", "queued", "failed", "queued"]);
}

/// §4.13: pushes to a capped queue are serialised, so racing pushes cannot overshoot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_pushes_never_overshoot_max_size() {
    let (_b, api) = start().await;
    api.configure("cap", json!({"maxSize": 10})).await;
    let barrier = Arc::new(Barrier::new(24));
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let api = api.with_own_pool();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                api.push(items("cap", i, 1)).await
            })
        })
        .collect();
    let mut queued = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            201 => queued += 1,
            429 => assert_eq!(r.body[0]["code"], "queue_full"),
            _ => panic!("{r:?}"),
        }
    }
    assert_eq!(queued, 10, "exactly maxSize pushes admitted");
    assert_eq!(api.pop("cap", "batch=100").await.messages().len(), 10);
}

/// "stale" is past its ttl of 1 s before "fresh" is pushed: no pop ever gets it. That "fresh",
/// still within its ttl, is delivered to every group can only be checked by pops that ran within
/// a second of its push; a slower attempt starts over on a new queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_past_their_ttl_are_never_delivered() {
    let (_b, api) = start().await;
    let queue = regina_testkit::conclusive("pops within the ttl of the fresh message", |n| {
        let api = api.clone();
        async move {
            let queue = format!("ttl-{n}");
            api.configure(&queue, json!({"ttl": 1})).await;
            api.push_one(&queue, "Default", json!("stale")).await;
            tokio::time::sleep(Duration::from_millis(1300)).await;
            let fresh_pushed = Instant::now();
            api.push_one(&queue, "Default", json!("fresh")).await;
            let r = api.pop(&queue, "batch=10").await;
            let g = api.pop(&queue, "batch=10&consumerGroup=late").await;
            let read = fresh_pushed.elapsed();
            for pop in [&r, &g] {
                assert!(
                    !pop.data().contains(&json!("stale")),
                    "an expired message was delivered: {pop:?}"
                );
            }
            if read >= Duration::from_millis(950) {
                return Err(format!("read {read:?} after the push of the fresh message"));
            }
            assert_eq!(r.data(), vec![json!("fresh")], "{r:?}");
            assert_eq!(g.data(), vec![json!("fresh")], "expired for every group");
            Ok(queue)
        }
    })
    .await;
    assert_eq!(
        api.dlq(&format!("queue={queue}")).await.body["total"],
        0,
        "expiry writes no DLQ entry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_message_stays_ackable_after_its_ttl() {
    let (_b, api) = start().await;
    api.configure("ttl", json!({"ttl": 1, "leaseTime": 60}))
        .await;
    api.push_one("ttl", "Default", json!(1)).await;
    let r = api.pop("ttl", "").await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let res = api.ack_msg(&r.messages()[0], "completed").await;
    assert_eq!(res["success"], true, "{res}");
    assert_eq!(res["leaseReleased"], true);
}
