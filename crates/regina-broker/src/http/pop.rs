//! The three pop routes (http-api.md §3.4) and their long-poll (http-api.md §4.9).

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use uuid::Uuid;

use super::access::Auth;
use super::contract::params::{
    Bounded, Label, PartitionPath, PopBatchMax, PopPartitionsMax, PopTimeoutMax, QueryFlag,
    QueryName, QueuePath, SubscriptionFrom, SubscriptionMode,
};
use super::contract::{Contract, Params, PathParams};
use super::error::{json_response, ApiError};
use crate::config::Config;
use crate::db::{delay_until, DbError, PopOutcome};
use crate::engine::json::to_json;
use crate::engine::PopRequest;
use crate::state::{AppState, Shared};
use crate::waiters::{Handed, Resumed, WaitKey, WaiterGuard};

const QUEUE_MODE: &str = "__QUEUE_MODE__";
/// Bounds on the re-arm delay of time-based retries, in case broker and database clocks differ.
const REARM_MIN: Duration = Duration::from_millis(1);
const REARM_MAX: Duration = Duration::from_secs(1);
/// Deadline used when the requested one cannot be represented.
const FAR_FUTURE: Duration = Duration::from_secs(365 * 86_400);
/// A parked pop whose retry hit a database failure tries again after this pause.
const DB_RETRY_DELAY: Duration = Duration::from_secs(1);

const EMPTY_REASON: HeaderName = HeaderName::from_static("x-regina-empty-reason");

/// Which queues a pop reads.
enum Target {
    Queue {
        queue: String,
        partition: Option<String>,
    },
    Selector {
        namespace: Option<String>,
        task: Option<String>,
        /// The caller's queue scopes: only the queues they allow are considered.
        scopes: Option<Vec<String>>,
    },
}

/// One `i_reqs` element of `regina.pop`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlPopRequest<'a> {
    queue: Option<&'a str>,
    partition: Option<&'a str>,
    namespace: Option<&'a str>,
    task: Option<&'a str>,
    consumer_group: &'a str,
    batch: i64,
    partitions: i64,
    auto_ack: bool,
    subscription_mode: &'a str,
    subscription_from: Option<&'a str>,
    lease_id: Uuid,
    /// The caller's queue scopes, for namespace/task pops (absent: every queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    scopes: Option<&'a [String]>,
    /// Whether the answer should say if the group is quiet on the queue (`regina._pop_one`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    quiet: bool,
}

/// A validated pop request.
struct PopParams {
    target: Target,
    group: String,
    batch: i64,
    partitions: i64,
    wait: bool,
    timeout_ms: u64,
    auto_ack: bool,
    subscription_mode: &'static str,
    subscription_from: Option<String>,
    /// A long-poll that trusts and learns its group's quiet on the queue (http-api.md §4.9).
    quiet: bool,
}

/// Query of the pops of a queue (`GET /api/v1/pop/queue/{queue}`, and of a namespace or task).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PopQuery {
    /// Consumer group (queue mode by default)
    #[serde(default)]
    #[schemars(extend("default" = "__QUEUE_MODE__"))]
    consumer_group: QueryName,
    /// Most messages in the answer, across claimed partitions (limit POP_BATCH_MAX)
    #[serde(default)]
    batch: Bounded<PopBatchMax>,
    /// Most partitions claimed (limit POP_PARTITIONS_MAX)
    #[serde(default)]
    partitions: Bounded<PopPartitionsMax>,
    /// Long-poll deadline, milliseconds (default DEFAULT_TIMEOUT, limit POP_TIMEOUT_MS_MAX)
    #[serde(default)]
    timeout: Bounded<PopTimeoutMax>,
    /// Long-poll until a message arrives or the timeout
    #[serde(default)]
    wait: QueryFlag<false>,
    /// Settle on delivery (at most once)
    #[serde(default)]
    auto_ack: QueryFlag<false>,
    /// Where a new group starts (default DEFAULT_SUBSCRIPTION_MODE)
    #[serde(default)]
    subscription_mode: SubscriptionMode,
    /// Where a new group starts: `now` or a timestamp
    #[serde(default)]
    subscription_from: SubscriptionFrom,
}

impl Contract for PopQuery {}

/// Query of the pop of one partition: as [`PopQuery`], without `partitions` (one is claimed).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartitionPopQuery {
    /// Consumer group (queue mode by default)
    #[serde(default)]
    #[schemars(extend("default" = "__QUEUE_MODE__"))]
    consumer_group: QueryName,
    /// Most messages in the answer (default DEFAULT_BATCH_SIZE, limit POP_BATCH_MAX)
    #[serde(default)]
    batch: Bounded<PopBatchMax>,
    /// Long-poll deadline, milliseconds (default DEFAULT_TIMEOUT, limit POP_TIMEOUT_MS_MAX)
    #[serde(default)]
    timeout: Bounded<PopTimeoutMax>,
    /// Long-poll until a message arrives or the timeout
    #[serde(default)]
    wait: QueryFlag<false>,
    /// Settle on delivery (at most once)
    #[serde(default)]
    auto_ack: QueryFlag<false>,
    /// Where a new group starts (default DEFAULT_SUBSCRIPTION_MODE)
    #[serde(default)]
    subscription_mode: SubscriptionMode,
    /// Where a new group starts: `now` or a timestamp
    #[serde(default)]
    subscription_from: SubscriptionFrom,
}

impl Contract for PartitionPopQuery {}

impl From<PartitionPopQuery> for PopQuery {
    fn from(query: PartitionPopQuery) -> PopQuery {
        PopQuery {
            consumer_group: query.consumer_group,
            batch: query.batch,
            partitions: Bounded::default(),
            timeout: query.timeout,
            wait: query.wait,
            auto_ack: query.auto_ack,
            subscription_mode: query.subscription_mode,
            subscription_from: query.subscription_from,
        }
    }
}

/// The selector of `GET /api/v1/pop` (read before the rest of its query): a namespace, a task
/// or both.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = namespace_or_task)]
pub(crate) struct SelectorQuery {
    /// Queues of this namespace (namespace or task required)
    #[serde(default)]
    namespace: Label,
    /// Queues of this task (namespace or task required)
    #[serde(default)]
    task: Label,
}

impl Contract for SelectorQuery {
    fn validated(self) -> Result<Self, ApiError> {
        if self.namespace.0.is_none() && self.task.0.is_none() {
            return Err(ApiError::invalid_parameter(
                "namespace",
                "namespace or task is required",
            ));
        }
        Ok(self)
    }
}

fn namespace_or_task(schema: &mut Schema) {
    schema.insert(
        "anyOf".into(),
        serde_json::json!([{"required": ["namespace"]}, {"required": ["task"]}]),
    );
}

pub(super) async fn pop_queue(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(QueuePath { queue }): PathParams<QueuePath>,
    query: Result<Params<PopQuery>, ApiError>,
) -> Result<Response, ApiError> {
    auth.check_queue(&queue.0)?;
    let target = Target::Queue {
        queue: queue.0,
        partition: None,
    };
    pop(&state, target, query?.0).await
}

pub(super) async fn pop_partition(
    State(state): State<AppState>,
    auth: Auth,
    PathParams(QueuePath { queue }): PathParams<QueuePath>,
    partition: Result<PathParams<PartitionPath>, ApiError>,
    query: Result<Params<PartitionPopQuery>, ApiError>,
) -> Result<Response, ApiError> {
    auth.check_queue(&queue.0)?;
    let PathParams(PartitionPath { partition }) = partition?;
    let target = Target::Queue {
        queue: queue.0,
        partition: Some(partition.0),
    };
    pop(&state, target, query?.0.into()).await
}

pub(super) async fn pop_selector(
    State(state): State<AppState>,
    auth: Auth,
    Params(selector): Params<SelectorQuery>,
    query: Result<Params<PopQuery>, ApiError>,
) -> Result<Response, ApiError> {
    let scopes = auth.scopes_value().map(<[String]>::to_vec);
    let target = Target::Selector {
        namespace: selector.namespace.0,
        task: selector.task.0,
        scopes,
    };
    pop(&state, target, query?.0).await
}

async fn pop(state: &AppState, target: Target, query: PopQuery) -> Result<Response, ApiError> {
    let shared = state.get();
    let params = PopParams::new(query, target, &shared.config);
    if shared.maintenance.pop_on() {
        return Ok(params.empty_response("paused", shared.config.pop_empty_status));
    }
    let lease_id = Uuid::now_v7();
    let json = params.sql_request(lease_id);
    let answer = if params.wait && params.timeout_ms > 0 {
        long_poll(shared, &params, &json).await?
    } else {
        let batch = params.batch as usize;
        match shared.engine.pop(PopRequest { json, batch }).await? {
            PopOutcome::Delivered { body, .. } => Ok(body),
            PopOutcome::Empty { reason, .. } => Err(reason),
        }
    };
    Ok(match answer {
        Ok(body) => {
            let lease = (!params.auto_ack).then_some(lease_id);
            json_response(StatusCode::OK, open_payloads(shared, body, lease).await?)
        }
        Err(reason) => params.empty_response(&reason, shared.config.pop_empty_status),
    })
}

/// Decrypts the encrypted payloads of a delivery (http-api.md §4.13). When that fails, the lease
/// ends as if acked `retry`: the consumer never saw the messages, so no attempt is charged.
async fn open_payloads(
    shared: &Shared,
    body: String,
    lease: Option<Uuid>,
) -> Result<String, ApiError> {
    match shared.encryption.open_messages(body) {
        Ok(body) => Ok(body),
        Err(error) => {
            if let Some(lease_id) = lease {
                match shared.db.lease_release(&[lease_id]).await {
                    Ok(ended) => {
                        for (queue, group) in ended {
                            shared.waiters.lease_ended(&queue, &group);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "releasing an undeliverable lease failed"),
                }
            }
            Err(error.into())
        }
    }
}

/// Pops until something is delivered (`Ok(body)`) or the deadline passes (`Err(reason)`),
/// parking between attempts. The waiter is registered before the first attempt so no wake-up
/// can slip between an empty result and parking.
async fn long_poll(
    shared: &Shared,
    params: &PopParams,
    json: &str,
) -> Result<Result<String, String>, ApiError> {
    if shared.waiters.is_shutting_down() {
        return Ok(Err("shutdown".to_owned()));
    }
    let guard = shared.waiters.register(params.wait_key()).map_err(|_| {
        ApiError::overloaded("parked long-polls", shared.config.longpoll_waiters_max)
    })?;
    // Pop maintenance switched on before this waiter registered woke nobody here: look again.
    if shared.maintenance.pop_on() {
        return Ok(Err("paused".to_owned()));
    }
    // A push that would wake this long-poll of one queue may run its pop in its own transaction
    // instead (LONGPOLL_PUSH_POPS, http-api.md §4.9).
    if shared.config.longpoll_push_pops && matches!(params.target, Target::Queue { .. }) {
        guard.offer(std::sync::Arc::from(json), params.quiet_key().is_some());
    }
    // POP_TIMEOUT_MS_MAX is operator-set: an absurd value must not overflow the clock.
    let deadline = Instant::now()
        .checked_add(Duration::from_millis(params.timeout_ms))
        .unwrap_or_else(|| Instant::now() + FAR_FUTURE);
    let recheck = Some(shared.config.longpoll_recheck_ms)
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis);
    let mut rearm = REARM_MIN;
    let mut first_attempt = true;
    let quiet_key = params.quiet_key();
    // An event woke this waiter: it asks the database whatever is known (it may be one the group
    // was handed to, see waiters::quiet).
    let mut woken = false;
    loop {
        let known = quiet_key
            .filter(|_| !woken)
            .and_then(|(q, g)| shared.waiters.quiet(q, g));
        let wake_at = match known {
            // Known to have nothing due: park without asking the database (waiters::quiet).
            Some(until) => {
                shared.metrics.longpoll_quiet_park();
                Some(until.saturating_duration_since(Instant::now()).max(rearm))
            }
            None => match attempt(shared, params, json, quiet_key).await {
                Ok(PopOutcome::Delivered { body, .. }) => {
                    guard.done();
                    return Ok(Ok(body));
                }
                Ok(PopOutcome::Empty { wake_at, .. }) => {
                    wake_at.map(|at| delay_until(at).max(rearm))
                }
                // Once parked, a database outage does not end the wait (http-api.md §4.14).
                Err(error) if !first_attempt => {
                    tracing::debug!(%error, "parked pop retry failed");
                    Some(DB_RETRY_DELAY)
                }
                Err(error) => return Err(error.into()),
            },
        };
        first_attempt = false;
        let parked = park(shared, &guard, deadline, wake_at, recheck).await;
        woken = matches!(parked, Parked::Woken);
        match parked {
            Parked::Woken => rearm = REARM_MIN,
            // A timer retry that finds nothing again backs off, so clock skew cannot spin.
            Parked::Timer if wake_at.is_some() => rearm = (rearm * 2).min(REARM_MAX),
            Parked::Timer => {}
            Parked::Delivered(body) => {
                guard.done();
                return Ok(Ok(body));
            }
            Parked::Done(reason) => return Ok(Err(reason.to_owned())),
        }
    }
}

/// One pop attempt of a long-poll. With `quiet_key`, what the answer says of the group's quiet
/// is kept (waiters::quiet), unless an event came while the call ran.
async fn attempt(
    shared: &Shared,
    params: &PopParams,
    json: &str,
    quiet_key: Option<(&str, &str)>,
) -> Result<PopOutcome, DbError> {
    let ticket = quiet_key.and_then(|(q, g)| Some((q, g, shared.waiters.quiet_ask(q, g)?)));
    let outcome = shared
        .engine
        .pop(PopRequest {
            json: json.to_owned(),
            batch: params.batch as usize,
        })
        .await;
    if let Some((queue, group, ticket)) = ticket {
        let quiet = outcome.as_ref().ok().and_then(PopOutcome::quiet);
        let ttl = Duration::from_millis(shared.config.longpoll_quiet_ms);
        shared
            .waiters
            .quiet_learn(queue, group, ticket, quiet.map(|q| q.local_until(ttl)));
    }
    outcome
}

/// How a parked long-poll resumed.
enum Parked {
    /// An event woke it: retry now.
    Woken,
    /// Its timer (`wake_at` or the re-check) fired: retry.
    Timer,
    /// A push ran its pop in its transaction, which delivered this body.
    Delivered(String),
    /// It ends with this empty reason (`timeout`, `shutdown`, `paused`).
    Done(&'static str),
}

/// Parks a long-poll after an attempt found nothing, until an event, `wake_at` (from now), the
/// re-check period or the deadline.
async fn park(
    shared: &Shared,
    guard: &WaiterGuard,
    deadline: Instant,
    wake_at: Option<Duration>,
    recheck: Option<Duration>,
) -> Parked {
    let now = Instant::now();
    if shared.waiters.is_shutting_down() {
        return Parked::Done("shutdown");
    }
    if now >= deadline {
        return Parked::Done("timeout");
    }
    let timer = [wake_at, recheck]
        .into_iter()
        .flatten()
        .min()
        .map(|d| now + d);
    let until = timer.map_or(deadline, |t| t.min(deadline));
    let resumed = guard.park_until(until).await;
    let woken = match resumed {
        // Messages a push's transaction claimed for this waiter are its answer, whatever else
        // holds now.
        Resumed::Handed(Handed::Ran(PopOutcome::Delivered { body, .. })) => {
            return Parked::Delivered(body);
        }
        // A pop a push ran that delivered nothing asks again, after the push's commit: it may
        // have passed by a partition another pop held at the time (`skip locked`), which the
        // push's wake-up, used on it, would otherwise have sent someone to.
        Resumed::Event | Resumed::Handed(_) => true,
        Resumed::Timer => false,
    };
    if shared.waiters.is_shutting_down() {
        return Parked::Done("shutdown");
    }
    if shared.maintenance.pop_on() {
        return Parked::Done("paused");
    }
    if woken {
        Parked::Woken
    } else if Instant::now() >= deadline {
        Parked::Done("timeout")
    } else {
        Parked::Timer
    }
}

impl PopParams {
    /// The pop `query` asks for, defaults taken from `config`.
    fn new(query: PopQuery, target: Target, config: &Config) -> PopParams {
        let partitions = match target {
            Target::Queue {
                partition: Some(_), ..
            } => 1,
            _ => query.partitions.0.unwrap_or(1),
        };
        let timeout_max = i64::try_from(config.pop_timeout_ms_max).unwrap_or(i64::MAX);
        let timeout_default = i64::try_from(config.default_timeout_ms)
            .unwrap_or(i64::MAX)
            .min(timeout_max);
        let timeout_ms = query.timeout.0.unwrap_or(timeout_default).unsigned_abs();
        // Long-polls of one named queue over its partitions (http-api.md §4.9).
        let quiet = query.wait.0
            && timeout_ms > 0
            && config.longpoll_quiet_ms > 0
            && matches!(
                target,
                Target::Queue {
                    partition: None,
                    ..
                }
            );
        PopParams {
            target,
            group: query
                .consumer_group
                .0
                .unwrap_or_else(|| QUEUE_MODE.to_owned()),
            batch: query
                .batch
                .0
                .unwrap_or_else(|| config.default_batch_size.into()),
            partitions,
            wait: query.wait.0,
            timeout_ms,
            auto_ack: query.auto_ack.0,
            subscription_mode: query
                .subscription_mode
                .0
                .unwrap_or_else(|| config.default_subscription_mode.sql_name()),
            subscription_from: query.subscription_from.0,
            quiet,
        }
    }

    /// The `regina.pop` element of this request.
    fn sql_request(&self, lease_id: Uuid) -> String {
        let (queue, partition, namespace, task, scopes) = match &self.target {
            Target::Queue { queue, partition } => {
                (Some(queue), partition.as_ref(), None, None, None)
            }
            Target::Selector {
                namespace,
                task,
                scopes,
            } => (
                None,
                None,
                namespace.as_ref(),
                task.as_ref(),
                scopes.as_deref(),
            ),
        };
        to_json(&SqlPopRequest {
            queue: queue.map(String::as_str),
            partition: partition.map(String::as_str),
            namespace: namespace.map(String::as_str),
            task: task.map(String::as_str),
            consumer_group: &self.group,
            batch: self.batch,
            partitions: self.partitions,
            auto_ack: self.auto_ack,
            subscription_mode: self.subscription_mode,
            subscription_from: self.subscription_from.as_deref(),
            lease_id,
            scopes,
            quiet: self.quiet,
        })
    }

    /// The queue and group whose quiet this long-poll trusts and learns, if it does.
    fn quiet_key(&self) -> Option<(&str, &str)> {
        match &self.target {
            Target::Queue { queue, .. } if self.quiet => Some((queue, &self.group)),
            _ => None,
        }
    }

    fn wait_key(&self) -> WaitKey {
        match &self.target {
            Target::Queue { queue, partition } => WaitKey::Queue {
                queue: queue.clone(),
                partition: partition.clone(),
                group: self.group.clone(),
            },
            Target::Selector { .. } => WaitKey::Selector {
                group: self.group.clone(),
            },
        }
    }

    /// `204` with `X-Regina-Empty-Reason`, or the `200` body form of http-api.md §2.2.
    fn empty_response(&self, reason: &str, empty_status: u16) -> Response {
        if empty_status != 200 {
            let mut response = StatusCode::NO_CONTENT.into_response();
            if let Ok(value) = HeaderValue::from_str(reason) {
                response.headers_mut().insert(EMPTY_REASON, value);
            }
            return response;
        }
        let (queue, partition) = match &self.target {
            Target::Queue { queue, partition } => (Some(queue.as_str()), partition.as_deref()),
            Target::Selector { .. } => (None, None),
        };
        let body = serde_json::json!({
            "success": matches!(reason, "empty" | "timeout"),
            "queue": queue,
            "partition": partition,
            "partitionId": null,
            "leaseId": null,
            "consumerGroup": self.group,
            "messages": [],
            "reason": reason,
        });
        json_response(StatusCode::OK, body.to_string())
    }
}

#[cfg(test)]
mod tests;
