//! §4.13 (`delayedProcessing`, `windowBuffer`) and the timers long-poll arms for them (§4.9).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_message_is_invisible_until_its_delay_has_passed() {
    let (_b, api) = start().await;
    api.configure("dly", json!({"delayedProcessing": 2})).await;
    let before_push = Instant::now();
    api.push_one("dly", "Default", json!("later")).await;
    let after_push = Instant::now();
    api.pop("dly", "").await.assert_empty("empty");
    api.pop_partition("dly", "Default", "consumerGroup=g")
        .await
        .assert_empty("empty");
    let r = api.pop("dly", "wait=true&timeout=6000").await;
    let at = Instant::now();
    assert_eq!(r.data(), vec![json!("later")], "{r:?}");
    let since_push = at - before_push;
    assert!(
        since_push >= Duration::from_millis(1950),
        "delivered {since_push:?} after push"
    );
    let late = at - after_push;
    assert!(
        late <= Duration::from_millis(2600),
        "long-poll woke {late:?} after push (timer)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_pop_delivers_only_the_visible_prefix() {
    let (_b, api) = start().await;
    api.configure("dly", json!({"delayedProcessing": 2})).await;
    api.push_one("dly", "Default", json!(1)).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let second_pushed = Instant::now();
    api.push_one("dly", "Default", json!(2)).await;
    let r = api.pop("dly", "batch=10&wait=true&timeout=6000").await;
    assert_eq!(
        r.data(),
        vec![json!(1)],
        "the invisible tail is not delivered: {r:?}"
    );
    assert!(
        second_pushed.elapsed() < Duration::from_millis(1900),
        "popped before 2 was visible"
    );
    api.ack_all(&r).await;
    let r = api.pop("dly", "batch=10&wait=true&timeout=6000").await;
    assert_eq!(r.data(), vec![json!(2)]);
    assert!(second_pushed.elapsed() >= Duration::from_millis(1950));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_buffer_holds_a_partition_until_pushes_pause() {
    let (_b, api) = start().await;
    api.configure("win", json!({"windowBuffer": 2})).await;
    api.push_one("win", "Default", json!(1)).await;
    api.pop_partition("win", "Default", "")
        .await
        .assert_empty("window_buffer");
    assert_eq!(api.pop("win", "").await.status, 204);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let last_push = Instant::now();
    api.push_one("win", "Default", json!(2)).await;
    api.pop_partition("win", "Default", "consumerGroup=g")
        .await
        .assert_empty("window_buffer");
    let r = api.pop("win", "batch=10&wait=true&timeout=6000").await;
    let waited = last_push.elapsed();
    assert_eq!(
        r.data(),
        vec![json!(1), json!(2)],
        "the whole backlog once quiet: {r:?}"
    );
    assert!(
        waited >= Duration::from_millis(1950),
        "window measured from the newest push: {waited:?}"
    );
    assert!(
        waited <= Duration::from_millis(2700),
        "long-poll armed a timer: {waited:?}"
    );
    let g = api.pop("win", "batch=10&consumerGroup=g").await;
    assert_eq!(
        g.data(),
        vec![json!(1), json!(2)],
        "same rule for every group"
    );
}
