//! Consumer groups (http-api.md §3.10): listings, one group's partitions, deletes, the subscription
//! start, and seeks. Changes that move where a group stands wake every waiter of the group on
//! the queues concerned.
//!
//! Queue scopes (http-api.md §1.6): listings and a group's detail leave out forbidden queues;
//! routes naming a forbidden queue answer `403`, and so do the changes that reach every queue of a
//! group (group delete, subscription start) when the caller has scopes at all.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::access::{forbidden, Auth};
use super::contract::fields::{Flag, RequiredInstant, Text, INSTANT_PATTERN};
use super::contract::params::{
    Choice, Offset, Page, PageLimit, PartitionPath, PathName, QueryFlag, QueryInt, QueryName, Words,
};
use super::contract::{Body, Contract, Params, PathParams};
use super::error::{json_response, ApiError};
use super::timestamp;
use crate::engine::json::to_json;
use crate::state::{AppState, Shared};

/// Largest `minLagSeconds`.
const MIN_LAG_SECONDS_MAX: i64 = i32::MAX as i64;

const TOTAL_COUNT: HeaderName = HeaderName::from_static("x-total-count");

/// The group a path names.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GroupPath {
    /// The consumer group
    group: PathName,
}

impl Contract for GroupPath {}

/// The group and queue a path names.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GroupQueuePath {
    /// The consumer group
    group: PathName,
    /// The queue
    queue: PathName,
}

impl Contract for GroupQueuePath {}

/// Query of `GET /api/v1/consumer-groups/lagging`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LaggingQuery {
    /// Least time lag, seconds
    #[serde(default)]
    #[schemars(extend("default" = 3_600))]
    min_lag_seconds: QueryInt<0, MIN_LAG_SECONDS_MAX>,
    /// Page size
    #[serde(default)]
    limit: PageLimit<1_000, 10_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for LaggingQuery {}

/// `minLagSeconds` when absent.
const MIN_LAG_SECONDS_DEFAULT: i64 = 3_600;

/// One page of a listing, as the listing functions take it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlPage {
    limit: i64,
    offset: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_lag_seconds: Option<i64>,
}

/// A bare-array listing with its unpaged count in `X-Total-Count`.
fn listing(total: i64, body: String) -> Response {
    let mut response = json_response(StatusCode::OK, body);
    response
        .headers_mut()
        .insert(TOTAL_COUNT, HeaderValue::from(total));
    response
}

pub(super) async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Params(page): Params<Page<1_000, 10_000>>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(to_json(&page));
    let (total, body) = state.get().db.groups_list(&request).await?;
    Ok(listing(total, body))
}

pub(super) async fn lagging(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<LaggingQuery>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(to_json(&SqlPage {
        limit: query.limit.0,
        offset: query.offset.0,
        min_lag_seconds: Some(query.min_lag_seconds.0.unwrap_or(MIN_LAG_SECONDS_DEFAULT)),
    }));
    let (total, body) = state.get().db.groups_lagging(&request).await?;
    Ok(listing(total, body))
}

/// How one group's detail orders the partitions of a queue.
#[derive(Debug)]
pub(crate) struct DetailSort;

impl Words for DetailSort {
    const VALUES: &'static [&'static str] = &["partition", "lag"];
    const DEFAULT: Option<&'static str> = Some("partition");
    fn refusal(_: &str) -> String {
        "must be partition or lag".to_owned()
    }
}

/// Query of `GET /api/v1/consumer-groups/{group}`, and the page `regina.consumer_group_detail`
/// takes.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct DetailQuery {
    /// Partitions by name, or most lagging first
    #[serde(default)]
    sort: Choice<DetailSort>,
    /// Only this queue
    #[serde(default, skip_serializing_if = "is_absent")]
    queue: QueryName,
    /// Partitions per queue
    #[serde(default)]
    limit: PageLimit<10_000, 10_000>,
    /// Partitions skipped before the page
    #[serde(default)]
    offset: Offset,
}

fn is_absent(name: &QueryName) -> bool {
    name.0.is_none()
}

impl Contract for DetailQuery {}

pub(super) async fn detail(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupPath { group }): PathParams<GroupPath>,
    Params(page): Params<DetailQuery>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    if let Some(queue) = &page.queue.0 {
        auth.check_queue(queue)?;
    }
    let mut body = shared.db.group_detail(&group.0, &to_json(&page)).await?;
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

/// Query of the group deletes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeleteQuery {
    /// Also remove the subscriptions
    #[serde(default)]
    delete_metadata: QueryFlag<true>,
}

impl Contract for DeleteQuery {}

pub(super) async fn delete_group(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupPath { group }): PathParams<GroupPath>,
    query: Result<Params<DeleteQuery>, ApiError>,
) -> Result<Response, ApiError> {
    check_every_queue(&auth)?;
    delete_in(&state, group.0, None, query?.0).await
}

pub(super) async fn delete_on_queue(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupQueuePath { group, queue }): PathParams<GroupQueuePath>,
    query: Result<Params<DeleteQuery>, ApiError>,
) -> Result<Response, ApiError> {
    auth.check_queue(&queue.0)?;
    delete_in(&state, group.0, Some(queue.0), query?.0).await
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
    query: DeleteQuery,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let delete_metadata = query.delete_metadata.0;
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

/// Body of `POST /api/v1/consumer-groups/{group}/subscription`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubscriptionBody {
    /// Where the group starts on partitions it has not touched
    subscription_timestamp: RequiredInstant,
}

impl Contract for SubscriptionBody {}

pub(super) async fn subscription(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupPath { group }): PathParams<GroupPath>,
    body: Result<Body<SubscriptionBody>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    check_every_queue(&auth)?;
    let Body(body) = body?;
    let start = body.subscription_timestamp.0;
    let group = group.0;
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

/// Where a seek moves the group (http-api.md §3.10).
#[derive(Debug, PartialEq, Eq)]
enum SeekTarget {
    /// Past every message committed before the seek.
    End,
    /// To the first message created after this instant (normalised ISO-8601).
    After(String),
}

/// Body of a seek: `{toEnd: true}` or `{timestamp}` (`toEnd: true` wins, and then `timestamp`
/// is not read).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = seek_forms)]
pub(crate) struct SeekBody {
    /// Move past every message committed before the seek
    #[serde(default)]
    to_end: Flag,
    /// Move to the first message created after this instant
    #[serde(default)]
    timestamp: Text,
}

impl Contract for SeekBody {}

/// The two forms of a seek body.
fn seek_forms(schema: &mut Schema) {
    schema.insert(
        "anyOf".into(),
        json!([
            {"required": ["toEnd"], "properties": {"toEnd": {"const": true}}},
            {"required": ["timestamp"],
             "properties": {"timestamp": {"type": "string", "pattern": INSTANT_PATTERN}}},
        ]),
    );
}

/// Body of a partition's seek: a seek body, and an empty one moves to the end.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = partition_seek_forms)]
pub(crate) struct PartitionSeekBody {
    /// Move past every message committed before the seek (the default)
    #[serde(default)]
    to_end: Flag,
    /// Move to the first message created after this instant
    #[serde(default)]
    timestamp: Text,
}

impl Contract for PartitionSeekBody {}

fn partition_seek_forms(schema: &mut Schema) {
    seek_forms(schema);
    if let Some(forms) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        forms.push(
            json!({"not": {"anyOf": [{"required": ["toEnd"]}, {"required": ["timestamp"]}]}}),
        );
    }
}

/// The target of `toEnd` and `timestamp`; neither is the end where `end_by_default`.
fn seek_target(
    to_end: Flag,
    timestamp: Text,
    end_by_default: bool,
) -> Result<SeekTarget, ApiError> {
    match (to_end.0, timestamp.0) {
        (Some(true), _) => Ok(SeekTarget::End),
        (_, Some(text)) => timestamp::normalize(&text)
            .map(SeekTarget::After)
            .ok_or_else(|| {
                ApiError::validation("timestamp must be an RFC 3339 timestamp or a date")
                    .field("timestamp")
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
        Some(_) => Err(ApiError::partition_not_found()),
        None => {
            shared.waiters.group_moved(queue, group);
            Ok(outcome)
        }
    }
}

pub(super) async fn seek_queue(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupQueuePath { group, queue }): PathParams<GroupQueuePath>,
    body: Result<Body<SeekBody>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (group, queue) = (group.0, queue.0);
    auth.check_queue(&queue)?;
    let Body(body) = body?;
    let target = seek_target(body.to_end, body.timestamp, false)?;
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

pub(super) async fn seek_partition(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(GroupQueuePath { group, queue }): PathParams<GroupQueuePath>,
    partition: Result<PathParams<PartitionPath>, ApiError>,
    body: Result<Body<PartitionSeekBody>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let (group, queue) = (group.0, queue.0);
    auth.check_queue(&queue)?;
    let partition = partition?.0.partition.0;
    let Body(body) = body?;
    let target = seek_target(body.to_end, body.timestamp, true)?;
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
    use crate::config::Config;
    use crate::http::contract::{decode, decode_query, Limits};

    #[test]
    fn detail_pages_default_to_every_partition_by_name_and_refuse_bad_values() {
        let config = Config {
            name_chars_max: 64,
            ..Config::default()
        };
        let parse = |raw: &str| {
            decode_query::<DetailQuery>(Some(raw), Limits::of(&config)).map(|p| to_json(&p))
        };
        assert_eq!(
            parse("").expect("valid"),
            r#"{"sort":"partition","limit":10000,"offset":0}"#
        );
        assert_eq!(
            parse("queue=q&limit=5&offset=10&sort=lag").expect("valid"),
            r#"{"sort":"lag","queue":"q","limit":5,"offset":10}"#
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
        let target = |body: &str, end_by_default| {
            decode::<SeekBody>(body.as_bytes(), &Config::default())
                .and_then(|b| seek_target(b.to_end, b.timestamp, end_by_default))
        };
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
        assert_eq!(
            target(r#"{"toEnd":true,"timestamp":"garbage"}"#, false).ok(),
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
        let limits = Limits::of(&Config::default());
        let page =
            |q: &str| decode_query::<Page<1_000, 10_000>>(Some(q), limits).map(|p| to_json(&p));
        assert_eq!(
            page("limit=5&offset=10").ok().as_deref(),
            Some(r#"{"limit":5,"offset":10}"#)
        );
        assert_eq!(
            page("").ok().as_deref(),
            Some(r#"{"limit":1000,"offset":0}"#)
        );
        for bad in ["limit=0", "limit=10001", "offset=-1", "limit=x"] {
            assert!(page(bad).is_err(), "{bad}");
        }
        let lagging = decode_query::<LaggingQuery>(Some("minLagSeconds=-1"), limits);
        assert!(lagging.is_err());
    }
}
