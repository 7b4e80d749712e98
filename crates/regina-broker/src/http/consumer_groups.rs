//! Consumer groups (spec §3.10): listings, one group's partitions, deletes, the subscription
//! start, and seeks. Changes that move where a group stands wake every waiter of the group on
//! the queues concerned.
//!
//! Queue scopes (spec §1.6): listings and a group's detail leave out forbidden queues; routes
//! naming a forbidden queue answer `403`, and so do the changes that reach every queue of a
//! group (group delete, subscription start) when the caller has scopes at all.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::access::{forbidden, Auth};
use super::body::{self, BodyBytes};
use super::error::{json_response, ApiError};
use super::names::path_name;
use super::query::Query;
use super::resources::query_name;
use super::timestamp;
use crate::engine::json::to_json;
use crate::state::{AppState, Shared};

/// `limit` default and maximum of the listings (spec §3.10).
const LIMIT_DEFAULT: i64 = 1_000;
const LIMIT_MAX: i64 = 10_000;
/// `limit` default and maximum of the partitions per queue in one group's detail.
const DETAIL_LIMIT_MAX: i64 = 10_000;
/// `minLagSeconds` default of the lagging listing.
const MIN_LAG_SECONDS_DEFAULT: i64 = 3_600;
/// Positions of the path parameters in
/// `/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek`.
const GROUP_SEGMENT: usize = 3;
const QUEUE_SEGMENT: usize = 5;
const PARTITION_SEGMENT: usize = 7;

const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

pub(super) fn routes() -> Router<AppState> {
    const GROUP: &str = "/api/v1/consumer-groups/{group}";
    Router::new()
        .route("/api/v1/consumer-groups", get(list))
        .route("/api/v1/consumer-groups/lagging", get(lagging))
        .route(GROUP, get(detail).delete(delete_group))
        .route(
            &format!("{GROUP}/queues/{{queue}}"),
            delete(delete_on_queue),
        )
        .route(&format!("{GROUP}/subscription"), post(subscription))
        .route(&format!("{GROUP}/queues/{{queue}}/seek"), post(seek_queue))
        .route(
            &format!("{GROUP}/queues/{{queue}}/partitions/{{partition}}/seek"),
            post(seek_partition),
        )
}

/// One page of a listing, as the listing functions take it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlPage {
    limit: i64,
    offset: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_lag_seconds: Option<i64>,
}

fn page(query: &Query, min_lag_seconds: Option<i64>) -> Result<String, ApiError> {
    Ok(to_json(&SqlPage {
        limit: query.integer("limit", 1, LIMIT_MAX, LIMIT_DEFAULT)?,
        offset: query.integer("offset", 0, i64::from(i32::MAX), 0)?,
        min_lag_seconds,
    }))
}

/// A bare-array listing with its unpaged count in `X-Total-Count`.
fn listing(total: i64, body: String) -> Response {
    let mut response = json_response(StatusCode::OK, body);
    response
        .headers_mut()
        .insert(TOTAL_COUNT, HeaderValue::from(total));
    response
}

async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let request = auth.scoped(page(&Query::parse(raw.as_deref()), None)?);
    let (total, body) = state.get().db.groups_list(&request).await?;
    Ok(listing(total, body))
}

async fn lagging(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let min_lag = query.integer(
        "minLagSeconds",
        0,
        i64::from(i32::MAX),
        MIN_LAG_SECONDS_DEFAULT,
    )?;
    let request = auth.scoped(page(&query, Some(min_lag))?);
    let (total, body) = state.get().db.groups_lagging(&request).await?;
    Ok(listing(total, body))
}

/// The `:group` path parameter.
fn group(shared: &Shared, uri: &Uri) -> Result<String, ApiError> {
    path_name(uri, GROUP_SEGMENT, "group", shared.config.name_chars_max)
}

/// The `:queue` path parameter.
fn queue(shared: &Shared, uri: &Uri) -> Result<String, ApiError> {
    path_name(uri, QUEUE_SEGMENT, "queue", shared.config.name_chars_max)
}

/// The page of `GET /api/v1/consumer-groups/:group`, as `regina.consumer_group_detail` takes it.
#[derive(Serialize, Debug, PartialEq)]
struct SqlDetailPage<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<&'a str>,
    limit: i64,
    offset: i64,
    sort: &'static str,
}

/// `queue`, `limit` (partitions per queue), `offset` and `sort` (`partition` or `lag`).
fn detail_page<'a>(query: &'a Query, name_chars_max: usize) -> Result<SqlDetailPage<'a>, ApiError> {
    let sort = match query.string("sort")? {
        None | Some("partition") => "partition",
        Some("lag") => "lag",
        Some(_) => {
            return Err(ApiError::invalid_parameter(
                "sort",
                "sort must be partition or lag".to_owned(),
            ))
        }
    };
    Ok(SqlDetailPage {
        queue: query_name(query, "queue", name_chars_max)?,
        limit: query.integer("limit", 1, DETAIL_LIMIT_MAX, DETAIL_LIMIT_MAX)?,
        offset: query.integer("offset", 0, i64::from(i32::MAX), 0)?,
        sort,
    })
}

async fn detail(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let group = group(shared, &uri)?;
    let query = Query::parse(raw.as_deref());
    let page = detail_page(&query, shared.config.name_chars_max)?;
    if let Some(queue) = page.queue {
        auth.check_queue(queue)?;
    }
    let mut body = shared.db.group_detail(&group, &to_json(&page)).await?;
    if auth.scopes().is_some() {
        // The detail is keyed by queue name: drop the queues the caller may not see.
        let mut queues: serde_json::Map<String, Value> =
            serde_json::from_str(&body).map_err(ApiError::internal)?;
        queues.retain(|queue, _| auth.allows(queue));
        body = Value::Object(queues).to_string();
    }
    Ok(json_response(StatusCode::OK, body))
}

/// `403` for a change that reaches every queue of a group, when the caller has queue scopes.
fn check_every_queue(auth: &Auth) -> Result<(), ApiError> {
    match auth.scopes() {
        Some(_) => Err(forbidden()),
        None => Ok(()),
    }
}

async fn delete_group(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let group = group(state.get(), &uri)?;
    check_every_queue(&auth)?;
    delete_in(&state, group, None, raw.as_deref()).await
}

async fn delete_on_queue(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let group = group(state.get(), &uri)?;
    let queue = queue(state.get(), &uri)?;
    auth.check_queue(&queue)?;
    delete_in(&state, group, Some(queue), raw.as_deref()).await
}

/// What `regina.consumer_group_delete` and `_subscription` report.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupChange {
    #[serde(default)]
    deleted_partitions: i64,
    #[serde(default)]
    metadata_deleted: bool,
    #[serde(default)]
    new_timestamp: Option<String>,
    #[serde(default)]
    rows_updated: i64,
    /// Queues whose waiters of the group should retry.
    queues: Vec<String>,
}

impl GroupChange {
    fn read(text: &str) -> Result<GroupChange, ApiError> {
        serde_json::from_str(text)
            .map_err(|e| ApiError::internal(format!("unreadable group change {text}: {e}")))
    }

    fn wake(&self, shared: &Shared, group: &str) {
        for queue in &self.queues {
            shared.waiters.group_moved(queue, group);
        }
    }
}

async fn delete_in(
    state: &AppState,
    group: String,
    queue: Option<String>,
    raw_query: Option<&str>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let delete_metadata = Query::parse(raw_query).boolean("deleteMetadata", true)?;
    let text = shared
        .db
        .group_delete(&group, queue.as_deref(), delete_metadata)
        .await?;
    let change = GroupChange::read(&text)?;
    change.wake(shared, &group);
    let mut body = json!({
        "success": true,
        "consumerGroup": group,
        "deletedPartitions": change.deleted_partitions,
        "metadataDeleted": change.metadata_deleted,
    });
    if let Some(queue) = queue {
        body["queueName"] = Value::String(queue);
    }
    Ok(json_response(StatusCode::OK, body.to_string()))
}

async fn subscription(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let group = group(shared, &uri)?;
    check_every_queue(&auth)?;
    let object = body::parse_object(&bytes, shared.config.json_depth_max)?;
    let start =
        object.required_string("subscriptionTimestamp", "subscriptionTimestamp is required")?;
    let start = timestamp::normalize(&start).ok_or_else(|| {
        object.error(
            "subscriptionTimestamp",
            "subscriptionTimestamp must be an RFC 3339 timestamp or a date",
        )
    })?;
    let change = GroupChange::read(&shared.db.group_subscription(&group, &start).await?)?;
    change.wake(shared, &group);
    let body = json!({
        "success": true,
        "consumerGroup": group,
        "newTimestamp": change.new_timestamp,
        "rowsUpdated": change.rows_updated,
    });
    Ok(json_response(StatusCode::OK, body.to_string()))
}

/// Where a seek moves the group (spec §3.10).
#[derive(Debug, PartialEq, Eq)]
enum SeekTarget {
    /// Past every message committed before the seek.
    End,
    /// To the first message created after this instant (normalised ISO-8601).
    After(String),
}

/// `{toEnd: true}` or `{timestamp}`; an empty body is `toEnd` where `end_by_default`.
fn seek_target(
    bytes: &[u8],
    depth_max: usize,
    end_by_default: bool,
) -> Result<SeekTarget, ApiError> {
    let object = body::parse_object(bytes, depth_max)?;
    let to_end = object.opt_bool("toEnd")?;
    match (to_end, object.opt_string("timestamp")?) {
        (Some(true), _) => Ok(SeekTarget::End),
        (_, Some(text)) => timestamp::normalize(&text)
            .map(SeekTarget::After)
            .ok_or_else(|| {
                object.error(
                    "timestamp",
                    "timestamp must be an RFC 3339 timestamp or a date",
                )
            }),
        (None, None) if end_by_default => Ok(SeekTarget::End),
        _ => Err(ApiError::validation(
            "Must specify either 'toEnd': true or 'timestamp'",
        )),
    }
}

/// The `regina.consumer_group_seek` argument.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlSeek<'a> {
    queue: &'a str,
    partition: Option<&'a str>,
    consumer_group: &'a str,
    to_end: bool,
    timestamp: Option<&'a str>,
}

/// What `regina.consumer_group_seek` reports.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SeekOutcome {
    missing: Option<String>,
    #[serde(default)]
    partitions_updated: i64,
    target_timestamp: Option<String>,
    cursor_moved_to: Option<Value>,
}

/// Runs a seek; `404` when the queue (or partition) does not exist.
async fn seek(
    shared: &Shared,
    group: &str,
    queue: &str,
    partition: Option<&str>,
    target: &SeekTarget,
) -> Result<SeekOutcome, ApiError> {
    let timestamp = match target {
        SeekTarget::End => None,
        SeekTarget::After(instant) => Some(instant.as_str()),
    };
    let request = to_json(&SqlSeek {
        queue,
        partition,
        consumer_group: group,
        to_end: timestamp.is_none(),
        timestamp,
    });
    let text = shared.db.group_seek(&request).await?;
    let outcome: SeekOutcome = serde_json::from_str(&text)
        .map_err(|e| ApiError::internal(format!("unreadable seek outcome {text}: {e}")))?;
    match outcome.missing.as_deref() {
        Some("queue") => Err(ApiError::queue_not_found()),
        Some(_) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "partition_not_found",
            "Partition not found",
        )),
        None => {
            shared.waiters.group_moved(queue, group);
            Ok(outcome)
        }
    }
}

async fn seek_queue(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (group, queue) = (group(shared, &uri)?, queue(shared, &uri)?);
    auth.check_queue(&queue)?;
    let target = seek_target(&bytes, shared.config.json_depth_max, false)?;
    let outcome = seek(shared, &group, &queue, None, &target).await?;
    let body = json!({
        "success": true,
        "consumerGroup": group,
        "queueName": queue,
        "seekToEnd": target == SeekTarget::End,
        "targetTimestamp": outcome.target_timestamp,
        "partitionsUpdated": outcome.partitions_updated,
    });
    Ok(json_response(StatusCode::OK, body.to_string()))
}

async fn seek_partition(
    State(state): State<AppState>,
    auth: Auth,
    uri: Uri,
    BodyBytes(bytes): BodyBytes,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (group, queue) = (group(shared, &uri)?, queue(shared, &uri)?);
    auth.check_queue(&queue)?;
    let partition = path_name(
        &uri,
        PARTITION_SEGMENT,
        "partition",
        shared.config.name_chars_max,
    )?;
    let target = seek_target(&bytes, shared.config.json_depth_max, true)?;
    let outcome = seek(shared, &group, &queue, Some(&partition), &target).await?;
    let body = json!({
        "success": true,
        "consumerGroup": group,
        "queueName": queue,
        "partitionName": partition,
        "updated": true,
        "cursorMovedTo": outcome.cursor_moved_to,
    });
    Ok(json_response(StatusCode::OK, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_pages_default_to_every_partition_by_name_and_refuse_bad_values() {
        let parse = |raw: &str| detail_page(&Query::parse(Some(raw)), 64).map(|p| to_json(&p));
        assert_eq!(
            parse("").expect("valid"),
            r#"{"limit":10000,"offset":0,"sort":"partition"}"#
        );
        assert_eq!(
            parse("queue=q&limit=5&offset=10&sort=lag").expect("valid"),
            r#"{"queue":"q","limit":5,"offset":10,"sort":"lag"}"#
        );
        for bad in [
            "limit=0",
            "limit=10001",
            "offset=-1",
            "sort=size",
            "queue=a%01",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seek_bodies_name_the_end_or_an_instant() {
        let target = |body: &str, default| seek_target(body.as_bytes(), 64, default);
        assert_eq!(
            target(r#"{"toEnd":true}"#, false).ok(),
            Some(SeekTarget::End)
        );
        assert_eq!(
            target(r#"{"timestamp":"2026-05-10T11:00:00+02:00"}"#, false).ok(),
            Some(SeekTarget::After("2026-05-10T09:00:00.000000Z".into()))
        );
        assert_eq!(
            target(r#"{"toEnd":true,"timestamp":"2026-05-10"}"#, false).ok(),
            Some(SeekTarget::End)
        );
        assert_eq!(target("", true).ok(), Some(SeekTarget::End));
        assert_eq!(target("{}", true).ok(), Some(SeekTarget::End));
        for (body, default) in [
            ("", false),
            ("{}", false),
            (r#"{"toEnd":false}"#, true),
            (r#"{"toEnd":"yes"}"#, true),
            (r#"{"timestamp":"yesterday"}"#, true),
            (r#"{"timestamp":5}"#, true),
        ] {
            let error = format!("{:?}", target(body, default).err());
            assert!(error.contains("validation_failed"), "{body}: {error}");
        }
    }

    #[test]
    fn pages_are_bounded() {
        let request = page(&Query::parse(Some("limit=5&offset=10")), Some(60)).expect("valid");
        assert_eq!(request, r#"{"limit":5,"offset":10,"minLagSeconds":60}"#);
        assert_eq!(
            page(&Query::parse(None), None).ok().as_deref(),
            Some(r#"{"limit":1000,"offset":0}"#)
        );
        for bad in ["limit=0", "limit=10001", "offset=-1", "limit=x"] {
            assert!(page(&Query::parse(Some(bad)), None).is_err(), "{bad}");
        }
    }
}
