//! `regina pop` and `regina ack`: output shapes, leases, the empty exit status, long-polls.

use regina_testkit::{TestBroker, PARKED_POP_TIMEOUT_MS};
use serde_json::json;

use crate::support::{regina, spawn};

/// Exit status of a pop that found nothing.
const EXIT_EMPTY: i32 = 3;

#[tokio::test]
async fn pop_json_prints_the_answer_and_ack_completes_the_message() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("work", "p1", &[json!({"job": 1}), json!({"job": 2})])
        .await;

    let popped = regina(&broker, &["pop", "work", "--batch", "10", "--json"])
        .await
        .json();
    assert_eq!(popped["success"], true);
    assert_eq!(popped["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(popped["partition"], "p1");
    let messages = popped["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["data"], json!({"job": 1}));
    let lease = popped["leaseId"].as_str().unwrap();
    let partition_id = messages[0]["partitionId"].as_str().unwrap();

    for message in messages {
        let tx = message["transactionId"].as_str().unwrap();
        let acked = regina(&broker, &["ack", partition_id, tx, "--lease", lease]).await;
        assert!(acked
            .ok()
            .starts_with(&format!("acked {tx} completed (work/p1)")));
    }
    // The last ack ended the lease, and nothing is left.
    let again = regina(&broker, &["pop", "work"]).await;
    assert_eq!(again.status, EXIT_EMPTY, "{again:#?}");
    broker.shutdown().await;
}

#[tokio::test]
async fn ack_json_prints_the_result_array() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("work", "p1", &[json!(1)]).await;
    let popped = api.pop("work", "consumerGroup=g").await.body;
    let message = &popped["messages"][0];
    let run = regina(
        &broker,
        &[
            "ack",
            message["partitionId"].as_str().unwrap(),
            message["transactionId"].as_str().unwrap(),
            "--lease",
            message["leaseId"].as_str().unwrap(),
            "--group",
            "g",
            "--json",
        ],
    )
    .await;
    let results = run.json();
    assert_eq!(results[0]["success"], true, "{results}");
    assert_eq!(results[0]["leaseReleased"], true);
    assert_eq!(results[0]["queueName"], "work");
    broker.shutdown().await;
}

#[tokio::test]
async fn pop_prints_the_lease_and_a_table_of_messages() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("work", "p1", &[json!({"job": 7})]).await;
    let run = regina(&broker, &["pop", "work", "--group", "billing"]).await;
    let mut lines = run.ok().lines();
    let summary = lines.next().unwrap();
    assert!(
        summary.starts_with("lease ")
            && summary.contains("group billing  1 message from 1 partition"),
        "{run:#?}"
    );
    assert!(lines.next().unwrap().starts_with("PARTITION  PARTITION ID"));
    let row = lines.next().unwrap();
    assert!(
        row.starts_with("p1  ") && row.ends_with(r#"{"job":7}"#),
        "{row}"
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn pop_with_nothing_to_deliver_exits_with_the_empty_status() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let run = regina(&broker, &["pop", "absent", "--json"]).await;
    assert_eq!(run.status, EXIT_EMPTY, "{run:#?}");
    assert!(run.stdout.is_empty() && run.stderr.is_empty(), "{run:#?}");

    api.push_to("present", "p", &[json!(1)]).await;
    regina(&broker, &["pop", "present", "--auto-ack"])
        .await
        .ok();
    let run = regina(&broker, &["pop", "present"]).await;
    assert_eq!(run.status, EXIT_EMPTY, "{run:#?}");
    assert!(run.stderr.contains("nothing to pop (empty)"), "{run:#?}");
    broker.shutdown().await;
}

#[tokio::test]
async fn pop_wait_times_out_with_the_empty_status() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("idle", "p", &[json!(1)]).await;
    regina(&broker, &["pop", "idle", "--auto-ack"]).await.ok();
    let run = regina(&broker, &["pop", "idle", "--wait", "--timeout", "200"]).await;
    assert_eq!(run.status, EXIT_EMPTY, "{run:#?}");
    assert!(run.stderr.contains("(timeout)"), "{run:#?}");
    broker.shutdown().await;
}

/// The broker re-checks parked pops only on events and the timeout is far away: only the push
/// can answer the command's long-poll with the message.
#[tokio::test]
async fn pop_wait_returns_a_message_pushed_while_it_waits() {
    let broker = TestBroker::start_with(|c| c.longpoll_recheck_ms = 0).await;
    let api = broker.api();
    let timeout = PARKED_POP_TIMEOUT_MS.to_string();
    let child = spawn(
        &broker,
        &[
            "pop",
            "later",
            "--group",
            "g",
            "--wait",
            "--timeout",
            &timeout,
            "--json",
        ],
    );
    api.wait_for_waiters(1).await;
    api.push_to("later", "p", &[json!("hello")]).await;
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let popped: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(popped["messages"][0]["data"], "hello");
    assert_eq!(popped["consumerGroup"], "g");
    broker.shutdown().await;
}

#[tokio::test]
async fn pop_from_one_partition_takes_only_that_partition() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("parts", "a", &[json!("a1")]).await;
    api.push_to("parts", "b", &[json!("b1")]).await;
    let popped = regina(
        &broker,
        &[
            "pop",
            "parts",
            "--partition",
            "b",
            "--auto-ack",
            "--batch",
            "5",
            "--json",
        ],
    )
    .await
    .json();
    assert_eq!(popped["partition"], "b");
    assert_eq!(popped["leaseId"], "");
    assert_eq!(popped["messages"].as_array().unwrap().len(), 1);
    assert_eq!(popped["messages"][0]["data"], "b1");
    broker.shutdown().await;
}

#[tokio::test]
async fn ack_refused_by_the_broker_exits_1_with_its_error_code() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("work", "p1", &[json!(1)]).await;
    let popped = api.pop("work", "").await.body;
    let message = &popped["messages"][0];
    let partition_id = message["partitionId"].as_str().unwrap();
    let tx = message["transactionId"].as_str().unwrap();
    let wrong_lease = "01970000-0000-7000-8000-000000000000";

    let run = regina(&broker, &["ack", partition_id, tx, "--lease", wrong_lease]).await;
    run.assert_error("lease_expired");

    let run = regina(
        &broker,
        &["ack", partition_id, tx, "--lease", wrong_lease, "--json"],
    )
    .await;
    // The broker's result array still goes to stdout; the item's error goes to stderr.
    let results: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(results[0]["success"], false);
    let error = run.assert_json_error("lease_expired");
    assert_eq!(error["error"], "Invalid or expired lease");
    broker.shutdown().await;
}
