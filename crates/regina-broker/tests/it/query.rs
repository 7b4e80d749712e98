//! §2.4: query-string and path-parameter parsing rules, observed through pop.

use serde_json::json;

use crate::support::{start, Api};

/// A queue with `n` messages in its `Default` partition.
async fn queue_with(api: &Api, queue: &str, n: usize) {
    let payloads: Vec<_> = (0..n).map(|i| json!(i)).collect();
    api.push_to(queue, "Default", &payloads).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_keys_match_exactly_and_case_sensitively() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 20).await;
    // Neither `Batch` nor `xbatch` is `batch`: the default (1) applies.
    let r = api.pop("q", "Batch=5&autoAck=true").await;
    assert_eq!(r.messages().len(), 1, "{r:?}");
    let r = api.pop("q", "xbatch=5&autoAck=true").await;
    assert_eq!(r.messages().len(), 1, "{r:?}");
    let r = api.pop("q", "mybatch=5&batch=2&autoAck=true").await;
    assert_eq!(r.messages().len(), 2, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_occurrence_of_a_query_key_wins() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 20).await;
    let r = api.pop("q", "batch=2&batch=5&autoAck=true").await;
    assert_eq!(r.messages().len(), 2, "{r:?}");
    let r = api.pop("q", "batch=3&batch=abc&autoAck=true").await;
    assert_eq!(
        r.messages().len(),
        3,
        "later occurrences are not even parsed: {r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_query_value_means_default() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 5).await;
    let r = api
        .pop("q", "batch=&partitions=&consumerGroup=&autoAck=true")
        .await;
    assert_eq!(r.messages().len(), 1, "{r:?}");
    assert_eq!(r.body["consumerGroup"], "__QUEUE_MODE__");
    // `wait=` means the default (false): a pop that parked would answer `timeout` at the end of
    // the default timeout, not `queue_not_found` at once.
    let r = api.pop("empty-q", "wait=&timeout=").await;
    r.assert_empty("queue_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_keys_and_values_are_percent_decoded_and_plus_is_space() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 5).await;
    // `%47` is `G`: the key is `consumerGroup`.
    let r = api.pop("q", "consumer%47roup=billing").await;
    assert_eq!(r.body["consumerGroup"], "billing", "{r:?}");
    let r = api.pop("q", "consumerGroup=night+shift").await;
    assert_eq!(r.body["consumerGroup"], "night shift", "{r:?}");
    let r = api.pop("q", "consumerGroup=a%2Bb").await;
    assert_eq!(r.body["consumerGroup"], "a+b", "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_booleans_accept_documented_spellings_case_insensitively() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 20).await;
    for yes in ["true", "1", "yes", "on", "TRUE", "Yes", "ON"] {
        let r = api.pop("q", &format!("autoAck={yes}")).await;
        assert_eq!(r.status, 200, "{yes}: {r:?}");
        assert_eq!(r.body["leaseId"], "", "autoAck={yes} is true: {r:?}");
    }
    for no in ["false", "0", "no", "off", "FALSE", "Off"] {
        let r = api
            .pop("q", &format!("autoAck={no}&consumerGroup=g-{no}"))
            .await;
        assert_eq!(r.status, 200, "{no}: {r:?}");
        assert_ne!(r.body["leaseId"], "", "autoAck={no} is false: {r:?}");
    }
    for bad in ["maybe", "2", "t", "y", "truee"] {
        let r = api.pop("q", &format!("autoAck={bad}")).await;
        r.assert_error(400, "invalid_parameter");
        assert_names_key(&r, "autoAck");
        let r = api.pop("q", &format!("wait={bad}")).await;
        r.assert_error(400, "invalid_parameter");
        assert_names_key(&r, "wait");
    }
}

fn assert_names_key(r: &crate::support::Reply, key: &str) {
    let named = r.body["field"] == key || r.body["error"].as_str().unwrap_or("").contains(key);
    assert!(named, "the error must name the key {key}: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_integers_accept_sign_and_digits_only() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 20).await;
    let r = api.pop("q", "batch=%2B2&autoAck=true").await;
    assert_eq!(r.messages().len(), 2, "+2 is an integer: {r:?}");
    let r = api.pop("q", "batch=003&autoAck=true").await;
    assert_eq!(r.messages().len(), 3, "{r:?}");
    for bad in ["abc", "1.5", "2e1", "0x10", "1_0", "%20 2", "--1"] {
        let r = api.pop("q", &format!("batch={bad}")).await;
        r.assert_error(400, "invalid_parameter");
        assert_names_key(&r, "batch");
    }
    api.pop("q", "timeout=soon")
        .await
        .assert_error(400, "invalid_parameter");
    api.pop("q", "partitions=many")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_query_keys_are_ignored() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 2).await;
    let r = api.pop("q", "foo=bar&&=x&novalue&batch=2").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.messages().len(), 2, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_subscription_parameters_answer_invalid_parameter() {
    let (_b, api) = start().await;
    queue_with(&api, "q", 1).await;
    for q in [
        "consumerGroup=g&subscriptionFrom=yesterday",
        "consumerGroup=g&subscriptionFrom=2026-13-45",
    ] {
        api.pop("q", q).await.assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_parameters_are_percent_decoded_and_plus_stays_plus() {
    let (_b, api) = start().await;
    api.push(
        json!([{"queue": "a b", "partition": "p/1", "payload": "space"},
                     {"queue": "a+b", "partition": "x+y", "payload": "plus"}]),
    )
    .await;
    let r = api.get("/api/v1/pop/queue/a%20b/partition/p%2F1").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data(), vec![json!("space")]);
    let r = api.get("/api/v1/pop/queue/a+b/partition/x+y").await;
    assert_eq!(r.status, 200, "a raw + is a literal +: {r:?}");
    assert_eq!(r.data(), vec![json!("plus")]);
    assert_eq!(r.body["queue"], "a+b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_safe_names_may_be_sent_raw_or_encoded() {
    let (_b, api) = start().await;
    api.push(
        json!([{"queue": "or.ders-1_x", "payload": 1}, {"queue": "or.ders-1_x", "payload": 2}]),
    )
    .await;
    let r = api.get("/api/v1/pop/queue/or.ders-1_x").await;
    assert_eq!(r.data(), vec![json!(1)], "{r:?}");
    api.ack_all(&r).await;
    let r = api.get("/api/v1/pop/queue/or%2Eders%2D1%5Fx").await;
    assert_eq!(r.data(), vec![json!(2)], "{r:?}");
}
