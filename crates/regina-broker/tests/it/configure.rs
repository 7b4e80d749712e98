//! §3.2 and §4.1: queue configuration (create vs update, merge, derivation, ranges).

use serde_json::{json, Value};

use crate::support::{assert_uuid, start, Api};

async fn configure_raw(api: &Api, body: Value) -> crate::support::Reply {
    api.post("/api/v1/configure", &body).await
}

fn default_options() -> Value {
    json!({
        "leaseTime": 300, "retryLimit": 3, "retryDelay": 0, "maxSize": 0, "ttl": 0, "priority": 0,
        "delayedProcessing": 0, "windowBuffer": 0, "deadLetterQueue": true,
        "dlqAfterMaxRetries": true, "retentionEnabled": true, "retentionSeconds": 0,
        "completedRetentionSeconds": 0, "maxWaitTimeSeconds": 0, "encryptionEnabled": false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configure_creates_queue_with_201_and_default_options() {
    let (_b, api) = start().await;
    let r = configure_raw(&api, json!({"queue": "billing.invoices.v2"})).await;
    assert_eq!(r.status, 201, "{r:?}");
    let c = &r.body;
    assert_eq!(c["configured"], true);
    assert_eq!(c["created"], true);
    assert_eq!(c["queue"], "billing.invoices.v2");
    assert_eq!(c["namespace"], "billing");
    assert_eq!(c["task"], "invoices");
    assert_uuid(&c["queueId"]);
    assert_uuid(&c["partitionId"]);
    assert_eq!(
        c["options"],
        default_options(),
        "effective options of a new queue"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configure_on_existing_queue_answers_200_and_merges_options() {
    let (_b, api) = start().await;
    let first = configure_raw(
        &api,
        json!({"queue": "m", "options": {"leaseTime": 10, "retryLimit": 5}}),
    );
    let first = first.await;
    assert_eq!(first.status, 201);
    let r = configure_raw(&api, json!({"queue": "m", "options": {"retryDelay": 100}})).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["created"], false);
    assert_eq!(r.body["queueId"], first.body["queueId"], "same queue");
    assert_eq!(
        r.body["partitionId"], first.body["partitionId"],
        "same Default partition"
    );
    let mut expected = default_options();
    expected["leaseTime"] = json!(10);
    expected["retryLimit"] = json!(5);
    expected["retryDelay"] = json!(100);
    assert_eq!(
        r.body["options"], expected,
        "absent options keep their stored values"
    );
    let r = configure_raw(&api, json!({"queue": "m"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["options"], expected,
        "configure without options changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_task_are_kept_when_absent_or_null_and_replaced_when_given() {
    let (_b, api) = start().await;
    let r = configure_raw(
        &api,
        json!({"queue": "a.b.c", "namespace": "ns", "task": "tk"}),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(
        (&r.body["namespace"], &r.body["task"]),
        (&json!("ns"), &json!("tk"))
    );
    let r = configure_raw(&api, json!({"queue": "a.b.c"})).await;
    assert_eq!(
        (&r.body["namespace"], &r.body["task"]),
        (&json!("ns"), &json!("tk"))
    );
    let r = configure_raw(
        &api,
        json!({"queue": "a.b.c", "namespace": null, "task": null}),
    )
    .await;
    assert_eq!(
        (&r.body["namespace"], &r.body["task"]),
        (&json!("ns"), &json!("tk"))
    );
    let r = configure_raw(&api, json!({"queue": "a.b.c", "task": "other"})).await;
    assert_eq!(
        (&r.body["namespace"], &r.body["task"]),
        (&json!("ns"), &json!("other"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_task_are_derived_from_the_name_on_creation() {
    let (_b, api) = start().await;
    for (queue, ns, task) in [
        ("orders", "orders", ""),
        ("a.b", "a", "b"),
        ("x.y.z.w", "x", "y"),
        (".lead", "", "lead"),
    ] {
        let r = configure_raw(&api, json!({"queue": queue})).await;
        assert_eq!(r.status, 201, "{r:?}");
        assert_eq!(r.body["namespace"], ns, "namespace of {queue}");
        assert_eq!(r.body["task"], task, "task of {queue}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_created_by_push_has_derived_names_and_default_options() {
    let (_b, api) = start().await;
    api.push_one("billing.invoices.v2", "p1", json!(1)).await;
    let r = configure_raw(&api, json!({"queue": "billing.invoices.v2"})).await;
    assert_eq!(r.status, 200, "the push created the queue: {r:?}");
    assert_eq!(r.body["created"], false);
    assert_eq!(r.body["namespace"], "billing");
    assert_eq!(r.body["task"], "invoices");
    assert_eq!(r.body["options"], default_options());
    assert_uuid(&r.body["partitionId"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configure_creates_the_default_partition() {
    let (_b, api) = start().await;
    let r = configure_raw(&api, json!({"queue": "dp"})).await;
    api.pop_partition("dp", "Default", "")
        .await
        .assert_empty("empty");
    let e = api.push_one("dp", "Default", json!(1)).await;
    assert_eq!(
        e["partition_id"], r.body["partitionId"],
        "partitionId is the Default partition"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_time_zero_is_stored_as_sixty() {
    let (_b, api) = start().await;
    let r = configure_raw(&api, json!({"queue": "z", "options": {"leaseTime": 0}})).await;
    assert_eq!(r.body["options"]["leaseTime"], 60, "{r:?}");
    let r = configure_raw(&api, json!({"queue": "z"})).await;
    assert_eq!(r.body["options"]["leaseTime"], 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn option_boundaries_are_accepted() {
    let (_b, api) = start().await;
    let max = json!({
        "leaseTime": 86400, "retryLimit": 10000, "retryDelay": 86400000_i64,
        "maxSize": 9007199254740992_i64, "ttl": 2147483648_i64, "priority": 2147483647_i64,
        "delayedProcessing": 31536000, "windowBuffer": 86400, "retentionSeconds": 2147483648_i64,
        "completedRetentionSeconds": 2147483648_i64, "maxWaitTimeSeconds": 2147483648_i64,
    });
    let r = configure_raw(&api, json!({"queue": "hi", "options": max})).await;
    assert_eq!(r.status, 201, "{r:?}");
    for (k, v) in max.as_object().unwrap() {
        assert_eq!(&r.body["options"][k], v, "option {k}");
    }
    let r = configure_raw(
        &api,
        json!({"queue": "lo", "options": {"priority": -2147483648_i64}}),
    )
    .await;
    assert_eq!(r.body["options"]["priority"], -2147483648_i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_options_are_rejected_and_change_nothing() {
    let (_b, api) = start().await;
    let r = configure_raw(&api, json!({"queue": "r", "options": {"leaseTime": 42}})).await;
    let stored = r.body["options"].clone();
    let bad = [
        ("leaseTime", json!(86401)),
        ("leaseTime", json!(-1)),
        ("retryLimit", json!(10001)),
        ("retryDelay", json!(86400001_i64)),
        ("maxSize", json!(9007199254740993_i64)),
        ("ttl", json!(2147483649_i64)),
        ("priority", json!(2147483648_i64)),
        ("priority", json!(-2147483649_i64)),
        ("delayedProcessing", json!(31536001)),
        ("windowBuffer", json!(86401)),
        ("retentionSeconds", json!(-5)),
        ("maxWaitTimeSeconds", json!(2147483649_i64)),
    ];
    for (key, value) in bad {
        // A valid change next to the bad one must not be applied either.
        let body =
            json!({"queue": "r", "namespace": "changed", "options": {"retryLimit": 7, key: value}});
        let r = configure_raw(&api, body).await;
        r.assert_error(400, "validation_failed");
    }
    let r = configure_raw(&api, json!({"queue": "r"})).await;
    assert_eq!(
        r.body["options"], stored,
        "rejected requests changed nothing"
    );
    assert_eq!(r.body["namespace"], "r");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configure_requires_a_valid_queue_name() {
    let (_b, api) = start().await;
    for body in [
        json!({}),
        json!({"queue": null}),
        json!({"queue": ""}),
        json!({"queue": 3}),
    ] {
        configure_raw(&api, body)
            .await
            .assert_error(400, "validation_failed");
    }
    let r = configure_raw(&api, json!({"queue": "q", "options": [1]})).await;
    r.assert_error(400, "validation_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabling_encryption_without_a_key_is_refused() {
    let (_b, api) = start().await;
    let r = configure_raw(
        &api,
        json!({"queue": "enc", "options": {"encryptionEnabled": true}}),
    )
    .await;
    r.assert_error(400, "encryption_unavailable");
    api.pop("enc", "").await.assert_empty("queue_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_lease_time_governs_lease_expiry() {
    let (_b, api) = start().await;
    configure_raw(&api, json!({"queue": "lt", "options": {"leaseTime": 77}})).await;
    api.push_one("lt", "Default", json!(1)).await;
    let r = api.pop("lt", "").await;
    let ext = api
        .extend(r.body["leaseId"].as_str().unwrap(), json!({}))
        .await;
    let now = time::OffsetDateTime::now_utc();
    let expires = crate::support::ts(&ext.body[0]["expiresAt"]);
    let secs = (expires - now).as_seconds_f64();
    assert!(
        (70.0..=80.0).contains(&secs),
        "lease expires in {secs} s, leaseTime is 77"
    );
}
