//! `GET /api/v1/dlq` (spec §3.9): dead letters, newest failure first, filtered and paged; only
//! those of queues the caller's scopes allow (spec §1.6).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;

use super::access::Auth;
use super::error::{json_response, ApiError};
use super::names::name_problem;
use super::query::Query;
use super::timestamp;
use crate::engine::json::to_json;
use crate::state::AppState;

/// `limit` default and maximum (spec §3.9).
const LIMIT_DEFAULT: i64 = 100;
const LIMIT_MAX: i64 = 1_000;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/dlq", get(list))
}

async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let request = auth.scoped(dlq_query(&query, state.get().config.name_chars_max)?);
    let body = state.get().db.dlq_list(&request).await?;
    let body = state.get().encryption.open_messages(body)?;
    Ok(json_response(StatusCode::OK, body))
}

/// The `regina.dlq_list` argument: the filters given (absent ones null), timestamps normalised.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlDlqQuery<'a> {
    queue: Option<&'a str>,
    consumer_group: Option<&'a str>,
    partition: Option<&'a str>,
    from: Option<String>,
    to: Option<String>,
    limit: i64,
    offset: i64,
}

fn dlq_query(query: &Query, name_chars_max: usize) -> Result<String, ApiError> {
    let name = |key: &str| -> Result<Option<&str>, ApiError> {
        let value = query.string(key)?;
        if let Some(problem) = value.and_then(|v| name_problem(v, name_chars_max)) {
            return Err(ApiError::invalid_parameter(key, format!("{key} {problem}")));
        }
        Ok(value)
    };
    let instant = |key: &str| -> Result<Option<String>, ApiError> {
        query
            .string(key)?
            .map(|value| {
                timestamp::normalize(value).ok_or_else(|| {
                    let message = format!("{key} must be an RFC 3339 timestamp or a date");
                    ApiError::invalid_parameter(key, message)
                })
            })
            .transpose()
    };
    Ok(to_json(&SqlDlqQuery {
        queue: name("queue")?,
        consumer_group: name("consumerGroup")?,
        partition: name("partition")?,
        from: instant("from")?,
        to: instant("to")?,
        limit: query.integer("limit", 1, LIMIT_MAX, LIMIT_DEFAULT)?,
        offset: query.integer("offset", 0, i64::from(i32::MAX), 0)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_paging_are_passed_normalised() {
        let query = Query::parse(Some("queue=q&from=2026-05-10&limit=5&offset=10&unknown=1"));
        let value: serde_json::Value =
            serde_json::from_str(&dlq_query(&query, 255).expect("valid")).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"queue":"q","consumerGroup":null,"partition":null,
                               "from":"2026-05-10T00:00:00.000000Z","to":null,"limit":5,"offset":10})
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        for bad in [
            "limit=0",
            "limit=1001",
            "offset=-1",
            "from=yesterday",
            "queue=%00",
        ] {
            assert!(dlq_query(&Query::parse(Some(bad)), 255).is_err(), "{bad}");
        }
    }
}
