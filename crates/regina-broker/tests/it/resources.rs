//! §3.8, §4.16: queue, partition, namespace and task listings, one queue's detail with its
//! counts, queue delete and queue clear.

use reqwest::Method;
use serde_json::{json, Value};

use crate::ack::{ack1, assert_fail, item};
use crate::stats_support::{minute, queue_metrics};
use crate::support::{assert_iso, enc, start, Api, Reply};

pub async fn delete(api: &Api, path: &str) -> Reply {
    api.send(Method::DELETE, path, None, &[]).await
}

async fn detail(api: &Api, queue: &str, query: &str) -> Reply {
    api.get(&format!("/api/v1/resources/queues/{}?{query}", enc(queue)))
        .await
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|e| e["name"].as_str().expect("name").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_listing_filters_orders_pages_and_counts() {
    let (_b, api) = start().await;
    for q in ["ops.alerts", "billing.refunds", "billing.invoices"] {
        api.configure(q, json!({"priority": 3})).await;
    }
    api.push_to("billing.invoices", "a", &[json!(1), json!(2)])
        .await;
    api.push_to("billing.invoices", "b", &[json!(3)]).await;
    let leased = api.pop("billing.invoices", "batch=1").await;
    assert_eq!(leased.status, 200, "{leased:?}");

    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let r = api.get("/api/v1/resources/queues").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        names(&r.body["queues"]),
        ["billing.invoices", "billing.refunds", "ops.alerts"]
    );
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 1000, "offset": 0, "total": 3})
    );
    let q = &r.body["queues"][0];
    assert_eq!(
        (
            &q["namespace"],
            &q["task"],
            &q["priority"],
            &q["partitions"]
        ),
        (&json!("billing"), &json!("invoices"), &json!(3), &json!(3))
    );
    crate::support::assert_uuid(&q["id"]);
    assert_iso(&q["createdAt"], 3);
    assert_eq!(
        q["messages"],
        json!({"total": 3, "pending": 2, "processing": 1})
    );
    assert_eq!(
        r.body["queues"][1]["messages"],
        json!({"total": 0, "pending": 0, "processing": 0})
    );

    for (query, expected) in [
        (
            "namespace=billing",
            vec!["billing.invoices", "billing.refunds"],
        ),
        ("task=refunds", vec!["billing.refunds"]),
        ("search=INV", vec!["billing.invoices"]),
        ("search=s.", vec!["ops.alerts"]),
        ("namespace=none", vec![]),
    ] {
        let r = api.get(&format!("/api/v1/resources/queues?{query}")).await;
        assert_eq!(names(&r.body["queues"]), expected, "{query}");
        assert_eq!(r.body["pagination"]["total"], expected.len(), "{query}");
    }
    let page = api.get("/api/v1/resources/queues?limit=1&offset=1").await;
    assert_eq!(names(&page.body["queues"]), ["billing.refunds"]);
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 1, "offset": 1, "total": 3})
    );
    for bad in ["limit=0", "limit=10001", "offset=-1", "limit=x"] {
        api.get(&format!("/api/v1/resources/queues?{bad}"))
            .await
            .assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_detail_reports_options_partitions_and_six_counts() {
    let (_b, api) = start().await;
    let configured = api
        .configure("q", json!({"retryLimit": 0, "leaseTime": 120, "ttl": 3600}))
        .await;
    api.push_to("q", "a", &[json!(1), json!(2), json!(3)]).await;
    api.push_to("q", "b", &[json!(4), json!(5)]).await;
    api.push_to("q", "c", &[json!(6)]).await;
    // a: one completed, one inside a lease, one pending. b: one dead-lettered (retryLimit 0),
    // one pending. c: untouched. Default is empty.
    let r = api.pop_partition("q", "a", "batch=1&autoAck=true").await;
    assert_eq!(r.data(), vec![json!(1)]);
    assert_eq!(
        api.pop_partition("q", "a", "batch=1").await.data(),
        vec![json!(2)]
    );
    let r = api.pop_partition("q", "b", "batch=1").await;
    let res = ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    assert_eq!(res["dlq"], true, "{res}");

    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let d = detail(&api, "q", "").await;
    assert_eq!(d.status, 200, "{d:?}");
    assert_eq!(d.body["name"], "q");
    assert_eq!(d.body["id"], configured.body["queueId"]);
    assert_eq!(d.body["options"], configured.body["options"]);
    assert_eq!(d.body["partitionCount"], 4);
    assert_eq!(names(&d.body["partitions"]), ["Default", "a", "b", "c"]);
    let stats = |i: usize| d.body["partitions"][i]["stats"].clone();
    assert_eq!(
        stats(1),
        json!({"total": 3, "pending": 1, "processing": 1, "completed": 1, "failed": 0, "deadLetter": 0})
    );
    assert_eq!(
        stats(2),
        json!({"total": 2, "pending": 1, "processing": 0, "completed": 1, "failed": 0, "deadLetter": 1})
    );
    assert_eq!(
        d.body["totals"],
        json!({"total": 6, "pending": 3, "processing": 1, "completed": 2, "failed": 0, "deadLetter": 1})
    );
    let a = &d.body["partitions"][1];
    assert_iso(&a["oldestMessage"], 6);
    assert_iso(&a["lastActivity"], 3);
    assert_eq!(d.body["partitions"][0]["oldestMessage"], Value::Null);
    assert_eq!(d.body["partitions"][0]["newestMessage"], Value::Null);

    // The partition list is paged; the totals are not.
    let page = detail(&api, "q", "limit=2&offset=1").await;
    assert_eq!(names(&page.body["partitions"]), ["a", "b"]);
    assert_eq!(page.body["partitionCount"], 4);
    assert_eq!(page.body["totals"], d.body["totals"]);

    let missing = detail(&api, "nope", "").await;
    missing.assert_error(404, "queue_not_found");
    assert_eq!(
        missing.body,
        json!({"error": "Queue not found", "code": "queue_not_found"})
    );
    detail(&api, "q", "limit=10001")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_counts_its_head_once_per_group() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 5})).await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    for group in ["", "consumerGroup=g"] {
        let r = api.pop("q", group).await;
        ack1(
            &api,
            item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
        )
        .await;
    }
    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let d = detail(&api, "q", "").await;
    assert_eq!(
        d.body["totals"],
        json!({"total": 2, "pending": 2, "processing": 0, "completed": 0, "failed": 2, "deadLetter": 0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_listing_filters_orders_and_counts_groups_and_leases() {
    let (_b, api) = start().await;
    api.push_to("zeta", "p1", &[json!(1)]).await;
    api.push_to("alpha", "p2", &[json!(1), json!(2)]).await;
    api.push_to("alpha", "p1", &[json!(1)]).await;
    api.pop_partition("alpha", "p2", "batch=1").await;
    api.pop_partition("alpha", "p2", "consumerGroup=g&autoAck=true")
        .await;

    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let r = api.get("/api/v1/resources/partitions").await;
    assert_eq!(r.status, 200, "{r:?}");
    let rows: Vec<(String, String)> = r.body["partitions"]
        .as_array()
        .expect("array")
        .iter()
        .map(|p| {
            (
                p["queue"].as_str().expect("queue").to_owned(),
                p["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("alpha", "p1"), ("alpha", "p2"), ("zeta", "p1")]
            .map(|(q, p)| (q.to_owned(), p.to_owned()))
    );
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 100, "offset": 0, "total": 3})
    );
    let p2 = &r.body["partitions"][1];
    assert_eq!(p2["messages"], json!({"total": 2, "pending": 1}));
    assert_eq!(
        (&p2["consumerGroups"], &p2["leasedBy"]),
        (&json!(2), &json!(1))
    );
    crate::support::assert_uuid(&p2["queueId"]);
    assert_iso(&p2["createdAt"], 3);
    assert_iso(&p2["lastActivity"], 3);

    let filtered = api
        .get("/api/v1/resources/partitions?queue=alpha&search=2")
        .await;
    assert_eq!(names(&filtered.body["partitions"]), ["p2"]);
    let page = api
        .get("/api/v1/resources/partitions?limit=1&offset=2")
        .await;
    assert_eq!(page.body["partitions"][0]["queue"], "zeta");
    assert_eq!(page.body["pagination"]["total"], 3);
    api.get("/api/v1/resources/partitions?limit=10001")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_and_tasks_group_queues_with_empty_labels_under_empty_strings() {
    let (_b, api) = start().await;
    api.push_to("shop.orders", "a", &[json!(1), json!(2)]).await;
    api.push_to("shop.orders", "b", &[json!(3)]).await;
    api.push_to("shop.carts", "Default", &[json!(1)]).await;
    api.push_to("plain", "Default", &[json!(1)]).await;
    api.pop("shop.orders", "batch=2&autoAck=true").await;

    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let n = api.get("/api/v1/resources/namespaces").await;
    assert_eq!(n.status, 200, "{n:?}");
    assert_eq!(
        n.body,
        json!({"namespaces": [
            {"namespace": "plain", "queues": 1, "partitions": 1, "messages": {"total": 1, "pending": 1}},
            {"namespace": "shop", "queues": 2, "partitions": 3, "messages": {"total": 4, "pending": 2}}]})
    );
    let t = api.get("/api/v1/resources/tasks").await;
    assert_eq!(
        t.body,
        json!({"tasks": [
            {"task": "", "queues": 1, "partitions": 1, "messages": {"total": 1, "pending": 1}},
            {"task": "carts", "queues": 1, "partitions": 1, "messages": {"total": 1, "pending": 1}},
            {"task": "orders", "queues": 1, "partitions": 2, "messages": {"total": 3, "pending": 1}}]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_delete_removes_everything_ends_leases_and_is_idempotent() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    api.push_to("q", "p", &[json!(1), json!(2), json!(3)]).await;
    let leased = api.pop("q", "batch=1").await;
    let dead = api.pop("q", "consumerGroup=g&batch=1").await;
    ack1(
        &api,
        item(
            &dead.messages()[0],
            "failed",
            Some(&dead.body["leaseId"]),
            None,
        ),
    )
    .await;
    assert_eq!(api.dlq("queue=q").await.body["total"], 1);

    let r = delete(&api, "/api/v1/resources/queues/q").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body,
        json!({"deleted": true, "queue": "q", "existed": true})
    );
    api.pop("q", "").await.assert_empty("queue_not_found");
    api.pop("q", "consumerGroup=g")
        .await
        .assert_empty("queue_not_found");
    detail(&api, "q", "")
        .await
        .assert_error(404, "queue_not_found");
    assert_eq!(
        api.dlq("").await.body["total"],
        0,
        "dead letters went with it"
    );
    assert_eq!(
        api.get("/api/v1/resources/partitions").await.body["pagination"]["total"],
        0
    );
    let m = &leased.messages()[0];
    assert_fail(
        &ack1(
            &api,
            item(m, "completed", Some(&leased.body["leaseId"]), None),
        )
        .await,
        "lease_expired",
    );

    let again = delete(&api, "/api/v1/resources/queues/q").await;
    assert_eq!(
        again.body,
        json!({"deleted": true, "queue": "q", "existed": false})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pop_parked_on_a_deleted_queue_keeps_waiting_and_gets_a_later_push() {
    let (_b, api) = start().await;
    api.push_to("q", "Default", &[json!("old")]).await;
    api.pop("q", "autoAck=true").await;
    let waiter = {
        let api = api.clone();
        let query = format!(
            "wait=true&timeout={}",
            regina_testkit::PARKED_POP_TIMEOUT_MS
        );
        tokio::spawn(async move { api.pop("q", &query).await })
    };
    api.wait_for_waiters(1).await;
    let r = delete(&api, "/api/v1/resources/queues/q").await;
    assert_eq!(r.body["existed"], true);
    api.push_to("q", "Default", &[json!("new")]).await;
    let got = waiter.await.expect("waiter");
    assert_eq!(got.data(), vec![json!("new")], "{got:?}");
}

/// A pop that read the queue just before a deletion committed subscribes a new group to a queue
/// that is gone: it answers as for a queue not found (it once failed on the subscription's
/// foreign key with a 500). The deletion is held open on a direct connection until the pop is
/// seen waiting for the queue row, so the interleaving is certain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pop_subscribing_while_its_queue_is_deleted_answers_queue_not_found() {
    let (b, api) = start().await;
    api.push_to("q", "Default", &[json!("old")]).await;
    let db = b.db().await;
    db.batch_execute("begin; select regina.queue_delete('q')")
        .await
        .expect("deletion held open");
    let pop = {
        let api = api.clone();
        tokio::spawn(async move { api.pop("q", "consumerGroup=fresh").await })
    };
    let watcher = b.db().await;
    regina_testkit::wait_until("the pop waits for the queue row", || async {
        let row = watcher
            .query_one(
                "select count(*) from pg_stat_activity \
                 where wait_event_type = 'Lock' and query like '%regina.pop_text(%'",
                &[],
            )
            .await
            .expect("pg_stat_activity");
        row.get::<_, i64>(0) > 0
    })
    .await;
    db.batch_execute("commit")
        .await
        .expect("deletion committed");
    pop.await.expect("pop").assert_empty("queue_not_found");
    api.push_to("q", "Default", &[json!("new")]).await;
    assert_eq!(
        api.pop("q", "consumerGroup=fresh").await.data(),
        vec![json!("new")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_clear_empties_the_queue_and_keeps_its_configuration_and_groups() {
    let (_b, api) = start().await;
    let configured = api
        .configure("q", json!({"retryLimit": 0, "leaseTime": 90}))
        .await;
    api.push_to("q", "p", &[json!(1), json!(2), json!(3)]).await;
    api.push_to("q", "r", &[json!(4)]).await;
    let leased = api.pop_partition("q", "p", "batch=2").await;
    let late = api
        .pop("q", "consumerGroup=late&subscriptionMode=new&batch=1")
        .await;
    assert_eq!(late.status, 204, "late subscribes from now: {late:?}");
    api.refresh_stats().await;
    assert_eq!(detail(&api, "q", "").await.body["totals"]["total"], 4);

    let r = delete(&api, "/api/v1/queues/q/clear").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body,
        json!({"success": true, "cleared": true, "queue": "q", "deletedMessages": 4, "deletedDlq": 0})
    );
    api.pop("q", "batch=10").await.assert_empty("empty");
    api.pop_partition("q", "p", "").await.assert_empty("empty");
    for m in leased.messages() {
        assert_fail(
            &ack1(
                &api,
                item(&m, "completed", Some(&leased.body["leaseId"]), None),
            )
            .await,
            "lease_expired",
        );
    }
    // Message counts are those of the last stats refresh (http-api.md §4.16).
    api.refresh_stats().await;
    let d = detail(&api, "q", "").await;
    assert_eq!(d.body["options"], configured.body["options"]);
    assert_eq!(names(&d.body["partitions"]), ["Default", "p", "r"]);
    assert_eq!(
        d.body["totals"],
        json!({"total": 0, "pending": 0, "processing": 0, "completed": 0, "failed": 0, "deadLetter": 0})
    );

    // Groups and subscriptions stay: both groups receive what comes next, and only that.
    api.push_to("q", "p", &[json!(5)]).await;
    assert_eq!(
        api.pop("q", "batch=10&autoAck=true").await.data(),
        vec![json!(5)]
    );
    assert_eq!(
        api.pop("q", "consumerGroup=late&batch=10&autoAck=true")
            .await
            .data(),
        vec![json!(5)]
    );

    let missing = delete(&api, "/api/v1/queues/nope/clear").await;
    missing.assert_error(404, "queue_not_found");
    assert_eq!(missing.body["success"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_clear_removes_dead_letters_and_wakes_nobody_into_old_work() {
    let (_b, api) = start().await;
    api.configure("q", json!({"retryLimit": 0})).await;
    api.push_to("q", "Default", &[json!(1), json!(2)]).await;
    let r = api.pop("q", "").await;
    ack1(
        &api,
        item(&r.messages()[0], "failed", Some(&r.body["leaseId"]), None),
    )
    .await;
    let cleared = delete(&api, "/api/v1/queues/q/clear").await;
    assert_eq!(
        (
            &cleared.body["deletedMessages"],
            &cleared.body["deletedDlq"]
        ),
        (&json!(2), &json!(1))
    );
    assert_eq!(api.dlq("queue=q").await.body["total"], 0);
    api.pop("q", "wait=true&timeout=200")
        .await
        .assert_empty("timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_counts_queues_messages_lag_and_throughput() {
    let (b, api) = start().await;
    api.configure("billing.invoices", json!({})).await;
    api.configure("billing.refunds", json!({})).await;
    api.push_to("billing.invoices", "a", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("ops", "b", &[json!(4)]).await;
    // Queue mode leases m1; g takes all of a for good; then c gets one message for both.
    assert_eq!(
        api.pop_partition("billing.invoices", "a", "batch=1")
            .await
            .messages()
            .len(),
        1
    );
    let taken = api
        .pop("billing.invoices", "consumerGroup=g&batch=10&autoAck=true")
        .await;
    assert_eq!(taken.messages().len(), 3);
    api.push_to("billing.invoices", "c", &[json!(5)]).await;
    api.refresh_stats().await;
    // The throughput is the last complete minute's: when the minute ends before the answer, the
    // rows are written again for the new one.
    let mut r = api.get("/api/v1/resources/overview").await;
    for attempt in 0..3 {
        let previous = minute(&b, 1).await;
        let worker = format!("w-{attempt}");
        let counts = json!({"pushed": 120, "acked": 60});
        queue_metrics(&b, previous, "billing.invoices", &worker, counts).await;
        queue_metrics(&b, previous, "ops", &worker, json!({"pushed": 30})).await;
        r = api.get("/api/v1/resources/overview").await;
        if minute(&b, 1).await == previous {
            break;
        }
        b.db()
            .await
            .execute("delete from regina.queue_metrics", &[])
            .await
            .unwrap();
    }
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (
            &r.body["queues"],
            &r.body["partitions"],
            &r.body["namespaces"],
            &r.body["tasks"]
        ),
        (&json!(3), &json!(5), &json!(2), &json!(2))
    );
    assert_eq!(
        r.body["messages"],
        json!({"total": 5, "pending": 4, "processing": 1, "completed": 0, "failed": 0, "deadLetter": 0})
    );
    // Pairs with unsettled messages: (a, queue mode) 3 (m1 leased, m2, m3), (c, queue mode) 1,
    // (c, g) 1.
    let offset = &r.body["lag"]["offset"];
    assert_eq!(
        (&offset["median"], &offset["min"], &offset["max"]),
        (&json!(1), &json!(1), &json!(3))
    );
    assert_eq!(offset["avg"], 1.67);
    let time = &r.body["lag"]["time"];
    assert!(time["max"]
        .as_f64()
        .is_some_and(|s| s >= time["min"].as_f64().unwrap()));
    assert_eq!(
        r.body["throughput"],
        json!({"ingestedPerSecond": 2.5, "processedPerSecond": 1})
    );
    assert_iso(&r.body["timestamp"], 3);
    assert!(r.body["statsAge"].as_i64().is_some_and(|a| a <= 2));
}
