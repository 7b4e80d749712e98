//! `regina push`: payload sources, exact payloads, output shapes.

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use tokio::net::TcpListener;

use crate::support::{answer_once, regina, regina_at, regina_with_input};

#[tokio::test]
async fn push_json_prints_the_brokers_result_array() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let run = regina(
        &broker,
        &[
            "push",
            "orders",
            r#"{"n":1}"#,
            "--partition",
            "c7",
            "--transaction-id",
            "o-1",
            "--trace-id",
            "t-1",
            "--json",
        ],
    )
    .await;
    let results = run.json();
    let results = results.as_array().expect("an array");
    assert_eq!(results.len(), 1, "{results:?}");
    let item = &results[0];
    assert_eq!(item["index"], 0);
    assert_eq!(item["status"], "queued");
    assert_eq!(item["transaction_id"], "o-1");
    assert_eq!(item["trace_id"], "t-1");
    assert_eq!(item["queueName"], "orders");
    assert!(item["message_id"].is_string() && item["partition_id"].is_string());

    let popped = api.pop("orders", "batch=10").await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let body = popped.body;
    let message = &body["messages"][0];
    assert_eq!(message["data"], json!({"n": 1}));
    assert_eq!(message["partition"], "c7");
    assert_eq!(message["traceId"], "t-1");
    assert_eq!(message["id"], item["message_id"]);
    broker.shutdown().await;
}

#[tokio::test]
async fn push_prints_a_table_of_results_and_reports_duplicates() {
    let broker = TestBroker::start().await;
    let args = ["push", "orders", "2", "--transaction-id", "dup-1"];
    let first = regina(&broker, &args).await;
    let second = regina(&broker, &args).await;
    let header = first.ok().lines().next().unwrap();
    assert!(
        header.starts_with("STATUS") && header.contains("MESSAGE ID"),
        "{first:#?}"
    );
    assert!(first.ok().contains("queued") && first.ok().contains("dup-1"));
    assert!(second.ok().contains("duplicate"), "{second:#?}");
    broker.shutdown().await;
}

#[tokio::test]
async fn push_lines_sends_one_message_per_line_in_order() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let input = "{\"n\":1}\n\n[2]\n\"three\"\n4\r\n{\"n\":5}";
    // Two lines per request: three requests, so three result arrays.
    let run = regina_with_input(
        &broker,
        &["push", "lines", "--lines", "--batch", "2", "--json"],
        input,
    )
    .await;
    let arrays: Vec<Value> = run
        .ok()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sizes: Vec<usize> = arrays.iter().map(|a| a.as_array().unwrap().len()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 5, "{run:#?}");
    assert!(sizes.iter().all(|&n| n <= 2), "{sizes:?}");

    let popped = api.pop("lines", "batch=10").await;
    assert_eq!(popped.status, 200, "{popped:?}");
    let body = popped.body;
    let data: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["data"].clone())
        .collect();
    assert_eq!(
        data,
        vec![
            json!({"n": 1}),
            json!([2]),
            json!("three"),
            json!(4),
            json!({"n": 5})
        ]
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn push_raw_sends_text_as_a_json_string() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    regina(&broker, &["push", "raw", "--raw", "not {json}"])
        .await
        .ok();
    // A whole stdin: one trailing newline is dropped, inner ones are kept.
    regina_with_input(&broker, &["push", "raw", "--raw"], "two\nlines\n")
        .await
        .ok();
    regina_with_input(&broker, &["push", "raw", "--raw", "--lines"], "a b\nc\n")
        .await
        .ok();
    let body = api.pop("raw", "batch=10").await.body;
    let data: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["data"].clone())
        .collect();
    assert_eq!(
        data,
        vec![
            json!("not {json}"),
            json!("two\nlines"),
            json!("a b"),
            json!("c")
        ]
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn push_reads_the_payload_from_a_file() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let dir = std::env::temp_dir().join(format!("regina-cli-{}", unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("payload.json");
    std::fs::write(&file, "{\n  \"from\": \"file\"\n}\n").unwrap();
    let run = regina(
        &broker,
        &["push", "files", "--file", file.to_str().unwrap()],
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
    run.ok();
    let body = api.pop("files", "").await.body;
    assert_eq!(body["messages"][0]["data"], json!({"from": "file"}));
    broker.shutdown().await;
}

#[tokio::test]
async fn push_sends_the_payload_text_exactly_as_given() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = r#"[{"index":0,"transaction_id":"t","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"exact"}]"#;
    let server = tokio::spawn(answer_once(listener, "201 Created", answer));
    // Beyond f64 and u64, with its own spacing: parsing and re-writing it would change it.
    let payload = r#"{"big": 123456789012345678901234567890, "f": 1.50}"#;
    let run = regina_at(&url, &["push", "exact", payload, "--json"]).await;
    assert_eq!(run.ok().trim(), answer, "the broker's answer, verbatim");
    let (head, body) = server.await.unwrap();
    assert!(head.starts_with("POST /api/v1/push HTTP/1.1"), "{head}");
    let sent: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(sent["items"][0]["queue"], "exact");
    assert!(body.contains(payload), "payload changed on the way: {body}");
}

#[tokio::test]
async fn push_rejects_a_payload_that_is_not_json_and_sends_nothing() {
    let broker = TestBroker::start().await;
    let api = broker.api();
    let run = regina(&broker, &["push", "nothing", "{oops", "--json"]).await;
    run.assert_json_error("usage");
    assert!(run.stdout.is_empty());
    // A bad line stops --lines before its request: the first line's request was never sent.
    let run = regina_with_input(&broker, &["push", "nothing", "--lines"], "1\nnope\n").await;
    run.assert_error("usage");
    assert!(run.stderr.contains("line 2"), "{run:#?}");
    let popped = api.pop("nothing", "").await;
    assert_eq!(
        popped.status, 204,
        "nothing may have been stored: {popped:?}"
    );
    broker.shutdown().await;
}

/// A name unique enough for a scratch directory.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}
