//! §3.4, §4.3, §4.4: pop shapes, empty reasons, batches across partitions, autoAck, groups.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::support::{assert_iso, assert_uuid, assert_uuid_v7, start, start_with, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_answers_documented_shape() {
    let (_b, api) = start().await;
    let pushed = api
        .push(
            json!([{"queue": "shape", "partition": "c7", "payload": {"n": 9},
                      "transactionId": "o-9", "traceId": "tr-1"}]),
        )
        .await;
    let r = api.pop("shape", "").await;
    assert_eq!(r.status, 200, "{r:?}");
    let b = &r.body;
    assert_eq!(b["success"], true);
    assert_eq!(b["queue"], "shape");
    assert_eq!(b["partition"], "c7");
    assert_eq!(b["partitionId"], pushed.body[0]["partition_id"]);
    assert_uuid_v7(&b["leaseId"]);
    assert_eq!(b["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(b["partitionsClaimed"], 1);
    let m = &r.messages()[0];
    assert_eq!(m["id"], pushed.body[0]["message_id"]);
    assert_eq!(m["transactionId"], "o-9");
    assert_eq!(m["traceId"], "tr-1");
    assert_eq!(m["data"], json!({"n": 9}));
    assert_eq!(m["producerSub"], Value::Null);
    assert_iso(&m["createdAt"], 6);
    assert_eq!(m["partitionId"], b["partitionId"]);
    assert_eq!(m["partition"], "c7");
    assert_eq!(m["queue"], "shape");
    assert_eq!(m["leaseId"], b["leaseId"]);
    assert_eq!(m["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(m["retryCount"], 0);
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_pops_answer_204_with_their_reason() {
    let (_b, api) = start().await;
    api.pop("nowhere", "").await.assert_empty("queue_not_found");
    api.pop_partition("nowhere", "p", "")
        .await
        .assert_empty("queue_not_found");
    api.configure("conf", json!({})).await;
    api.pop("conf", "").await.assert_empty("empty");
    api.pop_partition("conf", "missing", "")
        .await
        .assert_empty("partition_not_found");
    api.push_one("conf", "p", json!(1)).await;
    let held = api.pop_partition("conf", "p", "").await;
    assert_eq!(held.status, 200);
    api.pop_partition("conf", "p", "")
        .await
        .assert_empty("lease_held");
    let other = api.pop_partition("conf", "p", "consumerGroup=other").await;
    assert_eq!(
        other.status, 200,
        "another group is not blocked by the lease: {other:?}"
    );
    api.ack_all(&held).await;
    api.pop_partition("conf", "p", "")
        .await
        .assert_empty("empty");
    api.pop("conf", "").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_empty_status_200_answers_the_body_form() {
    let (_b, api) = start_with(|c| c.pop_empty_status = 200).await;
    let r = api.pop("nowhere", "consumerGroup=g").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["success"], false);
    assert_eq!(r.body["queue"], "nowhere");
    assert_eq!(r.body["partitionId"], Value::Null);
    assert_eq!(r.body["leaseId"], Value::Null);
    assert_eq!(r.body["consumerGroup"], "g");
    assert_eq!(r.body["messages"], json!([]));
    assert_eq!(r.body["reason"], "queue_not_found");
    assert!(
        r.body.get("partition").is_some(),
        "partition member present: {r:?}"
    );
    api.configure("conf", json!({})).await;
    let r = api.pop("conf", "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["success"], true, "empty is a success: {r:?}");
    assert_eq!(r.body["reason"], "empty");
    assert_eq!(r.body["messages"], json!([]));
    assert_eq!(r.body["consumerGroup"], "__QUEUE_MODE__");
    let r = api.pop("conf", "wait=true&timeout=100").await;
    assert_eq!(
        (r.status, &r.body["reason"], &r.body["success"]),
        (200, &json!("timeout"), &json!(true))
    );
}

/// Splits a pop answer into runs of one partition; asserts each partition forms one run.
fn runs_by_partition(r: &Reply) -> Vec<(String, Vec<Value>)> {
    let mut runs: Vec<(String, Vec<Value>)> = vec![];
    for m in r.messages() {
        let p = m["partition"].as_str().unwrap().to_string();
        match runs.last_mut() {
            Some((last, data)) if *last == p => data.push(m["data"].clone()),
            _ => runs.push((p, vec![m["data"].clone()])),
        }
    }
    let distinct: HashSet<_> = runs.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        distinct.len(),
        runs.len(),
        "messages must be grouped by partition: {r:?}"
    );
    runs
}

async fn three_per_partition(api: &crate::support::Api, queue: &str, partitions: usize) {
    for p in 0..partitions {
        let payloads: Vec<Value> = (0..3).map(|i| json!({"p": p, "i": i})).collect();
        api.push_to(queue, &format!("p{p}"), &payloads).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_is_a_global_cap_across_claimed_partitions_sharing_one_lease() {
    let (_b, api) = start().await;
    three_per_partition(&api, "multi", 4).await;
    let r = api.pop("multi", "batch=5&partitions=4").await;
    let msgs = r.messages();
    assert_eq!(msgs.len(), 5, "batch caps the total: {r:?}");
    let runs = runs_by_partition(&r);
    assert_eq!(runs.len(), 2, "3 + 2 messages from two partitions");
    assert_eq!(r.body["partitionsClaimed"], 2);
    assert_eq!(
        r.body["partition"],
        runs[0].0.as_str(),
        "top level names the first partition"
    );
    for (_, data) in &runs {
        let idx: Vec<i64> = data.iter().map(|d| d["i"].as_i64().unwrap()).collect();
        assert_eq!(
            idx,
            (0..idx.len() as i64).collect::<Vec<_>>(),
            "partition order from the head"
        );
    }
    let lease = &r.body["leaseId"];
    assert!(
        msgs.iter().all(|m| m["leaseId"] == *lease),
        "one lease for every claimed partition"
    );
    let ids: HashSet<_> = msgs.iter().map(|m| m["partitionId"].clone()).collect();
    assert_eq!(ids.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_caps_the_number_of_claimed_partitions() {
    let (_b, api) = start().await;
    three_per_partition(&api, "multi", 4).await;
    let r = api.pop("multi", "batch=100&partitions=2").await;
    assert_eq!(r.messages().len(), 6, "{r:?}");
    assert_eq!(runs_by_partition(&r).len(), 2);
    assert_eq!(r.body["partitionsClaimed"], 2);
    let r = api.pop("multi", "batch=100").await;
    assert_eq!(r.messages().len(), 3, "partitions defaults to 1: {r:?}");
    assert_eq!(r.body["partitionsClaimed"], 1);
    let r = api.pop("multi", "batch=100&partitions=10").await;
    assert_eq!(
        r.messages().len(),
        3,
        "only one partition left unleased: {r:?}"
    );
    api.pop("multi", "batch=100&partitions=10")
        .await
        .assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_defaults_to_one_and_single_partition_route_ignores_partitions() {
    let (_b, api) = start().await;
    three_per_partition(&api, "multi", 2).await;
    let r = api.pop("multi", "").await;
    assert_eq!(r.messages().len(), 1, "{r:?}");
    let r = api
        .pop_partition("multi", "p1", "batch=100&partitions=5&consumerGroup=g")
        .await;
    assert_eq!(r.messages().len(), 3);
    assert!(r.messages().iter().all(|m| m["partition"] == "p1"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_partition_is_not_claimed_by_another_consumer_of_the_group() {
    let (_b, api) = start().await;
    three_per_partition(&api, "excl", 3).await;
    let mut seen = HashSet::new();
    for _ in 0..3 {
        let r = api.pop("excl", "batch=10").await;
        assert_eq!(r.messages().len(), 3, "{r:?}");
        assert!(
            seen.insert(r.body["partition"].clone()),
            "partition claimed twice: {r:?}"
        );
    }
    api.pop("excl", "batch=10").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_ack_delivers_at_most_once_without_a_lease() {
    let (_b, api) = start().await;
    api.push_to("aa", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    let r = api.pop("aa", "autoAck=true&batch=2").await;
    assert_eq!(r.data(), vec![json!(1), json!(2)]);
    assert_eq!(r.body["leaseId"], "");
    assert!(r.messages().iter().all(|m| m["leaseId"] == ""), "{r:?}");
    // No lease: the partition is claimable at once, and 1, 2 are never delivered again.
    let next = api.pop("aa", "batch=10").await;
    assert_eq!(next.data(), vec![json!(3)], "{next:?}");
    let m = &r.messages()[0];
    let ok = api
        .ack(json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"]}))
        .await;
    assert_eq!(
        ok.body[0]["success"], true,
        "a later completed ack is an idempotent success: {ok:?}"
    );
    let failed = api
        .ack(
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                    "status": "failed"}),
        )
        .await;
    assert_eq!(failed.body[0]["success"], false);
    assert_eq!(failed.body[0]["code"], "already_settled", "{failed:?}");
    api.ack_msg(&next.messages()[0], "retry").await;
    let again = api.pop("aa", "batch=10").await;
    assert_eq!(
        again.data(),
        vec![json!(3)],
        "only the leased message comes back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_group_receives_every_message_in_order() {
    let (_b, api) = start().await;
    for p in ["a", "b"] {
        let payloads: Vec<Value> = (0..10).map(|i| json!({"p": p, "i": i})).collect();
        api.push_to("fan", p, &payloads).await;
    }
    for group in ["g1", "g2", ""] {
        let mut got: Vec<Value> = vec![];
        loop {
            let r = api
                .pop(
                    "fan",
                    &format!("consumerGroup={group}&batch=3&partitions=2"),
                )
                .await;
            if r.status == 204 {
                break;
            }
            let expected = if group.is_empty() {
                "__QUEUE_MODE__"
            } else {
                group
            };
            assert_eq!(r.body["consumerGroup"], expected);
            assert!(r.messages().iter().all(|m| m["consumerGroup"] == expected));
            got.extend(r.data());
            api.ack_all(&r).await;
        }
        for p in ["a", "b"] {
            let seq: Vec<i64> = got
                .iter()
                .filter(|d| d["p"] == p)
                .map(|d| d["i"].as_i64().unwrap())
                .collect();
            assert_eq!(
                seq,
                (0..10).collect::<Vec<_>>(),
                "group {group:?} partition {p}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_do_not_block_each_other() {
    let (_b, api) = start().await;
    api.push_to("nb", "only", &[json!(1), json!(2)]).await;
    let g1 = api.pop("nb", "consumerGroup=g1").await;
    assert_eq!(g1.data(), vec![json!(1)]);
    let g2 = api.pop("nb", "consumerGroup=g2").await;
    assert_eq!(
        g2.data(),
        vec![json!(1)],
        "g1's lease does not block g2: {g2:?}"
    );
    let qm = api.pop_partition("nb", "only", "").await;
    assert_eq!(qm.data(), vec![json!(1)], "nor queue mode: {qm:?}");
    api.pop("nb", "consumerGroup=g1")
        .await
        .assert_empty("empty");
    api.ack_all(&g2).await;
    let g2 = api.pop("nb", "consumerGroup=g2").await;
    assert_eq!(g2.data(), vec![json!(2)], "g2's cursor is its own");
    let g1_again = api.pop_partition("nb", "only", "consumerGroup=g1").await;
    g1_again.assert_empty("lease_held");
    assert_uuid(&g1.body["leaseId"]);
}

/// Invariant 3: many consumers of one group released together by a barrier; each partition is
/// claimed by exactly one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_pops_claim_each_partition_at_most_once() {
    let (_b, api) = start().await;
    three_per_partition(&api, "race", 5).await;
    for group in ["", "named"] {
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(20));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let api = api.with_own_pool();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    api.pop("race", &format!("batch=10&consumerGroup={group}"))
                        .await
                })
            })
            .collect();
        let mut claimed = vec![];
        for t in tasks {
            let r = t.await.unwrap();
            match r.status {
                200 => {
                    assert_eq!(r.messages().len(), 3, "{r:?}");
                    claimed.push(r.body["partition"].as_str().unwrap().to_string());
                }
                _ => r.assert_empty("empty"),
            }
        }
        claimed.sort();
        assert_eq!(claimed, ["p0", "p1", "p2", "p3", "p4"], "group {group:?}");
    }
}

/// §4.3 (MUST): starvation-free — a partition with a waiting message is served within a bounded
/// number of pops even while another partition keeps receiving new messages. (Oldest-first is
/// only a SHOULD and is not asserted.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_partition_is_served_while_another_keeps_receiving() {
    let (_b, api) = start().await;
    let busy: Vec<Value> = (0..5).map(|i| json!(format!("busy-{i}"))).collect();
    api.push_to("fair", "busy", &busy).await;
    api.push_one("fair", "quiet", json!("quiet")).await;
    for i in 0..12 {
        api.push_one("fair", "busy", json!(format!("more-{i}")))
            .await;
        let r = api.pop("fair", "").await;
        api.ack_all(&r).await;
        if r.data() == vec![json!("quiet")] {
            return;
        }
    }
    panic!("the quiet partition was starved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_queue_mode_group_is_queue_mode() {
    let (_b, api) = start().await;
    api.push_to("qm", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("qm", "consumerGroup=__QUEUE_MODE__").await;
    assert_eq!(r.body["consumerGroup"], "__QUEUE_MODE__");
    api.ack_all(&r).await;
    assert_eq!(api.pop("qm", "").await.data(), vec![json!(2)], "one cursor");
}

/// Requests of one fused pop call that follow a request which found partitions busy for its
/// group (another transaction holds their cursors) pass those partitions by and say that work is
/// due; a request of another group in the same call still claims them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_passes_by_partitions_found_busy_for_that_group_only() {
    let (b, api) = start().await;
    let parts = ["p0", "p1", "p2", "p3"];
    for p in parts {
        api.push_one("busyq", p, json!(format!("{p}-first"))).await;
    }
    let db = b.db().await;
    let claim_all = json!([{"queue": "busyq", "consumerGroup": "a", "batch": 10,
                            "partitions": 10, "autoAck": true}])
    .to_string();
    db.query("select 1 from regina.pop($1::text::jsonb)", &[&claim_all])
        .await
        .unwrap();
    for p in parts {
        api.push_one("busyq", p, json!(format!("{p}-second"))).await;
    }
    // Another transaction holds group a's cursors of p0 and p1.
    let holder = b.db().await;
    holder
        .batch_execute(
            "begin; select 1 from regina.cursors c join regina.partitions p on p.id = c.partition_id
             where c.consumer_group = 'a' and p.name in ('p0', 'p1') for update of c",
        )
        .await
        .unwrap();
    let request = |group: &str| {
        json!({"queue": "busyq", "consumerGroup": group, "batch": 10, "partitions": 10,
               "autoAck": true, "quiet": true})
    };
    let call = json!([request("a"), request("a"), request("b")]).to_string();
    let rows = db
        .query(
            "select idx, result::text, quiet from regina.pop($1::text::jsonb) order by idx",
            &[&call],
        )
        .await
        .unwrap();
    let results: Vec<(Value, Option<String>)> = rows
        .iter()
        .map(|r| {
            let text: String = r.get(1);
            (serde_json::from_str(&text).unwrap(), r.get(2))
        })
        .collect();
    let data = |result: &Value| -> Vec<String> {
        let mut d: Vec<String> = result["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|x| x["data"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        d.sort();
        d
    };
    assert_eq!(
        data(&results[0].0),
        ["p2-second", "p3-second"],
        "{results:?}"
    );
    assert!(
        results[1].0["empty"].is_string(),
        "p0, p1 busy: {results:?}"
    );
    assert_eq!(
        results[1].1, None,
        "busy partitions hold due work: not quiet"
    );
    assert_eq!(
        data(&results[2].0),
        [
            "p0-first",
            "p0-second",
            "p1-first",
            "p1-second",
            "p2-first",
            "p2-second",
            "p3-first",
            "p3-second"
        ],
        "group b is not held back by a's busy partitions: {results:?}"
    );
    holder.batch_execute("rollback").await.unwrap();
    // Released: the next call claims them for a.
    let rows = db
        .query(
            "select result::text from regina.pop($1::text::jsonb)",
            &[&claim_all],
        )
        .await
        .unwrap();
    let next: Value = serde_json::from_str(&rows[0].get::<_, String>(0)).unwrap();
    assert_eq!(data(&next), ["p0-second", "p1-second"], "{next}");
}

/// How many database pop calls waited for company (`regina_batch_holds_total`).
async fn pop_holds(api: &crate::support::Api) -> f64 {
    crate::prometheus::scrape::Metrics::scrape(api)
        .await
        .value("regina_batch_holds_total", &[("op", "pop")])
}

/// `POP_HOLD_US`: one consumer that pops again only after each answer never finds company for
/// its pop calls, so they go out at once but for a few probes, each further apart than the last
/// (held on every call, each of its pops waited the hold out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_consumer_popping_one_at_a_time_waits_only_for_probes() {
    let (_b, api) = start().await;
    let payloads: Vec<Value> = (0..100).map(|n| json!({ "n": n })).collect();
    api.push_to("lone", "p", &payloads).await;
    let before = pop_holds(&api).await;
    for n in 0..100 {
        let r = api.pop("lone", "batch=1&autoAck=true").await;
        assert_eq!(r.data(), [json!({ "n": n })], "pop {n}: {r:?}");
    }
    let held = pop_holds(&api).await - before;
    // Lone requests that never found company: the 16th waits, then the 48th (twice as far).
    assert!(
        (1.0..=3.0).contains(&held),
        "{held} of 100 lone pop calls waited"
    );
}
