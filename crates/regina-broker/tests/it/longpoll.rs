//! §4.9: long-poll — wake sources, deadlines, disconnects, waiter limit.
//!
//! A pop expected to be woken waits [`PARKED_POP_TIMEOUT_MS`] on a broker without the periodic
//! re-check (`longpoll_recheck_ms = 0`): only the wake-up under test can answer it before its
//! timeout, so an answer with the message proves the wake-up, whatever the machine's speed.
//! Latencies are printed, never judged.

use std::time::{Duration, Instant};

use regina_testkit::{DEADLINE, PARKED_POP_TIMEOUT_MS};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::support::{start, start_event_driven, start_with, Api, Reply};

/// The query of a long-poll that only an event may answer: `wait=true` is added by [`park`].
fn parked(extra: &str) -> String {
    format!("timeout={PARKED_POP_TIMEOUT_MS}{extra}")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

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

/// A parked pop is answered by the push (the only event that can answer it before its timeout),
/// twenty times in a row; the latencies are printed for information.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_pop_is_woken_by_a_push() {
    let (_b, api) = start_event_driven().await;
    api.configure("lp", json!({})).await;
    let mut samples = vec![];
    for i in 0..20 {
        let waiter = park(&api, "lp", &parked("&autoAck=true"));
        api.wait_for_waiters(1).await;
        api.push_one("lp", "Default", json!(i)).await;
        let pushed = Instant::now();
        let (r, got) = waiter.await.expect("waiter");
        assert_eq!(r.status, 200, "woken by the push, not timed out: {r:?}");
        assert_eq!(r.data(), vec![json!(i)], "{r:?}");
        samples.push(got.saturating_duration_since(pushed));
    }
    samples.sort();
    let (median, p90, max) = (samples[10], samples[18], samples[19]);
    println!(
        "long-poll latency push-response -> pop-response: median {:.2} ms, p90 {:.2} ms, max {:.2} ms (n=20)",
        ms(median), ms(p90), ms(max)
    );
}

/// At its deadline, and not before, a long-poll that nothing woke answers `204 timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_answers_timeout_at_its_deadline() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let started = Instant::now();
    let r = api.pop("lp", "wait=true&timeout=1000").await;
    let took = started.elapsed();
    println!("a 1000 ms long-poll answered after {:.1} ms", ms(took));
    r.assert_empty("timeout");
    assert!(
        took >= Duration::from_millis(980),
        "answered before the deadline: {took:?}"
    );
}

/// Without `wait=true`, or with `timeout=0`, a pop answers at once: `empty`, the reason of a pop
/// that did not park (a parked one answers `timeout` at its deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_zero_or_no_wait_never_parks() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    for q in ["wait=true&timeout=0", "timeout=5000", ""] {
        api.pop("lp", q).await.assert_empty("empty");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_on_an_unknown_queue_wakes_when_a_push_creates_it() {
    let (_b, api) = start_event_driven().await;
    let waiter = park(&api, "born", &parked("&consumerGroup=g"));
    api.wait_for_waiters(1).await;
    api.push_one("born", "p", json!("first")).await;
    let (r, _) = waiter.await.unwrap();
    assert_eq!(r.status, 200, "woken by the push, not timed out: {r:?}");
    assert_eq!(r.data(), vec![json!("first")], "{r:?}");
}

/// The lease's own expiry (300 s) is far beyond the waiters' timeout: only the ack can wake them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_pop_is_woken_when_a_lease_of_its_group_ends() {
    let (_b, api) = start_event_driven().await;
    api.push_to("lp", "Default", &[json!(1)]).await;
    let holder = api.pop("lp", "").await;
    let waiter = park(&api, "lp", &parked(""));
    api.wait_for_waiters(1).await;
    let res = api.ack_msg(&holder.messages()[0], "retry").await;
    assert_eq!(res["leaseReleased"], true);
    let (r, _) = waiter.await.unwrap();
    assert_eq!(r.status, 200, "woken by the ack, not timed out: {r:?}");
    assert_eq!(r.data(), vec![json!(1)], "{r:?}");
    // A completed ack that leaves more messages wakes the group's waiters too.
    api.push_one("lp", "Default", json!(2)).await;
    let waiter = park(&api, "lp", &parked(""));
    api.wait_for_waiters(1).await;
    api.ack_msg(&r.messages()[0], "completed").await;
    let (r, _) = waiter.await.unwrap();
    assert_eq!(r.status, 200, "woken by the ack, not timed out: {r:?}");
    assert_eq!(r.data(), vec![json!(2)], "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_partition_waiter_gets_only_its_partition() {
    let (_b, api) = start().await;
    api.configure("lp", json!({})).await;
    let api2 = api.clone();
    let waiter = tokio::spawn(async move {
        api2.pop_partition("lp", "A", &format!("wait=true&{}", parked("")))
            .await
    });
    api.wait_for_waiters(1).await;
    api.push_one("lp", "B", json!("b")).await;
    api.push_one("lp", "A", json!("a")).await;
    let r = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!("a")], "{r:?}");
}

/// The push answers one waiter of each group; the other waiter of g1 goes on waiting (shutdown
/// answers it at the end: its own timeout is far away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_push_wakes_every_group_but_one_consumer_per_group() {
    let (b, api) = start_event_driven().await;
    api.configure("lp", json!({})).await;
    let waiters: Vec<_> = ["g1", "g1", "g2"]
        .iter()
        .map(|g| park(&api, "lp", &parked(&format!("&consumerGroup={g}"))))
        .collect();
    api.wait_for_waiters(3).await;
    api.push_one("lp", "Default", json!("x")).await;
    regina_testkit::wait_until("two waiters are answered", || {
        let answered = waiters.iter().filter(|w| w.is_finished()).count();
        async move { answered >= 2 }
    })
    .await;
    b.shutdown().await;
    let mut delivered = vec![];
    for (i, w) in waiters.into_iter().enumerate() {
        let (r, _) = w.await.unwrap();
        if r.status == 200 {
            delivered.push((i, r.body["consumerGroup"].clone()));
        } else {
            r.assert_empty("shutdown");
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

/// §4.9: a woken waiter that finds nothing parks again with its original deadline. Seeks wake
/// every waiter of their group; the waiter is woken again and again until it answers. Had a
/// wake-up reset its deadline, it would not answer while the seeks go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_waiter_that_finds_nothing_keeps_its_original_deadline() {
    const TIMEOUT: Duration = Duration::from_millis(1500);
    let (_b, api) = start_event_driven().await;
    let (at, woken) = regina_testkit::conclusive("a seek wakes the waiter", |n| {
        let api = api.clone();
        async move {
            let queue = format!("lp-{n}");
            api.configure(&queue, json!({})).await;
            let started = Instant::now();
            let waiter = park(
                &api,
                &queue,
                &format!("timeout={}&consumerGroup=g", TIMEOUT.as_millis()),
            );
            api.wait_for_waiters(1).await;
            let seek = format!("/api/v1/consumer-groups/g/queues/{queue}/seek");
            // Seeks answered before `started + TIMEOUT` ran while the waiter was registered and
            // before its deadline: each woke it.
            let mut woken = 0;
            while !waiter.is_finished() {
                let r = api.post(&seek, &json!({"toEnd": true})).await;
                assert_eq!(r.status, 200, "{r:?}");
                if started.elapsed() < TIMEOUT {
                    woken += 1;
                }
                assert!(
                    started.elapsed() < DEADLINE,
                    "still parked after {woken} wake-ups: the deadline moved"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let (r, at) = waiter.await.unwrap();
            r.assert_empty("timeout");
            let waited = at.saturating_duration_since(started);
            assert!(
                waited >= TIMEOUT,
                "answered before its deadline: {waited:?}"
            );
            if woken == 0 {
                return Err(format!(
                    "no seek came before the deadline (answered after {waited:?})"
                ));
            }
            Ok((waited, woken))
        }
    })
    .await;
    println!(
        "answered {:.1} ms after parking, woken {woken} times before",
        ms(at)
    );
}

/// Two waiters fill `LONGPOLL_WAITERS_MAX`: a third is refused. They wait far beyond the test;
/// shutdown answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_beyond_the_limit_are_refused_with_503_overloaded() {
    let (b, api) = start_with(|c| c.longpoll_waiters_max = 2).await;
    api.configure("lp", json!({})).await;
    let w1 = park(&api, "lp", &parked(""));
    let w2 = park(&api, "lp", &parked("&consumerGroup=g"));
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
    b.shutdown().await;
    for w in [w1, w2] {
        w.await.unwrap().0.assert_empty("shutdown");
    }
}

/// §4.9: a client that disconnects cancels its waiter: the slot is freed and no lease is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_releases_its_waiter() {
    let (_b, api) = start_with(|c| c.longpoll_waiters_max = 1).await;
    api.configure("lp", json!({})).await;
    let gone = park(&api, "lp", &parked(""));
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

/// Shutdown answers a parked pop `204 shutdown` (its own timeout is far away: the reason shows
/// what answered it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_parked_pops_with_204_shutdown() {
    let (b, api) = start().await;
    api.configure("lp", json!({})).await;
    let waiter = park(&api, "lp", &parked(""));
    api.wait_for_waiters(1).await;
    b.shutdown().await;
    let (r, _) = waiter.await.unwrap();
    r.assert_empty("shutdown");
}

/// §4.9: no lost wake-ups — a burst of messages to many partitions reaches every parked consumer
/// of the group, each woken by the push (none times out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_wakes_as_many_parked_consumers_as_it_has_partitions() {
    let (_b, api) = start_event_driven().await;
    api.configure("lp", json!({})).await;
    let waiters: Vec<_> = (0..8)
        .map(|_| park(&api, "lp", &parked("&consumerGroup=g")))
        .collect();
    api.wait_for_waiters(8).await;
    let items: Vec<_> = (0..8)
        .map(|p| json!({"queue": "lp", "partition": format!("p{p}"), "payload": p}))
        .collect();
    assert_eq!(api.push(serde_json::Value::Array(items)).await.status, 201);
    let mut got = vec![];
    for w in waiters {
        let (r, _) = w.await.unwrap();
        assert_eq!(
            r.status, 200,
            "a waiter was left parked with messages available: {r:?}"
        );
        got.extend(r.data());
    }
    got.sort_by_key(|v| v.as_i64());
    assert_eq!(got, (0..8).map(|p| json!(p)).collect::<Vec<_>>());
}
