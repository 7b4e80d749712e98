//! Resources (spec §3.8): the overview, queue, partition, namespace and task listings, one
//! queue's detail, queue delete and queue clear. Listings leave out queues outside the caller's
//! scopes; routes naming such a queue answer `403` (spec §1.6). Message counts come from the
//! stats tables (sql/functions/86_resources.sql, 91_status.sql), up to `STATS_INTERVAL_MS` old.

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::{delete, get};
use axum::Router;
use serde::Serialize;
use serde_json::json;

use super::access::Auth;
use super::error::{json_response, ApiError};
use super::names::{name_problem, path_name};
use super::query::Query;
use crate::engine::json::to_json;
use crate::state::AppState;

/// `limit` of the queue listing and of a queue's partition page: default and maximum (§3.8).
const QUEUES_LIMIT_DEFAULT: i64 = 1_000;
const QUEUES_LIMIT_MAX: i64 = 10_000;
/// `limit` of the partition listing: default and maximum (§3.8).
const PARTITIONS_LIMIT_DEFAULT: i64 = 100;
const PARTITIONS_LIMIT_MAX: i64 = 10_000;
/// Longest `namespace` / `task` filter, characters (spec §6).
pub(super) const LABEL_CHARS_MAX: usize = 255;
/// Position of `{queue}` in `/api/v1/resources/queues/{queue}` and in
/// `/api/v1/queues/{queue}/clear`.
const RESOURCE_QUEUE_SEGMENT: usize = 4;
const CLEAR_QUEUE_SEGMENT: usize = 3;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/resources/overview", get(overview))
        .route("/api/v1/resources/queues", get(queues))
        .route(
            "/api/v1/resources/queues/{queue}",
            get(queue).delete(queue_delete),
        )
        .route("/api/v1/queues/{queue}/clear", delete(queue_clear))
        .route("/api/v1/resources/partitions", get(partitions))
        .route("/api/v1/resources/namespaces", get(namespaces))
        .route("/api/v1/resources/tasks", get(tasks))
}

/// `400 invalid_parameter` unless `value` is a valid name (queue, partition, group).
pub(super) fn query_name<'a>(
    query: &'a Query,
    key: &str,
    chars_max: usize,
) -> Result<Option<&'a str>, ApiError> {
    let value = query.string(key)?;
    if let Some(problem) = value.and_then(|v| name_problem(v, chars_max)) {
        return Err(ApiError::invalid_parameter(key, format!("{key} {problem}")));
    }
    Ok(value)
}

/// A free-text filter of at most `chars_max` characters (namespace, task, search).
pub(super) fn query_text<'a>(
    query: &'a Query,
    key: &str,
    chars_max: usize,
) -> Result<Option<&'a str>, ApiError> {
    let value = query.string(key)?;
    if value.is_some_and(|v| v.chars().count() > chars_max) {
        let message = format!("{key} must be at most {chars_max} characters");
        return Err(ApiError::invalid_parameter(key, message).limit(chars_max as u64));
    }
    Ok(value)
}

/// `offset`: 0 or more.
pub(super) fn query_offset(query: &Query) -> Result<i64, ApiError> {
    query.integer("offset", 0, i64::from(i32::MAX), 0)
}

async fn overview(State(state): State<AppState>, auth: Auth) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .overview(&auth.scoped("{}".to_owned()))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

/// The `regina.queues_list` argument.
#[derive(Serialize)]
struct SqlQueuesQuery<'a> {
    namespace: Option<&'a str>,
    task: Option<&'a str>,
    search: Option<&'a str>,
    limit: i64,
    offset: i64,
}

fn queues_query(query: &Query, name_chars_max: usize) -> Result<String, ApiError> {
    Ok(to_json(&SqlQueuesQuery {
        namespace: query_text(query, "namespace", LABEL_CHARS_MAX)?,
        task: query_text(query, "task", LABEL_CHARS_MAX)?,
        search: query_text(query, "search", name_chars_max)?,
        limit: query.integer("limit", 1, QUEUES_LIMIT_MAX, QUEUES_LIMIT_DEFAULT)?,
        offset: query_offset(query)?,
    }))
}

async fn queues(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = queues_query(&Query::parse(raw.as_deref()), shared.config.name_chars_max)?;
    let request = auth.scoped(request);
    let body = shared.db.queues_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// A page of one queue: the queue named by path segment `segment` and `limit` (default,
/// maximum) and `offset` from the query; the argument of `regina.queue_detail` and of the status
/// queue pages.
///
/// # Errors
/// `400` for a bad name or page, `403` for a queue outside the caller's scopes.
pub(super) fn queue_page(
    auth: &Auth,
    uri: &Uri,
    segment: usize,
    raw: Option<&str>,
    name_chars_max: usize,
    limit: (i64, i64),
) -> Result<String, ApiError> {
    let queue = path_name(uri, segment, "queue", name_chars_max)?;
    auth.check_queue(&queue)?;
    let query = Query::parse(raw);
    let (limit_default, limit_max) = limit;
    Ok(to_json(&json!({
        "queue": queue,
        "limit": query.integer("limit", 1, limit_max, limit_default)?,
        "offset": query_offset(&query)?,
    })))
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
        RESOURCE_QUEUE_SEGMENT,
        raw.as_deref(),
        shared.config.name_chars_max,
        (QUEUES_LIMIT_DEFAULT, QUEUES_LIMIT_MAX),
    )?;
    match shared.db.queue_detail(&request).await? {
        Some(body) => Ok(json_response(StatusCode::OK, body)),
        None => Err(ApiError::queue_not_found()),
    }
}

async fn queue_delete(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let queue = path_name(
        &uri,
        RESOURCE_QUEUE_SEGMENT,
        "queue",
        shared.config.name_chars_max,
    )?;
    auth.check_queue(&queue)?;
    // Parked pops on the queue keep waiting (spec §3.8): nothing to wake.
    let body = shared.db.queue_delete(&queue).await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn queue_clear(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    // Queen's admin clients send `partition` to clear one partition. Regina clears whole queues
    // only, and ignoring the filter of a destructive call would delete more than was asked.
    let query = Query::parse(raw.as_deref());
    if query
        .string("partition")
        .map_err(ApiError::unsuccessful)?
        .is_some()
    {
        return Err(ApiError::invalid_parameter(
            "partition",
            "clearing one partition is not supported: omit partition to clear the whole queue",
        )
        .unsuccessful());
    }
    let queue = path_name(
        &uri,
        CLEAR_QUEUE_SEGMENT,
        "queue",
        shared.config.name_chars_max,
    )
    .map_err(ApiError::unsuccessful)?;
    auth.check_queue(&queue).map_err(ApiError::unsuccessful)?;
    let cleared = shared
        .db
        .queue_clear(&queue)
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    let Some((body, groups)) = cleared else {
        return Err(ApiError::queue_not_found().unsuccessful());
    };
    // The groups' leases ended: their waiters re-check (spec §4.9).
    for group in &groups {
        shared.waiters.lease_ended(&queue, group);
    }
    Ok(json_response(StatusCode::OK, body))
}

/// The `regina.partitions_list` argument.
#[derive(Serialize)]
struct SqlPartitionsQuery<'a> {
    queue: Option<&'a str>,
    search: Option<&'a str>,
    limit: i64,
    offset: i64,
}

fn partitions_query(query: &Query, name_chars_max: usize) -> Result<String, ApiError> {
    Ok(to_json(&SqlPartitionsQuery {
        queue: query_name(query, "queue", name_chars_max)?,
        search: query_text(query, "search", name_chars_max)?,
        limit: query.integer("limit", 1, PARTITIONS_LIMIT_MAX, PARTITIONS_LIMIT_DEFAULT)?,
        offset: query_offset(query)?,
    }))
}

async fn partitions(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let request = partitions_query(&Query::parse(raw.as_deref()), shared.config.name_chars_max)?;
    let request = auth.scoped(request);
    let body = shared.db.partitions_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn namespaces(State(state): State<AppState>, auth: Auth) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .labels_list("namespace", auth.scopes_value())
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn tasks(State(state): State<AppState>, auth: Auth) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .labels_list("task", auth.scopes_value())
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: Result<String, ApiError>) -> serde_json::Value {
        serde_json::from_str(&text.expect("valid")).expect("JSON")
    }

    #[test]
    fn queue_listing_filters_and_paging_are_passed() {
        let query = Query::parse(Some("namespace=billing&search=inv&limit=5&offset=10&x=1"));
        assert_eq!(
            value(queues_query(&query, 255)),
            serde_json::json!({"namespace":"billing","task":null,"search":"inv",
                               "limit":5,"offset":10})
        );
        let defaults = value(queues_query(&Query::parse(None), 255));
        assert_eq!(
            (defaults["limit"].as_i64(), defaults["offset"].as_i64()),
            (Some(1000), Some(0))
        );
    }

    #[test]
    fn partition_listing_defaults_to_a_hundred() {
        let defaults = value(partitions_query(&Query::parse(None), 255));
        assert_eq!(defaults["limit"], 100);
    }

    #[test]
    fn bad_listing_parameters_are_refused() {
        for bad in ["limit=0", "limit=10001", "offset=-1", "limit=ten"] {
            assert!(
                queues_query(&Query::parse(Some(bad)), 255).is_err(),
                "{bad}"
            );
            assert!(
                partitions_query(&Query::parse(Some(bad)), 255).is_err(),
                "{bad}"
            );
        }
        let long = format!("namespace={}", "n".repeat(256));
        assert!(queues_query(&Query::parse(Some(&long)), 255).is_err());
        assert!(partitions_query(&Query::parse(Some("queue=%01")), 255).is_err());
        assert!(partitions_query(&Query::parse(Some("search=a%00")), 255).is_err());
    }
}
