use super::*;

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const OTHER: &str = "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn keyed(hex: &str) -> Encryption {
    Encryption::from_config(&Config {
        regina_encryption_key: Some(Secret(hex.to_owned())),
        ..Config::default()
    })
    .expect("valid key")
}

#[test]
fn sealed_payloads_open_only_with_their_key_and_message() {
    let encryption = keyed(KEY);
    let id = Uuid::now_v7();
    let payload = r#"{"n": [1, 2.50], "s": "\u0000"}"#;
    let (sealed, key_id) = encryption.seal(id, payload).expect("a key is configured");
    assert!(!sealed.contains("2.50"), "no plaintext in {sealed}");
    assert_eq!(encryption.open(id, key_id, &sealed), Ok(payload.to_owned()));
    let (again, _) = encryption.seal(id, payload).expect("sealed");
    assert_ne!(sealed, again, "a fresh nonce per seal");
    assert_eq!(
        encryption.open(Uuid::now_v7(), key_id, &sealed),
        Err(OpenError::Failed),
        "bound to its message id"
    );
    let other = keyed(OTHER);
    let other_id = other.key.as_ref().map(|k| k.id.clone()).unwrap_or_default();
    assert_ne!(other_id, key_id);
    assert_eq!(other.open(id, key_id, &sealed), Err(OpenError::Failed));
    assert_eq!(other.open(id, &other_id, &sealed), Err(OpenError::Failed));
    let none = Encryption::from_config(&Config::default()).expect("no key is fine");
    assert!(!none.available());
    assert_eq!(none.open(id, key_id, &sealed), Err(OpenError::NoKey));
    assert!(none.seal(id, payload).is_none());
}

#[test]
fn keys_are_validated_and_the_two_names_must_agree() {
    let config = |regina: Option<&str>, queen: Option<&str>| Config {
        regina_encryption_key: regina.map(|k| Secret(k.to_owned())),
        queen_encryption_key: queen.map(|k| Secret(k.to_owned())),
        ..Config::default()
    };
    let error = |c: &Config| match Encryption::from_config(c) {
        Err(Error::Config(message)) => message,
        other => panic!(
            "expected a config error, got {:?}",
            other.map(|e| e.available())
        ),
    };
    assert!(error(&config(Some("abc"), None)).contains("REGINA_ENCRYPTION_KEY"));
    assert!(error(&config(None, Some(&"g".repeat(64)))).contains("QUEEN_ENCRYPTION_KEY"));
    let both = error(&config(Some(KEY), Some(OTHER)));
    assert!(both.contains("REGINA_ENCRYPTION_KEY") && both.contains("QUEEN_ENCRYPTION_KEY"));
    assert!(
        Encryption::from_config(&config(Some(KEY), Some(&KEY.to_uppercase())))
            .is_ok_and(|e| e.available())
    );
    assert!(Encryption::from_config(&config(None, Some(KEY))).is_ok_and(|e| e.available()));
}

#[test]
fn bodies_are_rewritten_only_where_sealed() {
    let encryption = keyed(KEY);
    let id = Uuid::now_v7();
    let (sealed, key_id) = encryption.seal(id, r#"{"secret": 1.50}"#).expect("sealed");
    let plain = r#"{"success":true,"messages":[{"id":"x","data":{"payloadKeyId":"not a mark"}}]}"#;
    let untouched = r#"{"messages":[{"id":"x","data":[1, 2.50]}]}"#;
    assert_eq!(
        encryption.open_messages(untouched.to_owned()),
        Ok(untouched.to_owned())
    );
    let body = format!(
        r#"{{"success":true,"leaseId":"l","messages":[{{"id":"{id}","data":{sealed},"payloadKeyId":"{key_id}","retryCount":0}},{{"id":"y","data":[1, 2.50]}}]}}"#
    );
    let opened = encryption.open_messages(body).expect("opens");
    let value: Value = serde_json::from_str(&opened).expect("JSON");
    assert_eq!(
        value["messages"][0]["data"],
        serde_json::json!({"secret": 1.5})
    );
    assert!(
        opened.contains(r#""data":{"secret": 1.50}"#),
        "verbatim: {opened}"
    );
    assert!(
        opened.contains(r#""data":[1, 2.50]"#),
        "neighbours verbatim: {opened}"
    );
    assert!(value["messages"][0].get("payloadKeyId").is_none());
    assert_eq!(value["leaseId"], "l");
    assert_eq!(value["messages"][0]["retryCount"], 0);
    // A payload that merely mentions the mark is not sealed.
    let kept: Value =
        serde_json::from_str(&encryption.open_messages(plain.to_owned()).expect("ok"))
            .expect("JSON");
    assert_eq!(kept["messages"][0]["data"]["payloadKeyId"], "not a mark");
}

#[test]
fn the_encrypting_set_expires_and_forgets() {
    let encryption = keyed(KEY);
    assert!(!encryption.queue_encrypts("q"));
    encryption.remember("q", true);
    assert!(encryption.queue_encrypts("q"));
    encryption.remember("q", false);
    assert!(!encryption.queue_encrypts("q"));
}
