//! Helpers of the broker's tests: a broker with its client, and checks of identifiers and
//! timestamps. The HTTP client itself ([`Api`], [`Reply`]) is the test kit's, shared with the
//! command line's tests.

use regina_testkit::TestBroker;
pub use regina_testkit::{enc, Api, Reply};
use serde_json::Value;

/// Starts a broker with default configuration and a client for it.
pub async fn start() -> (TestBroker, Api) {
    let b = TestBroker::start().await;
    let api = Api::new(&b);
    (b, api)
}

/// Starts a broker with a tweaked configuration.
pub async fn start_with(f: impl FnOnce(&mut regina_broker::Config)) -> (TestBroker, Api) {
    let b = TestBroker::start_with(f).await;
    let api = Api::new(&b);
    (b, api)
}

/// Starts a broker on which only events, and the timers a parked pop arms for a known instant,
/// answer a long-poll before its timeout: the periodic safety re-check (`longpoll_recheck_ms`) is
/// off. A pop waiting [`regina_testkit::PARKED_POP_TIMEOUT_MS`] there that is answered with the
/// message proves the wake-up under test, however slow the machine.
pub async fn start_event_driven() -> (TestBroker, Api) {
    start_with(|c| c.longpoll_recheck_ms = 0).await
}

/// Asserts `s` is a canonical UUIDv7 and returns it parsed.
#[track_caller]
pub fn assert_uuid_v7(v: &Value) -> uuid::Uuid {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|_| panic!("not a UUID: {s}"));
    assert_eq!(u.get_version_num(), 7, "not a UUIDv7: {s}");
    assert_eq!(u.hyphenated().to_string(), s, "not canonical: {s}");
    u
}

/// Asserts `v` is a canonical UUID of any version.
#[track_caller]
pub fn assert_uuid(v: &Value) -> uuid::Uuid {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|_| panic!("not a UUID: {s}"));
    assert_eq!(u.hyphenated().to_string(), s, "not canonical: {s}");
    u
}

/// Parses an RFC 3339 timestamp from the broker.
#[track_caller]
pub fn ts(v: &Value) -> time::OffsetDateTime {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp string: {v}"));
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("bad timestamp {s}: {e}"))
}

/// Asserts an ISO-8601 UTC timestamp with exactly `digits` fractional digits and a literal `Z`.
#[track_caller]
pub fn assert_iso(v: &Value, digits: usize) {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    let ok = s.len() == 20 + digits + 1
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && s[20..20 + digits].bytes().all(|b| b.is_ascii_digit());
    assert!(
        ok,
        "timestamp {s} is not ISO-8601 UTC with {digits} fractional digits"
    );
    ts(v);
}

/// The database's current time (the clock every lease and visibility rule uses, §1.5).
pub async fn db_now(b: &TestBroker) -> time::OffsetDateTime {
    let c = b.db().await;
    let row = c
        .query_one("select clock_timestamp()", &[])
        .await
        .expect("db clock");
    row.get::<_, time::OffsetDateTime>(0)
}
