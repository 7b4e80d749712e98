use super::*;

const IDS: &str = r#""query_id":"0196a000-0000-7000-8000-0000000000a1",
                     "partition_id":"0196a000-0000-7000-8000-0000000000a2""#;

fn parsed(members: &str, limit: usize) -> Result<(String, usize, Option<String>, bool), String> {
    let config = Config {
        transaction_operations_max: limit,
        ..Config::default()
    };
    let body = format!("{{{IDS}{members}}}");
    let object = body::parse_object(body.as_bytes(), 16).map_err(|e| format!("{e:?}"))?;
    let mut ids = (Value::Null, Value::Null);
    parse(&object, &config, Some("alice"), &mut ids)
        .map(|c| (c.state_ops, c.items.len(), c.ack, c.release_lease))
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn null_lists_are_empty_and_release_defaults_to_true() {
    let (ops, items, ack, release) =
        parsed(r#","state_ops":null,"push_items":null,"ack":null"#, 10).expect("valid");
    assert_eq!((ops.as_str(), items, ack, release), ("[]", 0, None, true));
}

#[test]
fn upserts_default_to_an_empty_object_and_keep_null() {
    let (ops, ..) = parsed(
        r#","state_ops":[{"type":"upsert","key":"a"},{"type":"upsert","key":"","value":null},
                         {"type":"delete","key":"b","value":5}]"#,
        10,
    )
    .expect("valid");
    let ops: Value = serde_json::from_str(&ops).expect("JSON");
    assert_eq!(
        ops,
        json!([{"type":"upsert","key":"a","value":{}},{"type":"upsert","key":"","value":null},
               {"type":"delete","key":"b"}])
    );
}

#[test]
fn bad_ops_name_their_field() {
    let error = parsed(r#","state_ops":[{"type":"merge","key":"a"}]"#, 10).expect_err("refused");
    assert!(error.contains("Unknown state_op type: merge"), "{error}");
    let error = parsed(
        r#","state_ops":[{"type":"upsert","key":"a"},{"type":"upsert"}]"#,
        10,
    )
    .expect_err("refused");
    assert!(error.contains("state_ops[1].key"), "{error}");
    let error = parsed(r#","state_ops":[{"type":"delete","key":7}]"#, 10).expect_err("refused");
    assert!(error.contains("state_ops[0].key"), "{error}");
    let error = parsed(r#","state_ops":{}"#, 10).expect_err("refused");
    assert!(error.contains("state_ops must be an array"), "{error}");
}

#[test]
fn the_ack_is_one_ack_item_of_the_source_partition() {
    let (_, _, ack, release) = parsed(
        r#","consumer_group":"streams.q","release_lease":false,
           "ack":{"transactionId":"t","leaseId":"l","count":3,"status":"success"}"#,
        10,
    )
    .expect("valid");
    let ack: Value = serde_json::from_str(&ack.expect("ack")).expect("JSON");
    assert_eq!(ack["partitionId"], "0196a000-0000-7000-8000-0000000000a2");
    assert_eq!(ack["consumerGroup"], "streams.q");
    assert_eq!(ack["status"], "success");
    assert!(!release);
    let error = parsed(r#","ack":{"leaseId":"l"}"#, 10).expect_err("refused");
    assert!(error.contains("ack.transactionId is required"), "{error}");
    let error =
        parsed(r#","ack":{"transactionId":"t","status":"later"}"#, 10).expect_err("refused");
    assert!(error.contains("Unknown ack.status: later"), "{error}");
    let error = parsed(r#","ack":{"transactionId":"t","count":0}"#, 10).expect_err("refused");
    assert!(error.contains("count"), "{error}");
    let error = parsed(r#","release_lease":"false""#, 10).expect_err("refused");
    assert!(error.contains("release_lease must be a boolean"), "{error}");
}

#[test]
fn ops_items_and_the_ack_count_against_the_limit() {
    let body = r#","state_ops":[{"type":"delete","key":"a"}],"push_items":[{"queue":"s"}],
                   "ack":{"transactionId":"t"}"#;
    assert!(parsed(body, 3).is_ok());
    let error = parsed(body, 2).expect_err("refused");
    assert!(error.contains("too_many_items"), "{error}");
}

#[test]
fn sink_items_are_prepared_as_pushes() {
    let error =
        parsed(r#","push_items":[{"queue":"s"},{"partition":"p"}]"#, 10).expect_err("refused");
    assert!(error.contains("push_items[1].queue"), "{error}");
    let (_, items, ..) =
        parsed(r#","push_items":[{"queue":"s","messageId":"x"}]"#, 10).expect("valid");
    assert_eq!(items, 1);
}

#[test]
fn refusals_map_to_their_status() {
    let status = |detail: &str| {
        Refusal::read(detail)
            .map(Refusal::into_error)
            .unwrap_or_else(|e| e)
            .into_response()
            .status()
    };
    assert_eq!(
        status(r#"{"code":"query_not_found","error":"x"}"#),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status(r#"{"code":"lease_expired","error":"x"}"#),
        StatusCode::CONFLICT
    );
    assert_eq!(
        status(r#"{"code":"queue_full","error":"x","queueName":"s","index":2}"#),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(status("nonsense"), StatusCode::INTERNAL_SERVER_ERROR);
}
