//! §3.7, §4.12: transactions — acks and pushes commit together or not at all, in order, under
//! the leases they check, without deadlocks, and wake the waiters their commit concerns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use regina_testkit::PARKED_POP_TIMEOUT_MS;
use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::support::{assert_uuid_v7, start, start_event_driven, start_with, Api, Reply};

/// `POST /api/v1/transaction` with the given operations.
async fn transact(api: &Api, operations: Value) -> Reply {
    api.post("/api/v1/transaction", &json!({ "operations": operations }))
        .await
}

/// An ack operation for a delivered message under its own lease.
fn ack_op(msg: &Value, status: &str) -> Value {
    json!({"type": "ack", "transactionId": msg["transactionId"], "partitionId": msg["partitionId"],
           "leaseId": msg["leaseId"], "status": status})
}

/// A push operation of one item.
fn push_op(queue: &str, partition: &str, payload: Value, transaction_id: &str) -> Value {
    json!({"type": "push", "items": [{"queue": queue, "partition": partition, "payload": payload,
                                      "transactionId": transaction_id}]})
}

/// Pops everything a group can see on a queue (autoAck), in order.
async fn drain(api: &Api, queue: &str, group: &str) -> Vec<Value> {
    let r = api
        .pop(
            queue,
            &format!("consumerGroup={group}&batch=1000&partitions=100&autoAck=true"),
        )
        .await;
    r.data()
}

/// Asserts the failure body of a transaction (§3.7) and returns its results.
#[track_caller]
fn assert_refused(r: &Reply, status: u16, code: &str) -> Vec<Value> {
    r.assert_error(status, code);
    assert_eq!(r.body["success"], false, "{r:?}");
    assert_uuid_v7(&r.body["transactionId"]);
    r.body["results"].as_array().expect("results").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_acks_and_pushes_commit_together_with_results_in_order() {
    let (_b, api) = start().await;
    api.push_one("in", "p", json!({"n": 1})).await;
    let popped = api.pop("in", "consumerGroup=worker").await;
    let msg = &popped.messages()[0];

    let r = transact(
        &api,
        json!([
            ack_op(msg, "completed"),
            {"type": "push", "items": [
                {"queue": "out", "partition": "a", "payload": {"from": 1}, "transactionId": "f-1"},
                {"queue": "out", "partition": "b", "payload": [1, "two"]}]},
        ]),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["success"], true);
    assert_uuid_v7(&r.body["transactionId"]);
    let results = r.body["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        json!({"index": 0, "type": "ack", "success": true, "transactionId": msg["transactionId"],
               "error": null, "code": null, "dlq": false, "leaseReleased": true})
    );
    for (i, partition) in [(1, "a"), (2, "b")] {
        let push = &results[i];
        assert_eq!(push["index"], i);
        assert_eq!(push["type"], "push");
        assert_eq!(push["success"], true);
        assert_eq!(push["status"], "queued");
        assert_eq!(push["queueName"], "out");
        assert_uuid_v7(&push["messageId"]);
        let delivered = api
            .pop_partition("out", partition, "autoAck=true")
            .await
            .messages();
        assert_eq!(delivered[0]["id"], push["messageId"], "{partition}");
        assert_eq!(delivered[0]["partitionId"], push["partitionId"]);
        assert_eq!(delivered[0]["transactionId"], push["transactionId"]);
    }
    assert_eq!(results[1]["transactionId"], "f-1");
    assert_uuid_v7(&results[2]["transactionId"]);
    api.pop("in", "consumerGroup=worker")
        .await
        .assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_ack_leaves_pushes_unstored_and_other_acks_unapplied() {
    let (_b, api) = start().await;
    api.configure("in", json!({"retryLimit": 0})).await;
    api.push_one("in", "a", json!("a1")).await;
    api.push_one("in", "b", json!("b1")).await;
    let first = api.pop("in", "consumerGroup=g&partitions=2&batch=2").await;
    let (a, b) = (&first.messages()[0], &first.messages()[1]);

    // `failed` with retryLimit 0 would dead-letter a; the unknown message aborts everything.
    let r = transact(
        &api,
        json!([
            ack_op(a, "failed"),
            push_op("out", "Default", json!("never"), "out-1"),
            {"type": "ack", "transactionId": "no-such-message", "partitionId": b["partitionId"],
             "leaseId": b["leaseId"]},
            ack_op(b, "completed"),
        ]),
    )
    .await;
    let results = assert_refused(&r, 404, "message_not_found");
    assert_eq!(r.body["error"], "ACK operation failed: Message not found");
    assert_eq!(
        results.len(),
        3,
        "outcomes up to the failing one: {results:?}"
    );
    assert_eq!(results[0]["dlq"], true, "computed before the abort");
    assert_eq!(results[1]["status"], "queued");
    assert_eq!(
        results[2],
        json!({"index": 2, "type": "ack", "success": false, "transactionId": "no-such-message",
               "error": "Message not found", "code": "message_not_found", "dlq": false,
               "leaseReleased": false})
    );

    assert!(
        drain(&api, "out", "audit").await.is_empty(),
        "push rolled back"
    );
    let dlq = api.dlq("queue=in").await;
    assert_eq!(dlq.body["total"], 0, "dead letter rolled back: {dlq:?}");
    // The lease is still whole: completing a under it works, which a `failed` would have ended.
    assert_eq!(api.ack_msg(a, "completed").await["success"], true);
    assert_eq!(api.ack_msg(b, "completed").await["success"], true);
    // The same pushed identity was never stored: pushing it now stores it.
    let again = api
        .push(json!([{"queue": "out", "payload": "now", "transactionId": "out-1"}]))
        .await;
    assert_eq!(again.body[0]["status"], "queued", "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_lease_aborts_with_409_and_stores_nothing() {
    let (_b, api) = start().await;
    api.configure("in", json!({"leaseTime": 1})).await;
    api.push_one("in", "Default", json!(1)).await;
    let stale = api.pop("in", "consumerGroup=g").await.messages()[0].clone();
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let r = transact(
        &api,
        json!([
            push_op("out", "Default", json!("x"), "o-1"),
            ack_op(&stale, "completed"),
        ]),
    )
    .await;
    let results = assert_refused(&r, 409, "lease_expired");
    assert_eq!(
        r.body["error"],
        "ACK operation failed: Invalid or expired lease"
    );
    assert_eq!(results[1]["code"], "lease_expired");
    assert!(drain(&api, "out", "audit").await.is_empty());
    // The message is still to be processed by the group.
    let redelivered = api.pop("in", "consumerGroup=g").await;
    assert_eq!(redelivered.data(), vec![json!(1)]);
    assert_eq!(
        redelivered.messages()[0]["retryCount"],
        1,
        "expiry was counted"
    );

    // An ack without lease for a message outside any lease, and a group mismatch, conflict too.
    let fresh = api.push_one("in", "other", json!(2)).await;
    let not_leased = transact(
        &api,
        json!([{"type": "ack", "transactionId": fresh["transaction_id"],
                "partitionId": fresh["partition_id"], "consumerGroup": "g"}]),
    )
    .await;
    assert_refused(&not_leased, 409, "not_leased");
    let held = &redelivered.messages()[0];
    let mut mismatch = ack_op(held, "completed");
    mismatch["consumerGroup"] = json!("someone-else");
    assert_refused(
        &transact(&api, json!([mismatch])).await,
        409,
        "group_mismatch",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resending_a_committed_transaction_succeeds_with_duplicate_pushes() {
    let (_b, api) = start().await;
    api.push_to("in", "p", &[json!(1), json!(2)]).await;
    let popped = api.pop("in", "consumerGroup=g&batch=2").await;
    let msgs = popped.messages();
    let operations = json!([
        ack_op(&msgs[0], "completed"),
        push_op("out", "x", json!({"v": 1}), "fwd-1"),
        // The same key again in the same transaction is its duplicate.
        push_op("out", "x", json!({"v": "other"}), "fwd-1"),
    ]);
    let first = transact(&api, operations.clone()).await;
    assert_eq!(first.status, 200, "{first:?}");
    let results = first.body["results"].as_array().expect("results").clone();
    assert_eq!(results[1]["status"], "queued");
    assert_eq!(results[2]["status"], "duplicate");
    assert_eq!(results[2]["success"], true);
    assert_eq!(results[2]["messageId"], results[1]["messageId"]);

    let second = transact(&api, operations).await;
    assert_eq!(second.status, 200, "{second:?}");
    assert_ne!(second.body["transactionId"], first.body["transactionId"]);
    let again = second.body["results"].as_array().expect("results");
    assert_eq!(again[0]["success"], true, "ack is an idempotent success");
    for i in [1, 2] {
        assert_eq!(again[i]["status"], "duplicate");
        assert_eq!(again[i]["messageId"], results[1]["messageId"]);
    }
    assert_eq!(drain(&api, "out", "audit").await, vec![json!({"v": 1})]);
    // Still under the lease: the second message remains to ack.
    assert_eq!(api.ack_msg(&msgs[1], "completed").await["success"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_retry_acks_follow_the_ack_rules() {
    let (_b, api) = start().await;
    api.configure("in", json!({"retryLimit": 1})).await;
    api.push_one("in", "Default", json!("poison")).await;
    for attempt in 0..2 {
        let msg = api.pop("in", "consumerGroup=g").await.messages()[0].clone();
        assert_eq!(msg["retryCount"], attempt);
        let r = transact(&api, json!([ack_op(&msg, "failed")])).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.body["results"][0]["leaseReleased"], true);
        assert_eq!(r.body["results"][0]["dlq"], attempt == 1, "{r:?}");
    }
    let dlq = api.dlq("queue=in&consumerGroup=g").await;
    assert_eq!(dlq.body["total"], 1, "{dlq:?}");
    assert_eq!(dlq.body["messages"][0]["errorMessage"], "Retries exhausted");

    api.push_one("in", "Default", json!("again")).await;
    let msg = api.pop("in", "consumerGroup=g").await.messages()[0].clone();
    let r = transact(&api, json!([ack_op(&msg, "retry")])).await;
    assert_eq!(r.body["results"][0]["leaseReleased"], true, "{r:?}");
    let redelivered = api.pop("in", "consumerGroup=g").await.messages();
    assert_eq!(redelivered[0]["id"], msg["id"]);
    assert_eq!(redelivered[0]["retryCount"], 0, "retry charges nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_transactions_are_refused_before_anything_is_stored() {
    let (_b, api) = start_with(|c| c.transaction_operations_max = 3).await;
    let post = |body: Value| {
        let api = api.clone();
        async move { api.post("/api/v1/transaction", &body).await }
    };
    let missing = post(json!({})).await;
    assert_refused(&missing, 400, "validation_failed");
    assert_eq!(missing.body["error"], "operations array required");
    let empty = post(json!({"operations": []})).await;
    assert_refused(&empty, 400, "validation_failed");
    assert_eq!(empty.body["error"], "operations array cannot be empty");
    let unknown = transact(&api, json!([{"type": "peek"}])).await;
    assert_refused(&unknown, 400, "validation_failed");
    assert_eq!(unknown.body["error"], "Unknown operation type: peek");

    let bad_item = transact(
        &api,
        json!([push_op("out", "Default", json!(1), "ok"),
               {"type": "push", "items": [{"queue": ""}]}]),
    )
    .await;
    assert_refused(&bad_item, 400, "validation_failed");
    assert_eq!(bad_item.body["field"], "operations[1].items[0].queue");
    assert_eq!(bad_item.body["index"], 1);
    let too_many = transact(
        &api,
        json!([{"type": "push", "items": [{"queue": "out"}, {"queue": "out"}]},
               {"type": "push", "items": [{"queue": "out"}, {"queue": "out"}]}]),
    )
    .await;
    let results = assert_refused(&too_many, 400, "too_many_items");
    assert!(results.is_empty());
    assert_eq!(too_many.body["limit"], 3);
    let not_json = api
        .post_raw("/api/v1/transaction", b"{\"operations\":")
        .await;
    assert_refused(&not_json, 400, "invalid_json");
    assert!(drain(&api, "out", "audit").await.is_empty());
}

/// Both waiters wait far beyond the test on a broker without the periodic re-check (and the
/// lease's own expiry, 300 s, is further still): only the commit can answer them with messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_push_wakes_a_parked_pop_and_an_ended_lease_wakes_its_group() {
    let (_b, api) = start_event_driven().await;
    api.configure("w", json!({})).await;
    let parked = {
        let api = api.with_own_pool();
        tokio::spawn(async move {
            let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}&autoAck=true");
            let r = api.pop("w", &query).await;
            (r, Instant::now())
        })
    };
    api.wait_for_waiters(1).await;
    let r = transact(&api, json!([push_op("w", "Default", json!("hi"), "w-1")])).await;
    assert_eq!(r.status, 200, "{r:?}");
    let committed = Instant::now();
    let (delivered, at) = parked.await.expect("waiter");
    assert_eq!(delivered.status, 200, "woken, not timed out: {delivered:?}");
    assert_eq!(delivered.data(), vec![json!("hi")]);
    println!(
        "woken {:?} after the commit",
        at.saturating_duration_since(committed)
    );

    // A second consumer of the group parks behind the lease; the transaction's ack ends it.
    api.push_to("w2", "Default", &[json!(1), json!(2)]).await;
    let holder = api.pop("w2", "consumerGroup=g").await.messages()[0].clone();
    let waiter = {
        let api = api.with_own_pool();
        tokio::spawn(async move {
            let query = format!("consumerGroup=g&wait=true&timeout={PARKED_POP_TIMEOUT_MS}");
            api.pop("w2", &query).await
        })
    };
    api.wait_for_waiters(1).await;
    let r = transact(&api, json!([ack_op(&holder, "completed")])).await;
    assert_eq!(r.body["results"][0]["leaseReleased"], true, "{r:?}");
    let next = waiter.await.expect("waiter");
    assert_eq!(
        next.status, 200,
        "the lease end woke it, not its timeout: {next:?}"
    );
    assert_eq!(next.data(), vec![json!(2)]);
}

/// Deadlocks PostgreSQL detected in this test's database so far.
async fn deadlocks(b: &regina_testkit::TestBroker) -> i64 {
    let db = b.db().await;
    let row = db
        .query_one(
            "select deadlocks from pg_stat_database where datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    row.get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_over_the_same_partitions_in_opposite_orders_never_deadlock() {
    const TASKS: usize = 40;
    let (b, api) = start_with(|c| c.db_pool_size = 8).await;
    let payloads: Vec<Value> = (0..TASKS).map(|i| json!(i)).collect();
    api.push_to("cc", "A", &payloads).await;
    api.push_to("cc", "B", &payloads).await;
    let batch = format!("consumerGroup=g&batch={TASKS}");
    let a = api.pop_partition("cc", "A", &batch).await.messages();
    let b_msgs = api.pop_partition("cc", "B", &batch).await.messages();
    assert_eq!((a.len(), b_msgs.len()), (TASKS, TASKS));
    let before = deadlocks(&b).await;

    let barrier = Arc::new(Barrier::new(TASKS));
    let mut tasks = Vec::new();
    for i in 0..TASKS {
        let api = api.with_own_pool();
        let (ack_a, ack_b) = (ack_op(&a[i], "completed"), ack_op(&b_msgs[i], "completed"));
        let (push_a, push_b) = (
            push_op("cc", "A", json!(format!("a{i}")), &format!("a-{i}")),
            push_op("cc", "B", json!(format!("b{i}")), &format!("b-{i}")),
        );
        // Half lock their way from A to B, half from B to A; each also starts a new group,
        // whose subscription takes the partitions table in share mode.
        let operations = if i % 2 == 0 {
            json!([ack_a, push_b, ack_b, push_a])
        } else {
            json!([ack_b, push_a, ack_a, push_b])
        };
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            let new_group = format!("consumerGroup=new-{i}&autoAck=true");
            barrier.wait().await;
            let (r, _) = tokio::join!(transact(&api, operations), api.pop("cc", &new_group));
            r
        }));
    }
    for task in tasks {
        let r = task.await.expect("task");
        assert_eq!(r.status, 200, "{r:?}");
    }
    assert_eq!(
        deadlocks(&b).await,
        before,
        "PostgreSQL detected a deadlock"
    );

    // Every ack applied (the group's leases ended) and every push stored once, in commit order.
    for (partition, prefix) in [("A", "a"), ("B", "b")] {
        let rest = api
            .pop_partition("cc", partition, "consumerGroup=g&batch=1000&autoAck=true")
            .await
            .data();
        assert_eq!(rest.len(), TASKS, "{partition}: {rest:?}");
        let mut pushed: Vec<String> = rest
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(pushed.iter().all(|p| p.starts_with(prefix)));
        pushed.sort();
        pushed.dedup();
        assert_eq!(pushed.len(), TASKS);
    }
}
