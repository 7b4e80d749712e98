//! Error output and exit statuses: bad names, unreachable brokers, bad command lines, and what
//! goes over the wire (token, query).

use regina_testkit::{TestBroker, DEADLINE};
use tokio::net::TcpListener;

use crate::support::{answer_once, command, finish, regina, regina_at};

#[tokio::test]
async fn a_bad_queue_name_is_the_brokers_validation_error() {
    let broker = TestBroker::start().await;
    let bad = "bad\u{1}name";
    let run = regina(&broker, &["push", bad, "{}"]).await;
    run.assert_error("validation_failed");
    assert!(run.stderr.contains("(400 validation_failed)"), "{run:#?}");

    let run = regina(&broker, &["push", bad, "{}", "--json"]).await;
    let error = run.assert_json_error("validation_failed");
    assert!(
        error["field"].is_string(),
        "the broker's body, verbatim: {error}"
    );

    let long = "q".repeat(300);
    let run = regina(&broker, &["pop", &long, "--json"]).await;
    run.assert_json_error("invalid_parameter");
    broker.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_broker_exits_1_naming_the_url() {
    // A port that was free a moment ago: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);

    let run = regina_at(&url, &["queues"]).await;
    run.assert_error("unreachable");
    assert!(run.stderr.contains(&url), "{run:#?}");

    // --server wins over REGINA_URL.
    let run = regina_at(
        "http://127.0.0.1:6632",
        &["pop", "q", "--server", &url, "--json"],
    )
    .await;
    let error = run.assert_json_error("unreachable");
    assert!(error["error"].as_str().unwrap().contains(&url));
}

#[tokio::test]
async fn a_bad_command_line_exits_1_and_help_exits_0() {
    // Nothing is sent for any of these: no broker is needed.
    let url = "http://127.0.0.1:9";
    let run = regina_at(url, &["pop"]).await;
    assert_eq!(
        run.status, 1,
        "a missing argument is a usage error: {run:#?}"
    );
    assert!(run.stderr.contains("<QUEUE>"), "{run:#?}");

    let run = regina_at(url, &["seek", "g", "q"]).await;
    assert_eq!(
        run.status, 1,
        "seek needs --to-end or --timestamp: {run:#?}"
    );

    let run = regina_at(url, &["push", "q", "{}", "--server", "ftp://host"]).await;
    run.assert_error("usage");

    let run = regina_at(url, &["--help"]).await;
    assert!(run.ok().contains("Exit status: 0 success"), "{run:#?}");
    let run = regina_at(url, &["tail", "--help"]).await;
    assert!(run.ok().contains("throw-away consumer group"), "{run:#?}");
}

#[tokio::test]
async fn the_token_goes_out_as_a_bearer_header_with_the_query() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(answer_once(
        listener,
        "200 OK",
        r#"{"queues":[],"pagination":{"limit":1000,"offset":0,"total":0}}"#,
    ));
    let mut cmd = command(&url);
    cmd.env("REGINA_TOKEN", "s3cret");
    let run = finish(cmd, &["queues", "--namespace", "billing ops"], "").await;
    assert_eq!(run.status, 0, "{run:#?}");
    assert!(run.stderr.contains("no queues"), "{run:#?}");
    let (head, _) = tokio::time::timeout(DEADLINE, server)
        .await
        .unwrap()
        .unwrap();
    let request_line = head.lines().next().unwrap();
    assert_eq!(
        request_line,
        "GET /api/v1/resources/queues?namespace=billing+ops HTTP/1.1"
    );
    assert!(
        head.lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer s3cret")),
        "{head}"
    );
}

#[tokio::test]
async fn an_error_page_that_is_not_json_is_reported_with_its_status() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(answer_once(
        listener,
        "502 Bad Gateway",
        "<html>down</html>",
    ));
    let run = regina_at(&url, &["dlq", "--json"]).await;
    let error = run.assert_json_error("invalid_response");
    assert!(error["error"].as_str().unwrap().contains("502"), "{error}");
    server.await.unwrap();
}
