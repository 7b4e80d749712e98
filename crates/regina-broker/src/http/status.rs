//! Status feeds of the dashboard (spec §3.12) and the stats refresh (§3.13). Counts come from the
//! stats tables the leader refreshes every `STATS_INTERVAL_MS` (sql/functions/91_status.sql);
//! `POST /api/v1/stats/refresh` runs a pass now, on a session of its own.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;
use serde_json::json;
use time::OffsetDateTime;

use super::access::Auth;
use super::error::{json_response, ApiError};
use super::query::Query;
use super::range::TimeRange;
use super::resources::{query_name, query_offset, query_text, queue_page, LABEL_CHARS_MAX};
use crate::db::stats::{self, Refresh};
use crate::engine::json::to_json;
use crate::state::AppState;

/// `limit` of the status queue listing: default and maximum.
const QUEUES_LIMIT_DEFAULT: i64 = 100;
const QUEUES_LIMIT_MAX: i64 = 10_000;
/// `limit` of one queue's partition page: default and maximum.
const PARTITIONS_LIMIT_DEFAULT: i64 = 1_000;
const PARTITIONS_LIMIT_MAX: i64 = 10_000;
/// `limit` of one queue's message page: default and maximum (spec §3.12).
const MESSAGES_LIMIT_DEFAULT: i64 = 50;
const MESSAGES_LIMIT_MAX: i64 = 1_000;
/// Position of `{queue}` in `/api/v1/status/queues/{queue}[/messages]`.
const QUEUE_SEGMENT: usize = 4;
/// An instance counts as a current worker while it wrote its metrics history within this many
/// intervals of `STATS_INTERVAL_MS` (its write period), and at least this many seconds.
const WORKER_SEEN_INTERVALS: u64 = 3;
const WORKER_SEEN_SECONDS_MIN: u64 = 60;
/// The bucket sizes of `/api/v1/status/analytics`.
const ANALYTICS_INTERVALS: [&str; 4] = ["hour", "day", "week", "month"];

const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/status", get(status))
        .route("/api/v1/status/queues", get(queues))
        .route("/api/v1/status/queues/{queue}", get(queue))
        .route("/api/v1/status/queues/{queue}/messages", get(messages))
        .route("/api/v1/status/analytics", get(analytics))
        .route("/api/v1/stats/refresh", post(refresh))
}

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

/// The range and the `queue`, `namespace`, `task` selectors of a status feed.
fn selected<'a>(
    query: &'a Query,
    name_chars_max: usize,
    now: OffsetDateTime,
) -> Result<SqlStatusQuery<'a>, ApiError> {
    let range = TimeRange::parse(query, now)?;
    Ok(SqlStatusQuery {
        from: range.start_text(),
        to: range.end_text(),
        bucket_seconds: range.bucket_seconds(),
        queue: query_name(query, "queue", name_chars_max)?,
        namespace: query_text(query, "namespace", LABEL_CHARS_MAX)?,
        task: query_text(query, "task", LABEL_CHARS_MAX)?,
        ..SqlStatusQuery::default()
    })
}

async fn status(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let query = Query::parse(raw.as_deref());
    let seen = (shared.config.stats_interval_ms / 1_000 * WORKER_SEEN_INTERVALS)
        .max(WORKER_SEEN_SECONDS_MIN);
    let request = SqlStatusQuery {
        worker_seen_seconds: Some(seen),
        ..selected(
            &query,
            shared.config.name_chars_max,
            OffsetDateTime::now_utc(),
        )?
    };
    let body = shared.db.status(&auth.scoped(to_json(&request))).await?;
    Ok(json_response(StatusCode::OK, body))
}

fn queues_query(query: &Query, now: OffsetDateTime) -> Result<String, ApiError> {
    let range = TimeRange::parse(query, now)?;
    Ok(to_json(&SqlStatusQuery {
        from: range.start_text(),
        to: range.end_text(),
        bucket_seconds: range.bucket_seconds(),
        namespace: query_text(query, "namespace", LABEL_CHARS_MAX)?,
        task: query_text(query, "task", LABEL_CHARS_MAX)?,
        limit: Some(query.integer("limit", 1, QUEUES_LIMIT_MAX, QUEUES_LIMIT_DEFAULT)?),
        offset: Some(query_offset(query)?),
        ..SqlStatusQuery::default()
    }))
}

async fn queues(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = queues_query(&Query::parse(raw.as_deref()), OffsetDateTime::now_utc())?;
    let body = shared.db.status_queues(&auth.scoped(request)).await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn queue(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = queue_page(
        &auth,
        &uri,
        QUEUE_SEGMENT,
        raw.as_deref(),
        shared.config.name_chars_max,
        (PARTITIONS_LIMIT_DEFAULT, PARTITIONS_LIMIT_MAX),
    )?;
    match shared.db.status_queue(&request).await? {
        Some(body) => Ok(json_response(StatusCode::OK, body)),
        None => Err(ApiError::queue_not_found()),
    }
}

async fn messages(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = queue_page(
        &auth,
        &uri,
        QUEUE_SEGMENT,
        raw.as_deref(),
        shared.config.name_chars_max,
        (MESSAGES_LIMIT_DEFAULT, MESSAGES_LIMIT_MAX),
    )?;
    let Some((total, body)) = shared.db.status_queue_messages(&request).await? else {
        return Err(ApiError::queue_not_found());
    };
    let mut response = json_response(StatusCode::OK, body);
    response
        .headers_mut()
        .insert(TOTAL_COUNT, HeaderValue::from(total));
    Ok(response)
}

fn analytics_query(
    query: &Query,
    name_chars_max: usize,
    now: OffsetDateTime,
) -> Result<String, ApiError> {
    let interval = match query.string("interval")? {
        None => "hour",
        Some(value) => ANALYTICS_INTERVALS
            .into_iter()
            .find(|i| *i == value)
            .ok_or_else(|| {
                ApiError::invalid_parameter(
                    "interval",
                    format!("interval must be one of hour, day, week, month, got {value:?}"),
                )
            })?,
    };
    Ok(to_json(&SqlStatusQuery {
        interval: Some(interval),
        ..selected(query, name_chars_max, now)?
    }))
}

async fn analytics(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = analytics_query(
        &Query::parse(raw.as_deref()),
        shared.config.name_chars_max,
        OffsetDateTime::now_utc(),
    )?;
    let body = shared.db.status_analytics(&auth.scoped(request)).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// `POST /api/v1/stats/refresh`: a pass now, on a session of its own, unless one runs anywhere.
async fn refresh(State(state): State<AppState>) -> Result<Response, ApiError> {
    let shared = state.get();
    let client = shared.stats_session.connect().await?;
    let outcome = stats::refresh(
        &client,
        shared.config.stats_settings().batch,
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
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-05-10 12:00:00 UTC);

    fn value(text: Result<String, ApiError>) -> serde_json::Value {
        serde_json::from_str(&text.expect("valid")).expect("JSON")
    }

    #[test]
    fn status_queue_listing_passes_its_range_page_and_filters() {
        let query = Query::parse(Some(
            "from=2026-05-10T11:30:00Z&namespace=billing&limit=5&offset=10&queue=ignored",
        ));
        assert_eq!(
            value(queues_query(&query, NOW)),
            json!({"from": "2026-05-10T11:30:00.000000Z", "to": "2026-05-10T12:00:00.000000Z",
                   "bucketSeconds": 60, "namespace": "billing", "limit": 5, "offset": 10})
        );
        assert_eq!(value(queues_query(&Query::parse(None), NOW))["limit"], 100);
        for bad in ["limit=0", "limit=10001", "offset=-1", "from=x"] {
            assert!(
                queues_query(&Query::parse(Some(bad)), NOW).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn analytics_interval_defaults_to_hour_and_accepts_four_values() {
        let defaults = value(analytics_query(&Query::parse(None), 255, NOW));
        assert_eq!(defaults["interval"], "hour");
        for interval in ANALYTICS_INTERVALS {
            let query = Query::parse(Some(&format!("interval={interval}")));
            assert_eq!(
                value(analytics_query(&query, 255, NOW))["interval"],
                interval
            );
        }
        for bad in ["interval=minute", "interval=Hour", "queue=%01"] {
            assert!(
                analytics_query(&Query::parse(Some(bad)), 255, NOW).is_err(),
                "{bad}"
            );
        }
    }
}
