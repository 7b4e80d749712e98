//! §4.2, invariant 2: offset order is commit order; no consumer skips a message when many
//! producers push to one partition concurrently.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{Barrier, Mutex};

use crate::support::{start, start_with, ts, Api};

const PRODUCERS: usize = 16;

/// Runs `producers`, each pushing `requests` requests of `items` items to partition `hot`, while
/// `consumers` pop batches and ack them. Returns every delivery in delivery order.
async fn hammer(api: &Api, requests: usize, items: usize, consumers: usize) -> Vec<Value> {
    let total = PRODUCERS * requests * items;
    let barrier = Arc::new(Barrier::new(PRODUCERS + consumers));
    let log = Arc::new(Mutex::new(Vec::<Value>::with_capacity(total)));
    let mut producers = vec![];
    for p in 0..PRODUCERS {
        let api = api.with_own_pool();
        let barrier = barrier.clone();
        producers.push(tokio::spawn(async move {
            barrier.wait().await;
            for r in 0..requests {
                let batch: Vec<Value> = (0..items)
                    .map(|i| {
                        json!({"queue": "ord", "partition": "hot",
                                    "payload": {"p": p, "r": r, "i": i}})
                    })
                    .collect();
                let res = api.push(Value::Array(batch)).await;
                assert_eq!(res.status, 201, "{res:?}");
            }
        }));
    }
    let deadline = Instant::now() + regina_testkit::DEADLINE;
    let mut consumer_tasks = vec![];
    for _ in 0..consumers {
        let api = api.with_own_pool();
        let (barrier, log) = (barrier.clone(), log.clone());
        consumer_tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            while log.lock().await.len() < total {
                assert!(
                    Instant::now() < deadline,
                    "consumers did not receive everything in time"
                );
                let r = api.pop("ord", "batch=50&wait=true&timeout=500").await;
                if r.status == 204 {
                    continue;
                }
                assert_eq!(r.status, 200, "{r:?}");
                // Recorded before the ack: the next batch can only be claimed after the ack.
                log.lock().await.extend(r.messages());
                api.ack_all(&r).await;
            }
        }));
    }
    for t in producers.into_iter().chain(consumer_tasks) {
        t.await.expect("task panicked");
    }
    let log = log.lock().await;
    log.clone()
}

/// Checks the delivered sequence: complete, no duplicates, each producer's requests in order,
/// each request's items adjacent, `createdAt` never decreasing.
fn check(delivered: &[Value], requests: usize, items: usize) {
    let total = PRODUCERS * requests * items;
    assert_eq!(
        delivered.len(),
        total,
        "every pushed message delivered exactly once"
    );
    let mut next: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut last_created = None;
    let mut prev: Option<&Value> = None;
    for m in delivered {
        let d = &m["data"];
        let (p, r, i) = (
            d["p"].as_u64().unwrap(),
            d["r"].as_u64().unwrap(),
            d["i"].as_u64().unwrap(),
        );
        let expect = next.entry(p).or_insert((0, 0));
        assert_eq!(
            (r, i),
            *expect,
            "producer {p}: skipped or reordered message at {m}"
        );
        *expect = if i + 1 == items as u64 {
            (r + 1, 0)
        } else {
            (r, i + 1)
        };
        if i > 0 {
            let before = &prev.expect("previous")["data"];
            assert_eq!(
                (before["p"].as_u64(), before["r"].as_u64()),
                (Some(p), Some(r)),
                "items of one request are consecutive offsets"
            );
        }
        let created = ts(&m["createdAt"]);
        if let Some(last) = last_created {
            assert!(
                created >= last,
                "createdAt decreased along the partition at {m}"
            );
        }
        last_created = Some(created);
        prev = Some(m);
    }
    for p in 0..PRODUCERS as u64 {
        assert_eq!(
            next.get(&p),
            Some(&(requests as u64, 0)),
            "producer {p} incomplete"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_to_one_partition_never_cause_a_skipped_message() {
    let (_b, api) = start().await;
    api.configure("ord", json!({})).await;
    let started = Instant::now();
    let delivered = hammer(&api, 200, 1, 2).await;
    println!(
        "ordering: {} messages from {PRODUCERS} producers in {:?}",
        delivered.len(),
        started.elapsed()
    );
    check(&delivered, 200, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_of_one_request_stay_consecutive_under_concurrent_pushes() {
    let (_b, api) = start().await;
    api.configure("ord", json!({})).await;
    let delivered = hammer(&api, 40, 5, 2).await;
    check(&delivered, 40, 5);
}

/// §4.4 under concurrency: many `autoAck` consumers together receive every message exactly once,
/// each partition in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_auto_ack_consumers_receive_every_message_exactly_once() {
    let (_b, api) = start().await;
    auto_ack_consumers_share(&api).await;
}

/// The same when autoAck pops do not wait for their commit to reach the disk
/// (`AUTO_ACK_COMMIT_ASYNC`): what is delivered does not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_auto_ack_commits_deliver_every_message_exactly_once() {
    let (_b, api) = start_with(|c| c.auto_ack_commit_async = true).await;
    auto_ack_consumers_share(&api).await;
}

/// Eight autoAck consumers drain 10 partitions of 30 messages: each message exactly once, each
/// delivery a consecutive run of its partition.
async fn auto_ack_consumers_share(api: &Api) {
    for p in 0..10 {
        let payloads: Vec<Value> = (0..30).map(|i| json!({"p": p, "i": i})).collect();
        api.push_to("aa", &format!("p{p}"), &payloads).await;
    }
    let barrier = Arc::new(Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let api = api.with_own_pool();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut runs = vec![];
                loop {
                    let r = api.pop("aa", "autoAck=true&batch=7&partitions=2").await;
                    if r.status == 204 {
                        return runs;
                    }
                    runs.push(r.data());
                }
            })
        })
        .collect();
    let mut per_partition: HashMap<u64, Vec<u64>> = HashMap::new();
    for t in tasks {
        for run in t.await.unwrap() {
            let mut in_run: HashMap<u64, Vec<u64>> = HashMap::new();
            for d in run {
                let (p, i) = (d["p"].as_u64().unwrap(), d["i"].as_u64().unwrap());
                in_run.entry(p).or_default().push(i);
            }
            for (p, seq) in in_run {
                let consecutive = seq.windows(2).all(|w| w[1] == w[0] + 1);
                assert!(
                    consecutive,
                    "partition {p}: one delivery is a consecutive range: {seq:?}"
                );
                per_partition.entry(p).or_default().extend(seq);
            }
        }
    }
    for p in 0..10 {
        let mut got = per_partition[&p].clone();
        got.sort_unstable();
        assert_eq!(
            got,
            (0..30).collect::<Vec<_>>(),
            "partition {p}: lost or duplicated"
        );
    }
}

/// Bursts of first pushes to new partitions, from concurrent producers naming them in different
/// orders, all land, each exactly once, and no push transaction deadlocks: partitions are created
/// in one global order, so creating transactions wait for each other in that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_pushes_to_new_partitions_all_land_once() {
    const PRODUCERS: usize = 48;
    const REQUESTS: usize = 10;
    const ITEMS: usize = 100;
    const PARTITIONS: usize = 8_000;
    let (broker, api) = start().await;
    let barrier = Arc::new(Barrier::new(PRODUCERS));
    let mut tasks = vec![];
    for producer in 0..PRODUCERS {
        let api = api.with_own_pool();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            for request in 0..REQUESTS {
                let seed = producer * REQUESTS + request;
                let items: Vec<Value> = (0..ITEMS)
                    .map(|i| {
                        let partition = (seed * 7919 + i * 104_729) % PARTITIONS;
                        json!({"queue": "fresh", "partition": format!("p{partition}"), "payload": [seed, i]})
                    })
                    .collect();
                let reply = api.push(Value::Array(items)).await;
                assert_eq!(reply.status, 201, "{reply:?}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let counts = broker
        .db()
        .await
        .query_one(
            "select count(*), count(distinct payload::text) from regina.messages",
            &[],
        )
        .await
        .unwrap();
    let total = (PRODUCERS * REQUESTS * ITEMS) as i64;
    assert_eq!(
        (counts.get::<_, i64>(0), counts.get::<_, i64>(1)),
        (total, total)
    );
    assert_eq!(
        deadlocks_reported(&broker).await,
        0,
        "push transactions deadlocked"
    );
}

/// Deadlocks PostgreSQL detected in this test's database. The victim's session publishes its
/// statistics once it has been idle for ten seconds (or on a later statement), so wait that long.
async fn deadlocks_reported(broker: &regina_testkit::TestBroker) -> i64 {
    tokio::time::sleep(Duration::from_secs(11)).await;
    broker
        .db()
        .await
        .query_one(
            "select deadlocks from pg_stat_database where datname = current_database()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}
