//! §3.4, §4.3: multi-queue pop by namespace/task — strict priority, rotation, global caps.

use std::collections::HashMap;

use serde_json::json;

use crate::support::{start, Api};

/// Configures queue `name` in namespace `ns` and task `task` at `priority`.
pub(crate) async fn queue(api: &Api, name: &str, ns: &str, task: &str, priority: i64) {
    let r = api
        .post("/api/v1/configure",
              &json!({"queue": name, "namespace": ns, "task": task, "options": {"priority": priority}}))
        .await;
    assert!(r.status == 200 || r.status == 201, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_pop_requires_namespace_or_task() {
    let (_b, api) = start().await;
    api.pop_selector("")
        .await
        .assert_error(400, "invalid_parameter");
    api.pop_selector("namespace=&task=")
        .await
        .assert_error(400, "invalid_parameter");
    api.pop_selector("batch=2")
        .await
        .assert_error(400, "invalid_parameter");
}

/// Three priorities, two partitions each; the lowest-priority queue holds the oldest messages.
async fn three_priorities(api: &Api) {
    queue(api, "lo", "ns", "work", 1).await;
    queue(api, "mid", "ns", "work", 5).await;
    queue(api, "hi", "ns", "work", 10).await;
    for q in ["lo", "mid", "hi"] {
        for p in ["p1", "p2"] {
            api.push_one(q, p, json!({"q": q, "p": p})).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_pop_claims_lower_priority_only_when_higher_has_nothing_eligible() {
    let (_b, api) = start().await;
    three_priorities(&api).await;
    let mut order = vec![];
    for _ in 0..6 {
        let r = api.pop_selector("namespace=ns").await;
        assert_eq!(r.status, 200, "{r:?}");
        let m = &r.messages()[0];
        assert_eq!(m["queue"], m["data"]["q"], "each message carries its queue");
        assert_eq!(r.body["queue"], m["queue"]);
        order.push(m["queue"].as_str().unwrap().to_string());
    }
    assert_eq!(
        order,
        ["hi", "hi", "mid", "mid", "lo", "lo"],
        "strict priority, highest first"
    );
    api.pop_selector("namespace=ns").await.assert_empty("empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn higher_priority_queue_that_becomes_eligible_again_is_served_first() {
    let (_b, api) = start().await;
    three_priorities(&api).await;
    let first = api.pop_selector("task=work").await;
    assert_eq!(first.body["queue"], "hi");
    let second = api.pop_selector("task=work").await;
    assert_eq!(second.body["queue"], "hi");
    // Releasing one of hi's leases makes hi eligible again: it beats mid and lo.
    let released = api.ack_msg(&first.messages()[0], "retry").await;
    assert_eq!(released["leaseReleased"], true, "{released}");
    let third = api.pop_selector("task=work").await;
    assert_eq!(third.body["queue"], "hi", "{third:?}");
    assert_eq!(third.messages()[0]["data"], first.messages()[0]["data"]);
    let fourth = api.pop_selector("task=work").await;
    assert_eq!(fourth.body["queue"], "mid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_batch_spans_queues_in_priority_order() {
    let (_b, api) = start().await;
    three_priorities(&api).await;
    let r = api
        .pop_selector("namespace=ns&task=work&batch=5&partitions=10")
        .await;
    let queues: Vec<String> = r
        .messages()
        .iter()
        .map(|m| m["queue"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        queues,
        ["hi", "hi", "mid", "mid", "lo"],
        "global batch cap, priority order: {r:?}"
    );
    assert_eq!(r.body["partitionsClaimed"], 5);
    let lease = &r.body["leaseId"];
    assert!(
        r.messages().iter().all(|m| m["leaseId"] == *lease),
        "one lease across queues"
    );
    let r = api.pop_selector("namespace=ns&batch=5&partitions=10").await;
    assert_eq!(r.messages().len(), 1, "one partition of lo is left: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_priority_queues_are_served_in_rotation() {
    let (_b, api) = start().await;
    for q in ["ra", "rb", "rc"] {
        queue(&api, q, "rot", "t", 3).await;
        let payloads: Vec<_> = (0..10).map(|i| json!(i)).collect();
        api.push_to(q, "Default", &payloads).await;
    }
    let mut served = vec![];
    for _ in 0..9 {
        let r = api.pop_selector("namespace=rot&autoAck=true").await;
        assert_eq!(r.status, 200, "{r:?}");
        served.push(r.body["queue"].as_str().unwrap().to_string());
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for q in &served {
        *counts.entry(q.as_str()).or_default() += 1;
    }
    assert_eq!(counts.len(), 3, "every equal queue is served: {served:?}");
    assert!(
        counts.values().all(|&c| c == 3),
        "served evenly: {served:?}"
    );
    assert!(
        served.windows(2).all(|w| w[0] != w[1]),
        "the starting queue rotates: {served:?}"
    );
    // Rotation is per selector and group: another group starts its own rotation.
    let r = api
        .pop_selector("namespace=rot&consumerGroup=other&autoAck=true")
        .await;
    assert_eq!(r.messages()[0]["data"], 0, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_task_select_matching_queues_only() {
    let (_b, api) = start().await;
    queue(&api, "q1", "n1", "t", 0).await;
    queue(&api, "q2", "n2", "t", 0).await;
    queue(&api, "q3", "n1", "u", 0).await;
    for q in ["q1", "q2", "q3"] {
        api.push_one(q, "Default", json!(q)).await;
    }
    let got = |r: crate::support::Reply| {
        let mut v: Vec<String> = r
            .data()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let q = "batch=10&partitions=10&consumerGroup";
    assert_eq!(
        got(api.pop_selector(&format!("task=t&{q}=a")).await),
        ["q1", "q2"]
    );
    assert_eq!(
        got(api.pop_selector(&format!("namespace=n1&{q}=b")).await),
        ["q1", "q3"]
    );
    assert_eq!(
        got(api
            .pop_selector(&format!("namespace=n1&task=u&{q}=c"))
            .await),
        ["q3"]
    );
    assert_eq!(
        api.pop_selector(&format!("namespace=n9&{q}=d"))
            .await
            .status,
        204
    );
    let none = api
        .pop_selector(&format!("namespace=n2&task=u&{q}=e"))
        .await;
    assert_eq!(none.status, 204, "no queue matches both: {none:?}");
}
