//! §3.10: consumer-group listings, detail, deletes and the subscription endpoint.

use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;

use crate::support::{assert_iso, db_now, enc, start, Api, Reply};

/// Makes every message of `queue`/`partition` `hours` older, so lag crosses the spec's
/// thresholds without waiting for it. Messages never change otherwise, so the stats refresh is
/// told to recount the partition.
async fn age(b: &regina_testkit::TestBroker, queue: &str, partition: &str, hours: i32) {
    b.db()
        .await
        .batch_execute(&format!(
            "update regina.messages m set created_at = m.created_at - make_interval(hours => {hours})
             from regina.partitions p join regina.queues q on q.id = p.queue_id
             where m.partition_id = p.id and q.name = '{queue}' and p.name = '{partition}';
             insert into regina.stats_dirty
             select p.id from regina.partitions p join regina.queues q on q.id = p.queue_id
             where q.name = '{queue}' and p.name = '{partition}'
             on conflict do nothing"
        ))
        .await
        .unwrap();
}

async fn groups(api: &Api, query: &str) -> Reply {
    let r = api.get(&format!("/api/v1/consumer-groups?{query}")).await;
    assert_eq!(r.status, 200, "{r:?}");
    r
}

/// The rows of a bare-array listing, checking `X-Total-Count` against `total`.
#[track_caller]
fn rows(r: &Reply, total: usize) -> Vec<Value> {
    assert_eq!(
        r.header("x-total-count"),
        Some(total.to_string().as_str()),
        "{r:?}"
    );
    r.body.as_array().expect("bare array").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_has_a_row_per_group_and_queue_with_lag_and_state() {
    let (b, api) = start().await;
    api.push_to("orders", "p1", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_to("orders", "p2", &[json!(4), json!(5)]).await;
    api.push_one("audit", "Default", json!(0)).await;
    // Queue mode consumes everything; billing one message; idle subscribes to new messages only.
    api.pop("orders", "batch=10&partitions=10&autoAck=true")
        .await;
    api.pop("orders", "consumerGroup=billing&autoAck=true")
        .await;
    api.pop("audit", "consumerGroup=billing&batch=10&autoAck=true")
        .await;
    api.pop("orders", "consumerGroup=idle&subscriptionMode=new")
        .await
        .assert_empty("empty");

    // Lag is that of the last stats refresh.
    api.refresh_stats().await;
    let all = rows(&groups(&api, "").await, 4);
    let names: Vec<(String, String)> = all
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().into(),
                r["queueName"].as_str().unwrap().into(),
            )
        })
        .collect();
    let pair = |g: &str, q: &str| (g.to_owned(), q.to_owned());
    assert_eq!(
        names,
        vec![
            pair("__QUEUE_MODE__", "orders"),
            pair("billing", "audit"),
            pair("billing", "orders"),
            pair("idle", "orders")
        ]
    );
    let billing = &all[2];
    assert_eq!(billing["topics"], json!(["orders"]));
    assert_eq!(billing["members"], 1, "one cursor: {billing}");
    assert_eq!(billing["partitionsWithLag"], 2);
    assert_eq!(billing["totalLag"], 4);
    assert_eq!(billing["state"], "Stable");
    assert_eq!(billing["subscriptionMode"], "all");
    assert_eq!(billing["subscriptionTimestamp"], Value::Null);
    assert_iso(&billing["subscriptionCreatedAt"], 3);
    assert!(billing["maxTimeLag"].as_u64().unwrap() < 60);
    let queue_mode = &all[0];
    assert_eq!(
        (&queue_mode["totalLag"], &queue_mode["partitionsWithLag"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(queue_mode["members"], 2);
    let idle = &all[3];
    assert_eq!(idle["state"], "Dead", "{idle}");
    assert_eq!(idle["members"], 0);
    assert_eq!(idle["subscriptionMode"], "new");
    assert_iso(&idle["subscriptionTimestamp"], 3);

    // Paging keeps the unpaged count; an old head makes a group Lagging.
    // maxTimeLag is the head's age now: it may have grown by a second between the two calls.
    let without_age = |row: &Value| {
        let mut row = row.clone();
        row.as_object_mut().unwrap().remove("maxTimeLag");
        row
    };
    let page = rows(&groups(&api, "limit=1&offset=2").await, 4);
    assert_eq!(page.len(), 1);
    assert_eq!(without_age(&page[0]), without_age(billing));
    assert!(page[0]["maxTimeLag"].as_u64().unwrap() < 60);
    age(&b, "orders", "p2", 1).await;
    api.refresh_stats().await;
    let lagging = rows(&groups(&api, "").await, 4);
    assert_eq!(lagging[2]["state"], "Lagging");
    assert!(lagging[2]["maxTimeLag"].as_u64().unwrap() >= 3_600);
    assert_eq!(
        lagging[3]["state"], "Dead",
        "idle starts after those messages"
    );
    for bad in ["limit=0", "limit=10001", "offset=-1"] {
        let r = api.get(&format!("/api/v1/consumer-groups?{bad}")).await;
        r.assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_lists_partitions_with_old_heads_largest_lag_first() {
    let (b, api) = start().await;
    api.push_to("q", "p1", &[json!(1), json!(2)]).await;
    api.push_one("q", "p2", json!(3)).await;
    api.push_one("q", "fresh", json!(4)).await;
    let leased = api.pop_partition("q", "p1", "consumerGroup=g").await;
    age(&b, "q", "p1", 3).await;
    age(&b, "q", "p2", 2).await;
    age(&b, "q", "p3", 1).await;
    api.refresh_stats().await;

    let r = api.get("/api/v1/consumer-groups/lagging").await;
    assert_eq!(r.status, 200, "{r:?}");
    let all = rows(&r, 2);
    assert_eq!(all[0]["partition_name"], "p1");
    assert_eq!(all[0]["consumer_group"], "g");
    assert_eq!(all[0]["queue_name"], "q");
    assert_eq!(all[0]["partition_id"], leased.body["partitionId"]);
    assert_eq!(all[0]["worker_id"], leased.body["leaseId"]);
    assert_eq!(all[0]["offset_lag"], 2);
    let seconds = all[0]["time_lag_seconds"].as_u64().unwrap();
    assert!((10_800..10_900).contains(&seconds), "{seconds}");
    assert_eq!(all[0]["lag_hours"], 3.0);
    assert_iso(&all[0]["oldest_unconsumed_at"], 3);
    assert_eq!(all[0]["last_consumed_at"], Value::Null);
    assert_eq!(
        (
            &all[1]["partition_name"],
            &all[1]["worker_id"],
            &all[1]["offset_lag"]
        ),
        (&json!("p2"), &Value::Null, &json!(1)),
        "a partition the group never claimed lags from its subscription start"
    );

    let strict = api
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=9000")
        .await;
    assert_eq!(rows(&strict, 1)[0]["partition_name"], "p1");
    // An hour leaves out `fresh` however long this test takes, and keeps p1 (3 h) and p2 (2 h).
    let paged = api
        .get("/api/v1/consumer-groups/lagging?limit=1&offset=1&minLagSeconds=3600")
        .await;
    assert_eq!(rows(&paged, 2)[0]["partition_name"], "p2");
    let bad = api
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=soon")
        .await;
    bad.assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_detail_shows_each_partition_with_a_cursor_by_queue() {
    let (_b, api) = start().await;
    api.push_to("q", "p1", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_one("q", "p2", json!(4)).await;
    api.push_one("other", "Default", json!(5)).await;
    let leased = api
        .pop_partition("q", "p1", "consumerGroup=g&batch=2")
        .await;
    api.ack_msg(&leased.messages()[0], "completed").await;
    api.pop("other", "consumerGroup=g&autoAck=true").await;

    let r = api.get("/api/v1/consumer-groups/g").await;
    assert_eq!(r.status, 200, "{r:?}");
    let p1 = &r.body["q"]["partitions"][0];
    assert_eq!(p1["partition"], "p1");
    assert_eq!(p1["workerId"], leased.body["leaseId"]);
    assert_eq!(p1["leaseActive"], true);
    assert_eq!(p1["totalConsumed"], 1);
    assert_eq!(p1["offsetLag"], 2);
    assert_iso(&p1["lastConsumedAt"], 3);
    assert!(p1["timeLagSeconds"].as_u64().unwrap() < 60);
    assert_eq!(
        r.body["q"]["partitions"].as_array().unwrap().len(),
        1,
        "p2 has no cursor of g: {r:?}"
    );
    let other = &r.body["other"]["partitions"][0];
    assert_eq!(
        (
            &other["offsetLag"],
            &other["workerId"],
            &other["leaseActive"]
        ),
        (&json!(0), &Value::Null, &json!(false))
    );

    let unknown = api.get("/api/v1/consumer-groups/nobody").await;
    assert_eq!((unknown.status, &unknown.body), (200, &json!({})));
    // A literal segment beats the parameter; an encoded one is a group name.
    let literal = api.get("/api/v1/consumer-groups/lagging").await;
    assert!(literal.body.is_array(), "{literal:?}");
    let named = api.get("/api/v1/consumer-groups/%6Cagging").await;
    assert_eq!(named.body, json!({}));
    let bad = api
        .get(&format!("/api/v1/consumer-groups/{}", enc("a\u{1}")))
        .await;
    bad.assert_error(400, "invalid_parameter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_detail_pages_partitions_per_queue_with_figures_over_all_of_them() {
    let (b, api) = start().await;
    // p1 lags by 1 message, p2 by 3 (2 hours old), p3 by 2 (1 hour old); p4 is caught up.
    api.push_to("q", "p1", &[json!(1), json!(2)]).await;
    api.push_to("q", "p2", &[json!(1), json!(2), json!(3), json!(4)])
        .await;
    api.push_to("q", "p3", &[json!(1), json!(2), json!(3)])
        .await;
    api.push_one("q", "p4", json!(1)).await;
    api.push_one("other", "Default", json!(1)).await;
    for partition in ["p1", "p2", "p3", "p4"] {
        api.pop_partition("q", partition, "consumerGroup=g&batch=1&autoAck=true")
            .await;
    }
    let held = api
        .pop_partition("q", "p3", "consumerGroup=g&batch=1")
        .await;
    assert_eq!(held.messages().len(), 1, "{held:?}");
    api.pop("other", "consumerGroup=g&autoAck=true").await;
    age(&b, "q", "p2", 2).await;

    let names = |r: &Reply, queue: &str| -> Vec<String> {
        r.body[queue]["partitions"]
            .as_array()
            .unwrap_or_else(|| panic!("{r:?}"))
            .iter()
            .map(|p| p["partition"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = api.get("/api/v1/consumer-groups/g").await;
    assert_eq!(all.status, 200, "{all:?}");
    assert_eq!(names(&all, "q"), ["p1", "p2", "p3", "p4"]);
    // Figures cover every partition of the queue, whatever the page.
    let figures = |r: &Reply| {
        let q = &r.body["q"];
        (
            q["total"].clone(),
            q["totalLag"].clone(),
            q["leased"].clone(),
        )
    };
    assert_eq!(figures(&all), (json!(4), json!(6), json!(1)), "{all:?}");
    assert!(
        all.body["q"]["maxTimeLag"].as_u64().unwrap() >= 7_200,
        "{all:?}"
    );
    assert_eq!(all.body["other"]["total"], 1);

    let page = api.get("/api/v1/consumer-groups/g?limit=2&offset=1").await;
    assert_eq!(names(&page, "q"), ["p2", "p3"]);
    assert_eq!(figures(&page), figures(&all));
    // An offset past a queue's partitions leaves its figures and an empty page.
    let past = api.get("/api/v1/consumer-groups/g?offset=1").await;
    assert_eq!(past.body["other"]["partitions"], json!([]), "{past:?}");
    assert_eq!(past.body["other"]["total"], 1);

    let by_lag = api.get("/api/v1/consumer-groups/g?sort=lag&limit=3").await;
    assert_eq!(names(&by_lag, "q"), ["p2", "p3", "p1"], "{by_lag:?}");

    let one = api.get("/api/v1/consumer-groups/g?queue=other").await;
    assert_eq!(
        one.body.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["other"]
    );
    let none = api.get("/api/v1/consumer-groups/g?queue=nowhere").await;
    assert_eq!((none.status, &none.body), (200, &json!({})));

    for bad in [
        "limit=0",
        "limit=10001",
        "offset=-1",
        "sort=size",
        "queue=a%01",
    ] {
        api.get(&format!("/api/v1/consumer-groups/g?{bad}"))
            .await
            .assert_error(400, "invalid_parameter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_group_ends_its_leases_and_keeps_or_drops_its_start() {
    let (b, api) = start().await;
    let first = api.push_one("q", "Default", json!("m1")).await;
    let from = db_now(&b).await.format(&Rfc3339).unwrap();
    api.push_to("q", "Default", &[json!("m2"), json!("m3")])
        .await;
    // g starts after m1; it dead-letters m2 and holds m3.
    let subscribe = format!("consumerGroup=g&subscriptionFrom={}", enc(&from));
    let held = api
        .pop("q", &format!("{subscribe}&batch=2"))
        .await
        .messages();
    assert_eq!(held[0]["data"], "m2", "{held:?}");
    api.ack_msg(&held[0], "dlq").await;

    let kept = api
        .send(
            reqwest::Method::DELETE,
            "/api/v1/consumer-groups/g?deleteMetadata=false",
            None,
            &[],
        )
        .await;
    assert_eq!(kept.status, 200, "{kept:?}");
    assert_eq!(
        kept.body,
        json!({"success": true, "consumerGroup": "g", "deletedPartitions": 1,
               "metadataDeleted": false})
    );
    assert_eq!(
        api.ack_msg(&held[1], "completed").await["code"],
        "lease_expired"
    );
    let again = api.pop("q", "consumerGroup=g&batch=10&autoAck=true").await;
    assert_eq!(
        again.data(),
        vec![json!("m2"), json!("m3")],
        "from the kept start"
    );

    let dropped = api
        .send(
            reqwest::Method::DELETE,
            "/api/v1/consumer-groups/g",
            None,
            &[],
        )
        .await;
    assert_eq!(dropped.body["metadataDeleted"], true, "{dropped:?}");
    assert_eq!(dropped.body["deletedPartitions"], 1);
    assert!(rows(&groups(&api, "").await, 0).is_empty(), "g is gone");
    assert_eq!(
        api.dlq("consumerGroup=g").await.body["total"],
        1,
        "dead letters stay"
    );
    let fresh = api.pop("q", "consumerGroup=g&batch=10&autoAck=true").await;
    assert_eq!(
        fresh.messages()[0]["id"],
        first["message_id"],
        "starts afresh from the beginning"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_group_on_one_queue_leaves_its_other_queues() {
    let (_b, api) = start().await;
    api.push_one("q1", "Default", json!(1)).await;
    api.push_one("q2", "Default", json!(2)).await;
    let on_q1 = api.pop("q1", "consumerGroup=g").await.messages()[0].clone();
    let on_q2 = api.pop("q2", "consumerGroup=g").await.messages()[0].clone();

    let path = "/api/v1/consumer-groups/g/queues/q1";
    let r = api.send(reqwest::Method::DELETE, path, None, &[]).await;
    assert_eq!(
        r.body,
        json!({"success": true, "consumerGroup": "g", "queueName": "q1",
               "deletedPartitions": 1, "metadataDeleted": true})
    );
    assert_eq!(
        api.ack_msg(&on_q1, "completed").await["code"],
        "lease_expired"
    );
    assert_eq!(api.ack_msg(&on_q2, "completed").await["success"], true);
    let detail = api.get("/api/v1/consumer-groups/g").await;
    assert!(
        detail.body.get("q1").is_none() && detail.body.get("q2").is_some(),
        "{detail:?}"
    );
    let unknown = api
        .send(
            reqwest::Method::DELETE,
            "/api/v1/consumer-groups/g/queues/nope",
            None,
            &[],
        )
        .await;
    assert_eq!(unknown.body["deletedPartitions"], 0, "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_endpoint_moves_the_start_of_partitions_without_a_cursor() {
    let (_b, api) = start().await;
    api.push_one("q", "p1", json!(1)).await;
    api.push_one("q", "p2", json!(2)).await;
    api.pop("q", "consumerGroup=g&subscriptionMode=new")
        .await
        .assert_empty("empty");
    api.pop("q", "consumerGroup=__QUEUE_MODE__&autoAck=true")
        .await;

    let path = "/api/v1/consumer-groups/g/subscription";
    let r = api
        .post(path, &json!({"subscriptionTimestamp": "2000-01-01"}))
        .await;
    assert_eq!(
        r.body,
        json!({"success": true, "consumerGroup": "g",
               "newTimestamp": "2000-01-01T00:00:00.000Z", "rowsUpdated": 1})
    );
    let replayed = api
        .pop("q", "consumerGroup=g&batch=10&partitions=10&autoAck=true")
        .await;
    let mut data = replayed.data();
    data.sort_by_key(|v| v.as_i64());
    assert_eq!(data, vec![json!(1), json!(2)]);
    let listed = rows(&groups(&api, "").await, 2);
    assert_eq!(listed[1]["subscriptionMode"], "timestamp");
    assert_eq!(
        listed[1]["subscriptionTimestamp"],
        "2000-01-01T00:00:00.000Z"
    );

    // Cursors keep their place; queue mode ignores subscription settings.
    let again = api
        .post(
            path,
            &json!({"subscriptionTimestamp": "2000-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(again.body["rowsUpdated"], 1);
    api.pop("q", "consumerGroup=g&partitions=10")
        .await
        .assert_empty("empty");
    let queue_mode = api
        .post(
            "/api/v1/consumer-groups/__QUEUE_MODE__/subscription",
            &json!({"subscriptionTimestamp": "2000-01-01"}),
        )
        .await;
    assert_eq!(queue_mode.body["rowsUpdated"], 0, "{queue_mode:?}");
    for body in [
        json!({}),
        json!({"subscriptionTimestamp": "soon"}),
        json!({"subscriptionTimestamp": 5}),
    ] {
        api.post(path, &body)
            .await
            .assert_error(400, "validation_failed");
    }
}
