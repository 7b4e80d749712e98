//! §4.5–§4.7: effects of `completed`/`failed`/`retry`/`dlq` and which group an ack applies to.

use serde_json::{json, Value};

use crate::ack::{ack1, assert_fail, assert_ok, item};
use crate::support::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_ack_ends_the_lease_and_charges_the_head() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "batch=2").await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    // Failing the second message charges the head (m1), not m2.
    let mut body = item(&m[1], "failed", Some(&lease), None);
    body["error"] = json!("boom");
    let res = ack1(&api, body).await;
    assert_ok(&res, true);
    assert_eq!(res["dlq"], false);
    let again = api.pop("q", "batch=2").await;
    assert_eq!(again.data(), vec![json!(1), json!(2)]);
    let counts: Vec<Value> = again
        .messages()
        .iter()
        .map(|m| m["retryCount"].clone())
        .collect();
    assert_eq!(counts, vec![json!(1), json!(0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_ack_releases_without_charging_or_delaying() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryDelay": 60000, "retryLimit": 0}))
        .await;
    api.push_one("q", "Default", json!(1)).await;
    for _ in 0..3 {
        let r = api.pop("q", "").await;
        assert_eq!(
            r.data(),
            vec![json!(1)],
            "immediately deliverable again: {r:?}"
        );
        assert_eq!(r.messages()[0]["retryCount"], 0);
        let res = api.ack_msg(&r.messages()[0], "retry").await;
        assert_ok(&res, true);
        assert_eq!(res["dlq"], false);
    }
    assert_eq!(
        api.dlq("").await.body["total"],
        0,
        "retry never counts toward retryLimit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_ack_dead_letters_one_message_and_the_group_moves_on() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    let r = api.pop("q", "batch=3").await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let mut body = item(&m[1], "dlq", Some(&lease), None);
    body["error"] = json!("poison");
    let res = ack1(&api, body).await;
    assert_ok(&res, false);
    assert_eq!(res["dlq"], true);
    assert_ok(
        &ack1(&api, item(&m[0], "completed", Some(&lease), None)).await,
        false,
    );
    assert_ok(
        &ack1(&api, item(&m[2], "completed", Some(&lease), None)).await,
        true,
    );
    api.pop("q", "batch=10").await.assert_empty("empty");
    let d = api.dlq("queue=q").await;
    assert_eq!(d.body["total"], 1, "{d:?}");
    assert_eq!(d.body["messages"][0]["data"], 2);
    assert_eq!(d.body["messages"][0]["errorMessage"], "poison");
    let other = api.pop("q", "batch=10&consumerGroup=other").await;
    assert_eq!(
        other.data(),
        vec![json!(1), json!(2), json!(3)],
        "other groups are unaffected"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_implies_the_group_of_an_ack() {
    let (_b, api) = start().await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "consumerGroup=g1").await;
    let (m, lease) = (r.messages()[0].clone(), r.body["leaseId"].clone());
    assert_ok(
        &ack1(&api, item(&m, "completed", Some(&lease), None)).await,
        true,
    );
    api.pop("q", "consumerGroup=g1").await.assert_empty("empty");
    // The last settled lease still implies g1: an idempotent success, not a queue-mode ack.
    let again = ack1(&api, item(&m, "completed", Some(&lease), None)).await;
    assert_eq!(again["success"], true, "{again}");
    let qm = api.pop("q", "").await;
    assert_eq!(qm.data(), vec![json!(1)], "queue mode was not touched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_group_contradicting_the_lease_is_a_group_mismatch() {
    let (_b, api) = start().await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "consumerGroup=g1").await;
    let (m, lease) = (r.messages()[0].clone(), r.body["leaseId"].clone());
    assert_fail(
        &ack1(&api, item(&m, "completed", Some(&lease), Some("g2"))).await,
        "group_mismatch",
    );
    let qm = item(&m, "completed", Some(&lease), Some("__QUEUE_MODE__"));
    assert_fail(&ack1(&api, qm).await, "group_mismatch");
    let body_level = json!({"consumerGroup": "g2",
                            "acknowledgments": [item(&m, "completed", Some(&lease), None)]});
    let res = api.ack_batch(body_level).await;
    assert_fail(&res.body[0], "group_mismatch");
    assert_ok(
        &ack1(&api, item(&m, "completed", Some(&lease), Some("g1"))).await,
        true,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_group_beats_the_body_level_group() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "consumerGroup=g1&batch=2").await;
    let (m, lease) = (r.messages(), r.body["leaseId"].clone());
    let res = api
        .ack_batch(json!({"consumerGroup": "g2", "acknowledgments": [
            item(&m[0], "completed", Some(&lease), Some("g1")),
            item(&m[1], "completed", None, Some("g1"))]}))
        .await;
    assert_ok(&res.body[0], false);
    assert_ok(&res.body[1], true);
    let g2 = api.pop("q", "consumerGroup=g2&batch=2").await;
    assert_eq!(
        g2.data(),
        vec![json!(1), json!(2)],
        "nothing was applied to g2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_level_group_applies_to_items_without_one() {
    let (_b, api) = start().await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "consumerGroup=g1").await;
    let m = r.messages()[0].clone();
    let res = api
        .ack_batch(
            json!({"consumerGroup": "g1", "acknowledgments": [item(&m, "completed", None, None)]}),
        )
        .await;
    assert_ok(&res.body[0], true);
    api.pop("q", "consumerGroup=g1").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_without_lease_or_group_applies_to_queue_mode() {
    let (_b, api) = start().await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "consumerGroup=g1").await;
    let m = r.messages()[0].clone();
    assert_fail(
        &ack1(&api, item(&m, "completed", None, None)).await,
        "not_leased",
    );
    let qm = api.pop("q", "").await;
    assert_ok(&ack1(&api, item(&m, "completed", None, None)).await, true);
    assert_eq!(qm.data(), vec![json!(1)]);
    api.pop("q", "").await.assert_empty("empty");
    api.pop_partition("q", "Default", "consumerGroup=g1")
        .await
        .assert_empty("lease_held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_text_is_kept_truncated_to_4096_characters() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    api.push_one("q", "Default", json!(1)).await;
    let r = api.pop("q", "").await;
    let mut body = item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None);
    body["error"] = json!("é".repeat(5000));
    let res = ack1(&api, body).await;
    assert_ok(&res, true);
    assert_eq!(
        res["dlq"], true,
        "retryLimit 0: the first failure dead-letters"
    );
    let d = api.dlq("queue=q").await;
    assert_eq!(
        d.body["messages"][0]["errorMessage"],
        "é".repeat(4096),
        "truncated, not rejected"
    );
}
