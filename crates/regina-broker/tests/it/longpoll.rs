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
    let api = api.with_own_pool();
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
    // Its group had no subscription to the queue when the push ran: the push did not run its
    // pop (subscribing waits for the pushes in flight), and the long-poll asked on its own.
    assert_eq!(push_pops(&api).await.1, 0.0);
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

/// A broker that trusts what it knows of quiet queues far longer than any test runs, and has no
/// periodic re-check: a long-poll it parks at once can only be answered by an event.
async fn start_quiet_trusting() -> (regina_testkit::TestBroker, Api) {
    start_with(|c| {
        c.longpoll_recheck_ms = 0;
        c.longpoll_quiet_ms = 600_000;
    })
    .await
}

/// Database pop calls made so far, and the value of `counter`.
async fn pop_calls_and(api: &Api, counter: &str) -> (f64, f64) {
    let m = crate::prometheus::scrape::Metrics::scrape(api).await;
    (
        m.observations("regina_batch_requests", &[("op", "pop")]),
        m.value(counter, &[]),
    )
}

/// Database pop calls made so far, and long-polls parked without one.
async fn pop_calls(api: &Api) -> (f64, f64) {
    pop_calls_and(api, "regina_longpoll_quiet_parks_total").await
}

/// After a delivery that left nothing due, the consumer's next long-poll parks without asking
/// the database; the next push ends that knowledge, and the long-poll after it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_after_the_last_message_parks_without_a_database_call() {
    let (_b, api) = start_quiet_trusting().await;
    api.push_one("q", "Default", json!(1)).await;
    let got = api.pop("q", "wait=true&timeout=1000&autoAck=true").await;
    assert_eq!(got.data(), vec![json!(1)], "{got:?}");
    let (calls, parks) = pop_calls(&api).await;
    let next = api.pop("q", "wait=true&timeout=300&autoAck=true").await;
    next.assert_empty("timeout");
    let (calls_after, parks_after) = pop_calls(&api).await;
    assert_eq!(
        calls_after, calls,
        "no database call for a queue known to be quiet"
    );
    assert_eq!(parks_after, parks + 1.0);

    api.push_one("q", "Default", json!(2)).await;
    let got = api.pop("q", &parked("&wait=true&autoAck=true")).await;
    assert_eq!(
        got.data(),
        vec![json!(2)],
        "the push ended the knowledge: {got:?}"
    );
    assert_eq!(pop_calls(&api).await.0, calls + 1.0);
}

/// A lease held by the group makes the queue quiet until it expires; an ack that ends it (here
/// `failed`, so the message is due again at once) ends the knowledge, and the next long-poll is
/// answered with the message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_that_ends_a_lease_ends_what_was_known() {
    let (_b, api) = start_quiet_trusting().await;
    api.configure("q", json!({"leaseTime": 3600, "retryLimit": 5}))
        .await;
    api.push_one("q", "Default", json!("m")).await;
    let first = api.pop("q", "wait=true&timeout=1000&consumerGroup=g").await;
    assert_eq!(first.data(), vec![json!("m")], "{first:?}");
    let (_, parks) = pop_calls(&api).await;
    api.pop("q", "wait=true&timeout=200&consumerGroup=g")
        .await
        .assert_empty("timeout");
    assert_eq!(
        pop_calls(&api).await.1,
        parks + 1.0,
        "the lease keeps the group quiet"
    );
    let m = &first.messages()[0];
    let mut ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                         "leaseId": first.body["leaseId"], "status": "failed",
                         "consumerGroup": "g"});
    ack["error"] = json!("try again");
    let r = api.ack(ack).await;
    assert_eq!(r.status, 200, "{r:?}");
    let again = api.pop("q", &parked("&wait=true&consumerGroup=g")).await;
    assert_eq!(again.data(), vec![json!("m")], "{again:?}");
}

/// An ack that completes the last message of its partition ends its lease but makes nothing due:
/// what the instance knows of the group's quiet stands, and the consumer's next long-poll parks
/// without asking the database. A push after it is delivered as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_of_the_last_message_leaves_the_group_quiet() {
    let (_b, api) = start_quiet_trusting().await;
    api.configure("q", json!({"leaseTime": 3600})).await;
    api.push_one("q", "Default", json!("m")).await;
    let first = api.pop("q", "wait=true&timeout=1000&consumerGroup=g").await;
    assert_eq!(first.data(), vec![json!("m")], "{first:?}");
    api.pop("q", "wait=true&timeout=200&consumerGroup=g")
        .await
        .assert_empty("timeout");
    let r = api.ack_msg(&first.messages()[0], "completed").await;
    assert_eq!(r["success"], true, "{r}");
    let (calls, parks) = pop_calls(&api).await;
    api.pop("q", "wait=true&timeout=200&consumerGroup=g")
        .await
        .assert_empty("timeout");
    assert_eq!(
        pop_calls(&api).await,
        (calls, parks + 1.0),
        "parked at once, without a database call"
    );
    api.push_one("q", "Default", json!("n")).await;
    let next = api.pop("q", &parked("&wait=true&consumerGroup=g")).await;
    assert_eq!(next.data(), vec![json!("n")], "{next:?}");
}

/// What one instance knows of a quiet queue ends with a push on another instance: the push's
/// notification either ends it before the long-poll or wakes the long-poll after it parked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_on_another_instance_ends_what_was_known() {
    let (a, api_a) = start_quiet_trusting().await;
    let other = regina_testkit::TestBroker::start_on(&a.database_url, |_| {}).await;
    let api_b = Api::new(&other);
    api_a.push_one("q", "Default", json!(1)).await;
    let got = api_a.pop("q", "wait=true&timeout=1000&autoAck=true").await;
    assert_eq!(got.data(), vec![json!(1)], "{got:?}");
    api_b.push_one("q", "Default", json!(2)).await;
    let got = api_a.pop("q", &parked("&wait=true&autoAck=true")).await;
    assert_eq!(got.data(), vec![json!(2)], "{got:?}");
}

/// `LONGPOLL_QUIET_MS=0`: every long-poll asks the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn longpoll_quiet_ms_zero_asks_the_database_every_time() {
    let (_b, api) = start_with(|c| c.longpoll_quiet_ms = 0).await;
    api.push_one("q", "Default", json!(1)).await;
    api.pop("q", "wait=true&timeout=1000&autoAck=true").await;
    let (calls, _) = pop_calls(&api).await;
    api.pop("q", "wait=true&timeout=100&autoAck=true")
        .await
        .assert_empty("timeout");
    let (calls_after, parks) = pop_calls(&api).await;
    assert!(calls_after > calls, "{calls_after} > {calls}");
    assert_eq!(parks, 0.0);
}

/// A broker on which a parked long-poll resumes only for an event: no periodic re-check, and no
/// trusted quiet whose end would make it ask the database again (it would then be running a pop
/// when the push comes, not parked).
async fn start_parked_until_an_event(push_pops: bool) -> (regina_testkit::TestBroker, Api) {
    start_with(|c| {
        c.longpoll_recheck_ms = 0;
        c.longpoll_quiet_ms = 0;
        c.longpoll_push_pops = push_pops;
    })
    .await
}

/// Database pop calls made so far, and long-poll pops that pushes ran in their transactions.
async fn push_pops(api: &Api) -> (f64, f64) {
    pop_calls_and(api, "regina_longpoll_push_pops_total").await
}

/// A push runs the pops of the parked long-polls it wakes in its own transaction: each gets the
/// message with no pop call of its own. autoAck settles its copy; a leased copy stays held until
/// its lease is acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_runs_the_pops_of_the_long_polls_it_wakes() {
    let (_b, api) = start_parked_until_an_event(true).await;
    api.configure("lp", json!({})).await;
    for group in ["auto", "leased"] {
        api.pop("lp", &format!("consumerGroup={group}"))
            .await
            .assert_empty("empty");
    }
    let auto = park(&api, "lp", &parked("&consumerGroup=auto&autoAck=true"));
    let leased = park(&api, "lp", &parked("&consumerGroup=leased"));
    api.wait_for_waiters(2).await;
    let (calls, ran) = push_pops(&api).await;
    api.push_one("lp", "Default", json!("m")).await;
    let (auto, _) = auto.await.unwrap();
    let (leased, _) = leased.await.unwrap();
    assert_eq!(auto.data(), vec![json!("m")], "{auto:?}");
    assert_eq!(leased.data(), vec![json!("m")], "{leased:?}");
    assert_eq!(
        push_pops(&api).await,
        (calls, ran + 2.0),
        "both pops ran in the push's transaction, neither on its own"
    );

    api.pop("lp", "consumerGroup=auto")
        .await
        .assert_empty("empty");
    let held = api.pop("lp", "consumerGroup=leased").await;
    assert!(held.messages().is_empty(), "leased until acked: {held:?}");
    let ack = api.ack_msg(&leased.messages()[0], "completed").await;
    assert_eq!(ack["success"], true, "the lease the push's pop took: {ack}");
    api.pop("lp", "consumerGroup=leased")
        .await
        .assert_empty("empty");
}

/// `LONGPOLL_PUSH_POPS=false`: the push wakes the long-poll, which pops on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_push_pops_the_woken_long_poll_pops_on_its_own() {
    let (_b, api) = start_parked_until_an_event(false).await;
    api.configure("lp", json!({})).await;
    let waiter = park(&api, "lp", &parked("&autoAck=true"));
    api.wait_for_waiters(1).await;
    let (calls, ran) = push_pops(&api).await;
    api.push_one("lp", "Default", json!("m")).await;
    let (r, _) = waiter.await.unwrap();
    assert_eq!(r.data(), vec![json!("m")], "{r:?}");
    let (calls_after, ran_after) = push_pops(&api).await;
    assert_eq!(ran_after, ran);
    assert!(calls_after > calls, "{calls_after} > {calls}");
}

/// What the pop a push ran says of its group is kept as a long-poll's own answer is: after it
/// delivered the last message, the consumer's next long-poll parks without a database call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_after_a_delivery_by_a_push_parks_without_a_database_call() {
    let (_b, api) = start_quiet_trusting().await;
    api.configure("q", json!({})).await;
    let waiter = park(&api, "q", &parked("&autoAck=true"));
    api.wait_for_waiters(1).await;
    let (_, ran) = push_pops(&api).await;
    api.push_one("q", "Default", json!(1)).await;
    let (got, _) = waiter.await.unwrap();
    assert_eq!(got.data(), vec![json!(1)], "{got:?}");
    assert_eq!(push_pops(&api).await.1, ran + 1.0, "delivered by the push");

    let (calls, parks) = pop_calls(&api).await;
    api.pop("q", "wait=true&timeout=300&autoAck=true")
        .await
        .assert_empty("timeout");
    assert_eq!(pop_calls(&api).await, (calls, parks + 1.0));
}
