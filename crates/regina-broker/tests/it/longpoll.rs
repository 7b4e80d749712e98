//! §4.9: long-poll — wake-up latency, deadlines, wake sources, disconnects, waiter limit.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinHandle;

use crate::support::{start, start_with, Api, Reply};

/// Starts a long-poll pop in its own task (own connection); yields the answer and its arrival time.
fn park(api: &Api, queue: &str, query: &str) -> JoinHandle<(Reply, Instant)> {
    let api = Api {
        base: api.base.clone(),
        http: regina_testkit::http(),
    };
    let (queue, query) = (queue.to_string(), query.to_string());
    tokio::spawn(async move {
        let r = api.pop(&queue, &format!("wait=true&{query}")).await;
        (r, Instant::now())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_pop_returns_within_milliseconds_of_a_push() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let mut samples = vec![];
    for i in 0..20 {
        let waiter = park(&api, "lp", "timeout=10000&autoAck=true");
        api.wait_for_waiters(1).await;
        api.push_one("lp", "Default", json!(i)).await;
        let pushed = Instant::now();
        let (r, got) = waiter.await.expect("waiter");
        assert_eq!(r.data(), vec![json!(i)], "{r:?}");
        samples.push(got.saturating_duration_since(pushed));
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (median, p90, max) = (samples[10], samples[18], samples[19]);
    println!(
        "long-poll latency push-response -> pop-response: median {:.2} ms, p90 {:.2} ms, max {:.2} ms (n=20)",
        ms(median), ms(p90), ms(max)
    );
    assert!(
        median < Duration::from_millis(50),
        "median wake-up {median:?}"
    );
    assert!(max < Duration::from_millis(250), "slowest wake-up {max:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_answers_timeout_at_its_deadline() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let started = Instant::now();
    let r = api.pop("lp", "wait=true&timeout=1000").await;
    let took = started.elapsed();
    r.assert_empty("timeout");
    assert!(
        took >= Duration::from_millis(980),
        "answered before the deadline: {took:?}"
    );
    assert!(
        took <= Duration::from_millis(1400),
        "answered late: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_zero_or_no_wait_never_parks() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    for q in ["wait=true&timeout=0", "timeout=5000", ""] {
        let started = Instant::now();
        api.pop("lp", q).await.assert_empty("empty");
        assert!(started.elapsed() < Duration::from_millis(500), "{q} waited");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_on_an_unknown_queue_wakes_when_a_push_creates_it() {
    let (_b, api) = start().await;
    let waiter = park(&api, "born", "timeout=10000&consumerGroup=g");
    api.wait_for_waiters(1).await;
    api.push_one("born", "p", json!("first")).await;
    let pushed = Instant::now();
    let (r, got) = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!("first")], "{r:?}");
    assert!(got.saturating_duration_since(pushed) < Duration::from_millis(500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_pop_is_woken_when_a_lease_of_its_group_ends() {
    let (_b, api) = start().await;
    api.push_to("lp", "Default", &[json!(1)]).await;
    let holder = api.pop("lp", "").await;
    let waiter = park(&api, "lp", "timeout=10000");
    api.wait_for_waiters(1).await;
    let res = api.ack_msg(&holder.messages()[0], "retry").await;
    assert_eq!(res["leaseReleased"], true);
    let acked = Instant::now();
    let (r, got) = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!(1)], "{r:?}");
    assert!(
        got.saturating_duration_since(acked) < Duration::from_millis(500),
        "woken by the ack"
    );
    // A completed ack that leaves more messages wakes the group's waiters too.
    api.push_one("lp", "Default", json!(2)).await;
    let waiter = park(&api, "lp", "timeout=10000");
    api.wait_for_waiters(1).await;
    api.ack_msg(&r.messages()[0], "completed").await;
    let acked = Instant::now();
    let (r, got) = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!(2)], "{r:?}");
    assert!(got.saturating_duration_since(acked) < Duration::from_millis(500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_partition_waiter_gets_only_its_partition() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let api2 = api.clone();
    let waiter = tokio::spawn(async move {
        api2.pop_partition("lp", "A", "wait=true&timeout=10000")
            .await
    });
    api.wait_for_waiters(1).await;
    api.push_one("lp", "B", json!("b")).await;
    api.push_one("lp", "A", json!("a")).await;
    let r = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!("a")], "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_push_wakes_every_group_but_one_consumer_per_group() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let parked_at = Instant::now();
    let waiters: Vec<_> = ["g1", "g1", "g2"]
        .iter()
        .map(|g| park(&api, "lp", &format!("timeout=1500&consumerGroup={g}")))
        .collect();
    api.wait_for_waiters(3).await;
    api.push_one("lp", "Default", json!("x")).await;
    let mut delivered = vec![];
    for (i, w) in waiters.into_iter().enumerate() {
        let (r, _) = w.await.unwrap();
        if r.status == 200 {
            delivered.push((i, r.body["consumerGroup"].clone()));
        } else {
            r.assert_empty("timeout");
            // The loser was woken, found nothing and parked again with its original deadline.
            let took = parked_at.elapsed();
            assert!(
                took < Duration::from_millis(1500 + 400),
                "deadline was reset: {took:?}"
            );
        }
    }
    let g1 = delivered.iter().filter(|(_, g)| *g == "g1").count();
    let g2 = delivered.iter().filter(|(_, g)| *g == "g2").count();
    assert_eq!(
        (g1, g2),
        (1, 1),
        "fan-out to each group, one lease per group: {delivered:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_beyond_the_limit_are_refused_with_503_overloaded() {
    let (_b, api) = start_with(|c| c.longpoll_waiters_max = 2).await;
    api.configure("lp", json!({})).await;
    let w1 = park(&api, "lp", "timeout=3000");
    let w2 = park(&api, "lp", "timeout=3000&consumerGroup=g");
    api.wait_for_waiters(2).await;
    let r = api
        .pop("lp", "wait=true&timeout=3000&consumerGroup=h")
        .await;
    r.assert_error(503, "overloaded");
    assert!(
        r.header("retry-after").is_some(),
        "503 carries Retry-After: {r:?}"
    );
    api.pop("lp", "").await.assert_empty("empty");
    for w in [w1, w2] {
        w.await.unwrap().0.assert_empty("timeout");
    }
}

/// §4.9: a client that disconnects cancels its waiter: the slot is freed and no lease is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_releases_its_waiter() {
    let (_b, api) = start_with(|c| c.longpoll_waiters_max = 1).await;
    api.configure("lp", json!({})).await;
    let gone = park(&api, "lp", "timeout=20000");
    api.wait_for_waiters(1).await;
    let refused = api.pop("lp", "wait=true&timeout=200").await;
    refused.assert_error(503, "overloaded");
    gone.abort();
    regina_testkit::eventually("the disconnected waiter frees its slot", || async {
        let r = api.pop("lp", "wait=true&timeout=300").await;
        if r.status != 204 {
            r.assert_error(503, "overloaded");
            return Err(r);
        }
        r.assert_empty("timeout");
        Ok(())
    })
    .await;
    api.push_one("lp", "Default", json!("after")).await;
    let r = api.pop("lp", "").await;
    assert_eq!(
        r.data(),
        vec![json!("after")],
        "the cancelled waiter claimed nothing: {r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_parked_pops_with_204_shutdown() {
    let (b, api) = start().await;
    api.configure("lp", json!({})).await;
    let waiter = park(&api, "lp", "timeout=20000");
    api.wait_for_waiters(1).await;
    let started = Instant::now();
    b.shutdown().await;
    let (r, _) = waiter.await.unwrap();
    r.assert_empty("shutdown");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waiters answered promptly"
    );
}

/// §4.9: no lost wake-ups — a burst of messages to many partitions reaches every parked consumer
/// of the group long before their deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_wakes_as_many_parked_consumers_as_it_has_partitions() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let waiters: Vec<_> = (0..8)
        .map(|_| park(&api, "lp", "timeout=8000&consumerGroup=g"))
        .collect();
    api.wait_for_waiters(8).await;
    let items: Vec<_> = (0..8)
        .map(|p| json!({"queue": "lp", "partition": format!("p{p}"), "payload": p}))
        .collect();
    assert_eq!(api.push(serde_json::Value::Array(items)).await.status, 201);
    let pushed = Instant::now();
    let mut got = vec![];
    for w in waiters {
        let (r, at) = w.await.unwrap();
        assert_eq!(
            r.status, 200,
            "a waiter was left parked with messages available: {r:?}"
        );
        assert!(
            at.saturating_duration_since(pushed) < Duration::from_secs(1),
            "late wake-up"
        );
        got.extend(r.data());
    }
    got.sort_by_key(|v| v.as_i64());
    assert_eq!(got, (0..8).map(|p| json!(p)).collect::<Vec<_>>());
}
