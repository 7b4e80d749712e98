//! §4.13 `encryptionEnabled`, §4.7 DLQ copies, §7 encryption settings: payloads at rest are
//! AES-256-GCM ciphertext, read back transparently; no key or the wrong key is a clear error.

use regina_testkit::TestBroker;
use serde_json::{json, Value};

use crate::support::{start_with, Api};

const KEY: &str = "8f1c2d3e4f5061728394a5b6c7d8e9f00112233445566778899aabbccddeeff0";
const OTHER_KEY: &str = "0f1c2d3e4f5061728394a5b6c7d8e9f00112233445566778899aabbccddeeff0";

fn key(hex: &str) -> Option<regina_broker::Secret> {
    Some(regina_broker::Secret(hex.to_owned()))
}

async fn keyed() -> (TestBroker, Api) {
    start_with(|c| c.regina_encryption_key = key(KEY)).await
}

/// A second broker on `b`'s database, with `encryption_key` as `REGINA_ENCRYPTION_KEY`.
async fn second(b: &TestBroker, encryption_key: Option<&str>) -> (TestBroker, Api) {
    let other = TestBroker::start_on(&b.database_url, |c| {
        c.regina_encryption_key = encryption_key.and_then(key);
    })
    .await;
    let api = Api::new(&other);
    (other, api)
}

/// Stored rows of a queue: (transactionId, payload as stored, key id), in offset order.
async fn stored(b: &TestBroker, queue: &str) -> Vec<(String, String, Option<String>)> {
    let rows = b
        .db()
        .await
        .query(
            "select m.transaction_id, m.payload::text, m.payload_key_id from regina.messages m
             join regina.partitions p on p.id = m.partition_id
             join regina.queues q on q.id = p.queue_id
             where q.name = $1 order by m.partition_id, m.seq",
            &[&queue],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

fn item(queue: &str, tx: &str, payload: &str) -> Value {
    let payload: Value = serde_json::from_str(payload).unwrap();
    json!({"queue": queue, "transactionId": tx, "payload": payload})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_payloads_are_ciphertext_at_rest_and_plain_on_pop() {
    let (b, api) = keyed().await;
    let r = api
        .configure("vault", json!({"encryptionEnabled": true}))
        .await;
    assert_eq!(r.body["options"]["encryptionEnabled"], true, "{r:?}");
    let secret = r#"{"card":"4111-1111-1111-1111","amount":2.50,"nul":"a\u0000b"}"#;
    let push = api
        .post_raw(
            "/api/v1/push",
            format!(r#"{{"items":[{{"queue":"vault","transactionId":"t1","payload":{secret}}}]}}"#)
                .as_bytes(),
        )
        .await;
    assert_eq!(push.status, 201, "{push:?}");
    assert_eq!(push.body[0]["status"], "queued");
    let rows = stored(&b, "vault").await;
    assert_eq!(rows.len(), 1);
    let (_, at_rest, key_id) = &rows[0];
    assert!(!at_rest.contains("4111"), "plaintext at rest: {at_rest}");
    assert!(!at_rest.contains("amount"), "plaintext at rest: {at_rest}");
    assert_eq!(
        key_id.as_ref().map(String::len),
        Some(8),
        "key id stored beside"
    );
    let pop = api.pop("vault", "").await;
    assert_eq!(pop.status, 200, "{pop:?}");
    assert!(
        pop.text.contains(secret),
        "the payload comes back verbatim: {}",
        pop.text
    );
    let message = &pop.messages()[0];
    assert!(
        message.get("payloadKeyId").is_none(),
        "no internal member: {message}"
    );
    assert_eq!(message["transactionId"], "t1");
    assert_eq!(api.ack_msg(message, "completed").await["success"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggling_encryption_changes_only_new_messages() {
    let (b, api) = keyed().await;
    api.push(json!([item("t", "before", "1")])).await;
    api.configure("t", json!({"encryptionEnabled": true})).await;
    api.push(json!([item("t", "during", r#""two""#)])).await;
    api.configure("t", json!({"encryptionEnabled": false}))
        .await;
    api.push(json!([item("t", "after", "[3]")])).await;
    let rows = stored(&b, "t").await;
    let sealed: Vec<(&str, bool)> = rows
        .iter()
        .map(|(tx, _, key)| (tx.as_str(), key.is_some()))
        .collect();
    assert_eq!(
        sealed,
        [("before", false), ("during", true), ("after", false)]
    );
    assert_eq!(rows[0].1, "1");
    assert_ne!(rows[1].1, r#""two""#);
    let pop = api.pop("t", "batch=10").await;
    assert_eq!(pop.data(), vec![json!(1), json!("two"), json!([3])]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_unaware_of_the_option_still_stores_ciphertext() {
    let (a, api_a) = keyed().await;
    let (_b, api_b) = second(&a, Some(KEY)).await;
    // B pushes once before the option exists, so nothing tells it the queue encrypts later.
    api_b.push(json!([item("late", "plain", "0")])).await;
    api_a
        .configure("late", json!({"encryptionEnabled": true}))
        .await;
    let r = api_b
        .push(json!([
            item("late", "s1", r#""secret-1""#),
            item("other", "o", "1"),
            item("late", "s2", r#""secret-2""#)
        ]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let statuses: Vec<&str> = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["queued", "queued", "queued"]);
    let rows = stored(&a, "late").await;
    assert_eq!(rows.len(), 3);
    for (tx, at_rest, key) in &rows[1..] {
        assert!(
            key.is_some() && !at_rest.contains("secret"),
            "{tx} stored as {at_rest}"
        );
    }
    let pop = api_a.pop("late", "batch=10").await;
    assert_eq!(
        pop.data(),
        vec![json!(0), json!("secret-1"), json!("secret-2")],
        "order kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_copies_stay_encrypted_and_list_decrypted() {
    let (b, api) = keyed().await;
    api.configure("d", json!({"encryptionEnabled": true, "retryLimit": 0}))
        .await;
    api.push(json!([item("d", "x", r#"{"pin":"9876"}"#)])).await;
    let pop = api.pop("d", "").await;
    api.ack_msg(&pop.messages()[0], "failed").await;
    let copy: String = b
        .db()
        .await
        .query_one("select payload::text from regina.dead_letters", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!copy.contains("9876"), "the DLQ copy is ciphertext: {copy}");
    let dlq = api.dlq("queue=d").await;
    assert_eq!(dlq.status, 200, "{dlq:?}");
    assert_eq!(dlq.body["messages"][0]["data"], json!({"pin": "9876"}));
    assert!(dlq.body["messages"][0].get("payloadKeyId").is_none());
    assert_eq!(dlq.body["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabling_encryption_without_a_key_is_refused() {
    let (_b, api) = crate::support::start().await;
    api.configure("q", json!({"retryLimit": 5})).await;
    let r = api
        .post(
            "/api/v1/configure",
            &json!({"queue": "q", "options": {"encryptionEnabled": true, "retryLimit": 1}}),
        )
        .await;
    r.assert_error(400, "encryption_unavailable");
    let after = api.configure("q", json!({})).await;
    assert_eq!(after.body["options"]["encryptionEnabled"], false);
    assert_eq!(after.body["options"]["retryLimit"], 5, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_encrypted_payloads_answer_503_and_nothing_is_charged() {
    let (a, api_a) = keyed().await;
    api_a
        .configure("v", json!({"encryptionEnabled": true, "retryLimit": 0}))
        .await;
    api_a.push(json!([item("v", "m", r#""hidden""#)])).await;
    let (b, api_b) = second(&a, None).await;
    api_b
        .pop("v", "")
        .await
        .assert_error(503, "encryption_unavailable");
    // Pushing to it: refused whole when every item needs the key, in-band otherwise.
    api_b
        .push(json!([item("v", "n", "1")]))
        .await
        .assert_error(503, "encryption_unavailable");
    let mixed = api_b
        .push(json!([item("v", "n", "1"), item("open", "o", "2")]))
        .await;
    assert_eq!(mixed.status, 503, "{mixed:?}");
    assert_eq!(mixed.header("retry-after"), Some("1"));
    assert_eq!(mixed.body[0]["status"], "failed");
    assert_eq!(mixed.body[0]["code"], "encryption_unavailable");
    assert_eq!(mixed.body[1]["status"], "queued");
    assert_eq!(
        stored(&b, "v").await.len(),
        1,
        "nothing stored in plaintext"
    );
    // The failed pop released its lease without charging an attempt (retryLimit 0).
    let pop = api_a.pop("v", "").await;
    assert_eq!(pop.data(), vec![json!("hidden")], "{pop:?}");
    api_a.ack_msg(&pop.messages()[0], "dlq").await;
    api_b
        .dlq("queue=v")
        .await
        .assert_error(503, "encryption_unavailable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrong_key_answers_500_decryption_failed() {
    let (a, api_a) = keyed().await;
    api_a
        .configure("w", json!({"encryptionEnabled": true}))
        .await;
    api_a.push(json!([item("w", "m", r#""x""#)])).await;
    let (_b, api_b) = second(&a, Some(OTHER_KEY)).await;
    api_b
        .pop("w", "")
        .await
        .assert_error(500, "decryption_failed");
    assert_eq!(api_a.pop("w", "").await.data(), vec![json!("x")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_or_malformed_keys_stop_the_broker_at_startup() {
    let (b, _api) = crate::support::start().await;
    for (regina, queen, names) in [
        (
            Some(KEY),
            Some(OTHER_KEY),
            vec!["REGINA_ENCRYPTION_KEY", "QUEEN_ENCRYPTION_KEY"],
        ),
        (Some("not-hex"), None, vec!["REGINA_ENCRYPTION_KEY"]),
        (None, Some("abcd"), vec!["QUEEN_ENCRYPTION_KEY"]),
    ] {
        let config = regina_broker::Config {
            database_url: Some(b.database_url.clone()),
            regina_encryption_key: regina.and_then(key),
            queen_encryption_key: queen.and_then(key),
            ..regina_broker::Config::default()
        };
        match regina_broker::AppState::start(config).await {
            Err(regina_broker::Error::Config(message)) => {
                for name in names {
                    assert!(message.contains(name), "{message} names {name}");
                }
            }
            Err(other) => panic!("expected a configuration error, got {other}"),
            Ok(_) => panic!("the broker started with {regina:?} / {queen:?}"),
        }
    }
    let same = regina_broker::Config {
        database_url: Some(b.database_url.clone()),
        regina_encryption_key: key(KEY),
        queen_encryption_key: key(KEY),
        ..regina_broker::Config::default()
    };
    let state = regina_broker::AppState::start(same)
        .await
        .expect("equal keys are fine");
    state.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_pushes_are_sealed_even_on_an_unaware_instance() {
    let (a, api_a) = keyed().await;
    let (_b, api_b) = second(&a, Some(KEY)).await;
    api_b.push(json!([item("tx-vault", "plain", "0")])).await;
    api_a
        .configure("tx-vault", json!({"encryptionEnabled": true}))
        .await;
    let r = api_b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [
                item("tx-vault", "t1", r#""secret-t1""#), item("tx-other", "o1", "1")]}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["success"], true, "{r:?}");
    let rows = stored(&a, "tx-vault").await;
    assert_eq!(rows.len(), 2);
    let (_, at_rest, key) = &rows[1];
    assert!(
        key.is_some() && !at_rest.contains("secret"),
        "stored as {at_rest}"
    );
    let pop = api_a.pop("tx-vault", "batch=10").await;
    assert_eq!(pop.data(), vec![json!(0), json!("secret-t1")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_pushes_to_an_encrypting_queue_without_a_key_answer_503() {
    let (a, api_a) = keyed().await;
    let (_b, api_b) = second(&a, None).await;
    api_a
        .configure("tx-locked", json!({"encryptionEnabled": true}))
        .await;
    let r = api_b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [item("tx-locked", "t1", "1")]}]}),
        )
        .await;
    r.assert_error(503, "encryption_unavailable");
    assert!(stored(&a, "tx-locked").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_detail_and_requeue_read_sealed_payloads_in_the_clear() {
    let (b, api) = keyed().await;
    api.configure("r", json!({"encryptionEnabled": true, "retryLimit": 0}))
        .await;
    api.push(json!([item("r", "x", r#"{"pin":"1234"}"#)])).await;
    let pop = api.pop("r", "").await;
    let message = pop.messages()[0].clone();
    let pid = message["partitionId"].as_str().unwrap().to_owned();
    let detail = api.get(&format!("/api/v1/messages/{pid}/x")).await;
    assert_eq!(detail.status, 200, "{detail:?}");
    assert_eq!(detail.body["payload"], json!({"pin": "1234"}));
    assert_eq!(detail.body["isEncrypted"], true);
    assert!(detail.body.get("payloadKeyId").is_none());
    api.ack_msg(&message, "failed").await;
    let requeue = api
        .post(&format!("/api/v1/messages/{pid}/x/retry"), &json!({}))
        .await;
    assert_eq!(requeue.status, 200, "{requeue:?}");
    let again = api.pop("r", "").await;
    assert_eq!(again.data(), vec![json!({"pin": "1234"})]);
    let stored: i64 = b
        .db()
        .await
        .query_one(
            "select count(*) from regina.messages where payload::text like '%1234%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 0, "no plaintext at rest after the requeue");
}
