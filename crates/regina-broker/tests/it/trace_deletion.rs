//! §3.11, §4.13: trace events are deleted with their message — message delete, queue clear,
//! queue delete, retention and eviction — and the names summary follows exactly, also while
//! events are recorded concurrently. A requeued delivery is the same message.

use regina_testkit::{eventually, TestBroker};
use reqwest::Method;
use serde_json::{json, Value};

use crate::ack::{ack1, item};
use crate::messages::{message_path, push};
use crate::support::{start, start_with, Api, Reply};
use crate::traces::{by_name, names, of_message, record, recorded};

async fn delete(api: &Api, path: &str) -> Reply {
    api.send(Method::DELETE, path, None, &[]).await
}

/// Events left without a stored row of their message, and summary rows that differ from the
/// events they sum up (both must be none).
async fn inconsistencies(b: &TestBroker) -> (i64, i64) {
    let db = b.db().await;
    let orphans: i64 = db
        .query_one(
            "select count(*) from regina.traces t
             where not exists (select 1 from regina.messages m
                               where m.partition_id = t.partition_id
                                 and m.transaction_id = t.transaction_id)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let drift: i64 = db
        .query_one(
            "with truth as (
                 select n.name, n.queue_id, count(*) as traces,
                        count(distinct (n.partition_id, n.transaction_id)) as messages
                 from regina.trace_names n group by n.name, n.queue_id)
             select count(*) from truth t
             full join regina.trace_name_stats s on s.name = t.name and s.queue_id = t.queue_id
             where t.traces is distinct from s.trace_count
                or t.messages is distinct from s.message_count",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    (orphans, drift)
}

/// Names of the listing with their (events, messages).
async fn counts(api: &Api) -> Vec<(String, i64, i64)> {
    let mut rows: Vec<(String, i64, i64)> = names(api, "limit=1000").await.body["trace_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["trace_name"].as_str().unwrap().to_owned(),
                r["trace_count"].as_i64().unwrap(),
                r["message_count"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn row(name: &str, events: i64, messages: i64) -> (String, i64, i64) {
    (name.to_owned(), events, messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_message_deletes_its_events_only() {
    let (b, api) = start().await;
    let m1 = push(&api, "q", "p", "m1", json!(1)).await;
    push(&api, "q", "p", "m2", json!(2)).await;
    let pid = &m1["partition_id"];
    for txn in ["m1", "m1", "m2"] {
        recorded(
            &api,
            pid,
            txn,
            json!({"data": txn, "traceNames": ["both", txn]}),
        )
        .await;
    }
    assert_eq!(
        counts(&api).await,
        [row("both", 3, 2), row("m1", 2, 1), row("m2", 1, 1)]
    );

    assert_eq!(delete(&api, &message_path(pid, "m1")).await.status, 200);
    assert!(of_message(&api, pid, "m1").await.is_empty());
    assert_eq!(of_message(&api, pid, "m2").await.len(), 1);
    assert_eq!(counts(&api).await, [row("both", 1, 1), row("m2", 1, 1)]);
    assert_eq!(by_name(&api, "m1", "").await.body["total"], 0);
    assert_eq!(inconsistencies(&b).await, (0, 0));
    // The transactionId is free again; a new message under it starts without events.
    push(&api, "q", "p", "m1", json!(3)).await;
    assert!(of_message(&api, pid, "m1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_or_deleting_a_queue_deletes_its_events() {
    let (b, api) = start().await;
    let mut partitions = Vec::new();
    for (queue, partition) in [("c", "p1"), ("c", "p2"), ("d", "p1"), ("keep", "p1")] {
        let m = push(&api, queue, partition, "m", json!(queue)).await;
        recorded(
            &api,
            &m["partition_id"],
            "m",
            json!({"data": 1, "traceNames": ["all", queue]}),
        )
        .await;
        partitions.push(m["partition_id"].clone());
    }
    assert_eq!(
        counts(&api).await,
        [
            row("all", 4, 4),
            row("c", 2, 2),
            row("d", 1, 1),
            row("keep", 1, 1)
        ]
    );

    let cleared = delete(&api, "/api/v1/queues/c/clear").await;
    assert_eq!(cleared.body["deletedMessages"], 2, "{cleared:?}");
    assert!(of_message(&api, &partitions[0], "m").await.is_empty());
    assert!(of_message(&api, &partitions[1], "m").await.is_empty());
    assert_eq!(
        counts(&api).await,
        [row("all", 2, 2), row("d", 1, 1), row("keep", 1, 1)]
    );
    // The cleared queue takes new messages and events as before.
    let again = push(&api, "c", "p1", "m", json!("again")).await;
    recorded(
        &api,
        &again["partition_id"],
        "m",
        json!({"data": 2, "traceNames": "c"}),
    )
    .await;

    let deleted = delete(&api, "/api/v1/resources/queues/d").await;
    assert_eq!(deleted.body["existed"], true, "{deleted:?}");
    assert!(of_message(&api, &partitions[2], "m").await.is_empty());
    assert_eq!(
        counts(&api).await,
        [row("all", 1, 1), row("c", 1, 1), row("keep", 1, 1)]
    );
    assert_eq!(
        by_name(&api, "all", "").await.body["traces"][0]["queue_name"],
        "keep"
    );
    assert_eq!(inconsistencies(&b).await, (0, 0));
}

/// Jobs every 50 ms.
fn fast_jobs(c: &mut regina_broker::Config) {
    c.retention_interval_ms = 50;
    c.eviction_interval_ms = 50;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_and_eviction_delete_events_with_their_messages() {
    let (b, api) = start_with(fast_jobs).await;
    api.configure("kept", json!({})).await;
    let kept = push(&api, "kept", "p", "k", json!(0)).await;
    recorded(
        &api,
        &kept["partition_id"],
        "k",
        json!({"data": 0, "traceNames": "n"}),
    )
    .await;
    // Configured before the messages arrive, so the first passes already take them.
    api.configure("old", json!({"retentionSeconds": 1})).await;
    api.configure("late", json!({"maxWaitTimeSeconds": 1}))
        .await;
    for (queue, txn) in [("old", "r1"), ("old", "r2"), ("late", "e1")] {
        let m = push(&api, queue, "p", txn, json!(txn)).await;
        recorded(
            &api,
            &m["partition_id"],
            txn,
            json!({"data": txn, "traceNames": ["n", queue]}),
        )
        .await;
    }
    assert_eq!(
        counts(&api).await,
        [row("late", 1, 1), row("n", 4, 4), row("old", 2, 2)]
    );

    eventually("only the kept event is left", || async {
        let left = counts(&api).await;
        if left == [row("n", 1, 1)] {
            Ok(())
        } else {
            Err(left)
        }
    })
    .await;
    assert_eq!(of_message(&api, &kept["partition_id"], "k").await.len(), 1);
    assert_eq!(inconsistencies(&b).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_delivery_is_the_same_message() {
    let (b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    let m = push(&api, "q", "p", "m1", json!({"n": 1})).await;
    let pid = &m["partition_id"];
    recorded(
        &api,
        pid,
        "m1",
        json!({"data": "before", "traceNames": "life"}),
    )
    .await;
    let popped = api.pop("q", "").await;
    let res = ack1(
        &api,
        item(
            &popped.messages()[0],
            "failed",
            Some(&popped.body["leaseId"]),
            None,
        ),
    )
    .await;
    assert_eq!(res["dlq"], true, "{res}");
    let requeued = api
        .post(&format!("{}/retry", message_path(pid, "m1")), &json!({}))
        .await;
    assert_eq!(requeued.status, 200, "{requeued:?}");
    recorded(
        &api,
        pid,
        "m1",
        json!({"data": "after", "traceNames": "life"}),
    )
    .await;

    let events = of_message(&api, pid, "m1").await;
    let data: Vec<&Value> = events.iter().map(|e| &e["data"]).collect();
    assert_eq!(data, [&json!("before"), &json!("after")]);
    assert_eq!(counts(&api).await, [row("life", 2, 1)], "one message");
    let listed = by_name(&api, "life", "").await;
    assert_eq!(listed.body["traces"][0]["message_payload"], json!({"n": 1}));

    assert_eq!(delete(&api, &message_path(pid, "m1")).await.status, 200);
    assert!(of_message(&api, pid, "m1").await.is_empty());
    assert!(counts(&api).await.is_empty());
    assert_eq!(inconsistencies(&b).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recordings_racing_deletions_leave_no_orphans_and_exact_counts() {
    let (b, api) = start().await;
    let mut messages = Vec::new();
    for i in 0..40 {
        let m = push(
            &api,
            if i % 2 == 0 { "even" } else { "odd" },
            &format!("p{}", i % 4),
            &format!("m{i}"),
            json!(i),
        )
        .await;
        messages.push((m["partition_id"].clone(), format!("m{i}")));
    }
    let recorders: Vec<_> = (0..4)
        .map(|worker| {
            let (api, messages) = (api.clone(), messages.clone());
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for round in 0..3 {
                    for (i, (pid, txn)) in messages.iter().enumerate() {
                        // Names in both orders, so concurrent events lock the summary rows of
                        // several names at once.
                        let names = if (i + worker) % 2 == 0 {
                            json!(["x", "y", txn])
                        } else {
                            json!(["y", "x"])
                        };
                        let r = record(
                            &api,
                            pid,
                            txn,
                            json!({"data": [worker, round], "traceNames": names}),
                        )
                        .await;
                        statuses.push(r.status);
                    }
                }
                statuses
            })
        })
        .collect();
    let deleter = {
        let (api, messages) = (api.clone(), messages.clone());
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            for (pid, txn) in messages.iter().step_by(3) {
                statuses.push(delete(&api, &message_path(pid, txn)).await.status);
            }
            statuses.push(delete(&api, "/api/v1/queues/odd/clear").await.status);
            statuses
        })
    };
    for recorder in recorders {
        for status in recorder.await.unwrap() {
            assert!(
                status == 201 || status == 404,
                "recording answered {status}"
            );
        }
    }
    for status in deleter.await.unwrap() {
        assert_eq!(status, 200, "deletions succeed");
    }
    assert_eq!(inconsistencies(&b).await, (0, 0));
    let odd = &messages[1];
    assert!(
        of_message(&api, &odd.0, &odd.1).await.is_empty(),
        "the cleared queue has no events"
    );
}
