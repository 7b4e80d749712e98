use std::collections::BTreeSet;

use super::*;
use crate::config::Config;
use crate::engine::push_arrays;

/// The rendered items as `regina.push` sees them: the elements of `i_items` and `i_payloads`
/// (comma-joined), how many, and the (queue, partition) pairs written.
struct PushRequest {
    items: String,
    payloads: String,
    count: usize,
    targets: BTreeSet<(String, String)>,
}

impl From<Vec<PushItem>> for PushRequest {
    fn from(items: Vec<PushItem>) -> Self {
        let (elements, payloads) = push_arrays(items.iter());
        let inner = |array: &str| array[1..array.len() - 1].to_owned();
        PushRequest {
            items: inner(&elements),
            payloads: inner(&payloads),
            count: items.len(),
            targets: items
                .iter()
                .map(|i| (i.queue.to_string(), i.partition.to_string()))
                .collect(),
        }
    }
}

/// The `i_items` elements (with each item's payload put back under `payload`) and the request,
/// rendered with `encryption` for queues named in `sealed`.
fn prepared_with(
    body: &str,
    encryption: &Encryption,
    sealed: &[&str],
) -> Result<(Vec<serde_json::Value>, PushRequest), String> {
    let config = Config::default();
    let body: crate::http::push::PushBody =
        crate::http::contract::decode(body.as_bytes(), &config).map_err(|e| format!("{e:?}"))?;
    let items =
        prepare(&body.items.elements, Limits::of(&config), None).map_err(|e| format!("{e:?}"))?;
    let request = PushRequest::from(render(&items, encryption, |queue| sealed.contains(&queue)));
    let mut parsed: Vec<serde_json::Value> =
        serde_json::from_str(&format!("[{}]", request.items)).map_err(|e| e.to_string())?;
    let payloads: Vec<serde_json::Value> =
        serde_json::from_str(&format!("[{}]", request.payloads)).map_err(|e| e.to_string())?;
    for (item, payload) in parsed.iter_mut().zip(payloads) {
        item["payload"] = payload;
    }
    Ok((parsed, request))
}

fn prepared(body: &str) -> Result<(Vec<serde_json::Value>, PushRequest), String> {
    let none = Encryption::from_config(&Config::default()).map_err(|e| e.to_string())?;
    prepared_with(body, &none, &[])
}

#[test]
fn items_get_ids_defaults_and_raw_payloads() {
    let (items, request) = prepared(
        r#"{"items":[{"queue":"q","payload":{"n":[1, 2.50]},"transactionId":"t-1","traceId":"tr"},
                     {"queue":"q","partition":"","transactionId":null,"producerSub":"x"}]}"#,
    )
    .expect("valid");
    assert_eq!(request.count, 2);
    assert_eq!(items[0]["payload"], serde_json::json!({"n": [1, 2.5]}));
    assert!(request.payloads.starts_with(r#"{"n":[1, 2.50]},"#));
    assert_eq!(items[0]["transactionId"], "t-1");
    assert_eq!(items[0]["traceId"], "tr");
    assert_eq!(items[1]["partition"], "Default");
    assert_eq!(items[1]["payload"], serde_json::Value::Null);
    assert_eq!(items[1]["traceId"], serde_json::Value::Null);
    assert_eq!(items[1]["producerSub"], serde_json::Value::Null);
    for item in &items {
        let message_id = item["messageId"]
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok());
        assert_eq!(message_id.map(|u| u.get_version_num()), Some(7));
    }
    assert!(Uuid::parse_str(items[1]["transactionId"].as_str().unwrap_or_default()).is_ok());
    assert_eq!(request.targets.len(), 1, "both items go to q/Default");
}

#[test]
fn one_bad_item_fails_the_request_naming_index_and_field() {
    let long = "x".repeat(129);
    for (body, field) in [
        (
            r#"{"items":[{"queue":"q"},{"queue":5}]}"#.to_owned(),
            "items[1].queue",
        ),
        (
            r#"{"items":[{"queue":"q"},{"payload":1}]}"#.to_owned(),
            "items[1].queue",
        ),
        (
            r#"{"items":[{"queue":"q","partition":"\u0001"}]}"#.to_owned(),
            "items[0].partition",
        ),
        (
            format!(r#"{{"items":[{{"queue":"q","traceId":"{long}"}}]}}"#),
            "items[0].traceId",
        ),
        (
            r#"{"items":[{"queue":"q","transactionId":7}]}"#.to_owned(),
            "items[0].transactionId",
        ),
        (r#"{"items":[1]}"#.to_owned(), "items[0]"),
    ] {
        let error = prepared(&body).err().unwrap_or_default();
        assert!(
            error.contains("validation_failed") && error.contains(field),
            "{body}: {error}"
        );
    }
}

#[test]
fn result_statuses_are_read() {
    let failed = EntryStatus::of(r#"{"status": "failed", "code": "queue_full"}"#);
    assert_eq!(failed.status.as_deref(), Some("failed"));
    assert_eq!(failed.code.as_deref(), Some("queue_full"));
    let queued = EntryStatus::of(r#"{"status": "queued"}"#);
    assert_eq!(
        (queued.status.as_deref(), queued.code),
        (Some("queued"), None)
    );
    assert!(EntryStatus::of("{}").status.is_none());
}

#[test]
fn payloads_of_encrypting_queues_are_sealed_with_their_key_id() {
    let encryption = Encryption::from_config(&Config {
        regina_encryption_key: Some(crate::secret::Secret("ab".repeat(32))),
        ..Config::default()
    })
    .expect("valid key");
    let (items, request) = prepared_with(
        r#"{"items":[{"queue":"secret","payload":{"card":"4111"}},{"queue":"open","payload":1}]}"#,
        &encryption,
        &["secret"],
    )
    .expect("valid");
    assert!(!request.payloads.contains("4111"), "{}", request.payloads);
    let key_id = items[0]["payloadKeyId"].as_str().expect("a key id");
    assert_eq!(key_id.len(), 8);
    let message_id = Uuid::parse_str(items[0]["messageId"].as_str().unwrap_or_default());
    let sealed = items[0]["payload"].to_string();
    assert_eq!(
        encryption
            .open(message_id.expect("uuid"), key_id, &sealed)
            .as_deref(),
        Ok(r#"{"card":"4111"}"#)
    );
    assert_eq!(items[1]["payloadKeyId"], serde_json::Value::Null);
    assert_eq!(items[1]["payload"], 1);
}

#[test]
fn nul_is_refused_in_text_fields_and_kept_in_payloads() {
    for (body, field) in [
        (
            r#"{"items":[{"queue":"q"},{"queue":"q","transactionId":"a\u0000b"}]}"#,
            "items[1].transactionId",
        ),
        (
            r#"{"items":[{"queue":"q","traceId":"\u0000"}]}"#,
            "items[0].traceId",
        ),
        (r#"{"items":[{"queue":"q\u0000"}]}"#, "items[0].queue"),
        (
            r#"{"items":[{"queue":"q","partition":"p\u0000"}]}"#,
            "items[0].partition",
        ),
    ] {
        let error = prepared(body).err().unwrap_or_default();
        assert!(
            error.contains("validation_failed")
                && error.contains(field)
                && error.contains("must not contain NUL characters"),
            "{body}: {error}"
        );
    }
    let payloads = r#"{"items":[{"queue":"q","payload":"a\u0000b"},
                                {"queue":"q","payload":{"k\u0000":["\u0000"]}}]}"#;
    let (items, request) = prepared(payloads).expect("payloads may hold NUL");
    assert_eq!(request.payloads, r#""a\u0000b",{"k\u0000":["\u0000"]}"#);
    assert_eq!(
        items[1]["payload"],
        serde_json::json!({"k\u{0}": ["\u{0}"]})
    );
}

#[test]
fn an_element_is_written_at_the_length_its_hint_says() {
    let mut item = PushItem {
        queue: "orders".into(),
        partition: "customer-17".into(),
        transaction_id: "tx-1".into(),
        message_id: Uuid::now_v7(),
        trace_id: None,
        producer_sub: None,
        payload_key_id: None,
        payload: "1".into(),
    };
    let exact = |i: &PushItem| {
        let mut out = Vec::new();
        i.element().write(&mut out);
        out.len()
    };
    assert_eq!(item.element().text_len_hint(), exact(&item));
    item.trace_id = Some("trace".into());
    item.producer_sub = Some("alice".into());
    item.payload_key_id = Some("k1".into());
    assert_eq!(item.element().text_len_hint(), exact(&item));
    let (elements, _) = push_arrays([&item, &item].into_iter());
    assert_eq!(
        elements.capacity(),
        elements.len(),
        "the array is written at its size"
    );
}
