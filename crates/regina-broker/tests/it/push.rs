//! §3.3, §4.11: push entries, dedup (in-request, across requests, racing), validation.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::support::{assert_uuid, assert_uuid_v7, start, Api};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_answers_one_entry_per_item_in_input_order() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([
            {"queue": "orders", "partition": "c7", "payload": {"n": 1}, "transactionId": "o-1"},
            {"queue": "orders", "partition": "c7", "payload": {"n": 1}, "transactionId": "o-1"},
            {"queue": "orders", "payload": 2},
            {"queue": "other", "payload": 3, "traceId": "trace-not-a-uuid"},
        ]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let e = r.body.as_array().expect("array");
    assert_eq!(e.len(), 4);
    for (i, entry) in e.iter().enumerate() {
        assert_eq!(entry["index"], i);
    }
    assert_eq!(e[0]["transaction_id"], "o-1");
    assert_eq!(e[0]["status"], "queued");
    assert_uuid_v7(&e[0]["message_id"]);
    assert_uuid(&e[0]["partition_id"]);
    assert_eq!(e[0]["trace_id"], Value::Null);
    assert_eq!(e[0]["queueName"], "orders");
    assert_eq!(
        e[1]["status"], "duplicate",
        "same key earlier in the request"
    );
    assert_eq!(e[1]["message_id"], e[0]["message_id"]);
    assert_eq!(e[1]["partition_id"], e[0]["partition_id"]);
    assert_eq!(e[1]["transaction_id"], "o-1");
    assert_eq!(e[2]["status"], "queued");
    assert_uuid_v7(&e[2]["transaction_id"]);
    assert_ne!(
        e[2]["partition_id"], e[0]["partition_id"],
        "Default is another partition"
    );
    assert_eq!(e[3]["queueName"], "other");
    assert_eq!(e[3]["trace_id"], "trace-not-a-uuid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_items_answers_201_with_an_empty_array() {
    let (_b, api) = start().await;
    let r = api.push(json!([])).await;
    assert_eq!(r.status, 201, "{r:?}");
    assert_eq!(r.body, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_must_be_an_array() {
    let (_b, api) = start().await;
    for body in [
        json!({}),
        json!({"items": null}),
        json!({"items": {"queue": "q"}}),
        json!({"items": "x"}),
    ] {
        api.post("/api/v1/push", &body)
            .await
            .assert_error(400, "validation_failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invalid_item_rejects_the_whole_request_naming_index_and_field() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([
            {"queue": "all-or-nothing", "payload": 1},
            {"queue": "all-or-nothing", "payload": 2},
            {"queue": "all-or-nothing", "traceId": "t".repeat(129)},
        ]))
        .await;
    r.assert_error(400, "validation_failed");
    assert_eq!(r.body["index"], 2);
    assert_eq!(r.body["field"], "items[2].traceId");
    let r = api
        .push(json!([{"queue": "all-or-nothing"}, {"payload": 1}]))
        .await;
    r.assert_error(400, "validation_failed");
    assert_eq!(r.body["index"], 1);
    assert_eq!(r.body["field"], "items[1].queue");
    api.pop("all-or-nothing", "batch=10")
        .await
        .assert_empty("queue_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_across_requests_returns_the_stored_id_and_keeps_the_stored_payload() {
    let (_b, api) = start().await;
    let first = api
        .push(json!([{"queue": "d", "transactionId": "k", "payload": "original"}]))
        .await;
    let second = api
        .push(json!([{"queue": "d", "transactionId": "k", "payload": "changed"}]))
        .await;
    assert_eq!(second.status, 201, "{second:?}");
    let e = &second.body[0];
    assert_eq!(e["status"], "duplicate");
    assert_eq!(e["message_id"], first.body[0]["message_id"]);
    assert_eq!(e["partition_id"], first.body[0]["partition_id"]);
    assert_eq!(e["queueName"], "d");
    let pop = api.pop("d", "batch=10").await;
    assert_eq!(
        pop.data(),
        vec![json!("original")],
        "one stored message, unchanged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_transaction_id_in_another_partition_or_queue_is_a_new_message() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([
            {"queue": "d", "partition": "p1", "transactionId": "same", "payload": 1},
            {"queue": "d", "partition": "p2", "transactionId": "same", "payload": 2},
            {"queue": "e", "partition": "p1", "transactionId": "same", "payload": 3},
        ]))
        .await;
    let e = r.body.as_array().expect("array");
    assert!(e.iter().all(|x| x["status"] == "queued"), "{e:?}");
    let ids: std::collections::HashSet<_> = e.iter().map(|x| x["message_id"].clone()).collect();
    assert_eq!(ids.len(), 3);
}

/// §4.11: racing pushes of one key yield exactly one `queued`; the others are `duplicate` with the
/// winner's id. Many connections released together by a barrier, several rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_duplicate_pushes_store_exactly_one_message() {
    let (_b, api) = start().await;
    const RACERS: usize = 24;
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(RACERS));
        let tasks: Vec<_> = (0..RACERS)
            .map(|i| {
                let api = api.with_own_pool();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    let item = json!([{"queue": "race", "partition": "p", "transactionId":
                                       format!("key-{round}"), "payload": {"racer": i}}]);
                    barrier.wait().await;
                    api.push(item).await
                })
            })
            .collect();
        let mut queued = vec![];
        let mut duplicates = vec![];
        for t in tasks {
            let r = t.await.expect("task");
            assert_eq!(r.status, 201, "{r:?}");
            match r.body[0]["status"].as_str() {
                Some("queued") => queued.push(r.body[0]["message_id"].clone()),
                Some("duplicate") => duplicates.push(r.body[0]["message_id"].clone()),
                other => panic!("unexpected status {other:?}: {r:?}"),
            }
        }
        assert_eq!(
            queued.len(),
            1,
            "round {round}: exactly one winner, got {queued:?}"
        );
        assert!(
            duplicates.iter().all(|d| *d == queued[0]),
            "duplicates carry the winner's id"
        );
    }
    let pop = api.pop("race", &format!("batch={}", ROUNDS * RACERS)).await;
    assert_eq!(
        pop.messages().len(),
        ROUNDS,
        "one stored message per key: {pop:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_ids_are_uuidv7_and_time_ordered() {
    let (_b, api) = start().await;
    let mut last: Option<uuid::Uuid> = None;
    for i in 0..20 {
        let e = api.push_one("ids", "Default", json!(i)).await;
        let id = assert_uuid_v7(&e["message_id"]);
        assert_uuid_v7(&e["transaction_id"]);
        if let Some(prev) = last {
            assert!(id > prev, "message ids of later pushes sort later");
        }
        last = Some(id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_optional_strings_mean_absent() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([{"queue": "opt", "partition": "", "transactionId": "", "traceId": "", "payload": 1},
                     {"queue": "opt", "partition": null, "transactionId": null, "traceId": null}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    for e in r.body.as_array().unwrap() {
        assert_eq!(
            e["status"], "queued",
            "generated transaction ids differ: {e}"
        );
        assert_uuid_v7(&e["transaction_id"]);
        assert_eq!(e["trace_id"], Value::Null);
    }
    let pop = api.pop_partition("opt", "Default", "batch=10").await;
    assert_eq!(
        pop.data(),
        vec![json!(1), Value::Null],
        "both went to Default, absent payload is null"
    );
    assert!(pop.messages().iter().all(|m| m["traceId"].is_null()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_of_any_json_type_come_back_equal_in_item_order() {
    let (_b, api) = start().await;
    let payloads = vec![
        json!({"nested": {"a": [1, 2, {"b": null}]}, "unicode": "ünï ✓"}),
        json!([1, "two", 3.5, false]),
        json!("just a string"),
        json!(42),
        json!(-0.125),
        json!(true),
        Value::Null,
        json!({}),
    ];
    api.push_to("types", "Default", &payloads).await;
    let pop = api.pop("types", "batch=100").await;
    assert_eq!(pop.data(), payloads);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_sent_producer_sub_is_ignored_without_auth() {
    let (_b, api) = start().await;
    api.push(json!([{"queue": "ps", "payload": 1, "producerSub": "mallory"}]))
        .await;
    let pop = api.pop("ps", "").await;
    assert_eq!(pop.messages()[0]["producerSub"], Value::Null, "{pop:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_creates_queues_and_partitions_on_the_fly() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([{"queue": "fly", "partition": "a", "payload": 1},
                     {"queue": "fly", "partition": "b", "payload": 2},
                     {"queue": "fly", "partition": "a", "payload": 3}]))
        .await;
    let e = r.body.as_array().unwrap();
    assert_eq!(e[0]["partition_id"], e[2]["partition_id"]);
    assert_ne!(e[0]["partition_id"], e[1]["partition_id"]);
    let a = api.pop_partition("fly", "a", "batch=10").await;
    assert_eq!(a.data(), vec![json!(1), json!(3)]);
    assert_eq!(a.body["partitionId"], e[0]["partition_id"]);
    let b = api.pop_partition("fly", "b", "batch=10").await;
    assert_eq!(b.data(), vec![json!(2)]);
}

/// §4.2: items of one request in one partition share `createdAt`; it never decreases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_at_is_shared_within_a_request_and_never_decreases() {
    let (_b, api) = start().await;
    api.push_to("ts", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("ts", "Default", &[json!(4)]).await;
    let m = api.pop("ts", "batch=10").await.messages();
    let at: Vec<time::OffsetDateTime> = m
        .iter()
        .map(|m| crate::support::ts(&m["createdAt"]))
        .collect();
    assert_eq!((at[0], at[1]), (at[1], at[2]), "one request, one createdAt");
    assert!(at[3] >= at[2], "createdAt never decreases along offsets");
}

/// §5.5, §3.3: requests are isolated — a request the database could not store as-is (NUL
/// characters) never fails the requests fused with it; if it is rejected, it names the item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_nul_characters_never_fails_its_neighbours() {
    let (_b, api) = start().await;
    let bad = [
        r#"{"items":[{"queue":"iso","payload":"a\u0000b"}]}"#,
        r#"{"items":[{"queue":"iso","transactionId":"a\u0000b"}]}"#,
        r#"{"items":[{"queue":"iso","traceId":"a\u0000b"}]}"#,
        r#"{"items":[{"queue":"iso","payload":{"k\u0000":1}}]}"#,
    ];
    for body in bad {
        let barrier = Arc::new(Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let api = api.with_own_pool();
                let barrier = barrier.clone();
                let body = if i == 7 {
                    body.to_string()
                } else {
                    format!(r#"{{"items":[{{"queue":"iso","payload":{i}}}]}}"#)
                };
                tokio::spawn(async move {
                    barrier.wait().await;
                    api.post_raw("/api/v1/push", body.as_bytes()).await
                })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            let r = t.await.unwrap();
            if i != 7 {
                assert_eq!(r.status, 201, "neighbour of {body} failed: {r:?}");
            } else if r.status != 201 {
                r.assert_error(400, "validation_failed");
                assert_eq!(r.body["index"], 0, "a rejected item is named: {r:?}");
                assert!(
                    r.body["field"].is_string(),
                    "a rejected item is named: {r:?}"
                );
            }
        }
    }
}

/// §6: payloads are any JSON value and come back equal — strings with U+0000 included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_strings_with_nul_characters_round_trip() {
    let (_b, api) = start().await;
    let r = api.post_raw(
        "/api/v1/push",
        br#"{"items":[{"queue":"nul","payload":{"s":"a\u0000b"}}]}"#,
    );
    let r = r.await;
    assert_eq!(r.status, 201, "{r:?}");
    let pop = api.pop("nul", "").await;
    assert_eq!(pop.data(), vec![json!({"s": "a\u{0}b"})]);
}

/// `BATCH_ITEMS_MAX` caps how many items one database call carries: concurrent pushes are split
/// over several calls (a request that does not fit opens the next one, none is dropped), and a
/// single request above the cap still goes, alone. Per-partition order holds throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_split_over_calls_by_item_cap_lose_nothing_and_keep_order() {
    let (_b, api) = crate::support::start_with(|c| c.batch_items_max = 5).await;
    let barrier = Arc::new(Barrier::new(21));
    let tasks: Vec<_> = (0..21)
        .map(|i| {
            let api = api.with_own_pool();
            let barrier = barrier.clone();
            // Twenty requests of 3 items (at most one fits beside another under the cap) and
            // one of 40, each to its own partition, sequence numbers in the payload.
            let n = if i == 20 { 40 } else { 3 };
            let items: Vec<Value> = (0..n)
                .map(|s| json!({"queue": "capped", "partition": format!("p{i}"), "payload": {"s": s}}))
                .collect();
            tokio::spawn(async move {
                barrier.wait().await;
                api.push(Value::Array(items)).await
            })
        })
        .collect();
    for task in tasks {
        let r = task.await.expect("task");
        assert_eq!(r.status, 201, "{r:?}");
        assert!(r
            .body
            .as_array()
            .expect("array")
            .iter()
            .all(|e| e["status"] == "queued"));
    }
    for i in 0..21 {
        let seqs = drain_sequence(&api, "capped", &format!("p{i}")).await;
        let expected: Vec<i64> = (0..if i == 20 { 40 } else { 3 }).collect();
        assert_eq!(seqs, expected, "partition p{i}");
    }
}

/// A request with items in several push lanes (`DB_CALLS_PUSH`, from `PUSH_SPLIT_ITEMS_MIN`
/// items) is stored in parts: its answer still has one entry per item in input order, with its
/// own duplicates, and each partition's items keep their order and consecutive offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_split_over_push_lanes_answers_in_item_order() {
    let (_b, api) = crate::support::start_with(|c| {
        c.db_calls_push = 4;
        c.push_split_items_min = 2;
    })
    .await;
    // 120 items over 30 partitions, interleaved, with a repeated key in partition p3.
    let mut items: Vec<Value> = (0..120)
        .map(|s| {
            json!({"queue": "lanes", "partition": format!("p{}", s % 30), "payload": {"s": s},
                   "transactionId": format!("t{s}")})
        })
        .collect();
    items.push(
        json!({"queue": "lanes", "partition": "p3", "payload": {"s": -1},
                      "transactionId": "t3"}),
    );
    let r = api.push(Value::Array(items)).await;
    assert_eq!(r.status, 201, "{r:?}");
    let entries = r.body.as_array().expect("array");
    assert_eq!(entries.len(), 121);
    for (i, entry) in entries.iter().enumerate().take(120) {
        assert_eq!(entry["index"], i);
        assert_eq!(entry["transaction_id"], format!("t{i}"));
        assert_eq!(entry["status"], "queued", "{entry}");
    }
    assert_eq!(entries[120]["status"], "duplicate");
    assert_eq!(entries[120]["message_id"], entries[3]["message_id"]);
    for p in 0..30 {
        let seqs = drain_sequence(&api, "lanes", &format!("p{p}")).await;
        let expected: Vec<i64> = (0..4).map(|k| p + 30 * k).collect();
        assert_eq!(seqs, expected, "partition p{p}");
    }
    let db = _b.db().await;
    let gaps: i64 = db
        .query_one(
            "select count(*) from (select m.seq - lag(m.seq) over (partition by m.partition_id order by m.seq) as d
             from regina.messages m) x where x.d <> 1",
            &[],
        )
        .await
        .expect("offsets")
        .get(0);
    assert_eq!(gaps, 0, "consecutive offsets in every partition");
}

/// The `s` members of the payloads of one autoAck pop of up to 100 messages of `partition`, in
/// delivery order.
async fn drain_sequence(api: &Api, queue: &str, partition: &str) -> Vec<i64> {
    let r = api
        .get(&format!(
            "/api/v1/pop/queue/{queue}/partition/{partition}?batch=100&autoAck=true"
        ))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    r.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["data"]["s"].as_i64().expect("s"))
        .collect()
}

/// Push lanes that always wait for each other (`PUSH_PARALLEL_ITEMS_MIN` above anything waiting:
/// one lane's call at a time) still answer every request of many concurrent producers, none
/// passed over, and each partition keeps its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_lanes_that_take_turns_answer_every_producer_in_order() {
    let (_b, api) = crate::support::start_with(|c| {
        c.db_calls_push = 4;
        c.push_parallel_items_min = 100_000;
    })
    .await;
    let barrier = Arc::new(Barrier::new(40));
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let api = api.with_own_pool();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                for s in 0..10 {
                    let r = api
                        .push(json!([{"queue": "turns", "partition": format!("p{i}"),
                                      "payload": {"s": s}}]))
                        .await;
                    assert_eq!(r.status, 201, "{r:?}");
                    assert_eq!(r.body[0]["status"], "queued", "{r:?}");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("producer");
    }
    for i in 0..40 {
        let seqs = drain_sequence(&api, "turns", &format!("p{i}")).await;
        assert_eq!(seqs, (0..10).collect::<Vec<i64>>(), "partition p{i}");
    }
}
