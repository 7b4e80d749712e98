//! Helpers of the stats, status and analytics tests: instants of the database clock, and rows of
//! the metrics history written as each instance writes its own.

use regina_testkit::TestBroker;
use serde_json::Value;
use time::OffsetDateTime;

use crate::support::enc;

pub const STATS_LOCK_KEY: i64 = 0x7265_6769_6e61_0013;

/// The start of the minute `minutes_ago` minutes before the database's current minute.
pub async fn minute(b: &TestBroker, minutes_ago: i32) -> OffsetDateTime {
    b.db()
        .await
        .query_one(
            "select date_trunc('minute', now()) - $1::int * interval '1 minute'",
            &[&minutes_ago],
        )
        .await
        .unwrap()
        .get(0)
}

/// Midnight (UTC) `days_ago` days before today, on the database clock.
pub async fn midnight(b: &TestBroker, days_ago: i32) -> OffsetDateTime {
    b.db()
        .await
        .query_one(
            "select date_bin('1 day', now(), 'epoch') - $1::int * interval '1 day'",
            &[&days_ago],
        )
        .await
        .unwrap()
        .get(0)
}

/// An instant as the wire writes it (milliseconds, `Z`).
pub fn iso(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A query value for an instant (percent-encoded).
pub fn q(t: OffsetDateTime) -> String {
    enc(&iso(t))
}

/// `(col, …)` and `(value, …)` of a JSON object of numeric columns, for an insert.
fn columns(values: &Value) -> (String, String) {
    let map = values.as_object().expect("an object of columns");
    let names: Vec<&str> = map.keys().map(String::as_str).collect();
    let literals: Vec<String> = map.values().map(Value::to_string).collect();
    (names.join(", "), literals.join(", "))
}

/// Adds a row of `regina.queue_metrics`: (bucket, queue, worker) with the given counters.
pub async fn queue_metrics(
    b: &TestBroker,
    bucket: OffsetDateTime,
    queue: &str,
    worker: &str,
    counters: Value,
) {
    let (names, literals) = columns(&counters);
    let (names, literals) = if names.is_empty() {
        (String::new(), String::new())
    } else {
        (format!(", {names}"), format!(", {literals}"))
    };
    b.db()
        .await
        .execute(
            &format!(
                "insert into regina.queue_metrics (bucket, queue_name, worker_id{names})
                 values ($1, $2, $3{literals})"
            ),
            &[&bucket, &queue, &worker],
        )
        .await
        .unwrap();
}

/// Brings the hourly sums of the whole metrics history up to date, as the refresh does for the
/// hours that may still change (rows written here directly may be older).
pub async fn rollup(b: &TestBroker) {
    b.db()
        .await
        .execute("select regina.metrics_rollup('-infinity', 'infinity')", &[])
        .await
        .unwrap();
}

/// Adds a row of `regina.worker_metrics` for instance `worker` (host `host-<worker>`, version
/// 9.9.9, started an hour before `last_seen`).
pub async fn worker_metrics(
    b: &TestBroker,
    bucket: OffsetDateTime,
    worker: &str,
    last_seen: OffsetDateTime,
    values: Value,
) {
    let (names, literals) = columns(&values);
    let (names, literals) = if names.is_empty() {
        (String::new(), String::new())
    } else {
        (format!(", {names}"), format!(", {literals}"))
    };
    b.db()
        .await
        .execute(
            &format!(
                "insert into regina.worker_metrics (bucket, worker_id, hostname, version,
                                                    started_at, last_seen{names})
                 values ($1, $2::text, 'host-' || $2::text, '9.9.9',
                         $3::timestamptz - interval '1 hour', $3{literals})"
            ),
            &[&bucket, &worker, &last_seen],
        )
        .await
        .unwrap();
}
