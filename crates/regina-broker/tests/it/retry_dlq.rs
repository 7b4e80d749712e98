//! §4.7, §4.8, §3.9: failed attempts, retry delay, dead-lettering, lease expiry, `GET /dlq`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::ack::{ack1, item};
use regina_testkit::PARKED_POP_TIMEOUT_MS;

use crate::support::{assert_iso, start, start_event_driven, start_with, Api};

/// Pops the head of `q` and acks it `failed` with `error`; returns (delivered message, ack result).
async fn fail_head(api: &Api, q: &str, query: &str, error: Option<&str>) -> (Value, Value) {
    fail_head_in(api, q, None, query, error).await
}

async fn fail_head_in(
    api: &Api,
    q: &str,
    partition: Option<&str>,
    query: &str,
    error: Option<&str>,
) -> (Value, Value) {
    let r = match partition {
        Some(p) => api.pop_partition(q, p, query).await,
        None => api.pop(q, query).await,
    };
    assert_eq!(r.status, 200, "{r:?}");
    let m = r.messages()[0].clone();
    let mut body = item(&m, "failed", Some(&r.body["leaseId"]), None);
    if let Some(e) = error {
        body["error"] = json!(e);
    }
    (m, ack1(api, body).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_beyond_retry_limit_dead_letter_the_head_with_a_payload_copy() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 2})).await;
    let pushed = api
        .push(json!([{"queue": "q", "payload": {"order": 7}, "traceId": "tr-7", "transactionId": "t7"},
                     {"queue": "q", "payload": "next"}]))
        .await;
    let mut created_at = Value::Null;
    for attempt in 0..3 {
        let (m, res) = fail_head(&api, "q", "", Some(&format!("boom-{attempt}"))).await;
        assert_eq!(m["data"], json!({"order": 7}));
        assert_eq!(m["retryCount"], attempt, "delivery {attempt}");
        assert_eq!(
            res["dlq"],
            attempt == 2,
            "dead-lettered on failure {}: {res}",
            attempt + 1
        );
        created_at = m["createdAt"].clone();
    }
    let next = api.pop("q", "").await;
    assert_eq!(next.data(), vec![json!("next")], "the partition moved on");
    assert_eq!(
        next.messages()[0]["retryCount"],
        0,
        "attempts reset for the new head"
    );
    let d = api.dlq("").await;
    assert_eq!(d.status, 200, "{d:?}");
    assert_eq!(d.body["total"], 1);
    assert_eq!(
        d.body["pagination"],
        json!({"limit": 100, "offset": 0, "total": 1})
    );
    let e = &d.body["messages"][0];
    assert_eq!(e["id"], pushed.body[0]["message_id"]);
    assert_eq!(e["transactionId"], "t7");
    assert_eq!(e["partitionId"], pushed.body[0]["partition_id"]);
    assert_eq!(e["queue"], "q");
    assert_eq!(e["partition"], "Default");
    assert_eq!(e["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(e["errorMessage"], "boom-2");
    assert_eq!(e["retryCount"], 2);
    assert_eq!(e["data"], json!({"order": 7}));
    assert_eq!(e["traceId"], "tr-7");
    assert_eq!(e["producerSub"], Value::Null);
    assert_eq!(e["createdAt"], created_at);
    assert_iso(&e["failedAt"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_limit_zero_dead_letters_on_the_first_failure() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let (_, res) = fail_head(&api, "q", "", None).await;
    assert_eq!(res["dlq"], true, "{res}");
    let d = api.dlq("queue=q").await;
    assert_eq!(d.body["messages"][0]["errorMessage"], "Retries exhausted");
    assert_eq!(d.body["messages"][0]["retryCount"], 0);
    assert_eq!(api.pop("q", "").await.data(), vec![json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_reset_when_the_cursor_passes_the_head() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 1})).await;
    api.push_to("q", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    // m1: one failure, then completed.
    fail_head(&api, "q", "", None).await;
    let r = api.pop("q", "").await;
    assert_eq!(
        (r.data()[0].clone(), r.messages()[0]["retryCount"].clone()),
        (json!(1), json!(1))
    );
    api.ack_all(&r).await;
    // m2: its first failure must not dead-letter (the count reset); its second does.
    let (m, res) = fail_head(&api, "q", "", None).await;
    assert_eq!(
        (
            m["data"].clone(),
            m["retryCount"].clone(),
            res["dlq"].clone()
        ),
        (json!(2), json!(0), json!(false))
    );
    let (m, res) = fail_head(&api, "q", "", None).await;
    assert_eq!(
        (m["retryCount"].clone(), res["dlq"].clone()),
        (json!(1), json!(true))
    );
    // m3 after a dead-lettering: a fresh count again.
    let (m, res) = fail_head(&api, "q", "", None).await;
    assert_eq!(
        (
            m["data"].clone(),
            m["retryCount"].clone(),
            res["dlq"].clone()
        ),
        (json!(3), json!(0), json!(false))
    );
}

/// The hold is checked on a queue whose delay (an hour) outlasts the test whatever its speed;
/// its end on a short one, where only the timer the long-poll armed can answer it (no periodic
/// re-check, a timeout far away), never before the delay (measured from before the failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_delay_holds_the_partition_and_long_poll_waits_for_it() {
    let (_b, api) = start_event_driven().await;
    api.configure("held", json!({"retryDelay": 3_600_000}))
        .await;
    api.push_one("held", "Default", json!(1)).await;
    fail_head(&api, "held", "", None).await;
    api.pop("held", "").await.assert_empty("empty");

    api.configure("q", json!({"retryDelay": 1500})).await;
    api.push_one("q", "Default", json!(1)).await;
    let before_failure = Instant::now();
    fail_head(&api, "q", "", None).await;
    let r = api
        .pop("q", &format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}"))
        .await;
    let waited = before_failure.elapsed();
    println!("redelivered {waited:?} after the failure (retryDelay 1.5 s)");
    assert_eq!(r.status, 200, "the timer answered, not the timeout: {r:?}");
    assert_eq!(r.data(), vec![json!(1)], "{r:?}");
    assert_eq!(r.messages()[0]["retryCount"], 1);
    assert!(
        waited >= Duration::from_millis(1450),
        "retryDelay not enforced: {waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_queue_false_discards_exhausted_messages() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0, "deadLetterQueue": false}))
        .await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let (_, res) = fail_head(&api, "q", "", None).await;
    assert_eq!(res["success"], true);
    assert_eq!(res["dlq"], false, "no entry was written: {res}");
    assert_eq!(api.dlq("queue=q").await.body["total"], 0);
    assert_eq!(
        api.pop("q", "").await.data(),
        vec![json!(2)],
        "m1 is settled for the group"
    );
    let other = api.pop("q", "consumerGroup=other&batch=5").await;
    assert_eq!(other.data(), vec![json!(1), json!(2)]);
}

/// §4.8: a consumer that never acks gets its batch back after `leaseTime`; after `retryLimit`
/// expirations the head lands in the DLQ, written by the sweep with no consumer returning. The
/// long-polls wait far beyond the lease on a broker without the periodic re-check: the expiry
/// answers them. No redelivery comes sooner than `leaseTime` after the request that took the
/// lease was sent (the lease started no earlier).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_leases_redeliver_and_finally_dead_letter_the_head() {
    let (_b, api) = start_with(|c| {
        c.lease_sweep_interval_ms = 100;
        c.longpoll_recheck_ms = 0;
    })
    .await;
    api.configure("q", json!({"leaseTime": 1, "retryLimit": 2}))
        .await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let mut last_sent = None::<Instant>;
    for attempt in 0..3 {
        let sent = Instant::now();
        let r = api
            .pop(
                "q",
                &format!("batch=2&wait=true&timeout={PARKED_POP_TIMEOUT_MS}"),
            )
            .await;
        let now = Instant::now();
        assert_eq!(r.status, 200, "the expiry answered, not the timeout: {r:?}");
        assert_eq!(
            r.data(),
            vec![json!(1), json!(2)],
            "delivery {attempt}: {r:?}"
        );
        let counts: Vec<Value> = r
            .messages()
            .iter()
            .map(|m| m["retryCount"].clone())
            .collect();
        assert_eq!(
            counts,
            vec![json!(attempt), json!(0)],
            "expiry charges the head only"
        );
        if let Some(prev) = last_sent {
            let gap = now - prev;
            println!("delivery {attempt}: {gap:?} after the previous request was sent");
            assert!(
                gap >= Duration::from_millis(950),
                "redelivered before leaseTime: {gap:?}"
            );
        }
        last_sent = Some(sent);
    }
    let entry = regina_testkit::eventually("the sweep dead-letters the head", || async {
        let d = api.dlq("queue=q").await;
        if d.body["total"] == 1 {
            Ok(d.body["messages"][0].clone())
        } else {
            Err(d)
        }
    })
    .await;
    assert_eq!(entry["data"], 1);
    assert_eq!(entry["errorMessage"], "Lease expired");
    assert_eq!(entry["retryCount"], 2);
    let r = api.pop("q", "batch=2").await;
    assert_eq!(r.data(), vec![json!(2)]);
    assert_eq!(r.messages()[0]["retryCount"], 0);
}

async fn dlq_fixture(api: &Api) -> Vec<(String, String, String)> {
    for q in ["qa", "qb"] {
        api.configure(q, json!({"retryLimit": 0})).await;
    }
    api.push_one("qa", "p1", json!("m1")).await;
    api.push_one("qa", "p2", json!("m2")).await;
    api.push_one("qb", "Default", json!("m3")).await;
    let mut order = vec![];
    for (q, p, query, tag) in [
        ("qa", "p1", "consumerGroup=g1", "m1/g1"),
        ("qa", "p1", "", "m1/qm"),
        ("qa", "p2", "", "m2/qm"),
        ("qb", "Default", "", "m3/qm"),
    ] {
        let (m, res) = fail_head_in(api, q, Some(p), query, Some(tag)).await;
        assert_eq!(res["dlq"], true, "{res}");
        order.push((
            tag.to_string(),
            m["queue"].as_str().unwrap().into(),
            m["partition"].as_str().unwrap().into(),
        ));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    order
}

fn tags(r: &crate::support::Reply) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["errorMessage"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_listing_filters_pages_and_counts() {
    let (_b, api) = start().await;
    let order = dlq_fixture(&api).await;
    let newest_first: Vec<String> = order.iter().rev().map(|(t, _, _)| t.clone()).collect();
    let all = api.dlq("").await;
    assert_eq!(all.body["total"], 4);
    assert_eq!(tags(&all), newest_first, "newest failure first");
    let count = |q: &'static str| {
        let api = api.clone();
        async move { api.dlq(q).await.body["total"].clone() }
    };
    assert_eq!(count("queue=qa").await, 3);
    assert_eq!(count("queue=qa&partition=p1").await, 2);
    assert_eq!(count("consumerGroup=g1").await, 1);
    assert_eq!(count("consumerGroup=__QUEUE_MODE__").await, 3);
    assert_eq!(count("queue=qb&consumerGroup=g1").await, 0);
    assert_eq!(count("from=2000-01-01").await, 4);
    assert_eq!(count("to=2000-01-01").await, 0);
    assert_eq!(count("from=2999-01-01").await, 0);
    let page1 = api.dlq("limit=2").await;
    let page2 = api.dlq("limit=2&offset=2").await;
    assert_eq!(
        page1.body["pagination"],
        json!({"limit": 2, "offset": 0, "total": 4})
    );
    assert_eq!(
        page2.body["pagination"],
        json!({"limit": 2, "offset": 2, "total": 4})
    );
    assert_eq!(
        page2.body["total"], 4,
        "total counts every match, not the page"
    );
    assert_eq!(
        [tags(&page1), tags(&page2)].concat(),
        newest_first,
        "offset works"
    );
    let past = api.dlq("limit=2&offset=4").await;
    assert_eq!(
        (past.body["messages"].clone(), past.body["total"].clone()),
        (json!([]), json!(4))
    );
    api.dlq("limit=1001")
        .await
        .assert_error(400, "invalid_parameter");
    api.dlq("limit=ten")
        .await
        .assert_error(400, "invalid_parameter");
    api.dlq("from=yesterday")
        .await
        .assert_error(400, "invalid_parameter");
}
