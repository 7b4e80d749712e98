//! Status feeds of the dashboard (http-api.md §3.12) and the stats refresh (§3.13). Counts come
//! from the stats tables the leader refreshes every `STATS_INTERVAL_MS`
//! (sql/functions/92_status.sql);
//! `POST /api/v1/stats/refresh` runs a pass now, on a session of its own.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use super::access::Auth;
use super::contract::params::{
    Choice, Offset, Page, PageLimit, QueryName, QueryText, QueuePath, Words,
};
use super::contract::{Contract, Params, PathParams};
use super::error::{json_response, ApiError};
use super::range::{RangeQuery, TimeRange};
use super::resources::{queue_page, LABEL_CHARS_MAX};
use crate::db::stats::{self, Refresh};
use crate::engine::json::to_json;
use crate::services::StatsSettings;
use crate::state::AppState;

/// An instance counts as a current worker while it wrote its metrics history within this many
/// intervals of `STATS_INTERVAL_MS` (its write period), and at least this many seconds.
const WORKER_SEEN_INTERVALS: u64 = 3;
const WORKER_SEEN_SECONDS_MIN: u64 = 60;

const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

/// The query of the status feeds, as the SQL functions take it.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct SqlStatusQuery<'a> {
    from: String,
    to: String,
    bucket_seconds: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_seen_seconds: Option<u64>,
}

impl SqlStatusQuery<'_> {
    fn over(range: TimeRange) -> Self {
        SqlStatusQuery {
            from: range.start_text(),
            to: range.end_text(),
            bucket_seconds: range.bucket_seconds(),
            ..SqlStatusQuery::default()
        }
    }
}

/// The `queue`, `namespace`, `task` selectors of a status feed (after its range).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Scope {
    /// Only this queue
    #[serde(default)]
    queue: QueryName,
    /// Only this namespace
    #[serde(default)]
    namespace: QueryText<LABEL_CHARS_MAX>,
    /// Only this task
    #[serde(default)]
    task: QueryText<LABEL_CHARS_MAX>,
}

impl Contract for Scope {}

impl Scope {
    fn select<'a>(&'a self, query: SqlStatusQuery<'a>) -> SqlStatusQuery<'a> {
        SqlStatusQuery {
            queue: self.queue.0.as_deref(),
            namespace: self.namespace.0.as_deref(),
            task: self.task.0.as_deref(),
            ..query
        }
    }
}

pub(super) async fn status(
    State(state): State<AppState>,
    auth: Auth,
    Params(range): Params<RangeQuery>,
    scope: Result<Params<Scope>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let range = range.at(OffsetDateTime::now_utc())?;
    let Params(scope) = scope?;
    let seen = (shared.config.stats_interval_ms / 1_000 * WORKER_SEEN_INTERVALS)
        .max(WORKER_SEEN_SECONDS_MIN);
    let request = SqlStatusQuery {
        worker_seen_seconds: Some(seen),
        ..scope.select(SqlStatusQuery::over(range))
    };
    let body = shared.db.status(&auth.scoped(to_json(&request))).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// Query of `GET /api/v1/status/queues` (after its range).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct QueuesQuery {
    /// Only this namespace
    #[serde(default)]
    namespace: QueryText<LABEL_CHARS_MAX>,
    /// Only this task
    #[serde(default)]
    task: QueryText<LABEL_CHARS_MAX>,
    /// Page size
    #[serde(default)]
    limit: PageLimit<100, 10_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for QueuesQuery {}

fn queues_query(range: TimeRange, query: &QueuesQuery) -> String {
    to_json(&SqlStatusQuery {
        namespace: query.namespace.0.as_deref(),
        task: query.task.0.as_deref(),
        limit: Some(query.limit.0),
        offset: Some(query.offset.0),
        ..SqlStatusQuery::over(range)
    })
}

pub(super) async fn queues(
    State(state): State<AppState>,
    auth: Auth,
    Params(range): Params<RangeQuery>,
    query: Result<Params<QueuesQuery>, ApiError>,
) -> Result<Response, ApiError> {
    let range = range.at(OffsetDateTime::now_utc())?;
    let Params(query) = query?;
    let request = queues_query(range, &query);
    let body = state.get().db.status_queues(&auth.scoped(request)).await?;
    Ok(json_response(StatusCode::OK, body))
}

pub(super) async fn queue(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(path): PathParams<QueuePath>,
    page: Result<Params<Page<1_000, 10_000>>, ApiError>,
) -> Result<Response, ApiError> {
    let request = queue_page(&auth, &path.queue.0, page)?;
    match state.get().db.status_queue(&request).await? {
        Some(body) => Ok(json_response(StatusCode::OK, body)),
        None => Err(ApiError::queue_not_found()),
    }
}

pub(super) async fn messages(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(path): PathParams<QueuePath>,
    page: Result<Params<Page<50, 1_000>>, ApiError>,
) -> Result<Response, ApiError> {
    let request = queue_page(&auth, &path.queue.0, page)?;
    let Some((total, body)) = state.get().db.status_queue_messages(&request).await? else {
        return Err(ApiError::queue_not_found());
    };
    let mut response = json_response(StatusCode::OK, body);
    response
        .headers_mut()
        .insert(TOTAL_COUNT, HeaderValue::from(total));
    Ok(response)
}

/// The bucket sizes of `/api/v1/status/analytics`.
#[derive(Debug)]
pub(crate) struct Interval;

impl Words for Interval {
    const VALUES: &'static [&'static str] = &["hour", "day", "week", "month"];
    const DEFAULT: Option<&'static str> = Some("hour");
    fn refusal(value: &str) -> String {
        format!("must be one of hour, day, week, month, got {value:?}")
    }
}

/// Query of `GET /api/v1/status/analytics` (read before its range and scope).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AnalyticsQuery {
    /// Bucket size
    #[serde(default)]
    interval: Choice<Interval>,
}

impl Contract for AnalyticsQuery {}

pub(super) async fn analytics(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<AnalyticsQuery>,
    Params(range): Params<RangeQuery>,
    scope: Result<Params<Scope>, ApiError>,
) -> Result<Response, ApiError> {
    let range = range.at(OffsetDateTime::now_utc())?;
    let Params(scope) = scope?;
    let request = SqlStatusQuery {
        interval: query.interval.0,
        ..scope.select(SqlStatusQuery::over(range))
    };
    let body = state
        .get()
        .db
        .status_analytics(&auth.scoped(to_json(&request)))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

/// `POST /api/v1/stats/refresh`: a pass now, on a session of its own, unless one runs anywhere.
pub(super) async fn refresh(State(state): State<AppState>) -> Result<Response, ApiError> {
    let shared = state.get();
    let client = shared.stats_session.connect().await?;
    let outcome = stats::refresh(
        &client,
        StatsSettings::new(&shared.config).batch,
        &shared.worker_id,
        || true,
    )
    .await?;
    let body = match outcome {
        Refresh::Done { duration, .. } => {
            json!({"refreshed": true, "durationMs": duration.as_millis() as u64})
        }
        Refresh::Busy => json!({"skipped": true, "reason": "another_instance_running"}),
    };
    Ok(json_response(StatusCode::OK, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode_query, Limits};
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-05-10 12:00:00 UTC);

    fn parsed<T: Contract + serde::de::DeserializeOwned>(query: &str) -> Result<T, ApiError> {
        decode_query(Some(query), Limits::of(&Config::default()))
    }

    fn listing(query: &str) -> Result<serde_json::Value, ApiError> {
        let range = parsed::<RangeQuery>(query)?.at(NOW)?;
        let request = queues_query(range, &parsed(query)?);
        Ok(serde_json::from_str(&request).expect("JSON"))
    }

    #[test]
    fn status_queue_listing_passes_its_range_page_and_filters() {
        assert_eq!(
            listing("from=2026-05-10T11:30:00Z&namespace=billing&limit=5&offset=10&queue=ignored")
                .ok(),
            Some(
                json!({"from": "2026-05-10T11:30:00.000000Z", "to": "2026-05-10T12:00:00.000000Z",
                   "bucketSeconds": 60, "namespace": "billing", "limit": 5, "offset": 10})
            )
        );
        assert_eq!(listing("").expect("valid")["limit"], 100);
        for bad in ["limit=0", "limit=10001", "offset=-1", "from=x"] {
            assert!(listing(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn analytics_interval_defaults_to_hour_and_accepts_four_values() {
        assert_eq!(
            parsed::<AnalyticsQuery>("").expect("valid").interval.0,
            Some("hour")
        );
        for interval in Interval::VALUES {
            let query = parsed::<AnalyticsQuery>(&format!("interval={interval}"));
            assert_eq!(query.expect("valid").interval.0, Some(*interval));
        }
        for bad in ["interval=minute", "interval=Hour"] {
            assert!(parsed::<AnalyticsQuery>(bad).is_err(), "{bad}");
        }
        assert!(parsed::<Scope>("queue=%01").is_err());
    }
}
