//! `regina dlq` and `regina dlq requeue`.

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use crate::support::regina;

/// Pushes one message to `queue` (retryLimit 0), pops it in queue mode and fails it with the
/// CLI, so it is dead-lettered at once. Returns the delivered message.
async fn dead_letter(broker: &TestBroker, queue: &str, payload: Value) -> Value {
    let api = broker.api();
    api.configure(queue, json!({"retryLimit": 0})).await;
    api.push_to(queue, "p1", &[payload]).await;
    let popped = api.pop(queue, "").await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let message = popped.messages()[0].clone();
    let run = regina(
        broker,
        &[
            "ack",
            message["partitionId"].as_str().unwrap(),
            message["transactionId"].as_str().unwrap(),
            "--lease",
            message["leaseId"].as_str().unwrap(),
            "--status",
            "failed",
            "--error",
            "boom",
        ],
    )
    .await;
    assert!(run.ok().contains("failed"), "{run:#?}");
    message
}

#[tokio::test]
async fn dlq_json_lists_a_message_failed_past_its_retry_limit() {
    let broker = TestBroker::start().await;
    let message = dead_letter(&broker, "jobs", json!({"job": 9})).await;
    let listed = regina(&broker, &["dlq", "--queue", "jobs", "--json"])
        .await
        .json();
    assert_eq!(listed["total"], 1, "{listed}");
    let entry = &listed["messages"][0];
    assert_eq!(entry["transactionId"], message["transactionId"]);
    assert_eq!(entry["partitionId"], message["partitionId"]);
    assert_eq!(entry["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(entry["errorMessage"], "boom");
    assert_eq!(entry["data"], json!({"job": 9}));

    // Filters reach the broker: another group has no dead letters.
    let other = regina(
        &broker,
        &["dlq", "--queue", "jobs", "--group", "other", "--json"],
    )
    .await
    .json();
    assert_eq!(other["total"], 0, "{other}");
    broker.shutdown().await;
}

#[tokio::test]
async fn dlq_prints_a_table_of_dead_letters() {
    let broker = TestBroker::start().await;
    let message = dead_letter(&broker, "jobs", json!("x")).await;
    let run = regina(&broker, &["dlq"]).await;
    let mut lines = run.ok().lines();
    assert!(lines.next().unwrap().starts_with("FAILED AT"), "{run:#?}");
    let row = lines.next().unwrap();
    let tx = message["transactionId"].as_str().unwrap();
    assert!(
        row.contains("jobs") && row.contains("__QUEUE_MODE__") && row.contains(tx),
        "{row}"
    );
    assert!(row.contains("boom"), "{row}");
    assert_eq!(lines.next(), None);
    broker.shutdown().await;
}

/// Needs `POST /api/v1/messages/:partitionId/:transactionId/retry` (http-api.md §3.9).
#[tokio::test]
async fn dlq_requeue_delivers_the_message_again() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let message = dead_letter(&broker, "jobs", json!({"job": 3})).await;
    let partition_id = message["partitionId"].as_str().unwrap();
    let tx = message["transactionId"].as_str().unwrap();

    let answer = regina(&broker, &["dlq", "requeue", partition_id, tx, "--json"])
        .await
        .json();
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["consumerGroups"], json!(["__QUEUE_MODE__"]));

    let popped = api.pop("jobs", "").await;
    assert_eq!(
        popped.status, 200,
        "the requeued message is delivered again"
    );
    assert_eq!(popped.body["messages"][0]["transactionId"], tx);
    assert_eq!(popped.body["messages"][0]["data"], json!({"job": 3}));

    // No longer in the DLQ: a second requeue is refused.
    let run = regina(&broker, &["dlq", "requeue", partition_id, tx]).await;
    run.assert_error("not_in_dlq");
    broker.shutdown().await;
}
