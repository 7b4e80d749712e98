//! `regina tail`: follows a queue, prints one line per message, stops cleanly on Ctrl-C.

use regina_testkit::{TestBroker, DEADLINE};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::support::{interrupt, spawn};

/// The next `n` lines of a running tail.
async fn read_lines(lines: &mut Lines<BufReader<ChildStdout>>, n: usize) -> Vec<String> {
    let mut read = Vec::new();
    while read.len() < n {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line after {read:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("tail ended after {read:?}"));
        read.push(line);
    }
    read
}

/// Interrupts a tail as Ctrl-C would and asserts it stops cleanly (exit status 0).
async fn stop(mut child: Child) {
    interrupt(&child).await;
    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("tail did not stop on SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(0), "tail must stop cleanly");
}

fn stdout_lines(child: &mut Child) -> Lines<BufReader<ChildStdout>> {
    BufReader::new(child.stdout.take().unwrap()).lines()
}

#[tokio::test]
async fn tail_prints_new_messages_as_ndjson_without_consuming_them() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("events", "a", &[json!("before")]).await;
    let mut child = spawn(&broker, &["tail", "events", "--json"]);
    let mut lines = stdout_lines(&mut child);
    // Its long-poll is parked: the tail's own group is subscribed.
    api.wait_for_waiters(1).await;
    api.push_to("events", "a", &[json!({"n": 1}), json!({"n": 2})])
        .await;
    api.push_to("events", "b", &[json!({"n": 3})]).await;

    let printed: Vec<Value> = read_lines(&mut lines, 3)
        .await
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut data: Vec<Value> = printed.iter().map(|m| m["data"].clone()).collect();
    data.sort_by_key(|d| d["n"].as_i64());
    assert_eq!(
        data,
        vec![json!({"n": 1}), json!({"n": 2}), json!({"n": 3})]
    );
    for message in &printed {
        assert_eq!(message["queue"], "events");
        assert!(message["consumerGroup"]
            .as_str()
            .unwrap()
            .starts_with("regina-tail-"));
        assert!(message["transactionId"].is_string() && message["createdAt"].is_string());
    }
    stop(child).await;

    // The tail took nothing from queue mode: all four messages are still there.
    let popped = api.pop("events", "batch=10&partitions=2").await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let body = popped.body;
    assert_eq!(body["messages"].as_array().unwrap().len(), 4, "{body}");
    broker.shutdown().await;
}

#[tokio::test]
async fn tail_with_a_group_acks_what_it_prints() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    api.push_to("jobs", "p", &[json!("one"), json!("two"), json!("three")])
        .await;
    let mut child = spawn(&broker, &["tail", "jobs", "--group", "workers"]);
    let mut lines = stdout_lines(&mut child);
    let printed = read_lines(&mut lines, 3).await;
    for (line, word) in printed.iter().zip(["one", "two", "three"]) {
        let fields: Vec<&str> = line.split("  ").collect();
        assert_eq!(fields.len(), 4, "{line}");
        assert_eq!(fields[1], "jobs/p");
        assert_eq!(fields[3], format!("\"{word}\""));
    }
    // Printed, then acked before the next pop: once it waits again, the group has nothing left.
    api.wait_for_waiters(1).await;
    stop(child).await;
    let popped = api.pop("jobs", "consumerGroup=workers").await;
    assert_eq!(
        popped.status, 204,
        "the group's messages were acked: {popped:?}"
    );
    // Another group still gets them all.
    let popped = api.pop("jobs", "consumerGroup=others&batch=10").await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let body = popped.body;
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
    broker.shutdown().await;
}

#[tokio::test]
async fn tail_of_a_queue_that_does_not_exist_yet_shows_its_first_message() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let mut child = spawn(&broker, &["tail", "fresh", "--json"]);
    let mut lines = stdout_lines(&mut child);
    api.wait_for_waiters(1).await;
    api.push_to("fresh", "p", &[json!("first")]).await;
    let printed = read_lines(&mut lines, 1).await;
    let message: Value = serde_json::from_str(&printed[0]).unwrap();
    assert_eq!(message["data"], "first");
    stop(child).await;
    broker.shutdown().await;
}

#[tokio::test]
async fn tail_stops_cleanly_on_ctrl_c_while_it_waits() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let mut child = spawn(&broker, &["tail", "quiet", "--group", "g"]);
    api.wait_for_waiters(1).await;
    let mut stdout = child.stdout.take().unwrap();
    stop(child).await;
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut rest)
        .await
        .unwrap();
    assert!(
        rest.is_empty(),
        "nothing was pushed, nothing printed: {rest}"
    );
    broker.shutdown().await;
}
