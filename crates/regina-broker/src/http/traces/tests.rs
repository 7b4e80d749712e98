use serde_json::json;

use super::*;
use crate::secret::Secret;

const P: &str = "01a2024a-e4e0-7688-9587-dea73d51b2c0";

/// Validates a body whose `"partitionId":"p"` stands for the UUID `P`.
fn request(body: &str) -> Result<(SqlTraceRecord, String), String> {
    request_with(body, &Config::default())
}

fn request_with(body: &str, config: &Config) -> Result<(SqlTraceRecord, String), String> {
    let body = body.replace(r#""partitionId":"p""#, &format!(r#""partitionId":"{P}""#));
    trace_request(body.as_bytes(), config).map_err(|e| format!("{e:?}"))
}

#[test]
fn defaults_fill_the_sql_request() {
    let (record, data) =
        request(r#"{"transactionId":"t","partitionId":"p","data":{"a": [1, 2]}}"#).expect("valid");
    assert_eq!(record.id.get_version_num(), 7);
    assert_eq!(data, r#"{"a":[1,2]}"#);
    let sql: Value = serde_json::from_str(&to_json(&record)).expect("JSON");
    assert_eq!(
        sql,
        json!({"id": record.id, "partitionId": P, "transactionId": "t", "eventType": "info",
               "consumerGroup": "__QUEUE_MODE__", "workerId": null, "traceNames": []})
    );
}

#[test]
fn given_fields_are_kept_and_empty_strings_are_absent() {
    let (record, _) = request(
        r#"{"transactionId":"t","partitionId":"p","data":"x","eventType":"processed",
            "consumerGroup":"billing","workerId":"w-1","traceNames":"order-7"}"#,
    )
    .expect("valid");
    assert_eq!(
        (
            record.event_type.as_str(),
            record.consumer_group.as_str(),
            record.worker_id.as_deref(),
            record.trace_names
        ),
        (
            "processed",
            "billing",
            Some("w-1"),
            vec!["order-7".to_owned()]
        )
    );
    let (record, _) = request(
        r#"{"transactionId":"t","partitionId":"p","data":0,"eventType":"","consumerGroup":"",
            "workerId":"","traceNames":""}"#,
    )
    .expect("valid");
    assert_eq!(
        (
            record.event_type.as_str(),
            record.consumer_group.as_str(),
            record.worker_id,
            record.trace_names.len()
        ),
        ("info", "__QUEUE_MODE__", None, 0)
    );
}

#[test]
fn every_invalid_field_is_named() {
    let long_name = "n".repeat(129);
    let many: Vec<String> = (0..33).map(|i| format!("n{i}")).collect();
    let cases = [
        (
            r#"{"partitionId":"p","data":1}"#.to_owned(),
            "transactionId is required",
        ),
        (
            format!(
                r#"{{"transactionId":"{}","partitionId":"p","data":1}}"#,
                "t".repeat(256)
            ),
            "transactionId must be at most 255",
        ),
        (
            r#"{"transactionId":"t","data":1}"#.to_owned(),
            "partitionId is required",
        ),
        (
            r#"{"transactionId":"t","partitionId":"x","data":1}"#.to_owned(),
            "partitionId must be a UUID",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p"}"#.to_owned(),
            "data is required",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":null}"#.to_owned(),
            "data is required",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":1,"consumerGroup":"a\u0001"}"#
                .to_owned(),
            "consumerGroup must not contain control characters",
        ),
        (
            format!(
                r#"{{"transactionId":"t","partitionId":"p","data":1,"eventType":"{}"}}"#,
                "e".repeat(65)
            ),
            "eventType must be at most 64 characters",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":1,"eventType":5}"#.to_owned(),
            "eventType must be a string",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":1,"traceNames":{"a":1}}"#.to_owned(),
            "traceNames must be a string, an array of strings or null",
        ),
        (
            format!(
                r#"{{"transactionId":"t","partitionId":"p","data":1,"traceNames":{}}}"#,
                json!(many)
            ),
            "at most 32 names",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":1,"traceNames":["a",7]}"#.to_owned(),
            "traceNames[1] must be a string of 1 to 128",
        ),
        (
            r#"{"transactionId":"t","partitionId":"p","data":1,"traceNames":["a",""]}"#.to_owned(),
            "traceNames[1] must be a string of 1 to 128",
        ),
        (
            format!(
                r#"{{"transactionId":"t","partitionId":"p","data":1,"traceNames":"{long_name}"}}"#
            ),
            "traceNames must be a string of 1 to 128",
        ),
        (
            format!(
                r#"{{"transactionId":"t","partitionId":"p","data":1,"workerId":"{}"}}"#,
                "w".repeat(256)
            ),
            "workerId must be at most 255",
        ),
        ("[1]".to_owned(), "validation_failed"),
        ("{".to_owned(), "invalid_json"),
    ];
    for (body, expected) in cases {
        let error = request(&body).expect_err(&body);
        assert!(error.contains(expected), "{body}: {error}");
    }
}

#[test]
fn data_is_measured_without_insignificant_whitespace() {
    let config = Config {
        trace_data_bytes_max: 13,
        ..Config::default()
    };
    // 13 bytes once compact, whatever the spacing around it.
    let fits = r#"{"transactionId":"t","partitionId":"p","data": { "k" : "a b c" } }"#;
    let (_, data) = request_with(fits, &config).expect("fits");
    assert_eq!(data, r#"{"k":"a b c"}"#);
    let over = r#"{"transactionId":"t","partitionId":"p","data":{"k":"a b cd"}}"#;
    let error = request_with(over, &config).expect_err("too large");
    assert!(
        error.contains("validation_failed") && error.contains("limit: Some(13)"),
        "{error}"
    );
}

#[test]
fn compact_keeps_strings_and_escapes_verbatim() {
    assert_eq!(
        compact("{ \"a b\" : [ 1 ,\n 2 ] ,\t\"q\\\" x\" : \"\\\\\" }"),
        r#"{"a b":[1,2],"q\" x":"\\"}"#
    );
    assert_eq!(
        compact(" 12345678901234567890123 "),
        "12345678901234567890123"
    );
}

#[test]
fn repeated_names_are_passed_through_for_the_database_to_merge() {
    let (record, _) =
        request(r#"{"transactionId":"t","partitionId":"p","data":1,"traceNames":["b","a","b"]}"#)
            .expect("valid");
    assert_eq!(record.trace_names, ["b", "a", "b"]);
}

#[test]
fn listing_parameters_have_their_defaults_and_bounds() {
    use crate::http::contract::decode_query;
    let limits = Limits::of(&Config::default());
    let names = |q: &str| decode_query::<Page<50, 1_000>>(Some(q), limits).map(|p| to_json(&p));
    let by_name = |q: &str| decode_query::<Page<100, 1_000>>(Some(q), limits).map(|p| to_json(&p));
    assert_eq!(
        names("").ok().as_deref(),
        Some(r#"{"limit":50,"offset":0}"#)
    );
    assert_eq!(
        by_name("limit=1000&offset=7").ok().as_deref(),
        Some(r#"{"limit":1000,"offset":7}"#)
    );
    for bad in ["limit=0", "limit=1001", "offset=-1", "limit=ten"] {
        assert!(by_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn trace_names_in_paths_are_decoded_and_bounded() {
    use crate::http::contract::decode_path;
    let limits = Limits::of(&Config::default());
    let template = "/api/v1/traces/by-name/{traceName}";
    let path = |p: &str| decode_path::<TraceNamePath>(template, p, limits).map(|t| t.trace_name.0);
    assert_eq!(
        path("/api/v1/traces/by-name/order%2F7%20x").ok().as_deref(),
        Some("order/7 x")
    );
    let long = format!("/api/v1/traces/by-name/{}", "n".repeat(129));
    for bad in [
        long.as_str(),
        "/api/v1/traces/by-name/a%00b",
        "/api/v1/traces/by-name/%FF",
    ] {
        assert!(path(bad).is_err(), "{bad}");
    }
}

fn keyed() -> Encryption {
    let config = Config {
        regina_encryption_key: Some(Secret("ab".repeat(32))),
        ..Config::default()
    };
    Encryption::from_config(&config).expect("key")
}

/// A by-name listing with one row per `(payload, sealed key)`.
fn listing(rows: &[(&str, Option<(Uuid, &str)>)]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|(payload, sealed)| {
            let marks = sealed.map_or_else(String::new, |(id, key)| {
                format!(r#","messageId":"{id}","payloadKeyId":"{key}""#)
            });
            format!(
                r#"{{"id":"i","transaction_id":"t","partition_id":"p","event_type":"info","data":{{"n":12345678901234567890123}},"consumer_group":"g","worker_id":null,"created_at":"c","queue_name":"q","partition_name":"p","message_payload":{payload},"trace_names":["a"]{marks}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"traces":[{}],"total":2,"pagination":{{"limit":100,"offset":0,"total":2}}}}"#,
        rows.join(",")
    )
}

#[test]
fn sealed_payloads_are_opened_and_their_marks_removed() {
    let encryption = keyed();
    let id = Uuid::now_v7();
    let (sealed, key_id) = encryption.seal(id, r#"{"secret":1}"#).expect("sealed");
    let key_id = key_id.to_owned();
    let body = listing(&[(&sealed, Some((id, &key_id))), ("[1,2]", None)]);
    let opened = open_payloads(&encryption, body).expect("opened");
    assert!(
        !opened.contains("payloadKeyId") && !opened.contains("messageId"),
        "{opened}"
    );
    assert!(
        opened.contains(r#""n":12345678901234567890123"#),
        "data verbatim: {opened}"
    );
    let value: Value = serde_json::from_str(&opened).expect("JSON");
    assert_eq!(value["traces"][0]["message_payload"], json!({"secret": 1}));
    assert_eq!(value["traces"][1]["message_payload"], json!([1, 2]));
    assert_eq!(value["total"], 2);

    let plain = listing(&[("null", None)]);
    assert_eq!(open_payloads(&encryption, plain.clone()).ok(), Some(plain));
}

#[test]
fn sealed_payloads_without_the_key_are_refused() {
    let id = Uuid::now_v7();
    let keyed = keyed();
    let (sealed, key_id) = keyed.seal(id, "1").expect("sealed");
    let body = listing(&[(&sealed, Some((id, key_id)))]);
    let error = format!(
        "{:?}",
        open_payloads(
            &Encryption::from_config(&Config::default()).expect("none"),
            body.clone()
        )
        .err()
    );
    assert!(error.contains("encryption_unavailable"), "{error}");
    let other = Encryption::from_config(&Config {
        regina_encryption_key: Some(Secret("cd".repeat(32))),
        ..Config::default()
    })
    .expect("key");
    let error = format!("{:?}", open_payloads(&other, body).err());
    assert!(error.contains("decryption_failed"), "{error}");
}
