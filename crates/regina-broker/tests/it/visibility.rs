//! §4.13 (`delayedProcessing`, `windowBuffer`) and the timers long-poll arms for them (§4.9).
//!
//! What must hold *while* a message is held is checked on queues that hold it for an hour, so
//! that no slowness of the machine can end the hold early. What must happen *when* the hold ends
//! is checked on a short one: the long-poll waiting for it waits [`PARKED_POP_TIMEOUT_MS`] on a
//! broker without the periodic re-check, so only the timer it armed can answer it with the
//! message; and never before the hold has passed (a lower bound, measured from before the push).

use std::time::{Duration, Instant};

use regina_testkit::PARKED_POP_TIMEOUT_MS;
use serde_json::json;

use crate::support::{start_event_driven, Api, Reply};

/// A long-poll pop of `queue` that only an event or a timer can answer with messages.
async fn parked_pop(api: &Api, queue: &str, query: &str) -> Reply {
    let r = api
        .pop(
            queue,
            &format!("{query}&wait=true&timeout={PARKED_POP_TIMEOUT_MS}"),
        )
        .await;
    assert_eq!(r.status, 200, "the timer answered, not the timeout: {r:?}");
    r
}

/// Both clocks read: the database's (which timestamps pushes) and this process's agree within
/// this on one machine.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_message_is_invisible_until_its_delay_has_passed() {
    let (_b, api) = start_event_driven().await;
    api.configure("held", json!({"delayedProcessing": 3600}))
        .await;
    api.push_one("held", "Default", json!("later")).await;
    api.pop("held", "").await.assert_empty("empty");
    api.pop_partition("held", "Default", "consumerGroup=g")
        .await
        .assert_empty("empty");

    api.configure("dly", json!({"delayedProcessing": 2})).await;
    let before_push = Instant::now();
    api.push_one("dly", "Default", json!("later")).await;
    let r = parked_pop(&api, "dly", "batch=1").await;
    let since_push = before_push.elapsed();
    println!("delayed message delivered {since_push:?} after its push (delay 2 s)");
    assert_eq!(r.data(), vec![json!("later")], "{r:?}");
    assert!(
        since_push >= Duration::from_secs(2) - CLOCK_SLACK,
        "delivered {since_push:?} after push"
    );
}

/// The second message is pushed 1.2 s after the first: a pop while only the first is visible
/// gets the first alone. Whether the pop ran in that interval depends on the machine's speed,
/// so an attempt is conclusive only when its answer came within it; a slower one starts over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_pop_delivers_only_the_visible_prefix() {
    let (_b, api) = start_event_driven().await;
    let (queue, second_pushed) = regina_testkit::conclusive(
        "the pop ran while only the first message was visible",
        |n| {
            let api = api.clone();
            async move {
                let queue = format!("dly-{n}");
                api.configure(&queue, json!({"delayedProcessing": 2})).await;
                api.push_one(&queue, "Default", json!(1)).await;
                tokio::time::sleep(Duration::from_millis(1200)).await;
                let second_pushed = Instant::now();
                api.push_one(&queue, "Default", json!(2)).await;
                let r = parked_pop(&api, &queue, "batch=10").await;
                let answered = second_pushed.elapsed();
                assert_eq!(r.data().first(), Some(&json!(1)), "in order: {r:?}");
                // 2 is invisible until at least 2 s after `second_pushed`.
                if answered >= Duration::from_secs(2) - CLOCK_SLACK {
                    return Err(format!("answered {answered:?} after the second push"));
                }
                assert_eq!(
                    r.data(),
                    vec![json!(1)],
                    "the invisible tail is not delivered: {r:?}"
                );
                api.ack_all(&r).await;
                Ok((queue, second_pushed))
            }
        },
    )
    .await;
    let r = parked_pop(&api, &queue, "batch=10").await;
    assert_eq!(r.data(), vec![json!(2)]);
    let waited = second_pushed.elapsed();
    assert!(
        waited >= Duration::from_secs(2) - CLOCK_SLACK,
        "delivered {waited:?} after its push"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_buffer_holds_a_partition_until_pushes_pause() {
    let (_b, api) = start_event_driven().await;
    api.configure("held", json!({"windowBuffer": 3600})).await;
    api.push_one("held", "Default", json!(1)).await;
    api.pop_partition("held", "Default", "")
        .await
        .assert_empty("window_buffer");
    assert_eq!(api.pop("held", "").await.status, 204);
    api.push_one("held", "Default", json!(2)).await;
    api.pop_partition("held", "Default", "consumerGroup=g")
        .await
        .assert_empty("window_buffer");

    api.configure("win", json!({"windowBuffer": 2})).await;
    api.push_one("win", "Default", json!(1)).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let last_push = Instant::now();
    api.push_one("win", "Default", json!(2)).await;
    let r = parked_pop(&api, "win", "batch=10").await;
    let waited = last_push.elapsed();
    println!("window of 2 s delivered {waited:?} after the newest push");
    assert_eq!(
        r.data(),
        vec![json!(1), json!(2)],
        "the whole backlog once quiet: {r:?}"
    );
    // Measured from the first push, the window would have ended about a second earlier.
    assert!(
        waited >= Duration::from_secs(2) - CLOCK_SLACK,
        "window measured from the newest push: {waited:?}"
    );
    let g = api.pop("win", "batch=10&consumerGroup=g").await;
    assert_eq!(
        g.data(),
        vec![json!(1), json!(2)],
        "same rule for every group"
    );
}
