//! Analytics feeds of the dashboard (spec §3.12): `GET /api/v1/analytics/{feed}`, time series
//! over the metrics history and the stats refresh's lag history, in one shape for every feed
//! (sql/functions/92_analytics.sql).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use time::OffsetDateTime;

use super::access::Auth;
use super::error::{json_response, ApiError};
use super::query::Query;
use super::range::TimeRange;
use super::resources::{query_name, query_text};
use crate::engine::json::to_json;
use crate::state::AppState;

/// The feeds, as named in the path.
const FEEDS: [&str; 7] = [
    "system-metrics",
    "worker-metrics",
    "queue-lag",
    "queue-ops",
    "queue-parked-replicas",
    "retention",
    "postgres-stats",
];
/// Longest `hostname` / `workerId` filter, characters.
const INSTANCE_CHARS_MAX: usize = 255;

/// One literal route per feed, so that each is a route of its own in the catalogue (its access
/// level, its OpenAPI entry) and an unknown feed is an ordinary `404 route_not_found`.
pub(super) fn routes() -> Router<AppState> {
    FEEDS.into_iter().fold(Router::new(), |router, name| {
        router.route(
            &format!("/api/v1/analytics/{name}"),
            get(
                move |State(state): State<AppState>, auth: Auth, RawQuery(raw): RawQuery| {
                    feed(name, state, auth, raw)
                },
            ),
        )
    })
}

/// A feed's query, as `regina.analytics` takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlAnalyticsQuery<'a> {
    from: String,
    to: String,
    bucket_seconds: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_id: Option<&'a str>,
}

fn feed_query(
    query: &Query,
    name_chars_max: usize,
    now: OffsetDateTime,
) -> Result<String, ApiError> {
    let range = TimeRange::parse(query, now)?;
    Ok(to_json(&SqlAnalyticsQuery {
        from: range.start_text(),
        to: range.end_text(),
        bucket_seconds: range.bucket_seconds(),
        queue: query_name(query, "queue", name_chars_max)?,
        hostname: query_text(query, "hostname", INSTANCE_CHARS_MAX)?,
        worker_id: query_text(query, "workerId", INSTANCE_CHARS_MAX)?,
    }))
}

async fn feed(
    feed: &'static str,
    state: AppState,
    auth: Auth,
    raw: Option<String>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = feed_query(
        &Query::parse(raw.as_deref()),
        shared.config.name_chars_max,
        OffsetDateTime::now_utc(),
    )?;
    let body = shared.db.analytics(feed, &auth.scoped(request)).await?;
    Ok(json_response(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn feeds_pass_range_bucket_and_selectors() {
        let now = datetime!(2026-05-10 12:00:00 UTC);
        let query = Query::parse(Some("from=2026-05-09&queue=q1&workerId=w-1&hostname=h"));
        let value: serde_json::Value =
            serde_json::from_str(&feed_query(&query, 255, now).expect("valid")).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"from": "2026-05-09T00:00:00.000000Z",
                               "to": "2026-05-10T12:00:00.000000Z", "bucketSeconds": 900,
                               "queue": "q1", "hostname": "h", "workerId": "w-1"})
        );
        let long = format!("hostname={}", "h".repeat(256));
        assert!(feed_query(&Query::parse(Some(&long)), 255, now).is_err());
        assert!(feed_query(&Query::parse(Some("from=2026-04-01")), 255, now).is_err());
    }
}
