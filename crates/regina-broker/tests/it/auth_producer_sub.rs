//! §1.6, §4.14: `producerSub` is the verified token's `sub`, stamped on every push (standalone,
//! in a transaction, and through the failover buffer), whatever the client sends.

use regina_testkit::{DEADLINE, PARKED_POP_TIMEOUT_MS};
use serde_json::{json, Value};

use crate::jwt::{start_auth, token, As};
use crate::support::enc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_carry_the_token_sub_as_producer_sub_everywhere_it_is_shown() {
    let (_b, api) = start_auth(|_| {}).await;
    let producer = As {
        api: api.clone(),
        token: token(Some("svc-orders"), "read-write", None),
    };
    let admin = As {
        api: api.clone(),
        token: token(Some("ops"), "admin", None),
    };
    let r = producer
        .push(json!([{"queue": "sub-q", "payload": 1, "producerSub": "forged"}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    // A transaction push is stamped the same way.
    let tx = As {
        api: api.clone(),
        token: token(Some("svc-tx"), "read-write", None),
    };
    let r = tx
        .post("/api/v1/transaction", json!({"operations": [
            {"type": "push", "items": [{"queue": "sub-q", "payload": 2, "producerSub": "forged"}]}]}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    // A token without `sub` stamps nothing.
    let anonymous = As {
        api: api.clone(),
        token: token(None, "read-write", None),
    };
    assert_eq!(
        anonymous
            .push(json!([{"queue": "sub-q", "payload": 3}]))
            .await
            .status,
        201
    );

    let popped = admin.pop("sub-q", "batch=10").await;
    let subs: Vec<Value> = popped
        .messages()
        .iter()
        .map(|m| m["producerSub"].clone())
        .collect();
    assert_eq!(
        subs,
        vec![json!("svc-orders"), json!("svc-tx"), Value::Null],
        "{popped:?}"
    );
    let first = &popped.messages()[0];
    let path = format!(
        "/api/v1/messages/{}/{}",
        first["partitionId"].as_str().unwrap(),
        enc(first["transactionId"].as_str().unwrap())
    );
    assert_eq!(admin.get(&path).await.body["producerSub"], "svc-orders");
    let listed = admin.get("/api/v1/messages?queue=sub-q").await;
    let listed: Vec<Value> = listed.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["producerSub"].clone())
        .collect();
    assert_eq!(
        listed,
        vec![Value::Null, json!("svc-tx"), json!("svc-orders")],
        "newest first"
    );
    let r = admin
        .post(
            "/api/v1/ack",
            json!({"transactionId": first["transactionId"],
        "partitionId": first["partitionId"], "leaseId": first["leaseId"], "status": "dlq"}),
        )
        .await;
    assert_eq!(r.body[0]["success"], true, "{r:?}");
    let dlq = admin.get("/api/v1/dlq?queue=sub-q").await;
    assert_eq!(
        dlq.body["messages"][0]["producerSub"], "svc-orders",
        "{dlq:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_pushes_keep_their_producer_sub_through_the_replay() {
    let (_b, api) = start_auth(|_| {}).await;
    let admin = As {
        api: api.clone(),
        token: token(Some("ops"), "admin", None),
    };
    let producer = As {
        api: api.clone(),
        token: token(Some("svc-buffered"), "read-write", None),
    };
    let on = admin
        .post("/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    assert_eq!(on.status, 200, "{on:?}");
    let r = producer
        .push(json!([{"queue": "buffered-q", "payload": 1, "producerSub": "forged"}]))
        .await;
    assert_eq!(r.body[0]["status"], "buffered", "{r:?}");
    let waiting = {
        let admin = admin.clone();
        let query = format!("wait=true&timeout={PARKED_POP_TIMEOUT_MS}");
        tokio::spawn(async move { admin.pop("buffered-q", &query).await })
    };
    api.wait_for_waiters(1).await;
    let off = admin
        .post("/api/v1/system/maintenance", json!({"enabled": false}))
        .await;
    assert_eq!(off.status, 200, "{off:?}");
    let delivered = tokio::time::timeout(DEADLINE, waiting)
        .await
        .unwrap()
        .unwrap();
    let messages = delivered.messages();
    assert_eq!(messages.len(), 1, "{delivered:?}");
    assert_eq!(messages[0]["producerSub"], "svc-buffered");
}
