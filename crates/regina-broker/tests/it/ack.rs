//! §3.5, §4.6: the lease-check table of acks, out-of-order acks, order inside one request.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{start, Api, Reply};

/// One ack item for a delivered message; `lease`/`group` are added when given.
pub fn item(m: &Value, status: &str, lease: Option<&Value>, group: Option<&str>) -> Value {
    let mut a = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                       "status": status});
    if let Some(l) = lease {
        a["leaseId"] = l.clone();
    }
    if let Some(g) = group {
        a["consumerGroup"] = json!(g);
    }
    a
}

/// Sends one `/ack` and returns its single result entry.
pub async fn ack1(api: &Api, body: Value) -> Value {
    let r = api.ack(body).await;
    assert_eq!(r.status, 200, "{r:?}");
    let arr = r.body.as_array().expect("ack answers an array");
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["index"], 0);
    arr[0].clone()
}

#[track_caller]
pub fn assert_ok(res: &Value, lease_released: bool) {
    assert_eq!(res["success"], true, "{res}");
    assert_eq!(res["error"], Value::Null, "{res}");
    assert_eq!(res["code"], Value::Null, "{res}");
    assert_eq!(res["leaseReleased"], lease_released, "{res}");
}

#[track_caller]
pub fn assert_fail(res: &Value, code: &str) {
    assert_eq!(res["success"], false, "{res}");
    assert_eq!(res["code"], code, "{res}");
    assert!(res["error"].is_string(), "{res}");
    if code == "lease_expired" {
        assert_eq!(res["error"], "Invalid or expired lease");
    }
}

async fn pop3(api: &Api) -> Reply {
    api.push_to("q", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    let r = api.pop("q", "batch=3").await;
    assert_eq!(r.messages().len(), 3, "{r:?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_under_the_active_lease_applies_and_releases_when_all_are_settled() {
    let (_b, api) = start().await;
    let r = pop3(&api).await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let res = ack1(&api, item(&m[0], "completed", Some(&lease), None)).await;
    assert_ok(&res, false);
    assert_eq!(res["transactionId"], m[0]["transactionId"]);
    assert_eq!(res["queueName"], "q");
    assert_eq!(res["partitionName"], "Default");
    assert_eq!(res["dlq"], false);
    // Out of order: 3 before 2 only marks 3; the lease ends when the gap closes.
    assert_ok(
        &ack1(&api, item(&m[2], "completed", Some(&lease), None)).await,
        false,
    );
    assert_ok(
        &ack1(&api, item(&m[1], "success", Some(&lease), None)).await,
        true,
    );
    api.pop("q", "batch=10").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_marks_after_a_gap_die_with_their_lease() {
    let (_b, api) = start().await;
    let r = pop3(&api).await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    assert_ok(
        &ack1(&api, item(&m[1], "completed", Some(&lease), None)).await,
        false,
    );
    assert_ok(
        &ack1(&api, item(&m[2], "completed", Some(&lease), None)).await,
        false,
    );
    assert_ok(
        &ack1(&api, item(&m[0], "retry", Some(&lease), None)).await,
        true,
    );
    let again = api.pop("q", "batch=10").await;
    assert_eq!(
        again.data(),
        vec![json!(1), json!(2), json!(3)],
        "at-least-once: {again:?}"
    );
    assert!(
        again.messages().iter().all(|m| m["retryCount"] == 0),
        "retry charges nothing"
    );
}

/// The spec's example (§4.6): `[completed m5, failed m6, completed m7]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completed_failed_completed_in_one_batch_settles_then_ends_the_lease() {
    let (_b, api) = start().await;
    let payloads: Vec<Value> = (1..=7).map(|i| json!(i)).collect();
    api.push_to("q", "Default", &payloads).await;
    let first = api.pop("q", "batch=4").await;
    api.ack_all(&first).await;
    let r = api.pop("q", "batch=3").await;
    assert_eq!(r.data(), vec![json!(5), json!(6), json!(7)]);
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let res = api
        .ack_batch(json!({"acknowledgments": [
            item(&m[0], "completed", Some(&lease), None),
            item(&m[1], "failed", Some(&lease), None),
            item(&m[2], "completed", Some(&lease), None)]}))
        .await;
    assert_eq!(res.status, 200, "{res:?}");
    let out = res.body.as_array().unwrap();
    assert_ok(&out[0], false);
    assert_ok(&out[1], true);
    assert_fail(&out[2], "lease_expired");
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o["index"], i);
    }
    let again = api.pop("q", "batch=10").await;
    assert_eq!(
        again.data(),
        vec![json!(6), json!(7)],
        "m6 and m7 are redelivered"
    );
    let counts: Vec<Value> = again
        .messages()
        .iter()
        .map(|m| m["retryCount"].clone())
        .collect();
    assert_eq!(
        counts,
        [json!(1), json!(0)],
        "the attempt was charged to m6"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_applied_in_offset_order_and_answered_in_input_order() {
    let (_b, api) = start().await;
    let r = pop3(&api).await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let res = api
        .ack_batch(json!({"acknowledgments": [
            item(&m[2], "completed", Some(&lease), None),
            item(&m[1], "failed", Some(&lease), None),
            item(&m[0], "completed", Some(&lease), None)]}))
        .await;
    let out = res.body.as_array().unwrap();
    assert_eq!(
        out[0]["transactionId"], m[2]["transactionId"],
        "input order"
    );
    assert_fail(&out[0], "lease_expired");
    assert_ok(&out[1], true);
    assert_ok(&out[2], false);
    let again = api.pop("q", "batch=10").await;
    assert_eq!(again.data(), vec![json!(2), json!(3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_naming_the_last_settled_lease_is_idempotent_for_completed_only() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "").await;
    let (m, lease) = (r.messages()[0].clone(), r.body["leaseId"].clone());
    assert_ok(
        &ack1(&api, item(&m, "completed", Some(&lease), None)).await,
        true,
    );
    let again = ack1(&api, item(&m, "completed", Some(&lease), None)).await;
    assert_eq!(again["success"], true, "idempotent re-ack: {again}");
    assert_eq!(again["code"], Value::Null);
    for status in ["failed", "retry", "dlq"] {
        assert_fail(
            &ack1(&api, item(&m, status, Some(&lease), None)).await,
            "already_settled",
        );
    }
    // Once another lease has ended on the partition, the old one is no longer "last settled".
    let r2 = api.pop("q", "").await;
    api.ack_all(&r2).await;
    assert_fail(
        &ack1(&api, item(&m, "completed", Some(&lease), None)).await,
        "lease_expired",
    );
    api.pop("q", "").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_naming_any_other_lease_is_rejected_as_expired() {
    let (_b, api) = start().await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "").await;
    let (m1, lease) = (r.messages()[0].clone(), r.body["leaseId"].clone());
    let unknown = json!(uuid::Uuid::now_v7().to_string());
    assert_fail(
        &ack1(&api, item(&m1, "completed", Some(&unknown), None)).await,
        "lease_expired",
    );
    // A message pushed after the pop is outside the lease's delivered range.
    api.push_one("q", "Default", json!(2)).await;
    let m2 = api
        .pop("q", "consumerGroup=peek&autoAck=true&batch=2")
        .await
        .messages()[1]
        .clone();
    assert_fail(
        &ack1(&api, item(&m2, "completed", Some(&lease), None)).await,
        "lease_expired",
    );
    // A lease ended by `retry` (not by settling everything) is expired for later acks.
    assert_ok(
        &ack1(&api, item(&m1, "retry", Some(&lease), None)).await,
        true,
    );
    assert_fail(
        &ack1(&api, item(&m1, "completed", Some(&lease), None)).await,
        "lease_expired",
    );
    let again = api.pop("q", "batch=10").await;
    assert_eq!(
        again.data(),
        vec![json!(1), json!(2)],
        "nothing was settled by rejected acks"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_after_lease_expiry_is_rejected_even_if_nobody_claimed_since() {
    let (_b, api) = start().await;
    api.configure("q", json!({"leaseTime": 1})).await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "").await;
    let (m, lease) = (r.messages()[0].clone(), r.body["leaseId"].clone());
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_fail(
        &ack1(&api, item(&m, "completed", Some(&lease), None)).await,
        "lease_expired",
    );
    assert_fail(
        &ack1(&api, item(&m, "failed", Some(&lease), None)).await,
        "lease_expired",
    );
    let again = api.pop("q", "").await;
    assert_eq!(
        again.data(),
        vec![json!(1)],
        "the stale ack settled nothing"
    );
    assert_eq!(
        again.messages()[0]["retryCount"],
        1,
        "the expiry itself was one failed attempt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_without_lease_applies_as_holder_or_reports_not_leased() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "").await;
    let m1 = r.messages()[0].clone();
    assert_ok(&ack1(&api, item(&m1, "completed", None, None)).await, true);
    // Settled: completed is an idempotent success, other statuses already_settled.
    assert_eq!(
        ack1(&api, item(&m1, "completed", None, None)).await["success"],
        true
    );
    assert_fail(
        &ack1(&api, item(&m1, "failed", None, None)).await,
        "already_settled",
    );
    let m2 = api
        .pop("q", "consumerGroup=peek&autoAck=true&batch=2")
        .await
        .messages()[1]
        .clone();
    assert_fail(
        &ack1(&api, item(&m2, "completed", None, None)).await,
        "not_leased",
    );
    // An empty leaseId counts as absent.
    assert_fail(
        &ack1(&api, item(&m2, "completed", Some(&json!("")), None)).await,
        "not_leased",
    );
    let r = api.pop("q", "").await;
    assert_eq!(r.data(), vec![json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_of_unknown_message_reports_message_not_found() {
    let (_b, api) = start().await;
    let e = api.push_one("q", "Default", json!(1)).await;
    let res = ack1(
        &api,
        json!({"transactionId": "nope", "partitionId": e["partition_id"]}),
    )
    .await;
    assert_fail(&res, "message_not_found");
    let random = uuid::Uuid::now_v7().to_string();
    let res = ack1(
        &api,
        json!({"transactionId": e["transaction_id"], "partitionId": random}),
    )
    .await;
    assert_fail(&res, "message_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_requires_transaction_id_partition_id_and_a_known_status() {
    let (_b, api) = start().await;
    let pid = uuid::Uuid::now_v7().to_string();
    for body in [
        json!({"partitionId": pid}),
        json!({"transactionId": "t"}),
        json!({"transactionId": "t", "partitionId": pid, "status": "bogus"}),
        json!({"transactionId": "t", "partitionId": pid, "status": 3}),
        json!({"transactionId": "t", "partitionId": "not-a-uuid"}),
    ] {
        api.ack(body).await.assert_error(400, "validation_failed");
    }
    let r = api
        .ack_batch(
            json!({"acknowledgments": [{"transactionId": "t", "partitionId": pid},
                                                     {"transactionId": "t"}]}),
        )
        .await;
    r.assert_error(400, "validation_failed");
    assert_eq!(r.body["index"], 1, "{r:?}");
    api.ack_batch(json!({}))
        .await
        .assert_error(400, "validation_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_batch_handles_partitions_independently_in_input_order() {
    let (_b, api) = start().await;
    api.push_to("q", "a", &[json!("a1"), json!("a2")]).await;
    api.push_to("q", "b", &[json!("b1"), json!("b2")]).await;
    let r = api.pop("q", "batch=4&partitions=2").await;
    let m = r.messages();
    let lease = r.body["leaseId"].clone();
    let find = |d: &str| m.iter().find(|x| x["data"] == d).unwrap().clone();
    let res = api
        .ack_batch(json!({"acknowledgments": [
            item(&find("b2"), "completed", Some(&lease), None),
            item(&find("a1"), "failed", Some(&lease), None),
            item(&find("b1"), "completed", Some(&lease), None),
            item(&find("a2"), "completed", Some(&lease), None)]}))
        .await;
    let out = res.body.as_array().unwrap();
    // b1 is applied before b2 (offset order), so b2's ack is the one that ends b's lease.
    assert_ok(&out[0], true);
    assert_eq!(out[0]["partitionName"], "b");
    assert_ok(&out[1], true);
    assert_eq!(out[1]["partitionName"], "a");
    assert_ok(&out[2], false);
    assert_fail(&out[3], "lease_expired");
    let again = api.pop("q", "batch=10&partitions=2").await;
    assert_eq!(again.data(), vec![json!("a1"), json!("a2")], "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_item_for_the_same_message_sees_the_first_ones_effect() {
    let (_b, api) = start().await;
    let r = pop3(&api).await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let res = api
        .ack_batch(json!({"acknowledgments": [
            item(&m[0], "failed", Some(&lease), None),
            item(&m[0], "completed", Some(&lease), None)]}))
        .await;
    let out = res.body.as_array().unwrap();
    assert_ok(&out[0], true);
    assert_fail(&out[1], "lease_expired");
    let again = api.pop("q", "batch=10").await;
    assert_eq!(again.data(), vec![json!(1), json!(2), json!(3)]);
    assert_eq!(again.messages()[0]["retryCount"], 1);
}

/// Ack calls that always take turns (`ACK_PARALLEL_ITEMS_MIN` above anything waiting: one call at
/// a time) still answer and apply every acknowledgement of many concurrent consumers, none passed
/// over: each consumer takes one message of its own partition under a lease and acks it, twenty
/// times, and nothing is left to deliver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_calls_that_take_turns_apply_every_consumers_acks() {
    let (_b, api) = crate::support::start_with(|c| c.ack_parallel_items_min = 100_000).await;
    for p in 0..16 {
        let payloads: Vec<Value> = (0..20).map(|s| json!(s)).collect();
        api.push_to("turns", &format!("p{p}"), &payloads).await;
    }
    let consumers: Vec<_> = (0..16)
        .map(|p| {
            let api = api.with_own_pool();
            tokio::spawn(async move {
                for s in 0..20 {
                    let r = api
                        .pop_partition("turns", &format!("p{p}"), "batch=1")
                        .await;
                    let got = r.messages();
                    assert_eq!(got.len(), 1, "{r:?}");
                    assert_eq!(got[0]["data"], json!(s), "in order, nothing redelivered");
                    assert_ok(&api.ack_msg(&got[0], "completed").await, true);
                }
            })
        })
        .collect();
    for consumer in consumers {
        consumer.await.expect("consumer");
    }
    api.pop("turns", "batch=100").await.assert_empty("empty");
}
