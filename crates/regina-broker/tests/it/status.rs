//! §3.12 status feeds: counts from the stats tables against data created over HTTP, throughput
//! and workers from metrics rows written here, ranges and buckets, pagination, refusals.

use serde_json::{json, Value};

use crate::ack::{ack1, item};
use crate::stats_support::{iso, midnight, minute, q, queue_metrics, rollup, worker_metrics};
use crate::support::{assert_iso, start, Api, Reply};

async fn status(api: &Api, query: &str) -> Reply {
    let r = api.get(&format!("/api/v1/status?{query}")).await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counts_messages_leases_and_dead_letters() {
    let (_b, api) = start().await;
    api.configure("billing.invoices", json!({"retryLimit": 0}))
        .await;
    api.push_to("billing.invoices", "a", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("billing.invoices", "b", &[json!(4)]).await;
    api.push_to("ops.alerts", "Default", &[json!(5)]).await;
    // a: two leased, one of them acked inside the lease. b: dead-lettered with an error.
    let leased = api.pop_partition("billing.invoices", "a", "batch=2").await;
    assert_eq!(leased.messages().len(), 2);
    api.ack_msg(&leased.messages()[0], "completed").await;
    let failing = api.pop_partition("billing.invoices", "b", "").await;
    let mut failed = item(
        &failing.messages()[0],
        "failed",
        Some(&failing.body["leaseId"]),
        None,
    );
    failed["error"] = json!("card declined");
    let res = ack1(&api, failed).await;
    assert_eq!(res["dlq"], true, "{res}");
    api.refresh_stats().await;

    let r = status(&api, "").await;
    assert_eq!(
        r.body["messages"],
        json!({"total": 5, "pending": 2, "processing": 1, "completed": 2, "failed": 0, "deadLetter": 1})
    );
    assert_eq!(
        r.body["queues"],
        json!([{"name": "billing.invoices", "namespace": "billing", "task": "invoices",
                "partitions": 3, "messages": {"total": 4, "pending": 1, "processing": 1}},
               {"name": "ops.alerts", "namespace": "ops", "task": "alerts", "partitions": 1,
                "messages": {"total": 1, "pending": 1, "processing": 0}}])
    );
    // One lease over m1..m2 from the head m2 (m1 was acked in order): one message left in it.
    assert_eq!(
        r.body["leases"],
        json!({"active": 1, "partitionsWithLeases": 1, "totalBatchSize": 1, "totalAcked": 0})
    );
    assert_eq!(
        r.body["deadLetterQueue"],
        json!({"total": 1, "last24h": 1, "topErrors": [{"error": "card declined", "count": 1}]})
    );
    assert_eq!(r.body["bucketMinutes"], 1);
    let points = r.body["throughput"].as_array().expect("throughput").len();
    assert_eq!(r.body["pointCount"], points);
    assert!((60..=61).contains(&points), "an hour of minutes: {points}");
    assert_iso(&r.body["timeRange"]["from"], 3);
    assert!(r.body["statsAge"].as_i64().is_some());

    // Selectors narrow every part.
    let ops = status(&api, "namespace=ops").await;
    assert_eq!(ops.body["messages"]["total"], 1);
    assert_eq!(ops.body["queues"].as_array().map(Vec::len), Some(1));
    assert_eq!(ops.body["leases"]["active"], 0);
    assert_eq!(ops.body["deadLetterQueue"]["total"], 0);
    let one = status(&api, "queue=billing.invoices").await;
    assert_eq!(one.body["messages"]["total"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_throughput_sums_the_metrics_history_per_bucket() {
    let (b, api) = start().await;
    api.configure("orders", json!({})).await;
    let day = midnight(&b, 3).await;
    let at = |minutes: i64| day + time::Duration::minutes(minutes);
    // 10:03 and 10:04 on two instances, 10:12 on one; another queue at 10:03.
    for (minute, worker, pushed, acked) in [
        (603, "w1", 120, 60),
        (603, "w2", 60, 30),
        (604, "w1", 6, 3),
        (612, "w1", 30, 30),
    ] {
        queue_metrics(
            &b,
            at(minute),
            "orders",
            worker,
            json!({"pushed": pushed, "acked": acked, "delivered": acked + 1,
                   "lag_ms_sum": 100.0 * f64::from(acked), "lag_samples": acked,
                   "lag_ms_max": f64::from(pushed), "ack_failed": 2, "dead_lettered": 1}),
        )
        .await;
    }
    queue_metrics(&b, at(603), "other", "w1", json!({"pushed": 1000})).await;
    worker_metrics(&b, at(603), "w1", at(603), json!({"db_errors": 4})).await;

    // Two hours: one-minute buckets from 09:30.
    let r = status(
        &api,
        &format!("from={}&to={}&queue=orders", q(at(570)), q(at(690))),
    )
    .await;
    assert_eq!(
        (
            r.body["bucketMinutes"].clone(),
            r.body["pointCount"].clone()
        ),
        (json!(1), json!(120))
    );
    let points = r.body["throughput"].as_array().expect("points");
    assert_eq!(
        points[33],
        json!({"timestamp": iso(at(603)), "ingested": 180, "processed": 90, "popMessages": 92,
               "ingestedPerSecond": 3, "processedPerSecond": 1.5, "avgLagMs": 100,
               "maxLagMs": 120})
    );
    assert_eq!(points[0]["ingested"], 0, "missing buckets are zeros");
    assert_eq!(points[0]["timestamp"], iso(at(570)));
    assert_eq!(
        r.body["errors"],
        json!({"dbErrors": 4, "ackFailed": 8, "dlqMessages": 4})
    );

    // Six hours: five-minute buckets; 10:03 and 10:04 share the 10:00 bucket.
    let r = status(
        &api,
        &format!("from={}&to={}&queue=orders", q(at(420)), q(at(780))),
    )
    .await;
    assert_eq!(
        (
            r.body["bucketMinutes"].clone(),
            r.body["pointCount"].clone()
        ),
        (json!(5), json!(72))
    );
    let ten = r.body["throughput"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["timestamp"] == iso(at(600)))
        .expect("10:00 bucket")
        .clone();
    assert_eq!(
        (ten["ingested"].clone(), ten["ingestedPerSecond"].clone()),
        (json!(186), json!(0.62))
    );

    // Without a selector every queue counts.
    let all = status(&api, &format!("from={}&to={}", q(at(600)), q(at(605)))).await;
    assert_eq!(all.body["throughput"][3]["ingested"], 1180);

    // A day: 15-minute buckets; 10:03 … 10:12 all in 10:00.
    let r = status(
        &api,
        &format!("from={}&to={}&queue=orders", q(day), q(at(1440))),
    )
    .await;
    assert_eq!(
        (
            r.body["bucketMinutes"].clone(),
            r.body["pointCount"].clone()
        ),
        (json!(15), json!(96))
    );
    assert_eq!(r.body["throughput"][40]["ingested"], 216);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_instances_seen_recently() {
    let (b, api) = start().await;
    let long_ago = minute(&b, 30).await;
    worker_metrics(&b, long_ago, "gone", long_ago, json!({"requests": 9})).await;
    // The rows name the current minute: when it ends before the answer, again with fresh names.
    for attempt in 0..3 {
        let alive = format!("alive-{attempt}");
        let now = minute(&b, 0).await;
        let previous = minute(&b, 1).await;
        let earlier = json!({"requests": 600, "longpoll_waiters": 3});
        worker_metrics(&b, previous, &alive, now, earlier).await;
        let latest = json!({"requests": 5, "longpoll_waiters": 7});
        worker_metrics(&b, now, &alive, now, latest).await;
        let r = status(&api, "").await;
        if minute(&b, 0).await != now {
            b.db()
                .await
                .execute(
                    "delete from regina.worker_metrics where worker_id = $1",
                    &[&alive],
                )
                .await
                .unwrap();
            continue;
        }
        // The fixture's instances (the broker's own history writer lists this broker too).
        let workers: Vec<&Value> = r.body["workers"]
            .as_array()
            .expect("workers")
            .iter()
            .filter(|w| {
                w["hostname"]
                    .as_str()
                    .is_some_and(|h| h.starts_with("host-"))
            })
            .collect();
        assert_eq!(workers.len(), 1, "{workers:?}");
        let w = &workers[0];
        assert_eq!(
            (&w["workerId"], &w["hostname"], &w["version"]),
            (
                &json!(alive),
                &json!(format!("host-{alive}")),
                &json!("9.9.9")
            )
        );
        assert_eq!(
            w["requestsPerSecond"], 10,
            "the last complete minute: 600 / 60"
        );
        assert_eq!(w["longPollWaiters"], 7, "the latest sample");
        assert_eq!(w["lastSeen"], iso(now));
        assert_eq!(w["startedAt"], iso(now - time::Duration::hours(1)));
        return;
    }
    panic!("the minute kept changing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_longer_than_31_days_reversed_or_malformed_are_refused() {
    let (_b, api) = start().await;
    for path in [
        "/api/v1/status",
        "/api/v1/status/queues",
        "/api/v1/status/analytics",
        "/api/v1/analytics/queue-ops",
    ] {
        for bad in [
            "from=2026-01-01&to=2026-02-01T00:00:01Z",
            "from=2026-01-02&to=2026-01-01",
            "from=yesterday",
            "to=2026-13-01",
        ] {
            let r = api.get(&format!("{path}?{bad}")).await;
            r.assert_error(400, "invalid_parameter");
        }
        let r = api
            .get(&format!("{path}?from=2026-01-01&to=2026-02-01"))
            .await;
        assert_eq!(r.status, 200, "31 days exactly: {r:?}");
    }
    let long = api
        .get("/api/v1/status?from=2026-01-01&to=2026-03-01")
        .await;
    assert_eq!(long.body["field"], "to");
    assert_eq!(long.body["limit"], 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_queues_pages_counts_and_range_throughput() {
    let (b, api) = start().await;
    for q in ["b.two", "a.one", "c.three"] {
        api.configure(q, json!({"priority": 2})).await;
    }
    api.push_to("a.one", "p", &[json!(1), json!(2)]).await;
    api.refresh_stats().await;
    let recent = minute(&b, 2).await;
    queue_metrics(&b, recent, "a.one", "w", json!({"pushed": 7, "acked": 5})).await;
    queue_metrics(
        &b,
        minute(&b, 120).await,
        "a.one",
        "w",
        json!({"pushed": 100}),
    )
    .await;

    let r = api.get("/api/v1/status/queues").await;
    assert_eq!(r.status, 200, "{r:?}");
    let names: Vec<&str> = r.body["queues"]
        .as_array()
        .expect("queues")
        .iter()
        .map(|q| q["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["a.one", "b.two", "c.three"]);
    let a = &r.body["queues"][0];
    assert_eq!(
        (
            &a["priority"],
            &a["partitions"],
            &a["messages"],
            &a["throughput"]
        ),
        (
            &json!(2),
            &json!(2),
            &json!({"total": 2, "pending": 2, "processing": 0}),
            &json!({"ingested": 7, "processed": 5})
        )
    );
    crate::support::assert_uuid(&a["id"]);
    assert_iso(&a["createdAt"], 3);
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 100, "offset": 0, "total": 3})
    );
    let page = api.get("/api/v1/status/queues?limit=1&namespace=c").await;
    assert_eq!(page.body["queues"][0]["name"], "c.three");
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 1, "offset": 0, "total": 1})
    );
    let second = api.get("/api/v1/status/queues?limit=1&offset=1").await;
    assert_eq!(second.body["queues"][0]["name"], "b.two");
    for bad in ["limit=0", "limit=10001", "offset=-1"] {
        api.get(&format!("/api/v1/status/queues?{bad}"))
            .await
            .assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_queue_detail_reports_config_partitions_and_totals() {
    let (_b, api) = start().await;
    let configured = api
        .configure(
            "q",
            json!({"leaseTime": 120, "retryLimit": 4, "retryDelay": 500, "ttl": 3600,
                   "maxSize": 1000, "deadLetterQueue": false, "delayedProcessing": 0,
                   "windowBuffer": 0, "priority": 5}),
        )
        .await;
    api.push_to("q", "x", &[json!(1), json!(2), json!(3)]).await;
    api.push_to("q", "y", &[json!(4)]).await;
    let r = api.pop_partition("q", "x", "batch=2&autoAck=true").await;
    assert_eq!(r.messages().len(), 2);
    api.pop_partition("q", "y", "").await;
    api.refresh_stats().await;

    let d = api.get("/api/v1/status/queues/q").await;
    assert_eq!(d.status, 200, "{d:?}");
    assert_eq!(d.body["queue"]["id"], configured.body["queueId"]);
    assert_eq!(d.body["queue"]["priority"], 5);
    assert_eq!(
        d.body["queue"]["config"],
        json!({"leaseTime": 120, "retryLimit": 4, "retryDelay": 500, "ttl": 3600,
               "maxQueueSize": 1000, "deadLetterQueue": false, "delayedProcessing": 0,
               "windowBuffer": 0, "encryptionEnabled": false})
    );
    let parts = d.body["partitions"].as_array().expect("partitions");
    let names: Vec<&str> = parts.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Default", "x", "y"]);
    let x = &parts[1];
    assert_eq!(
        x["stats"],
        json!({"total": 3, "pending": 1, "processing": 0, "completed": 2, "failed": 0, "deadLetter": 0})
    );
    assert_eq!(x["messages"], json!({"total": 3, "pending": 1}));
    assert_eq!(
        x["cursor"],
        json!({"totalConsumed": 2, "batchesConsumed": 1})
    );
    assert_iso(&x["lastActivity"], 3);
    assert_iso(&x["oldestMessage"], 6);
    assert_iso(&x["newestMessage"], 6);
    assert_eq!(parts[0]["oldestMessage"], Value::Null);
    assert_eq!(
        d.body["totals"],
        json!({"total": 4, "pending": 1, "processing": 1, "completed": 2, "failed": 0, "deadLetter": 0})
    );

    let page = api.get("/api/v1/status/queues/q?limit=1&offset=2").await;
    let names: Vec<&str> = page.body["partitions"]
        .as_array()
        .expect("page")
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["y"]);
    assert_eq!(
        page.body["totals"], d.body["totals"],
        "totals cover every partition"
    );
    api.get("/api/v1/status/queues/nope")
        .await
        .assert_error(404, "queue_not_found");
    api.get("/api/v1/status/queues/q?limit=10001")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_queue_messages_are_newest_first_with_a_total_count() {
    let (_b, api) = start().await;
    let mut ids = Vec::new();
    for (i, partition) in ["p1", "p2", "p1", "p2", "p1"].iter().enumerate() {
        let e = api.push_one("m", partition, json!(i)).await;
        ids.push(e["message_id"].as_str().unwrap().to_owned());
    }
    api.pop_partition("m", "p1", "autoAck=true").await;
    api.push_one("other", "p1", json!("x")).await;
    api.refresh_stats().await;

    let r = api
        .get("/api/v1/status/queues/m/messages?limit=2&offset=1")
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("x-total-count"), Some("5"));
    let page = r.body.as_array().expect("bare array");
    let got: Vec<&str> = page.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(got, [ids[3].as_str(), ids[2].as_str()]);
    let m = &page[0];
    assert_eq!(
        (&m["queue"], &m["partition"], &m["queuePath"], &m["status"]),
        (&json!("m"), &json!("p2"), &json!("m/p2"), &json!("pending"))
    );
    crate::support::assert_uuid(&m["partitionId"]);
    assert!(m["transactionId"].is_string());
    assert_iso(&m["createdAt"], 6);

    let all = api.get("/api/v1/status/queues/m/messages").await;
    let statuses: Vec<&str> = all
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["pending", "pending", "pending", "pending", "completed"],
        "the oldest was consumed"
    );
    let past_end = api.get("/api/v1/status/queues/m/messages?offset=10").await;
    assert_eq!(past_end.body, json!([]));
    assert_eq!(past_end.header("x-total-count"), Some("5"));
    api.get("/api/v1/status/queues/nope/messages")
        .await
        .assert_error(404, "queue_not_found");
    api.get("/api/v1/status/queues/m/messages?limit=1001")
        .await
        .assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_analytics_counts_pushed_messages_per_interval() {
    let (b, api) = start().await;
    api.configure("billing.a", json!({})).await;
    let day = midnight(&b, 5).await;
    let at = |minutes: i64| day + time::Duration::minutes(minutes);
    queue_metrics(&b, at(61), "billing.a", "w1", json!({"pushed": 3})).await;
    queue_metrics(&b, at(119), "billing.a", "w2", json!({"pushed": 4})).await;
    queue_metrics(&b, at(180), "billing.a", "w1", json!({"pushed": 5})).await;
    queue_metrics(&b, at(1500), "billing.a", "w1", json!({"pushed": 6})).await;
    queue_metrics(&b, at(61), "ops.b", "w1", json!({"pushed": 100})).await;
    rollup(&b).await;

    let path = format!(
        "/api/v1/status/analytics?from={}&to={}&namespace=billing",
        q(at(30)),
        q(at(240))
    );
    let r = api.get(&path).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body["dataPoints"],
        json!([{"timestamp": iso(at(0)), "messages": 0},
               {"timestamp": iso(at(60)), "messages": 7},
               {"timestamp": iso(at(120)), "messages": 0},
               {"timestamp": iso(at(180)), "messages": 5}])
    );
    assert_eq!(
        (&r.body["interval"], &r.body["from"], &r.body["to"]),
        (&json!("hour"), &json!(iso(at(30))), &json!(iso(at(240))))
    );
    let days = api
        .get(&format!(
            "/api/v1/status/analytics?interval=day&from={}&to={}&queue=billing.a",
            q(day),
            q(at(2880))
        ))
        .await;
    assert_eq!(
        days.body["dataPoints"],
        json!([{"timestamp": iso(day), "messages": 12},
               {"timestamp": iso(at(1440)), "messages": 6}])
    );
    api.get("/api/v1/status/analytics?interval=minute")
        .await
        .assert_error(400, "invalid_parameter");
}
