//! §4.13 maxSize and ttl together, across instances: the depth counts what is stored, unexpired
//! and not settled by some known group, and pushes to a capped queue are serialised everywhere.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::support::{start, Api};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_pushes_on_two_instances_never_overshoot_max_size() {
    let (a, api_a) = start().await;
    let b = regina_testkit::TestBroker::start_on(&a.database_url, |_| {}).await;
    let api_b = Api::new(&b);
    api_a.configure("cap", json!({"maxSize": 7})).await;
    let barrier = Arc::new(Barrier::new(30));
    let tasks: Vec<_> = (0..30)
        .map(|i| {
            let base = if i % 2 == 0 { &api_a.base } else { &api_b.base };
            let api = Api {
                base: base.clone(),
                http: regina_testkit::http(),
            };
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                // Two items per request, to different partitions: admitted as a prefix.
                api.push(
                    json!([{"queue": "cap", "partition": format!("p{i}"), "payload": i},
                                {"queue": "cap", "partition": "shared", "payload": i}]),
                )
                .await
            })
        })
        .collect();
    let mut queued = 0;
    for t in tasks {
        let r = t.await.unwrap();
        let statuses: Vec<&str> = r
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        match r.status {
            201 => assert_eq!(statuses, ["queued", "queued"]),
            429 => assert!(
                statuses == ["queued", "failed"] || statuses == ["failed", "failed"],
                "a prefix: {statuses:?}"
            ),
            _ => panic!("{r:?}"),
        }
        queued += statuses.iter().filter(|s| **s == "queued").count();
    }
    assert_eq!(queued, 7, "exactly maxSize items admitted");
    let popped = api_b.pop("cap", "batch=100&partitions=100").await;
    assert_eq!(popped.messages().len(), 7);
}

/// That the new messages, still within their ttl, are the ones delivered can only be checked by a
/// pop within a second of their push; a slower attempt starts over on a new queue. That the
/// expired ones are never delivered holds for every attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_messages_free_capacity_and_a_later_ttl_applies_to_stored_messages() {
    let (_b, api) = start().await;
    regina_testkit::conclusive("a pop within the ttl of the new messages", |n| {
        let api = api.clone();
        async move {
            let queue = format!("c-{n}");
            api.configure(&queue, json!({"maxSize": 2})).await;
            let items = |from: usize| -> Value {
                json!([{"queue": queue, "transactionId": format!("t{from}"), "payload": from},
                       {"queue": queue, "transactionId": format!("t{}", from + 1), "payload": from + 1}])
            };
            assert_eq!(api.push(items(0)).await.status, 201);
            let full = api.push(items(2)).await;
            assert_eq!(full.status, 429, "{full:?}");
            assert_eq!(full.body[1]["error"], "Queue is full (maxSize 2)");
            // A ttl set now applies to the messages already stored: they expire, and stop
            // counting.
            api.configure(&queue, json!({"ttl": 1})).await;
            tokio::time::sleep(Duration::from_millis(1300)).await;
            let pushed = Instant::now();
            assert_eq!(
                api.push(items(2)).await.status,
                201,
                "expired messages do not count"
            );
            let r = api.pop(&queue, "batch=10").await;
            let read = pushed.elapsed();
            assert!(
                r.data().iter().all(|v| *v == json!(2) || *v == json!(3)),
                "the expired ones are never delivered: {r:?}"
            );
            if read >= Duration::from_millis(950) {
                return Err(format!("read {read:?} after the push"));
            }
            assert_eq!(r.data(), vec![json!(2), json!(3)], "{r:?}");
            Ok(())
        }
    })
    .await;
}
