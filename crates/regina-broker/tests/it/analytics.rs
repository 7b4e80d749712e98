//! §3.12 analytics feeds: one shape for every feed, buckets aligned on the epoch and sized by the
//! range, counts summed and zero-filled, sampled gauges averaged where measured, selectors, and
//! PostgreSQL's own statistics. Metrics rows are written here directly, as each instance writes
//! its own.

use serde_json::{json, Value};
use time::Duration;

use crate::stats_support::{iso, midnight, minute, q, queue_metrics, worker_metrics};
use crate::support::{start, Api, Reply};

async fn feed(api: &Api, name: &str, query: &str) -> Reply {
    let r = api.get(&format!("/api/v1/analytics/{name}?{query}")).await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

/// The series `name` with exactly these labels.
fn series<'a>(r: &'a Reply, name: &str, labels: &Value) -> &'a Value {
    r.body["series"]
        .as_array()
        .expect("series")
        .iter()
        .find(|s| s["name"] == name && &s["labels"] == labels)
        .unwrap_or_else(|| panic!("no series {name} {labels}: {}", r.body))
}

/// Series names of a feed, in order.
fn names(r: &Reply) -> Vec<String> {
    r.body["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_metrics_sum_counts_per_bucket_and_fill_the_gaps_with_zeros() {
    let (b, api) = start().await;
    let day = midnight(&b, 2).await;
    let at = |minutes: i64| day + Duration::minutes(minutes);
    worker_metrics(
        &b,
        at(601),
        "w1",
        at(601),
        json!({"requests": 100, "push_messages": 40, "pop_messages": 30,
                          "ack_messages": 20, "db_calls": 10, "batch_requests": 35}),
    )
    .await;
    worker_metrics(&b, at(604), "w1", at(604), json!({"requests": 7})).await;
    worker_metrics(
        &b,
        at(601),
        "w2",
        at(601),
        json!({"requests": 1, "db_calls": 1, "batch_requests": 1}),
    )
    .await;

    let r = feed(
        &api,
        "worker-metrics",
        &format!("from={}&to={}", q(at(600)), q(at(606))),
    )
    .await;
    assert_eq!(
        (&r.body["from"], &r.body["to"], &r.body["bucketSeconds"]),
        (&json!(iso(at(600))), &json!(iso(at(606))), &json!(60))
    );
    let w1 = json!({"workerId": "w1", "hostname": "host-w1"});
    assert_eq!(
        series(&r, "requests", &w1)["points"],
        json!([
            [iso(at(600)), 0],
            [iso(at(601)), 100],
            [iso(at(602)), 0],
            [iso(at(603)), 0],
            [iso(at(604)), 7],
            [iso(at(605)), 0]
        ])
    );
    assert_eq!(
        series(&r, "push_messages", &w1)["points"][1],
        json!([iso(at(601)), 40])
    );
    assert_eq!(
        series(&r, "avg_batch_requests", &w1)["points"],
        json!([[iso(at(601)), 3.5]]),
        "a ratio exists only where calls were made"
    );
    assert_eq!(
        names(&r),
        [
            "requests",
            "push_messages",
            "pop_messages",
            "ack_messages",
            "db_calls",
            "avg_batch_requests",
            "requests",
            "push_messages",
            "pop_messages",
            "ack_messages",
            "db_calls",
            "avg_batch_requests"
        ],
        "one set per instance"
    );

    let only = feed(
        &api,
        "worker-metrics",
        &format!("from={}&to={}&workerId=w2", q(at(600)), q(at(606))),
    )
    .await;
    assert!(only.body["series"]
        .as_array()
        .expect("series")
        .iter()
        .all(|s| s["labels"]["workerId"] == "w2"));
    let by_host = feed(
        &api,
        "worker-metrics",
        &format!("from={}&to={}&hostname=host-w1", q(at(600)), q(at(606))),
    )
    .await;
    assert_eq!(by_host.body["series"].as_array().map(Vec::len), Some(6));
    let none = feed(
        &api,
        "worker-metrics",
        &format!("from={}&to={}&workerId=nobody", q(at(600)), q(at(606))),
    )
    .await;
    assert_eq!(none.body["series"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_metrics_rate_cpu_and_average_gauges_where_sampled() {
    let (b, api) = start().await;
    let day = midnight(&b, 2).await;
    let at = |minutes: i64| day + Duration::minutes(minutes);
    worker_metrics(
        &b,
        at(601),
        "w1",
        at(601),
        json!({"cpu_seconds": 6.0, "rss_bytes": 100, "db_pool_busy": 2,
                          "db_pool_waiting": 1, "http_inflight": 4}),
    )
    .await;
    worker_metrics(
        &b,
        at(603),
        "w1",
        at(603),
        json!({"cpu_seconds": 3.0, "rss_bytes": 300, "db_pool_busy": 4}),
    )
    .await;

    // Six hours: five-minute buckets; 10:01 and 10:03 share the 10:00 bucket.
    let r = feed(
        &api,
        "system-metrics",
        &format!("from={}&to={}", q(at(420)), q(at(780))),
    )
    .await;
    assert_eq!(r.body["bucketSeconds"], 300);
    let w1 = json!({"workerId": "w1", "hostname": "host-w1"});
    let cpu = series(&r, "cpu_percent", &w1)["points"]
        .as_array()
        .expect("points")
        .clone();
    assert_eq!(cpu.len(), 72, "a count: every bucket");
    assert_eq!(
        cpu[36],
        json!([iso(at(600)), 3]),
        "9 CPU seconds over 300 s"
    );
    assert_eq!(cpu[0], json!([iso(at(420)), 0]));
    assert_eq!(
        series(&r, "rss_bytes", &w1)["points"],
        json!([[iso(at(600)), 200]]),
        "a gauge: only where sampled, averaged"
    );
    assert_eq!(
        series(&r, "db_pool_busy", &w1)["points"],
        json!([[iso(at(600)), 3]])
    );
    assert_eq!(
        names(&r),
        [
            "cpu_percent",
            "rss_bytes",
            "db_pool_busy",
            "db_pool_waiting",
            "http_inflight"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_feeds_are_per_queue_and_follow_the_bucket_of_the_range() {
    let (b, api) = start().await;
    let day = midnight(&b, 4).await;
    let at = |minutes: i64| day + Duration::minutes(minutes);
    for (minute, queue, worker) in [
        (607, "a", "w1"),
        (614, "a", "w2"),
        (615, "a", "w1"),
        (607, "b", "w1"),
    ] {
        queue_metrics(
            &b,
            at(minute),
            queue,
            worker,
            json!({"pushed": 10, "delivered": 9, "acked": 8, "ack_failed": 1,
                             "dead_lettered": 1, "transactions": 2, "retention_deleted": 3,
                             "completed_deleted": 4, "evicted": 5, "expired": 6,
                             "waiters": 2}),
        )
        .await;
    }
    queue_metrics(&b, at(608), "a", "w1", json!({"waiters": 6})).await;

    // A day: 15-minute buckets; 10:07 and 10:14 in 10:00, 10:15 in 10:15.
    let range = format!("from={}&to={}", q(day), q(at(1440)));
    let ops = feed(&api, "queue-ops", &format!("{range}&queue=a")).await;
    assert_eq!(ops.body["bucketSeconds"], 900);
    assert_eq!(
        names(&ops),
        ["push", "pop", "ack", "ack_failed", "dlq", "transactions"]
    );
    let push = series(&ops, "push", &json!({"queue": "a"}))["points"]
        .as_array()
        .expect("points")
        .clone();
    assert_eq!(push.len(), 96);
    assert_eq!(
        (push[40].clone(), push[41].clone()),
        (json!([iso(at(600)), 20]), json!([iso(at(615)), 10]))
    );
    assert_eq!(
        series(&ops, "transactions", &json!({"queue": "a"}))["points"][40][1],
        4
    );

    let both = feed(&api, "queue-ops", &range).await;
    assert_eq!(
        both.body["series"].as_array().map(Vec::len),
        Some(12),
        "two queues"
    );

    let retention = feed(&api, "retention", &format!("{range}&queue=b")).await;
    assert_eq!(
        names(&retention),
        [
            "retention_deleted",
            "completed_deleted",
            "evicted",
            "expired"
        ]
    );
    assert_eq!(
        series(&retention, "expired", &json!({"queue": "b"}))["points"][40][1],
        6
    );

    // Waiters: one series per queue and instance, averaged over its samples, gaps left out.
    let parked = feed(&api, "queue-parked-replicas", &format!("{range}&queue=a")).await;
    assert_eq!(
        series(&parked, "waiters", &json!({"queue": "a", "workerId": "w1"}))["points"],
        json!([[iso(at(600)), 4], [iso(at(615)), 2]])
    );
    assert_eq!(
        series(&parked, "waiters", &json!({"queue": "a", "workerId": "w2"}))["points"],
        json!([[iso(at(600)), 2]])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_lag_reads_the_history_the_refresh_samples() {
    let (b, api) = start().await;
    api.push_to("lagging", "p", &[json!(1), json!(2), json!(3)])
        .await;
    api.pop("lagging", "autoAck=true").await;
    api.refresh_stats().await;
    let r = feed(&api, "queue-lag", "queue=lagging").await;
    let labels = json!({"queue": "lagging"});
    let depth = series(&r, "depth", &labels)["points"]
        .as_array()
        .expect("points")
        .clone();
    let latest = depth.last().expect("a sample this minute");
    assert_eq!(
        latest[1], 2,
        "two messages queue mode has not settled: {depth:?}"
    );
    assert!(series(&r, "lag_ms_max", &labels)["points"][0][1]
        .as_f64()
        .is_some());

    // Averages weigh every sample of the bucket.
    let day = midnight(&b, 1).await;
    b.db()
        .await
        .execute(
            "insert into regina.queue_lag_history (bucket, queue_name, depth, lag_ms_sum, lag_samples, lag_ms_max)
             values ($1, 'h', 10, 300, 3, 250), ($1 + interval '1 minute', 'h', 20, 100, 1, 90)",
            &[&day],
        )
        .await
        .unwrap();
    let r = feed(
        &api,
        "queue-lag",
        &format!("from={}&to={}&queue=h", q(day), q(day + Duration::hours(3))),
    )
    .await;
    let labels = json!({"queue": "h"});
    assert_eq!(r.body["bucketSeconds"], 300);
    assert_eq!(
        series(&r, "lag_ms_avg", &labels)["points"],
        json!([[iso(day), 100]])
    );
    assert_eq!(
        series(&r, "lag_ms_max", &labels)["points"],
        json!([[iso(day), 250]])
    );
    assert_eq!(
        series(&r, "depth", &labels)["points"],
        json!([[iso(day), 15]])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stats_report_one_latest_point_each() {
    let (_b, api) = start().await;
    api.push_to("pg", "p", &[json!("x")]).await;
    let r = feed(&api, "postgres-stats", "").await;
    assert_eq!(
        names(&r),
        [
            "database_bytes",
            "messages_table_bytes",
            "connections",
            "cache_hit_ratio",
            "dead_tuples_messages",
            "longest_transaction_seconds"
        ]
    );
    let value = |name: &str| {
        let s = series(&r, name, &json!({}));
        let points = s["points"].as_array().expect("points");
        assert_eq!(points.len(), 1, "{s}");
        points[0][1].as_f64().expect("number")
    };
    assert!(value("database_bytes") > 1_000_000.0);
    assert!(value("messages_table_bytes") > 0.0);
    assert!(value("connections") >= 1.0);
    assert!((0.0..=1.0).contains(&value("cache_hit_ratio")));
    assert!(value("dead_tuples_messages") >= 0.0);
    assert!(value("longest_transaction_seconds") >= 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_sizes_follow_the_range() {
    let (b, api) = start().await;
    let end = midnight(&b, 0).await;
    for (hours, seconds, points) in [
        (1, 60, 60),
        (2, 60, 120),
        (3, 300, 36),
        (24, 900, 96),
        (72, 3_600, 72),
        (24 * 20, 21_600, 80),
        (24 * 31, 21_600, 124),
    ] {
        let r = feed(
            &api,
            "queue-ops",
            &format!("from={}&to={}", q(end - Duration::hours(hours)), q(end)),
        )
        .await;
        assert_eq!(r.body["bucketSeconds"], seconds, "{hours} h");
        let s = api
            .get(&format!(
                "/api/v1/status?from={}&to={}",
                q(end - Duration::hours(hours)),
                q(end)
            ))
            .await;
        assert_eq!(s.body["pointCount"], points, "{hours} h");
        assert_eq!(s.body["bucketMinutes"], seconds / 60, "{hours} h");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_feeds_and_bad_selectors_are_refused() {
    let (_b, api) = start().await;
    api.get("/api/v1/analytics/nope")
        .await
        .assert_error(404, "route_not_found");
    api.get("/api/v1/analytics/queue-ops?queue=%01")
        .await
        .assert_error(400, "invalid_parameter");
    let long = format!(
        "/api/v1/analytics/worker-metrics?workerId={}",
        "w".repeat(256)
    );
    api.get(&long).await.assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_ranges_read_the_hourly_sums_the_refresh_keeps() {
    let (b, api) = start().await;
    for (minutes_ago, pushed, waiters) in [(1, 5, 2), (2, 7, 4), (40, 11, 6)] {
        let at = minute(&b, minutes_ago).await;
        queue_metrics(
            &b,
            at,
            "hq",
            "w1",
            json!({"pushed": pushed, "waiters": waiters}),
        )
        .await;
        worker_metrics(
            &b,
            at,
            "w1",
            at,
            json!({"requests": pushed, "rss_bytes": 1000 * waiters}),
        )
        .await;
    }
    api.refresh_stats().await;

    // Three days: one-hour buckets, read from the hourly sums the refresh just computed.
    let now = minute(&b, 0).await;
    let range = format!(
        "from={}&to={}",
        q(now - Duration::days(3)),
        q(now + Duration::minutes(1))
    );
    let ops = feed(&api, "queue-ops", &format!("{range}&queue=hq")).await;
    assert_eq!(ops.body["bucketSeconds"], 3_600);
    let push = series(&ops, "push", &json!({"queue": "hq"}))["points"]
        .as_array()
        .expect("points")
        .clone();
    let total: f64 = push.iter().map(|p| p[1].as_f64().unwrap()).sum();
    assert_eq!(total, 23.0, "every minute counted once: {push:?}");
    let parked = feed(&api, "queue-parked-replicas", &format!("{range}&queue=hq")).await;
    let waiters = series(
        &parked,
        "waiters",
        &json!({"queue": "hq", "workerId": "w1"}),
    )["points"]
        .as_array()
        .expect("points")
        .clone();
    assert!(!waiters.is_empty() && waiters.len() <= 2, "{waiters:?}");
    let weighted: f64 = waiters.iter().map(|p| p[1].as_f64().unwrap()).sum();
    assert!(
        weighted >= 4.0,
        "averages of the hours' samples: {waiters:?}"
    );
    let system = feed(&api, "worker-metrics", &range).await;
    let requests = series(
        &system,
        "requests",
        &json!({"workerId": "w1", "hostname": "host-w1"}),
    )["points"]
        .as_array()
        .expect("points")
        .clone();
    let total: f64 = requests.iter().map(|p| p[1].as_f64().unwrap()).sum();
    assert_eq!(total, 23.0);
}
