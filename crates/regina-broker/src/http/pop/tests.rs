use super::*;
use crate::config::SubscriptionMode;
use crate::http::contract::{decode_query, Limits};

fn parse(query: &str, target: Target) -> Result<PopParams, String> {
    parse_with(query, target, &Config::default())
}

/// The pop `query` asks for on `target`, read as its route reads it.
fn parse_with(query: &str, target: Target, config: &Config) -> Result<PopParams, String> {
    let limits = Limits::of(config);
    let typed: Result<PopQuery, ApiError> = match &target {
        Target::Queue {
            partition: Some(_), ..
        } => decode_query::<PartitionPopQuery>(Some(query), limits).map(Into::into),
        _ => decode_query::<PopQuery>(Some(query), limits),
    };
    typed
        .map(|q| PopParams::new(q, target, config))
        .map_err(|e| format!("{e:?}"))
}

fn queue_target() -> Target {
    Target::Queue {
        queue: "orders".into(),
        partition: None,
    }
}

fn sql(params: &PopParams) -> serde_json::Value {
    serde_json::from_str(&params.sql_request(Uuid::nil())).expect("valid JSON")
}

#[test]
fn defaults_fill_the_sql_request() {
    let params = parse("", queue_target()).expect("valid");
    assert!(!params.wait);
    assert_eq!(params.timeout_ms, 30_000);
    assert_eq!(
        sql(&params),
        serde_json::json!({"queue":"orders","partition":null,"namespace":null,"task":null,
            "consumerGroup":"__QUEUE_MODE__","batch":1,"partitions":1,"autoAck":false,
            "subscriptionMode":"all","subscriptionFrom":null,
            "leaseId":"00000000-0000-0000-0000-000000000000"})
    );
}

#[test]
fn parameters_are_read_and_normalised() {
    let params = parse(
        "batch=10&partitions=4&wait=yes&timeout=20000&consumerGroup=billing&autoAck=1\
         &subscriptionMode=new-only&subscriptionFrom=2026-05-10T11:00:00%2B02:00",
        queue_target(),
    )
    .expect("valid");
    let value = sql(&params);
    assert_eq!(value["batch"], 10);
    assert_eq!(value["partitions"], 4);
    assert_eq!(value["autoAck"], true);
    assert_eq!(value["consumerGroup"], "billing");
    assert_eq!(value["subscriptionMode"], "new");
    assert_eq!(value["subscriptionFrom"], "2026-05-10T09:00:00.000000Z");
    assert!(params.wait && params.timeout_ms == 20_000);
    let now = parse("subscriptionFrom=NOW", queue_target()).expect("valid");
    assert_eq!(sql(&now)["subscriptionFrom"], "now");
}

#[test]
fn invalid_parameters_name_their_key() {
    for (query, key) in [
        ("batch=0", "batch"),
        ("batch=10001", "batch"),
        ("partitions=1001", "partitions"),
        ("timeout=300001", "timeout"),
        ("timeout=-1", "timeout"),
        ("wait=sometimes", "wait"),
        ("autoAck=2", "autoAck"),
        ("subscriptionFrom=yesterday", "subscriptionFrom"),
        ("consumerGroup=%20%20", "consumerGroup"),
    ] {
        let error = parse(query, queue_target()).err().unwrap_or_default();
        assert!(
            error.contains("invalid_parameter") && error.contains(key),
            "{query}: {error}"
        );
    }
}

#[test]
fn the_single_partition_route_ignores_partitions() {
    let target = Target::Queue {
        queue: "q".into(),
        partition: Some("p".into()),
    };
    let params = parse("partitions=nonsense", target).expect("ignored");
    assert_eq!(sql(&params)["partition"], "p");
    assert_eq!(sql(&params)["partitions"], 1);
}

#[test]
fn selector_pops_send_no_queue() {
    let target = Target::Selector {
        namespace: Some("billing".into()),
        task: None,
        scopes: None,
    };
    let value = sql(&parse("", target).expect("valid"));
    assert_eq!(value["queue"], serde_json::Value::Null);
    assert_eq!(value["namespace"], "billing");
    assert!(
        value.get("scopes").is_none(),
        "unscoped pops send no scopes"
    );
    let scoped = Target::Selector {
        namespace: Some("billing".into()),
        task: None,
        scopes: Some(vec!["billing.*".into()]),
    };
    let value = sql(&parse("", scoped).expect("valid"));
    assert_eq!(value["scopes"], serde_json::json!(["billing.*"]));
}

#[test]
fn empty_answers_follow_pop_empty_status() {
    let params = parse("consumerGroup=g", queue_target()).expect("valid");
    let response = params.empty_response("timeout", 204);
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        response
            .headers()
            .get(&EMPTY_REASON)
            .and_then(|v| v.to_str().ok()),
        Some("timeout")
    );
    let response = params.empty_response("lease_held", 200);
    assert_eq!(response.status(), StatusCode::OK);
}

#[test]
fn subscription_mode_new_spellings_start_now_and_every_other_value_means_all() {
    for (value, mode) in [
        ("new", "new"),
        ("NEW-ONLY", "new"),
        ("all", "all"),
        ("from_beginning", "all"),
        ("latest", "all"),
    ] {
        let params = parse(&format!("subscriptionMode={value}"), queue_target()).expect(value);
        assert_eq!(sql(&params)["subscriptionMode"], mode, "{value}");
    }
    let config = Config {
        default_subscription_mode: SubscriptionMode::New,
        ..Config::default()
    };
    let named =
        parse_with("subscriptionMode=from_beginning", queue_target(), &config).expect("valid");
    assert_eq!(
        sql(&named)["subscriptionMode"],
        "all",
        "an explicit value beats the default"
    );
    let unnamed = parse_with("subscriptionMode=", queue_target(), &config).expect("valid");
    assert_eq!(
        sql(&unnamed)["subscriptionMode"],
        "new",
        "empty means the default"
    );
}
