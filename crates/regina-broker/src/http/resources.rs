//! Resources (http-api.md §3.8): the overview, queue, partition, namespace and task listings, one
//! queue's detail, queue delete and queue clear. Listings leave out queues outside the caller's
//! scopes; routes naming such a queue answer `403` (http-api.md §1.6). Message counts come from the
//! stats tables (sql/functions/86_resources.sql, 92_status.sql), up to `STATS_INTERVAL_MS` old.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::access::Auth;
use super::contract::params::{
    Offset, Page, PageLimit, PathName, QueryName, QueryText, QueuePath, Search,
};
use super::contract::{Contract, Params, PathParams};
use super::error::{json_response, ApiError};
use crate::db::Cleared;
use crate::engine::json::to_json;
use crate::state::AppState;

/// Longest `namespace` / `task` filter, characters (http-api.md §6).
pub(super) const LABEL_CHARS_MAX: usize = 255;

pub(super) async fn overview(
    State(state): State<AppState>,
    auth: Auth,
) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .overview(&auth.scoped("{}".to_owned()))
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

/// Query of `GET /api/v1/resources/queues`, and the `regina.queues_list` argument.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct QueuesQuery {
    /// Only queues of this namespace
    #[serde(default)]
    namespace: QueryText<LABEL_CHARS_MAX>,
    /// Only queues of this task
    #[serde(default)]
    task: QueryText<LABEL_CHARS_MAX>,
    /// Substring of the queue name
    #[serde(default)]
    search: Search,
    /// Page size
    #[serde(default)]
    limit: PageLimit<1_000, 10_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for QueuesQuery {}

pub(super) async fn queues(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<QueuesQuery>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(to_json(&query));
    let body = state.get().db.queues_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// A page of one queue: the argument of `regina.queue_detail` and of the status queue pages.
/// The page is read after the queue's scope is checked.
///
/// # Errors
/// `403` for a queue outside the caller's scopes, then `400` for a bad page.
pub(super) fn queue_page<const DEFAULT: i64, const MAX: i64>(
    auth: &Auth,
    queue: &str,
    page: Result<Params<Page<DEFAULT, MAX>>, ApiError>,
) -> Result<String, ApiError> {
    auth.check_queue(queue)?;
    let Params(page) = page?;
    Ok(to_json(&json!({
        "queue": queue,
        "limit": page.limit.0,
        "offset": page.offset.0,
    })))
}

pub(super) async fn queue(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(path): PathParams<QueuePath>,
    page: Result<Params<Page<1_000, 10_000>>, ApiError>,
) -> Result<Response, ApiError> {
    let request = queue_page(&auth, &path.queue.0, page)?;
    match state.get().db.queue_detail(&request).await? {
        Some(body) => Ok(json_response(StatusCode::OK, body)),
        None => Err(ApiError::queue_not_found()),
    }
}

pub(super) async fn queue_delete(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(QueuePath { queue }): PathParams<QueuePath>,
) -> Result<Response, ApiError> {
    auth.check_queue(&queue.0)?;
    // Parked pops on the queue keep waiting (http-api.md §3.8): nothing to wake.
    let body = state.get().db.queue_delete(&queue.0).await?;
    Ok(json_response(StatusCode::OK, body))
}

/// Query of `DELETE /api/v1/queues/{queue}/clear`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ClearQuery {
    /// Clear only this partition of the queue (Queen's admin clients send it); absent: every
    /// partition
    #[serde(default)]
    partition: QueryName,
}

impl Contract for ClearQuery {}

pub(super) async fn queue_clear(
    State(state): State<AppState>,
    auth: Auth,
    path: Result<PathParams<QueuePath>, ApiError>,
    query: Result<Params<ClearQuery>, ApiError>,
) -> Result<Response, ApiError> {
    let shared = state.get();
    let Params(query) = query.map_err(ApiError::unsuccessful)?;
    let PathParams(QueuePath {
        queue: PathName(queue),
    }) = path.map_err(ApiError::unsuccessful)?;
    auth.check_queue(&queue).map_err(ApiError::unsuccessful)?;
    let cleared = shared
        .db
        .queue_clear(&queue, query.partition.0.as_deref())
        .await
        .map_err(|e| ApiError::from(e).unsuccessful())?;
    let (body, groups) = match cleared {
        None => return Err(ApiError::queue_not_found().unsuccessful()),
        Some(Cleared::PartitionMissing) => {
            return Err(ApiError::partition_not_found().unsuccessful())
        }
        Some(Cleared::Done { body, wake_groups }) => (body, wake_groups),
    };
    // The groups' leases ended: their waiters re-check (http-api.md §4.9).
    for group in &groups {
        shared.waiters.lease_ended(&queue, group);
    }
    Ok(json_response(StatusCode::OK, body))
}

/// Query of `GET /api/v1/resources/partitions`, and the `regina.partitions_list` argument.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct PartitionsQuery {
    /// Only partitions of this queue
    #[serde(default)]
    queue: QueryName,
    /// Substring of the partition name
    #[serde(default)]
    search: Search,
    /// Page size
    #[serde(default)]
    limit: PageLimit<100, 10_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for PartitionsQuery {}

pub(super) async fn partitions(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<PartitionsQuery>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(to_json(&query));
    let body = state.get().db.partitions_list(&request).await?;
    Ok(json_response(StatusCode::OK, body))
}

pub(super) async fn namespaces(
    State(state): State<AppState>,
    auth: Auth,
) -> Result<Response, ApiError> {
    let body = state
        .get()
        .db
        .labels_list("namespace", auth.scopes_value())
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

pub(super) async fn tasks(State(state): State<AppState>, auth: Auth) -> Result<Response, ApiError> {
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
    use crate::config::Config;
    use crate::http::contract::{decode_query, Limits};

    fn value<T: Contract + serde::de::DeserializeOwned + Serialize>(
        query: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let typed: T = decode_query(Some(query), Limits::of(&Config::default()))?;
        Ok(serde_json::to_value(&typed).expect("JSON"))
    }

    #[test]
    fn queue_listing_filters_and_paging_are_passed() {
        assert_eq!(
            value::<QueuesQuery>("namespace=billing&search=inv&limit=5&offset=10&x=1").ok(),
            Some(
                serde_json::json!({"namespace":"billing","task":null,"search":"inv",
                                    "limit":5,"offset":10})
            )
        );
        let defaults = value::<QueuesQuery>("").expect("valid");
        assert_eq!(
            (defaults["limit"].as_i64(), defaults["offset"].as_i64()),
            (Some(1000), Some(0))
        );
    }

    #[test]
    fn partition_listing_defaults_to_a_hundred() {
        let defaults = value::<PartitionsQuery>("").expect("valid");
        assert_eq!(defaults["limit"], 100);
    }

    #[test]
    fn bad_listing_parameters_are_refused() {
        for bad in ["limit=0", "limit=10001", "offset=-1", "limit=ten"] {
            assert!(value::<QueuesQuery>(bad).is_err(), "{bad}");
            assert!(value::<PartitionsQuery>(bad).is_err(), "{bad}");
        }
        let long = format!("namespace={}", "n".repeat(256));
        assert!(value::<QueuesQuery>(&long).is_err());
        assert!(value::<PartitionsQuery>("queue=%01").is_err());
        assert!(value::<PartitionsQuery>("search=a%00").is_err());
    }
}
