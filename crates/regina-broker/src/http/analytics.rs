//! Analytics feeds of the dashboard (http-api.md §3.12): `GET /api/v1/analytics/{feed}`, time
//! series over the metrics history and the stats refresh's lag history, in one shape for every feed
//! (sql/functions/93_analytics.sql).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, MethodRouter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::access::Auth;
use super::contract::params::{QueryName, QueryText};
use super::contract::{Contract, Params};
use super::error::{json_response, ApiError};
use super::range::{RangeQuery, TimeRange};
use crate::engine::json::to_json;
use crate::state::AppState;

/// Longest `hostname` / `workerId` filter, characters.
const INSTANCE_CHARS_MAX: usize = 255;

/// The handler of the feed `name` (`GET /api/v1/analytics/{name}`). Each feed is a literal route
/// of its own, so that it has its catalogue entry (access level, OpenAPI entry) and an unknown
/// feed is an ordinary `404 route_not_found`.
pub(super) fn feed_route(name: &'static str) -> MethodRouter<AppState> {
    get(
        move |State(state): State<AppState>,
              auth: Auth,
              Params(range): Params<RangeQuery>,
              filters: Result<Params<FeedFilters>, ApiError>| {
            feed(name, state, auth, range, filters)
        },
    )
}

/// The selectors of a feed (after its range); each feed reads those it knows.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeedFilters {
    /// Only this queue (queue-lag, queue-ops, retention)
    #[serde(default)]
    queue: QueryName,
    /// Only this host (worker-metrics)
    #[serde(default)]
    hostname: QueryText<INSTANCE_CHARS_MAX>,
    /// Only this instance (worker-metrics)
    #[serde(default)]
    worker_id: QueryText<INSTANCE_CHARS_MAX>,
}

impl Contract for FeedFilters {}

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

fn feed_query(range: TimeRange, filters: &FeedFilters) -> String {
    to_json(&SqlAnalyticsQuery {
        from: range.start_text(),
        to: range.end_text(),
        bucket_seconds: range.bucket_seconds(),
        queue: filters.queue.0.as_deref(),
        hostname: filters.hostname.0.as_deref(),
        worker_id: filters.worker_id.0.as_deref(),
    })
}

async fn feed(
    feed: &'static str,
    state: AppState,
    auth: Auth,
    range: RangeQuery,
    filters: Result<Params<FeedFilters>, ApiError>,
) -> Result<Response, ApiError> {
    let range = range.at(OffsetDateTime::now_utc())?;
    let Params(filters) = filters?;
    let request = feed_query(range, &filters);
    let body = state
        .get()
        .db
        .analytics(feed, &auth.scoped(request))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode_query, Limits};
    use time::macros::datetime;

    fn query(text: &str) -> Result<String, ApiError> {
        let now = datetime!(2026-05-10 12:00:00 UTC);
        let limits = Limits::of(&Config::default());
        let range: RangeQuery = decode_query(Some(text), limits)?;
        let filters: FeedFilters = decode_query(Some(text), limits)?;
        Ok(feed_query(range.at(now)?, &filters))
    }

    #[test]
    fn feeds_pass_range_bucket_and_selectors() {
        let value: serde_json::Value = serde_json::from_str(
            &query("from=2026-05-09&queue=q1&workerId=w-1&hostname=h").expect("valid"),
        )
        .expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"from": "2026-05-09T00:00:00.000000Z",
                               "to": "2026-05-10T12:00:00.000000Z", "bucketSeconds": 900,
                               "queue": "q1", "hostname": "h", "workerId": "w-1"})
        );
        let long = format!("hostname={}", "h".repeat(256));
        assert!(query(&long).is_err());
        assert!(query("from=2026-04-01").is_err());
    }
}
