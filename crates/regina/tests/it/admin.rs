//! `regina queues`, `queue`, `groups`, `seek`, and the clean-up of `tail`. They need the
//! resources endpoints (http-api.md §3.8) and the consumer-group endpoints (http-api.md §3.10).

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use crate::support::{interrupt, regina, spawn};

/// Exit status of a pop that found nothing.
const EXIT_EMPTY: i32 = 3;

#[tokio::test]
async fn queues_json_lists_queues_with_counts_and_filters() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("billing.invoices", "a", &[json!(1), json!(2)])
        .await;
    api.push_to("billing.invoices", "b", &[json!(3)]).await;
    api.push_to("shipping.labels", "a", &[json!(4)]).await;
    api.refresh_stats().await;

    let listed = regina(&broker, &["queues", "--json"]).await.json();
    let names: Vec<&str> = listed["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["billing.invoices", "shipping.labels"]);
    let invoices = &listed["queues"][0];
    assert_eq!(invoices["namespace"], "billing");
    assert_eq!(invoices["task"], "invoices");
    assert_eq!(invoices["partitions"], 2);
    assert_eq!(invoices["messages"]["total"], 3);
    assert_eq!(listed["pagination"]["total"], 2);

    let filtered = regina(&broker, &["queues", "--namespace", "shipping", "--json"])
        .await
        .json();
    assert_eq!(filtered["queues"].as_array().unwrap().len(), 1);
    assert_eq!(filtered["queues"][0]["name"], "shipping.labels");
    let searched = regina(&broker, &["queues", "--search", "invoice", "--json"])
        .await
        .json();
    assert_eq!(searched["queues"][0]["name"], "billing.invoices");
    assert_eq!(searched["queues"].as_array().unwrap().len(), 1);
    broker.shutdown().await;
}

#[tokio::test]
async fn queues_prints_a_table() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("orders", "a", &[json!(1)]).await;
    let run = regina(&broker, &["queues"]).await;
    let mut lines = run.ok().lines();
    assert!(lines.next().unwrap().starts_with("NAME"), "{run:#?}");
    assert!(lines.next().unwrap().starts_with("orders  "), "{run:#?}");
    broker.shutdown().await;
}

#[tokio::test]
async fn queue_shows_options_and_partitions() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.configure("orders", json!({"leaseTime": 42})).await;
    api.push_to("orders", "c7", &[json!(1), json!(2)]).await;
    api.refresh_stats().await;

    let detail = regina(&broker, &["queue", "orders", "--json"]).await.json();
    assert_eq!(detail["name"], "orders");
    assert_eq!(detail["options"]["leaseTime"], 42);
    let partitions: Vec<&Value> = detail["partitions"].as_array().unwrap().iter().collect();
    let c7 = partitions
        .iter()
        .find(|p| p["name"] == "c7")
        .expect("partition c7 listed");
    assert_eq!(c7["stats"]["total"], 2);

    let run = regina(&broker, &["queue", "orders"]).await;
    assert!(run.ok().contains("leaseTime=42"), "{run:#?}");
    assert!(run.ok().lines().any(|l| l.starts_with("c7  ")), "{run:#?}");
    broker.shutdown().await;
}

#[tokio::test]
async fn queue_of_an_unknown_name_is_queue_not_found() {
    let broker = TestBroker::start().await;
    let run = regina(&broker, &["queue", "nope"]).await;
    run.assert_error("queue_not_found");
    assert!(run.stderr.contains("404"), "{run:#?}");
    regina(&broker, &["queue", "nope", "--json"])
        .await
        .assert_json_error("queue_not_found");
    broker.shutdown().await;
}

#[tokio::test]
async fn groups_lists_groups_and_shows_one() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("orders", "p1", &[json!(1), json!(2)]).await;
    let popped = api.pop("orders", "consumerGroup=billing").await;
    assert_eq!(popped.status, 200, "{popped:?}");

    let listed = regina(&broker, &["groups", "--json"]).await.json();
    let billing = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "billing")
        .unwrap_or_else(|| panic!("billing listed: {listed}"));
    assert_eq!(billing["queueName"], "orders");

    let detail = regina(&broker, &["groups", "billing", "--json"])
        .await
        .json();
    let partitions = detail["orders"]["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 1, "{detail}");
    assert_eq!(partitions[0]["partition"], "p1");
    assert_eq!(partitions[0]["leaseActive"], true);

    let run = regina(&broker, &["groups"]).await;
    assert!(
        run.ok().lines().any(|l| l.starts_with("billing  orders")),
        "{run:#?}"
    );
    let run = regina(&broker, &["groups", "billing"]).await;
    assert!(
        run.ok().lines().any(|l| l.starts_with("orders  p1")),
        "{run:#?}"
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn seek_to_end_skips_what_was_pushed() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("orders", "p1", &[json!(1), json!(2)]).await;
    api.push_to("orders", "p2", &[json!(3)]).await;

    let answer = regina(
        &broker,
        &["seek", "billing", "orders", "--to-end", "--json"],
    )
    .await
    .json();
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["seekToEnd"], true);
    assert_eq!(answer["partitionsUpdated"], 2);
    let empty = regina(&broker, &["pop", "orders", "--group", "billing"]).await;
    assert_eq!(empty.status, EXIT_EMPTY, "{empty:#?}");

    api.push_to("orders", "p1", &[json!("after")]).await;
    let popped = regina(&broker, &["pop", "orders", "--group", "billing", "--json"])
        .await
        .json();
    assert_eq!(popped["messages"][0]["data"], "after");
    broker.shutdown().await;
}

#[tokio::test]
async fn seek_one_partition_to_a_timestamp() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("orders", "p1", &[json!(1)]).await;
    let popped = api
        .pop("orders", "consumerGroup=billing&autoAck=true")
        .await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let empty = regina(&broker, &["pop", "orders", "--group", "billing"]).await;
    assert_eq!(empty.status, EXIT_EMPTY, "consumed: {empty:#?}");
    let run = regina(
        &broker,
        &[
            "seek",
            "billing",
            "orders",
            "--partition",
            "p1",
            "--timestamp",
            "2000-01-01",
        ],
    )
    .await;
    assert!(
        run.ok()
            .starts_with("group billing on queue orders: moved to 2000-01-01 (partition p1)"),
        "{run:#?}"
    );
    // Back before every message: the group gets the consumed message again.
    let popped = regina(&broker, &["pop", "orders", "--group", "billing", "--json"])
        .await
        .json();
    assert_eq!(popped["messages"][0]["data"], 1);

    let run = regina(&broker, &["seek", "billing", "nope", "--to-end", "--json"]).await;
    run.assert_json_error("queue_not_found");
    broker.shutdown().await;
}

#[tokio::test]
async fn tail_removes_its_throw_away_group_when_it_stops() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("events", "p", &[json!(1)]).await;
    let child = spawn(&broker, &["tail", "events"]);
    api.wait_for_waiters(1).await;
    let tail_groups = |groups: &Value| -> usize {
        groups
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["name"].as_str().unwrap().starts_with("regina-tail-"))
            .count()
    };
    let groups = api.get("/api/v1/consumer-groups").await.body;
    assert_eq!(
        tail_groups(&groups),
        1,
        "the tail's group while it runs: {groups}"
    );
    interrupt(&child).await;
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let groups = api.get("/api/v1/consumer-groups").await.body;
    assert_eq!(tail_groups(&groups), 0, "left behind: {groups}");
    broker.shutdown().await;
}
