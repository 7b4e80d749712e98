use serde::Deserialize;

use super::fields::{Flag, FreeText, Int, Json, Name, RequiredName, RequiredText, Text};
use super::params::{PageLimit, QueryFlag, QueryInt, QueryName, QueryText};
use super::*;

fn config() -> Config {
    Config::default()
}

fn body<'a, T: Contract + Deserialize<'a>>(text: &'a str) -> Result<T, String> {
    decode(text.as_bytes(), &config()).map_err(|e| format!("{e:?}"))
}

fn query<T: Contract + DeserializeOwned>(text: &str) -> Result<T, String> {
    decode_query(Some(text), Limits::of(&config())).map_err(|e| format!("{e:?}"))
}

#[derive(Debug, Deserialize)]
struct Numbers {
    #[serde(default)]
    a: Int<0, 1000>,
    #[serde(default)]
    b: Int<0, 1000>,
    #[serde(default)]
    e: Int<0, 1000>,
    #[serde(default)]
    missing: Int<0, 1>,
}

impl Contract for Numbers {}

#[test]
fn integers_accept_integral_floats_and_check_ranges() {
    let numbers: Numbers = body(r#"{"a":300,"b":300.0,"e":null}"#).expect("valid");
    assert_eq!(
        (numbers.a.0, numbers.b.0, numbers.e.0, numbers.missing.0),
        (Some(300), Some(300), None, None)
    );
    let exponent: Numbers = body(r#"{"a":1e3}"#).expect("valid");
    assert_eq!(exponent.a.0, Some(1000));
    for bad in [
        r#"{"a":1.5}"#,
        r#"{"a":"3"}"#,
        r#"{"a":-1}"#,
        r#"{"a":18446744073709551615}"#,
        r#"{"a":1e999}"#,
    ] {
        let error = body::<Numbers>(bad).expect_err(bad);
        assert!(
            error.contains("a must be an integer from 0 to 1000")
                && error.contains("field: Some(\"a\")"),
            "{bad}: {error}"
        );
    }
}

#[derive(Debug, Deserialize)]
struct Words {
    #[serde(default)]
    s: Text,
    #[serde(default)]
    t: Flag,
    #[serde(default)]
    n: Name,
    #[serde(default)]
    free: FreeText<3>,
}

impl Contract for Words {}

#[test]
fn strings_and_booleans_are_strict() {
    let words: Words = body(r#"{"s":"x\u00e9","t":true,"n":"q","free":"a\u0000bcd"}"#).expect("ok");
    assert_eq!(words.s.0.as_deref(), Some("xé"));
    assert_eq!(words.t.0, Some(true));
    assert_eq!(words.n.0.as_deref(), Some("q"));
    assert_eq!(
        words.free.0.as_deref(),
        Some("a\u{FFFD}b"),
        "NUL replaced, then cut"
    );
    let empty: Words = body(r#"{"s":"","t":null,"n":"","free":null}"#).expect("absent");
    assert_eq!(
        (empty.s.0, empty.t.0, empty.n.0, empty.free.0),
        (None, None, None, None)
    );
    for (bad, expected) in [
        (r#"{"s":1}"#, "s must be a string"),
        (r#"{"s":"a\u0000"}"#, "s must not contain NUL characters"),
        (r#"{"t":"true"}"#, "t must be a boolean"),
        (r#"{"t":1}"#, "t must be a boolean"),
        (r#"{"n":"  "}"#, "n must not be only whitespace"),
        (
            r#"{"n":"a\u0001"}"#,
            "n must not contain control characters",
        ),
    ] {
        let error = body::<Words>(bad).expect_err(bad);
        assert!(
            error.contains(expected) && error.contains("validation_failed"),
            "{bad}: {error}"
        );
    }
}

#[derive(Debug, Deserialize)]
struct Ordered {
    first: RequiredName,
    #[serde(default)]
    second: Text<2>,
    third: RequiredText,
}

impl Contract for Ordered {
    fn missing(key: &str, _field: &str) -> String {
        format!("{key} please")
    }
}

#[test]
fn members_are_checked_in_declaration_order_with_the_types_messages() {
    // `second` comes first in the document, but `first` is declared first.
    let error = body::<Ordered>(r#"{"second":"long","third":"x"}"#).expect_err("missing");
    assert!(error.contains("first please"), "{error}");
    let error = body::<Ordered>(r#"{"third":5,"second":"long","first":"q"}"#).expect_err("bad");
    assert!(
        error.contains("second must be at most 2 characters"),
        "{error}"
    );
    let error = body::<Ordered>(r#"{"first":"q","third":""}"#).expect_err("empty");
    assert!(error.contains("third please"), "{error}");
    let ordered: Ordered = body(r#"{"first":"a","first":"b","third":"x"}"#).expect("valid");
    assert_eq!(
        ordered.first.0, "b",
        "a repeated member: the last one counts"
    );
    assert_eq!(ordered.second.0, None);
    let ordered: Ordered = body(r#"{"first":"a","third":"x","unknown":[1]}"#).expect("valid");
    assert_eq!(ordered.third.0, "x");
}

#[derive(Debug, Deserialize)]
struct Item<'a> {
    queue: RequiredName,
    #[serde(default, borrow)]
    payload: Json<'a>,
}

impl Contract for Item<'_> {}

#[test]
fn elements_report_their_path_and_index_and_borrow_raw_json() {
    let raw = serde_json::value::RawValue::from_string(r#"{"queue":1}"#.to_owned()).expect("raw");
    let error = format!(
        "{:?}",
        fields::element::<Item>(&raw, "items", 0, 4, Limits::of(&config())).err()
    );
    assert!(
        error.contains("items[0].queue") && error.contains("index: Some(4)"),
        "{error}"
    );
    let item: Item = body(r#"{"queue":"q","payload":{"a": 1.50}}"#).expect("valid");
    assert_eq!(item.payload.0.map(|p| p.get()), Some(r#"{"a": 1.50}"#));
    assert_eq!(item.queue.0, "q");
}

#[test]
fn names_follow_the_configured_length() {
    let short = Config {
        name_chars_max: 3,
        ..Config::default()
    };
    let error = decode::<Item>(br#"{"queue":"abcd"}"#, &short).err();
    assert!(format!("{error:?}").contains("queue must be at most 3 characters"));
    assert!(decode::<Item>(br#"{"queue":"abc"}"#, &short).is_ok());
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listing {
    #[serde(default)]
    batch: QueryInt<1, 100>,
    #[serde(default)]
    wait: QueryFlag<false>,
    #[serde(default)]
    consumer_group: QueryName,
    #[serde(default)]
    search: QueryText<4>,
    #[serde(default)]
    limit: PageLimit<7, 10>,
}

impl Contract for Listing {}

#[test]
fn query_parameters_follow_the_spec() {
    let listing: Listing =
        query("xbatch=9&batch=5&batch=7&wait=YES&consumerGroup=a+b%2Bc").expect("ok");
    assert_eq!(listing.batch.0, Some(5), "the first occurrence wins");
    assert!(listing.wait.0);
    assert_eq!(listing.consumer_group.0.as_deref(), Some("a b+c"));
    assert_eq!(listing.limit.0, 7, "the default");
    let defaults: Listing = query("batch=&wait&limit=").expect("empty values are defaults");
    assert_eq!(
        (defaults.batch.0, defaults.wait.0, defaults.limit.0),
        (None, false, 7)
    );
    assert_eq!(defaults.search.0, None);
    for (bad, expected) in [
        ("batch=0", "batch must be an integer from 1 to 100"),
        ("batch=1.0", "batch must be an integer from 1 to 100"),
        ("wait=maybe", "wait must be a boolean (true/false), got"),
        (
            "consumerGroup=%01",
            "consumerGroup must not contain control characters",
        ),
        ("consumerGroup=%FF", "consumerGroup is not valid UTF-8"),
        ("search=a%00", "search must not contain NUL characters"),
        ("search=abcde", "search must be at most 4 characters"),
        ("limit=11", "limit must be an integer from 1 to 10"),
    ] {
        let error = query::<Listing>(bad).expect_err(bad);
        assert!(
            error.contains(expected) && error.contains("invalid_parameter"),
            "{bad}: {error}"
        );
    }
    let error = query::<Listing>("limit=11").expect_err("limit");
    assert!(error.contains("limit: Some(10)"), "{error}");
}

#[test]
fn path_parameters_are_read_by_name() {
    let limits = Limits::of(&config());
    let template = "/api/v1/consumer-groups/{group}/queues/{queue}";
    let path: params::QueuePath =
        decode_path(template, "/api/v1/consumer-groups/g/queues/a%2Fb", limits).expect("valid");
    assert_eq!(path.queue.0, "a/b");
    let error =
        decode_path::<params::QueuePath>(template, "/api/v1/consumer-groups/g/queues/%01", limits);
    assert!(format!("{error:?}").contains("queue must not contain control characters"));
}
