//! §3.6, §4.8: lease extension — default length, never shortens, no revival, unknown leases.

use std::time::Duration;

use serde_json::{json, Value};

use crate::ack::{ack1, assert_fail, assert_ok, item};
use crate::support::{assert_iso, db_now, start, ts, Api, Reply};

async fn leased(api: &Api, queue: &str, lease_time: i64) -> Reply {
    api.configure(queue, json!({"leaseTime": lease_time})).await;
    api.push_one(queue, "Default", json!(queue)).await;
    let r = api.pop(queue, "").await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

fn lease_of(r: &Reply) -> String {
    r.body["leaseId"].as_str().unwrap().to_string()
}

/// One `/lease/:id/extend` result entry.
async fn extend1(api: &Api, lease: &str, body: Value) -> Value {
    let r = api.extend(lease, body).await;
    assert_eq!(r.status, 200, "{r:?}");
    let e = r.body[0].clone();
    assert_eq!(e["index"], 0);
    assert_eq!(e["leaseId"], lease);
    e
}

/// Seconds from the database's now to the entry's `expiresAt`.
async fn remaining(b: &regina_testkit::TestBroker, e: &Value) -> f64 {
    assert_eq!(e["success"], true, "{e}");
    assert_eq!(
        e["newExpiresAt"], e["expiresAt"],
        "newExpiresAt repeats expiresAt"
    );
    assert_iso(&e["expiresAt"], 3);
    (ts(&e["expiresAt"]) - db_now(b).await).as_seconds_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_defaults_to_the_queue_lease_time() {
    let (b, api) = start().await;
    let r = leased(&api, "q", 120).await;
    let e = extend1(&api, &lease_of(&r), json!({})).await;
    assert_eq!((&e["error"], &e["code"]), (&Value::Null, &Value::Null));
    let left = remaining(&b, &e).await;
    assert!(
        (117.0..=121.0).contains(&left),
        "extended to now + leaseTime (120 s): {left}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_never_shortens_a_lease() {
    let (b, api) = start().await;
    let r = leased(&api, "q", 300).await;
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 10})).await;
    let left = remaining(&b, &e).await;
    assert!(
        left > 290.0,
        "a shorter extension keeps the later expiry: {left}"
    );
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 1000})).await;
    let left = remaining(&b, &e).await;
    assert!(
        (995.0..=1001.0).contains(&left),
        "a longer one extends: {left}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_lease_outlives_its_original_lease_time() {
    let (_b, api) = start().await;
    let r = leased(&api, "q", 1).await;
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 30})).await;
    assert_eq!(e["success"], true, "{e}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    api.pop_partition("q", "Default", "")
        .await
        .assert_empty("lease_held");
    let res = ack1(
        &api,
        item(
            &r.messages()[0],
            "completed",
            Some(&r.body["leaseId"]),
            None,
        ),
    )
    .await;
    assert_ok(&res, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lease_cannot_be_revived() {
    let (_b, api) = start().await;
    let r = leased(&api, "q", 1).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 60})).await;
    assert_eq!(e["success"], false, "{e}");
    assert_eq!(e["code"], "lease_expired");
    assert_eq!(e["error"], "Invalid or expired lease");
    assert_eq!(
        (&e["expiresAt"], &e["newExpiresAt"]),
        (&Value::Null, &Value::Null)
    );
    let res = ack1(
        &api,
        item(
            &r.messages()[0],
            "completed",
            Some(&r.body["leaseId"]),
            None,
        ),
    )
    .await;
    assert_fail(&res, "lease_expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_lease_cannot_be_extended() {
    let (_b, api) = start().await;
    let r = leased(&api, "q", 60).await;
    api.ack_all(&r).await;
    let e = extend1(&api, &lease_of(&r), json!({})).await;
    assert_eq!(e["success"], false, "{e}");
    assert_eq!(e["code"], "lease_expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_lease_reports_lease_not_found() {
    let (_b, api) = start().await;
    let e = extend1(
        &api,
        &uuid::Uuid::now_v7().to_string(),
        json!({"seconds": 5}),
    )
    .await;
    assert_eq!(e["success"], false, "{e}");
    assert_eq!(e["code"], "lease_not_found");
    assert_eq!(e["error"], "Lease not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_seconds_must_be_between_1_and_86400() {
    let (_b, api) = start().await;
    let r = leased(&api, "q", 60).await;
    for bad in [json!(0), json!(86401), json!(-5), json!(1.5), json!("10")] {
        api.extend(&lease_of(&r), json!({"seconds": bad}))
            .await
            .assert_error(400, "validation_failed");
    }
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 86400})).await;
    assert_eq!(e["success"], true);
}

/// One lease over partitions of two queues: each partition gets its own queue's `leaseTime`, and
/// `expiresAt` is the earliest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_renews_every_partition_of_the_lease_and_reports_the_earliest() {
    let (b, api) = start().await;
    for (q, lt) in [("ns.short", 100), ("ns.long", 200)] {
        api.configure(q, json!({"leaseTime": lt})).await;
        api.push_one(q, "Default", json!(q)).await;
    }
    let r = api.pop_selector("namespace=ns&batch=2&partitions=2").await;
    assert_eq!(r.messages().len(), 2, "{r:?}");
    let e = extend1(&api, &lease_of(&r), json!({})).await;
    let left = remaining(&b, &e).await;
    assert!(
        (97.0..=101.0).contains(&left),
        "earliest expiry is the 100 s queue's: {left}"
    );
    let e = extend1(&api, &lease_of(&r), json!({"seconds": 500})).await;
    let left = remaining(&b, &e).await;
    assert!(
        (495.0..=501.0).contains(&left),
        "both partitions renewed: {left}"
    );
}

/// §4.8: expiry is accounted atomically by the next claim, without waiting for the sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_is_charged_by_the_next_claim_without_the_sweep() {
    let (_b, api) = crate::support::start_with(|c| c.lease_sweep_interval_ms = 600_000).await;
    let r = leased(&api, "q", 1).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let again = api.pop("q", "").await;
    assert_eq!(again.data(), r.data(), "{again:?}");
    assert_eq!(
        again.messages()[0]["retryCount"],
        1,
        "the expiry counted as a failed attempt"
    );
    assert_ne!(again.body["leaseId"], r.body["leaseId"]);
}

/// Invariant 3 / §4.6: the lease check is atomic with the change. Acks straddling the expiry
/// instant either settle their message (never redelivered) or are rejected `lease_expired` (the
/// message comes back with the expiry charged) — never both, never neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_racing_the_expiry_instant_are_all_or_nothing() {
    let (_b, api) = crate::support::start_with(|c| c.lease_sweep_interval_ms = 50).await;
    api.configure("edge", json!({"leaseTime": 1})).await;
    for p in 0..30 {
        api.push_one("edge", &format!("p{p:02}"), json!(p)).await;
    }
    let r = api.pop("edge", "batch=30&partitions=30").await;
    assert_eq!(r.messages().len(), 30, "{r:?}");
    let popped = std::time::Instant::now();
    let mut outcome = std::collections::HashMap::new();
    for (i, m) in r.messages().iter().enumerate() {
        let at = Duration::from_millis(850 + 10 * i as u64);
        tokio::time::sleep(at.saturating_sub(popped.elapsed())).await;
        let res = api.ack_msg(m, "completed").await;
        let accepted = match res["code"].as_str() {
            None => true,
            Some("lease_expired") => false,
            other => panic!("unexpected outcome {other:?}: {res}"),
        };
        outcome.insert(m["data"].as_i64().unwrap(), accepted);
    }
    let accepted = outcome.values().filter(|a| **a).count();
    println!(
        "acks around the expiry instant: {accepted} accepted, {} rejected",
        30 - accepted
    );
    let again = api
        .pop("edge", "batch=30&partitions=30&wait=true&timeout=3000")
        .await;
    let mut back = std::collections::HashMap::new();
    for m in again.messages() {
        back.insert(m["data"].as_i64().unwrap(), m["retryCount"].clone());
    }
    for (p, accepted) in outcome {
        if accepted {
            assert!(!back.contains_key(&p), "p{p}: ack accepted but redelivered");
        } else {
            assert_eq!(
                back.get(&p),
                Some(&json!(1)),
                "p{p}: ack rejected but not redelivered"
            );
        }
    }
}
