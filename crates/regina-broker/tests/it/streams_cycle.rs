//! streams-api.md §3.3: the cycle — state ops, sink pushes and the source ack committed together
//! or not at all; the cumulative ack, `release_lease`, the parked lease whose expiry charges
//! nothing, the replay rule, refusals and their codes, wake-ups.

use serde_json::{json, Value};

use crate::streams::{cycle, keys, new_query, state};
use crate::support::{start, start_with, Api, Reply};

const GROUP: &str = "streams.q";

/// Pushes `n` messages `m1..mn` (transactionIds) to `src`/`p` and pops them as GROUP.
async fn leased(api: &Api, n: usize, query: &str) -> Reply {
    let items: Vec<Value> = (1..=n)
        .map(|i| json!({"queue": "src", "partition": "p", "payload": i, "transactionId": format!("m{i}")}))
        .collect();
    assert_eq!(api.push(Value::Array(items)).await.status, 201);
    let r = api
        .pop("src", &format!("consumerGroup={GROUP}&batch={n}&{query}"))
        .await;
    assert_eq!(r.messages().len(), n, "{r:?}");
    r
}

/// A cycle body for the shard of the popped partition, acking message `m{i}` of the pop.
fn acking(query_id: &str, pop: &Reply, i: usize, extra: Value) -> Value {
    let msg = &pop.messages()[i - 1];
    let mut body = json!({
        "query_id": query_id, "partition_id": msg["partitionId"], "consumer_group": GROUP,
        "ack": {"transactionId": msg["transactionId"], "leaseId": msg["leaseId"], "count": i},
    });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// Everything `group` can see on `queue` now, settled on delivery.
async fn drain(api: &Api, queue: &str, group: &str) -> Vec<Value> {
    api.pop(
        queue,
        &format!("consumerGroup={group}&batch=100&partitions=10&autoAck=true"),
    )
    .await
    .data()
}

/// Asserts the failure body of a refused cycle (§3.3).
#[track_caller]
fn assert_refused(r: &Reply, status: u16, code: &str) {
    r.assert_error(status, code);
    assert_eq!(r.body["success"], false, "{r:?}");
    assert_eq!(r.body["state_ops_applied"], 0, "{r:?}");
    assert_eq!(r.body["push_results"], json!([]), "{r:?}");
    assert_eq!(r.body["ack_result"], Value::Null, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_applies_state_pushes_and_a_cumulative_ack_together() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 3, "").await;
    let body = acking(
        &id,
        &pop,
        3,
        json!({
            "state_ops": [{"type": "upsert", "key": "w", "value": {"acc": 6}},
                          {"type": "upsert", "key": "gone", "value": 1},
                          {"type": "delete", "key": "gone"},
                          {"type": "delete", "key": "never-there"},
                          {"type": "upsert", "key": "empty"}],
            "push_items": [{"queue": "sink", "partition": "k", "payload": {"sum": 1}, "transactionId": "e1", "messageId": "ignored"},
                           {"queue": "sink", "partition": "k", "payload": {"sum": 2}}],
        }),
    );
    let r = cycle(&api, body).await;
    assert_eq!(r.status, 200, "{r:?}");
    let partition_id = pop.messages()[0]["partitionId"].clone();
    assert_eq!(r.body["success"], true);
    assert_eq!(
        (r.body["query_id"].clone(), r.body["partition_id"].clone()),
        (json!(id), partition_id.clone())
    );
    assert_eq!(r.body["queueName"], "src");
    assert_eq!(r.body["state_ops_applied"], 5);
    assert_eq!(
        r.body["ack_result"],
        json!({"success": true, "count": 3, "lease_released": true, "dlq": false})
    );
    let pushes = r.body["push_results"].as_array().unwrap();
    assert_eq!(pushes.len(), 2);
    for (i, p) in pushes.iter().enumerate() {
        assert_eq!(
            (
                p["index"].clone(),
                p["status"].clone(),
                p["queueName"].clone()
            ),
            (json!(i), json!("queued"), json!("sink"))
        );
        assert_ne!(p["message_id"], "ignored");
    }
    assert_eq!(pushes[0]["transaction_id"], "e1");
    assert!(r.body.get("replayed").is_none(), "only a replay says so");

    let rows = state(&api, json!({"query_id": id, "partition_id": partition_id})).await;
    assert_eq!(keys(&rows), ["empty", "w"]);
    assert_eq!(
        (rows[0]["value"].clone(), rows[1]["value"].clone()),
        (json!({}), json!({"acc": 6}))
    );
    assert_eq!(
        drain(&api, "sink", "reader").await,
        vec![json!({"sum": 1}), json!({"sum": 2})]
    );
    api.pop("src", &format!("consumerGroup={GROUP}"))
        .await
        .assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_lists_are_empty_and_an_ackless_cycle_needs_no_lease() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    let shard = "0196a000-0000-7000-8000-00000000b001";
    let r = cycle(
        &api,
        json!({"query_id": id, "partition_id": shard, "state_ops": null,
                               "push_items": null, "ack": null, "release_lease": null}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (
            r.body["state_ops_applied"].clone(),
            r.body["push_results"].clone(),
            r.body["ack_result"].clone(),
            r.body["queueName"].clone()
        ),
        (json!(0), json!([]), Value::Null, Value::Null)
    );
    // an idle flush: deletes a closed window and emits it, with no ack at all
    let r = cycle(&api, json!({"query_id": id, "partition_id": shard,
        "state_ops": [{"type": "upsert", "key": "x", "value": null}, {"type": "delete", "key": "x"},
                      {"type": "delete", "key": "y"}, {"type": "upsert", "key": "y", "value": null}],
        "push_items": [{"queue": "sink", "payload": "closed"}]})).await;
    assert_eq!(r.status, 200, "{r:?}");
    let rows = state(&api, json!({"query_id": id, "partition_id": shard})).await;
    assert_eq!(keys(&rows), ["y"], "ops apply in order");
    assert_eq!(rows[0]["value"], Value::Null, "null is stored as null");
    assert_eq!(drain(&api, "sink", "reader").await, vec![json!("closed")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_cycle_applies_nothing() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    api.configure("full", json!({"maxSize": 1})).await;
    api.push_one("full", "Default", json!("occupant")).await;
    let pop = leased(&api, 2, "").await;
    let partition_id = pop.messages()[0]["partitionId"].clone();
    let shard = json!({"query_id": id, "partition_id": partition_id});
    let ops = json!([{"type": "upsert", "key": "k", "value": 1}]);

    // a full sink: 429, the state op, the other sink item and the ack all rolled back
    let r = cycle(
        &api,
        acking(
            &id,
            &pop,
            2,
            json!({"state_ops": ops,
        "push_items": [{"queue": "sink", "payload": 1}, {"queue": "full", "payload": 2}]}),
        ),
    )
    .await;
    assert_refused(&r, 429, "queue_full");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        (r.body["index"].clone(), r.body["field"].clone()),
        (json!(1), json!("push_items[1]"))
    );
    assert_eq!(
        (r.body["query_id"].clone(), r.body["partition_id"].clone()),
        (json!(id), partition_id.clone())
    );
    assert!(state(&api, shard.clone()).await.is_empty());
    assert!(drain(&api, "sink", "reader").await.is_empty());

    // an invalid sink item: 400 before anything runs
    let r = cycle(
        &api,
        acking(
            &id,
            &pop,
            2,
            json!({"state_ops": ops,
        "push_items": [{"queue": "sink", "traceId": 7}]}),
        ),
    )
    .await;
    assert_refused(&r, 400, "validation_failed");
    assert_eq!(r.body["field"], "push_items[0].traceId");

    // a stale lease: the retry ack ends it; the cycle naming it changes nothing
    let msg = &pop.messages()[0];
    let retried = api
        .ack(
            json!({"transactionId": msg["transactionId"], "partitionId": partition_id,
                                 "leaseId": msg["leaseId"], "status": "retry"}),
        )
        .await;
    assert_eq!(retried.body[0]["success"], true, "{retried:?}");
    let r = cycle(
        &api,
        acking(
            &id,
            &pop,
            2,
            json!({"state_ops": ops,
        "push_items": [{"queue": "sink", "payload": 1}]}),
        ),
    )
    .await;
    assert_refused(&r, 409, "lease_expired");
    assert_eq!(r.body["error"], "Invalid or expired lease");
    assert!(state(&api, shard).await.is_empty(), "state unchanged");
    assert!(
        drain(&api, "sink", "reader").await.is_empty(),
        "sink unchanged"
    );
    let again = api
        .pop("src", &format!("consumerGroup={GROUP}&batch=5"))
        .await;
    assert_eq!(again.data(), vec![json!(1), json!(2)], "cursor unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_lease_true_ends_a_partial_lease_without_a_charge() {
    let (_b, api) = start().await;
    api.configure("src", json!({"retryDelay": 3_600_000, "retryLimit": 0}))
        .await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 5, "").await;
    let r = cycle(&api, acking(&id, &pop, 2, json!({"release_lease": true}))).await;
    assert_eq!(
        r.body["ack_result"],
        json!({"success": true, "count": 2, "lease_released": true, "dlq": false}),
        "{r:?}"
    );
    // the rest at once: no retry delay, no attempt (retryLimit 0 would dead-letter m3)
    let next = api
        .pop("src", &format!("consumerGroup={GROUP}&batch=5"))
        .await;
    assert_eq!(next.data(), vec![json!(3), json!(4), json!(5)], "{next:?}");
    assert_eq!(next.messages()[0]["retryCount"], 0);
    // acking the middle settles the prefix; the lease stays while m5 is unsettled (parked)
    let r = cycle(&api, acking(&id, &next, 2, json!({"release_lease": false}))).await;
    assert_eq!(r.body["ack_result"]["count"], 2, "{r:?}");
    assert_eq!(r.body["ack_result"]["lease_released"], false);
    let held = api.pop("src", &format!("consumerGroup={GROUP}")).await;
    assert_eq!(held.status, 204, "m5 stays leased: {held:?}");
    let r = cycle(&api, acking(&id, &next, 3, json!({"release_lease": false}))).await;
    assert_eq!(
        r.body["ack_result"],
        json!({"success": true, "count": 1, "lease_released": true, "dlq": false})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expiry_of_a_parked_lease_charges_no_attempt() {
    let (_b, api) = start().await;
    // retryLimit 0: a charged expiry would dead-letter the head at once
    api.configure(
        "src",
        json!({"leaseTime": 1, "retryLimit": 0, "retryDelay": 0}),
    )
    .await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 3, "").await;
    let r = cycle(&api, acking(&id, &pop, 1, json!({"release_lease": false}))).await;
    assert_eq!(r.body["ack_result"]["lease_released"], false, "{r:?}");
    // a long-poll wakes when the lease expires; the tail comes back uncharged, in order
    let again = api
        .pop(
            "src",
            &format!("consumerGroup={GROUP}&batch=5&wait=true&timeout=30000"),
        )
        .await;
    assert_eq!(again.data(), vec![json!(2), json!(3)], "{again:?}");
    assert_eq!(again.messages()[0]["retryCount"], 0);
    assert_eq!(api.dlq("queue=src").await.body["total"], 0);

    // the same expiry without a parking cycle is a failed attempt: m2 is dead-lettered
    let again = api
        .pop(
            "src",
            &format!("consumerGroup={GROUP}&batch=5&wait=true&timeout=30000"),
        )
        .await;
    assert_eq!(
        again.data(),
        vec![json!(3)],
        "m2 dead-lettered after its unparked expiry: {again:?}"
    );
    assert_eq!(api.dlq("queue=src").await.body["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_cycle_is_a_replay_that_applies_nothing() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 3, "").await;
    let partition_id = pop.messages()[0]["partitionId"].clone();
    let shard = json!({"query_id": id, "partition_id": partition_id});
    let with = |value: i64, release: bool| {
        json!({"state_ops": [{"type": "upsert", "key": "k", "value": value}],
               "push_items": [{"queue": "sink", "payload": value}], "release_lease": release})
    };
    // release_lease false: the lease stays active, and the same cycle again is a replay
    assert_eq!(
        cycle(&api, acking(&id, &pop, 2, with(1, false)))
            .await
            .status,
        200
    );
    let replayed = json!({"success": true, "count": 0, "lease_released": false, "dlq": false});
    for release in [false, true] {
        let r = cycle(&api, acking(&id, &pop, 2, with(2, release))).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.body["replayed"], true);
        assert_eq!(
            (
                r.body["state_ops_applied"].clone(),
                r.body["push_results"].clone(),
                r.body["ack_result"].clone()
            ),
            (json!(0), json!([]), replayed.clone())
        );
    }
    // release_lease true, lease fully settled: replayed after the lease ended
    assert_eq!(
        cycle(&api, acking(&id, &pop, 3, with(3, true)))
            .await
            .status,
        200
    );
    let r = cycle(&api, acking(&id, &pop, 3, with(4, true))).await;
    assert_eq!(r.body["replayed"], true, "{r:?}");
    assert_eq!(
        state(&api, shard).await[0]["value"],
        3,
        "replays applied nothing"
    );
    assert_eq!(
        drain(&api, "sink", "reader").await,
        vec![json!(1), json!(3)]
    );
    // a settled message under another lease, or without one, is refused
    let mut other = acking(&id, &pop, 3, json!({}));
    other["ack"]["leaseId"] = json!("0196a000-0000-7000-8000-0000000000ff");
    assert_refused(&cycle(&api, other.clone()).await, 409, "lease_expired");
    other["ack"]["leaseId"] = Value::Null;
    assert_refused(&cycle(&api, other).await, 409, "already_settled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_their_codes() {
    let (_b, api) = start_with(|c| c.transaction_operations_max = 3).await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 2, "").await;
    let msg = &pop.messages()[0];
    let partition_id = msg["partitionId"].clone();
    let unknown = "0196a000-0000-7000-8000-00000000dead";

    let r = cycle(
        &api,
        json!({"query_id": unknown, "partition_id": partition_id}),
    )
    .await;
    assert_refused(&r, 404, "query_not_found");
    assert_eq!(r.body["query_id"], unknown);
    let r = cycle(
        &api,
        json!({"query_id": id, "partition_id": partition_id,
                               "ack": {"transactionId": "nope", "leaseId": msg["leaseId"]}}),
    )
    .await;
    assert_refused(&r, 404, "message_not_found");
    assert_eq!(r.body["error"], "Message not found");
    let mut body = acking(&id, &pop, 1, json!({}));
    body["consumer_group"] = json!("someone-else");
    assert_refused(&cycle(&api, body).await, 409, "group_mismatch");
    // the other group has no lease on the partition
    let mut body = acking(&id, &pop, 1, json!({}));
    body["consumer_group"] = json!("idle");
    body["ack"]["leaseId"] = Value::Null;
    assert_refused(&cycle(&api, body).await, 409, "not_leased");

    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"partition_id": partition_id}),
            "validation_failed",
            "query_id is required",
        ),
        (
            json!({"query_id": id}),
            "validation_failed",
            "partition_id is required",
        ),
        (
            json!({"query_id": id, "partition_id": "x"}),
            "validation_failed",
            "partition_id must be a UUID",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "state_ops": [{"type": "merge", "key": "a"}]}),
            "validation_failed",
            "Unknown state_op type: merge",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "state_ops": [{"type": "upsert"}]}),
            "validation_failed",
            "state_ops[0].key",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "state_ops": [{"type": "upsert", "key": "a\u{0}"}]}),
            "validation_failed",
            "NUL",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id,
                   "state_ops": [{"type": "upsert", "key": "a", "value": "nul\u{0}"}]}),
            "validation_failed",
            "Invalid value",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "ack": {"leaseId": "x"}}),
            "validation_failed",
            "ack.transactionId is required",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "ack": {"transactionId": "m1", "status": "done"}}),
            "validation_failed",
            "Unknown ack.status: done",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "release_lease": "false"}),
            "validation_failed",
            "release_lease must be a boolean",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "push_items": {}}),
            "validation_failed",
            "push_items must be an array",
        ),
        (
            json!({"query_id": id, "partition_id": partition_id, "ack": {"transactionId": "m1"},
                "state_ops": [{"type": "delete", "key": "a"}, {"type": "delete", "key": "b"}],
                "push_items": [{"queue": "sink"}]}),
            "too_many_items",
            "limit 3",
        ),
    ];
    for (body, code, text) in cases {
        let r = cycle(&api, body.clone()).await;
        assert_refused(&r, 400, code);
        assert!(
            r.body["error"].as_str().unwrap().contains(text),
            "{body}: {r:?}"
        );
    }
    // nothing above touched the lease: the cycle still commits under it
    let r = cycle(&api, acking(&id, &pop, 2, json!({}))).await;
    assert_eq!(r.body["ack_result"]["count"], 2, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_dlq_acks_act_on_the_message_alone() {
    let (_b, api) = start().await;
    api.configure("src", json!({"retryLimit": 5, "retryDelay": 0}))
        .await;
    let id = new_query(&api, "q").await;
    let pop = leased(&api, 2, "").await;
    let mut body = acking(&id, &pop, 1, json!({"release_lease": false}));
    body["ack"]["status"] = json!("failed");
    body["ack"]["error"] = json!("boom");
    let r = cycle(&api, body).await;
    assert_eq!(
        r.body["ack_result"],
        json!({"success": true, "count": 0, "lease_released": true, "dlq": false}),
        "{r:?}"
    );
    let again = api
        .pop("src", &format!("consumerGroup={GROUP}&batch=2"))
        .await;
    assert_eq!(again.data(), vec![json!(1), json!(2)]);
    assert_eq!(again.messages()[0]["retryCount"], 1, "one attempt charged");
    let mut body = acking(&id, &again, 1, json!({}));
    body["ack"]["status"] = json!("dlq");
    let r = cycle(&api, body).await;
    assert_eq!(
        r.body["ack_result"],
        json!({"success": true, "count": 1, "lease_released": false, "dlq": true}),
        "{r:?}"
    );
    assert_eq!(api.dlq("queue=src").await.body["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_wakes_the_waiters_of_the_sink() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    let waiter = {
        let api = api.clone();
        tokio::spawn(async move {
            api.pop("sink", "consumerGroup=reader&wait=true&timeout=60000")
                .await
        })
    };
    api.wait_for_waiters(1).await;
    let r = cycle(
        &api,
        json!({"query_id": id, "partition_id": "0196a000-0000-7000-8000-00000000b002",
                               "push_items": [{"queue": "sink", "payload": "woken"}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    let woken = waiter.await.unwrap();
    assert_eq!(woken.data(), vec![json!("woken")], "{woken:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycles_and_transactions_on_the_same_partitions_all_commit() {
    let (_b, api) = start().await;
    let id = new_query(&api, "q").await;
    const CALLERS: usize = 12;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(CALLERS));
    let mut tasks = Vec::new();
    for i in 0..CALLERS {
        let (api, barrier, id) = (api.clone(), barrier.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            // Cycles write partitions b then a, transactions a then b; two shards share the work.
            let item = |p: &str| json!({"queue": "sink", "partition": p, "payload": i});
            barrier.wait().await;
            if i % 2 == 0 {
                let shard = format!("0196a000-0000-7000-8000-00000000c00{}", i % 4);
                cycle(&api, json!({"query_id": id, "partition_id": shard,
                                   "state_ops": [{"type": "upsert", "key": format!("k{i}"), "value": i}],
                                   "push_items": [item("b"), item("a")]}))
                .await
            } else {
                api.post("/api/v1/transaction",
                         &json!({"operations": [{"type": "push", "items": [item("a"), item("b")]}]}))
                .await
            }
        }));
    }
    for task in tasks {
        let r = task.await.unwrap();
        assert_eq!(r.status, 200, "{r:?}");
    }
    for partition in ["a", "b"] {
        let r = api
            .pop_partition(
                "sink",
                partition,
                "consumerGroup=reader&batch=100&autoAck=true",
            )
            .await;
        assert_eq!(r.messages().len(), CALLERS, "{partition}: {r:?}");
    }
    let mut written = 0;
    for shard in [
        "0196a000-0000-7000-8000-00000000c000",
        "0196a000-0000-7000-8000-00000000c002",
    ] {
        written += state(&api, json!({"query_id": id, "partition_id": shard}))
            .await
            .len();
    }
    assert_eq!(written, CALLERS / 2);
}
