//! §3.1 `GET /metrics/prometheus`: the whole exposition is read with a Prometheus text-format
//! parser, and counters are checked to move by exactly what real requests did.

use std::collections::BTreeSet;

use openmetrics_parser::{HistogramValue, PrometheusValue};
use regina_testkit::{TestBroker, PARKED_POP_TIMEOUT_MS};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{start, start_with, Api};
use scrape::Metrics;

pub mod scrape;

/// The families http-api.md §3.1 names (process_* aside), with the prefix.
const FAMILIES: &[&str] = &[
    "regina_http_requests_total",
    "regina_messages_pushed_total",
    "regina_messages_delivered_total",
    "regina_messages_dead_lettered_total",
    "regina_messages_expired_total",
    "regina_messages_evicted_total",
    "regina_messages_retention_deleted_total",
    "regina_messages_acked_total",
    "regina_leases_expired_total",
    "regina_push_rejected_total",
    "regina_failover_buffered_total",
    "regina_failover_replayed_total",
    "regina_longpoll_quiet_parks_total",
    "regina_longpoll_push_pops_total",
    "regina_batch_holds_total",
    "regina_push_announcements_skipped_total",
    "regina_http_request_duration_seconds",
    "regina_db_call_duration_seconds",
    "regina_batch_requests",
    "regina_end_to_end_seconds",
    "regina_db_pool_connections",
    "regina_db_pool_waiting",
    "regina_longpoll_waiters",
    "regina_http_inflight_requests",
    "regina_http_body_bytes_held",
    "regina_failover_buffer_records",
    "regina_failover_buffer_bytes",
    "regina_maintenance_mode",
    "regina_push_announcing",
    "regina_build_info",
    "regina_queue_depth",
    "regina_dlq_depth",
    "regina_consumer_lag_messages",
    "regina_consumer_lag_seconds",
];

/// Scrapes until `check` holds on a fresh scrape; fails with `what` and the last exposition.
async fn eventually(api: &Api, what: &str, check: impl Fn(&Metrics) -> bool) -> Metrics {
    regina_testkit::eventually(what, || async {
        let m = Metrics::scrape(api).await;
        if check(&m) {
            Ok(m)
        } else {
            Err(Exposition(m.text))
        }
    })
    .await
}

/// An exposition text, shown as is in failure messages.
struct Exposition(String);

impl std::fmt::Debug for Exposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\n{}", self.0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exposition_holds_exactly_the_documented_families() {
    let (_b, api) = start().await;
    api.push_one("f", "Default", json!(1)).await;
    let m = Metrics::scrape(&api).await;
    let families = m.families();
    for family in &families {
        assert!(
            FAMILIES.contains(&family.as_str()) || family.starts_with("regina_process_"),
            "undocumented family {family}"
        );
    }
    for always in [
        "regina_http_requests_total",
        "regina_messages_pushed_total",
        "regina_db_call_duration_seconds",
        "regina_batch_requests",
        "regina_db_pool_connections",
        "regina_longpoll_waiters",
        "regina_http_inflight_requests",
        "regina_http_body_bytes_held",
        "regina_maintenance_mode",
        "regina_push_announcing",
        "regina_build_info",
        "regina_process_cpu_seconds_total",
        "regina_process_resident_memory_bytes",
        "regina_process_start_time_seconds",
        "regina_process_open_fds",
    ] {
        assert!(families.contains(always), "{always} missing:\n{}", m.text);
    }
    for family in &families {
        assert!(family.starts_with("regina_"), "{family}");
    }
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(m.value("regina_build_info", &[("version", version)]), 1.0);
    assert_eq!(m.value("regina_maintenance_mode", &[("kind", "push")]), 0.0);
    assert_eq!(m.value("regina_maintenance_mode", &[("kind", "pop")]), 0.0);
    assert!(m.value("regina_process_resident_memory_bytes", &[]) > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_pops_and_acks_move_their_counters_exactly() {
    let (_b, api) = start().await;
    api.configure("orders", json!({"retryLimit": 0})).await;
    let before = Metrics::scrape(&api).await;
    let push_route = [
        ("route", "/api/v1/push"),
        ("method", "POST"),
        ("status", "201"),
    ];
    let pushed = api
        .push(
            json!([{"queue": "orders", "partition": "p", "payload": 1, "transactionId": "a"},
                     {"queue": "orders", "partition": "p", "payload": 2, "transactionId": "b"},
                     {"queue": "orders", "partition": "p", "payload": 1, "transactionId": "a"}]),
        )
        .await;
    assert_eq!(pushed.status, 201);
    let pop = api.pop("orders", "batch=10").await;
    assert_eq!(pop.messages().len(), 2, "{pop:?}");
    let (a, b) = (&pop.messages()[0], &pop.messages()[1]);
    assert_eq!(api.ack_msg(b, "completed").await["success"], true);
    let failed = api.ack_msg(a, "failed").await;
    assert_eq!(failed["dlq"], true, "retryLimit 0: {failed}");

    let m = Metrics::scrape(&api).await;
    let q = [("queue", "orders")];
    let delta = |metric: &str, labels: &[(&str, &str)]| {
        m.value(metric, labels) - before.value(metric, labels)
    };
    assert_eq!(
        delta("regina_messages_pushed_total", &q),
        2.0,
        "the duplicate is no push"
    );
    assert_eq!(delta("regina_messages_delivered_total", &q), 2.0);
    assert_eq!(m.observations("regina_end_to_end_seconds", &q), 2.0);
    let acked = |status| [("queue", "orders"), ("status", status)];
    assert_eq!(
        delta("regina_messages_acked_total", &acked("completed")),
        1.0
    );
    assert_eq!(delta("regina_messages_acked_total", &acked("failed")), 1.0);
    assert_eq!(delta("regina_messages_acked_total", &acked("retry")), 0.0);
    assert_eq!(delta("regina_messages_dead_lettered_total", &q), 1.0);
    assert_eq!(delta("regina_http_requests_total", &push_route), 1.0);
    let pop_route = [
        ("route", "/api/v1/pop/queue/{queue}"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert_eq!(delta("regina_http_requests_total", &pop_route), 1.0);
    for op in ["push", "pop", "ack"] {
        let op = [("op", op)];
        assert!(m.observations("regina_db_call_duration_seconds", &op) >= 1.0);
        assert!(
            m.histogram_sum("regina_batch_requests", &op) >= 1.0,
            "{op:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeliveries_are_delivered_again_but_not_first_deliveries() {
    let (_b, api) = start().await;
    api.push_one("again", "p", json!(1)).await;
    let first = api.pop("again", "batch=1").await;
    assert_eq!(
        api.ack_msg(&first.messages()[0], "retry").await["success"],
        true
    );
    let second = api.pop("again", "batch=1").await;
    assert_eq!(second.data(), vec![json!(1)]);
    let other_group = api.pop("again", "batch=1&consumerGroup=audit").await;
    assert_eq!(other_group.data(), vec![json!(1)]);
    let m = Metrics::scrape(&api).await;
    let q = [("queue", "again")];
    assert_eq!(m.value("regina_messages_delivered_total", &q), 3.0);
    assert_eq!(
        m.observations("regina_end_to_end_seconds", &q),
        2.0,
        "one first delivery per group; the redelivery after retry is none"
    );
    let retried = [("queue", "again"), ("status", "retry")];
    assert_eq!(m.value("regina_messages_acked_total", &retried), 1.0);
}

/// Moves the message times of `queue` an hour back (its ttl and leases see them as old).
async fn age(b: &TestBroker, queue: &str) {
    b.db()
        .await
        .execute(
            "update regina.messages m set created_at = m.created_at - interval '1 hour'
             from regina.partitions p join regina.queues q on q.id = p.queue_id
             where p.id = m.partition_id and q.name = $1",
            &[&queue],
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_expiries_lease_expiries_and_their_dead_letters_are_counted() {
    let (b, api) = start().await;
    api.configure("ttl", json!({"ttl": 60})).await;
    api.push_to("ttl", "p", &[json!(1), json!(2)]).await;
    age(&b, "ttl").await;
    api.pop("ttl", "batch=5").await.assert_empty("empty");

    api.configure("lease", json!({"retryLimit": 0})).await;
    api.push_one("lease", "p", json!(1)).await;
    assert_eq!(api.pop("lease", "batch=1").await.messages().len(), 1);
    // The lease ends in the past: the next claim or the leader's sweep accounts it, once.
    b.db()
        .await
        .execute(
            "update regina.cursors set lease_expires_at = now() - interval '1 second'
             where lease_active",
            &[],
        )
        .await
        .unwrap();
    api.pop("lease", "batch=1").await;
    let lease = [("queue", "lease")];
    let m = eventually(&api, "the expiry is counted", |m| {
        m.value("regina_leases_expired_total", &lease) == 1.0
    })
    .await;
    assert_eq!(m.value("regina_messages_dead_lettered_total", &lease), 1.0);
    assert_eq!(
        m.value("regina_messages_expired_total", &[("queue", "ttl")]),
        2.0
    );
    assert_eq!(
        m.value("regina_messages_delivered_total", &[("queue", "ttl")]),
        0.0
    );
    assert_eq!(api.dlq("queue=lease").await.body["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_counts_expiries_and_dead_letters_without_a_consumer() {
    let (_b, api) = start_with(|c| c.lease_sweep_interval_ms = 50).await;
    api.configure(
        "swept",
        json!({"leaseTime": 1, "retryLimit": 0, "deadLetterQueue": false}),
    )
    .await;
    api.push_one("swept", "p", json!(1)).await;
    assert_eq!(api.pop("swept", "batch=1").await.messages().len(), 1);
    let q = [("queue", "swept")];
    let m = eventually(&api, "the sweep accounts the expiry", |m| {
        m.value("regina_leases_expired_total", &q) == 1.0
    })
    .await;
    assert_eq!(
        m.value("regina_messages_dead_lettered_total", &q),
        1.0,
        "discarded without a DLQ, still counted"
    );
    assert_eq!(api.dlq("queue=swept").await.body["total"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_rejections_are_counted_by_queue_and_code() {
    let (_b, api) = start().await;
    api.configure("full", json!({"maxSize": 1})).await;
    let r = api
        .push(json!([{"queue": "full", "payload": 1},
                     {"queue": "full", "payload": 2},
                     {"queue": "full", "payload": 3}]))
        .await;
    assert_eq!(r.status, 429);
    let m = Metrics::scrape(&api).await;
    let rejected = [("queue", "full"), ("code", "queue_full")];
    assert_eq!(m.value("regina_push_rejected_total", &rejected), 2.0);
    assert_eq!(
        m.value("regina_messages_pushed_total", &[("queue", "full")]),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_pushes_are_counted_then_replayed_and_stored() {
    let (_b, api) = start().await;
    let on = api
        .post("/api/v1/system/maintenance", &json!({"enabled": true}))
        .await;
    assert_eq!(on.status, 200, "{on:?}");
    let r = api
        .push(json!([{"queue": "fo", "payload": 1}, {"queue": "fo", "payload": 2}]))
        .await;
    assert!(r
        .body
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "buffered"));
    let m = Metrics::scrape(&api).await;
    assert_eq!(m.value("regina_failover_buffered_total", &[]), 2.0);
    assert_eq!(m.value("regina_failover_buffer_records", &[]), 2.0);
    assert_eq!(m.value("regina_maintenance_mode", &[("kind", "push")]), 1.0);
    assert_eq!(
        m.value("regina_messages_pushed_total", &[("queue", "fo")]),
        0.0
    );
    let off = api
        .post("/api/v1/system/maintenance", &json!({"enabled": false}))
        .await;
    assert_eq!(off.status, 200, "{off:?}");
    // The counters move when the replay call commits; the buffer lets go of its records right
    // after that, so the scrape waits for both.
    let m = eventually(&api, "the buffer is replayed and emptied", |m| {
        m.value("regina_failover_replayed_total", &[]) == 2.0
            && m.value("regina_failover_buffer_records", &[]) == 0.0
    })
    .await;
    assert_eq!(
        m.value("regina_messages_pushed_total", &[("queue", "fo")]),
        2.0
    );
    assert!(
        m.observations(
            "regina_db_call_duration_seconds",
            &[("op", "failover_replay")]
        ) >= 1.0
    );
}

/// A replay call carries at most `BATCH_BYTES_MAX` bytes of records (at least one), like a
/// fused push: with a cap below one record, each record is replayed by a call of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_calls_carry_at_most_batch_bytes_max() {
    let (_b, api) = start_with(|c| c.batch_bytes_max = 1).await;
    let on = api
        .post("/api/v1/system/maintenance", &json!({"enabled": true}))
        .await;
    assert_eq!(on.status, 200, "{on:?}");
    let items: Vec<Value> = (0..3)
        .map(|n| json!({"queue": "fo", "payload": n}))
        .collect();
    let r = api.push(Value::Array(items)).await;
    assert_eq!(r.status, 201, "{r:?}");
    api.post("/api/v1/system/maintenance", &json!({"enabled": false}))
        .await;
    let m = eventually(&api, "the buffer is replayed and emptied", |m| {
        m.value("regina_failover_replayed_total", &[]) == 3.0
            && m.value("regina_failover_buffer_records", &[]) == 0.0
    })
    .await;
    let replay = [("op", "failover_replay")];
    assert_eq!(m.observations("regina_batch_requests", &replay), 3.0);
    assert_eq!(m.histogram_sum("regina_batch_requests", &replay), 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_beyond_the_label_cap_are_counted_as_other() {
    let (_b, api) = start_with(|c| c.metrics_queue_labels_max = 2).await;
    for queue in ["q1", "q2", "q3", "q4"] {
        api.push_one(queue, "Default", json!(1)).await;
    }
    api.push_one("q4", "Default", json!(2)).await;
    let m = Metrics::scrape(&api).await;
    let pushed = |queue| m.value("regina_messages_pushed_total", &[("queue", queue)]);
    assert_eq!(
        (pushed("q1"), pushed("q2"), pushed("_other")),
        (1.0, 1.0, 3.0)
    );
    let values = m.label_values();
    assert!(
        !values.contains("q3") && !values.contains("q4"),
        "{values:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_are_labelled_by_template_never_by_raw_path() {
    let (_b, api) = start().await;
    api.pop("secret-queue-7", "batch=1")
        .await
        .assert_empty("queue_not_found");
    let missing = format!("/api/v1/messages/{}/tx-123", uuid::Uuid::new_v4());
    assert_eq!(api.get(&missing).await.status, 404);
    assert_eq!(api.get("/api/v1/nope/123").await.status, 404);
    let odd = Method::from_bytes(b"BREW").unwrap();
    api.send(odd, "/api/v1/push", None, &[]).await;
    let m = Metrics::scrape(&api).await;
    let routes = m.label_values_of("regina_http_requests_total", "route");
    assert!(routes.contains("/api/v1/pop/queue/{queue}"), "{routes:?}");
    assert!(
        routes.contains("/api/v1/messages/{partitionId}/{transactionId}"),
        "{routes:?}"
    );
    assert!(routes.contains("unmatched"), "{routes:?}");
    for value in m.label_values() {
        assert!(
            !value.contains("secret-queue-7")
                && !value.contains("tx-123")
                && !value.contains("/nope"),
            "a raw path leaked into a label: {value}"
        );
    }
    let methods = m.label_values_of("regina_http_requests_total", "method");
    assert!(
        methods.contains("other") && !methods.contains("BREW"),
        "{methods:?}"
    );
}

/// Buckets in increasing bounds with non-decreasing counts, the last `+Inf` and equal to the
/// count, and a sum.
fn consistent(h: &HistogramValue) -> bool {
    let buckets = &h.buckets;
    buckets
        .windows(2)
        .all(|w| w[0].upper_bound < w[1].upper_bound && w[0].count.as_f64() <= w[1].count.as_f64())
        && buckets.last().is_some_and(|b| {
            b.upper_bound.is_infinite() && h.count.is_some_and(|c| c as f64 == b.count.as_f64())
        })
        && h.sum.as_ref().is_some_and(|s| s.as_f64() >= 0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_buckets_are_cumulative_and_end_with_the_count() {
    let (_b, api) = start().await;
    for n in 0..5 {
        api.push_one("h", "Default", json!(n)).await;
    }
    let pop = api.pop("h", "batch=5").await;
    api.ack_all(&pop).await;
    let m = Metrics::scrape(&api).await;
    let mut histograms = BTreeSet::new();
    for family in m.parsed.families.values() {
        for sample in family.iter_samples() {
            let PrometheusValue::Histogram(h) = &sample.value else {
                continue;
            };
            histograms.insert(family.family_name.clone());
            assert!(consistent(h), "{}: {h:?}", family.family_name);
        }
    }
    assert_eq!(
        histograms.len(),
        4,
        "the four histogram families: {histograms:?}"
    );
    assert_eq!(
        m.observations("regina_end_to_end_seconds", &[("queue", "h")]),
        5.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraping_is_exempt_from_the_inflight_limit() {
    let (b, api) = start_with(|c| c.http_inflight_max = 1).await;
    // A parked long-poll holds the only permit until shutdown answers it.
    let parked = {
        let api = api.clone();
        let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}");
        tokio::spawn(async move { api.pop("idle", &query).await })
    };
    api.wait_for_waiters(1).await;
    assert_eq!(api.get("/health").await.status, 503, "the limit is reached");
    let m = Metrics::scrape(&api).await;
    assert_eq!(m.value("regina_http_inflight_requests", &[]), 1.0);
    assert_eq!(m.value("regina_longpoll_waiters", &[]), 1.0);
    b.shutdown().await;
    parked.await.unwrap().assert_empty("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_gauges_report_depth_lag_and_dead_letters_of_the_last_stats_refresh() {
    let (_b, api) = start().await;
    api.configure("depth", json!({"retryLimit": 0})).await;
    api.push_to("depth", "p1", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("depth", "p2", &[json!(4)]).await;
    // Group g takes the first message of p1 and fails it: dead-lettered, so settled for g, the
    // only group the queue knows: depth and g's lag are both 3.
    let popped = api
        .pop_partition("depth", "p1", "consumerGroup=g&batch=1")
        .await
        .messages();
    api.ack_msg(&popped[0], "failed").await;
    api.refresh_stats().await;
    let m = Metrics::scrape(&api).await;
    assert_eq!(m.value("regina_queue_depth", &[("queue", "depth")]), 3.0);
    assert_eq!(m.value("regina_dlq_depth", &[("queue", "depth")]), 1.0);
    assert_eq!(
        m.value(
            "regina_consumer_lag_messages",
            &[("queue", "depth"), ("group", "g")]
        ),
        3.0
    );
    assert!(
        m.value(
            "regina_consumer_lag_seconds",
            &[("queue", "depth"), ("group", "g")]
        ) >= 0.0
    );
    // New work shows once a refresh has counted it.
    api.push_to("depth", "p2", &[json!(5)]).await;
    api.refresh_stats().await;
    assert_eq!(
        Metrics::scrape(&api)
            .await
            .value("regina_queue_depth", &[("queue", "depth")]),
        4.0
    );
}

/// streams-api.md §3.4: a cycle counts as a transaction does — its stored sink items in
/// `messages_pushed_total`, its ack in `messages_acked_total` (a cumulative `completed` ack once
/// per message it settled), its database call under `op="stream_cycle"`; a refused cycle counts
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_cycles_count_their_sink_items_and_acked_messages() {
    let (_b, api) = start().await;
    api.push_to("src", "p", &[json!(1), json!(2), json!(3)])
        .await;
    let registered = api
        .post(
            "/streams/v1/queries",
            &json!({"name": "q", "source_queue": "src", "config_hash": "h"}),
        )
        .await;
    let pop = api.pop("src", "batch=3").await;
    let last = &pop.messages()[2];
    let before = Metrics::scrape(&api).await;
    let cycle = |items: Value| {
        json!({"query_id": registered.body["query_id"], "partition_id": last["partitionId"],
               "push_items": items,
               "ack": {"transactionId": last["transactionId"], "leaseId": last["leaseId"]}})
    };
    let refused = api
        .post(
            "/streams/v1/cycle",
            &cycle(json!([{"queue": "sink", "payload": 1}, {"queue": "sink", "traceId": 5}])),
        )
        .await;
    assert_eq!(refused.status, 400, "{refused:?}");
    let r = api
        .post(
            "/streams/v1/cycle",
            &cycle(
                json!([{"queue": "sink", "payload": 1, "transactionId": "e"},
                         {"queue": "sink", "payload": 1, "transactionId": "e"}]),
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = Metrics::scrape(&api).await;
    let delta = |metric: &str, labels: &[(&str, &str)]| {
        m.value(metric, labels) - before.value(metric, labels)
    };
    assert_eq!(
        delta("regina_messages_pushed_total", &[("queue", "sink")]),
        1.0,
        "the duplicate is no push"
    );
    assert_eq!(
        delta(
            "regina_messages_acked_total",
            &[("queue", "src"), ("status", "completed")]
        ),
        3.0
    );
    let op = [("op", "stream_cycle")];
    assert_eq!(m.observations("regina_db_call_duration_seconds", &op), 1.0);
}

/// A push of one item to `queue` whose body is exactly `len` bytes long.
fn push_of_len(queue: &str, len: usize) -> Vec<u8> {
    let body = |pad: &str| format!(r#"{{"items":[{{"queue":"{queue}","payload":"{pad}"}}]}}"#);
    let pad = "x".repeat(len - body("").len());
    body(&pad).into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_hold_room_until_answered_and_one_beyond_the_budget_still_goes() {
    let (b, api) = start_with(|c| c.body_bytes_held_max = 1000).await;
    api.push_one("held", "Default", json!(0)).await;
    // Stores wait on this lock, so the first push holds its body while it waits.
    let mut db = b.db().await;
    let lock = db.transaction().await.unwrap();
    lock.batch_execute("lock table regina.messages in exclusive mode")
        .await
        .unwrap();
    let push = |len: usize| {
        let api = api.clone();
        tokio::spawn(async move {
            api.post_raw("/api/v1/push", &push_of_len("held", len))
                .await
        })
    };
    let first = push(600);
    eventually(&api, "the waiting push holds its body", |m| {
        m.value("regina_http_body_bytes_held", &[]) == 600.0
    })
    .await;
    // Larger than the whole budget: it waits for all of it, then is stored.
    let second = push(3000);
    lock.rollback().await.unwrap();
    assert_eq!(first.await.unwrap().status, 201);
    assert_eq!(second.await.unwrap().status, 201);
    eventually(&api, "answered bodies give their room back", |m| {
        m.value("regina_http_body_bytes_held", &[]) == 0.0
    })
    .await;
    assert_eq!(api.pop("held", "batch=10").await.messages().len(), 3);
}
