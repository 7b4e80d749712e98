//! The client verbs against a broker with authentication on (`--token` / `REGINA_TOKEN`), and
//! the `openapi` verb.

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use crate::support::{command, finish, regina};

const SECRET: &str = "client-test-secret";

fn token(sub: &str, role: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"sub": sub, "role": role, "exp": exp}),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_send_their_token_to_a_broker_with_authentication_on() {
    let broker = TestBroker::start_with(|c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_secret = Some(regina_broker::Secret(SECRET.into()));
    })
    .await;
    let run = regina(&broker, &["push", "auth-q", r#"{"n":1}"#, "--json"]).await;
    run.assert_json_error("unauthorized");
    let writer = token("cli-producer", "read-write");
    let run = regina(
        &broker,
        &["push", "auth-q", r#"{"n":1}"#, "--token", &writer],
    )
    .await;
    run.ok();
    let mut cmd = command(&broker.base_url);
    cmd.env("REGINA_TOKEN", token("reader", "read-only"));
    let run = finish(cmd, &["pop", "auth-q", "--json"], "").await;
    run.assert_json_error("forbidden");
    let run = regina(&broker, &["pop", "auth-q", "--json", "--token", &writer]).await;
    let popped = run.json();
    assert_eq!(
        popped["messages"][0]["producerSub"], "cli-producer",
        "{popped}"
    );
}

#[tokio::test]
async fn openapi_prints_the_document_of_the_http_api() {
    let run = crate::support::regina_at("http://127.0.0.1:9", &["openapi"]).await;
    let document: Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"]["/api/v1/push"]["post"].is_object());
}
