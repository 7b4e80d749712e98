//! Typed requests: the contract of every route in one place. A route's body, query and path
//! parameters are serde types built from the field types of [`fields`] and [`params`]; the
//! validating extractors ([`Body`], [`Params`], [`PathParams`]) and [`decode`] parse a request into
//! them, and the OpenAPI document takes its request schemas, limits included, from the same types
//! (`schemars`, see [`schema`]).
//!
//! Parsing keeps the rules of the API (http-api.md §2.4): members are read in the order the type
//! declares them, so the first error reported is the first field of the type that is wrong; an
//! absent member, `null` and (for text) `""` are absent; unknown members and query keys are
//! ignored; the first occurrence of a query key wins. Errors name their field path
//! (`items[3].traceId`) and index, with the stable codes `validation_failed` (bodies),
//! `invalid_parameter` (query and path) and `too_many_items`.
//!
//! Configurable limits (`NAME_CHARS_MAX`, `PUSH_ITEMS_MAX`, …) are read from [`Limits`], set for
//! the duration of one synchronous decode; schemas show their defaults.

mod de;
pub(crate) mod fields;
pub(crate) mod params;
pub(crate) mod schema;

use std::cell::{Cell, RefCell};
use std::fmt;

use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::body::{self, BodyBytes, Object};
use super::error::ApiError;
use super::query::Query;
use crate::config::Config;
use crate::state::AppState;

/// A request type: its fields' messages when a required one is missing.
pub(crate) trait Contract {
    /// The message of a missing required member `key`, whose full path is `field` (also
    /// `null`, `""` or of another type, for required text). The default: `<key> is required`.
    fn missing(key: &str, field: &str) -> String {
        let _ = field;
        format!("{key} is required")
    }

    /// Checks that span members, after each member was read (e.g. a time range's order).
    ///
    /// # Errors
    /// The 4xx of the failed check.
    fn validated(self) -> Result<Self, ApiError>
    where
        Self: Sized,
    {
        Ok(self)
    }
}

/// The configurable limits the field types check while decoding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) name_chars_max: usize,
    pub(crate) push_items_max: usize,
    pub(crate) ack_items_max: usize,
    pub(crate) transaction_operations_max: usize,
    pub(crate) streams_state_keys_max: usize,
    pub(crate) pop_batch_max: i64,
    pub(crate) pop_partitions_max: i64,
    pub(crate) pop_timeout_ms_max: i64,
    pub(crate) trace_data_bytes_max: usize,
}

impl Limits {
    /// The limits of `config`.
    pub(crate) fn of(config: &Config) -> Limits {
        Limits {
            name_chars_max: config.name_chars_max,
            push_items_max: config.push_items_max,
            ack_items_max: config.ack_items_max,
            transaction_operations_max: config.transaction_operations_max,
            streams_state_keys_max: config.streams_state_keys_max,
            pop_batch_max: config.pop_batch_max.into(),
            pop_partitions_max: config.pop_partitions_max.into(),
            pop_timeout_ms_max: i64::try_from(config.pop_timeout_ms_max).unwrap_or(i64::MAX),
            trace_data_bytes_max: config.trace_data_bytes_max,
        }
    }

    /// The limits of the decode running on this thread (the defaults outside one).
    pub(crate) fn current() -> Limits {
        CURRENT
            .with(Cell::get)
            .unwrap_or_else(|| Limits::of(&Config::default()))
    }
}

thread_local! {
    /// The limits of the decode running on this thread.
    static CURRENT: Cell<Option<Limits>> = const { Cell::new(None) };
    /// The problem a field type found, handed to the deserializer's error (serde errors carry
    /// only text).
    static PENDING: RefCell<Option<Failure>> = const { RefCell::new(None) };
}

/// Runs `f` with `limits` as the current limits.
fn with_limits<R>(limits: Limits, f: impl FnOnce() -> R) -> R {
    PENDING.with(|p| p.borrow_mut().take());
    let previous = CURRENT.with(|c| c.replace(Some(limits)));
    let out = f();
    CURRENT.with(|c| c.set(previous));
    out
}

/// What is wrong with one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A required member is missing: the request type's message ([`Contract::missing`]).
    Missing,
    /// `<key> <text>`.
    Keyed(String),
    /// `<field path> <text>` (`state_ops[2].key must be a string`).
    Pathed(String),
    /// A complete message about `<key><suffix>` (an element of the member, e.g. `[1]`), at
    /// `index` when the element's position is reported.
    Element {
        suffix: String,
        message: String,
        index: Option<usize>,
    },
    /// More elements than the limit: `too_many_items`.
    TooMany(usize),
}

/// A problem and the limit it names, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) problem: Problem,
    pub(crate) limit: Option<u64>,
}

impl Failure {
    pub(crate) fn keyed(text: impl Into<String>) -> Failure {
        Failure {
            problem: Problem::Keyed(text.into()),
            limit: None,
        }
    }

    pub(crate) fn missing() -> Failure {
        Failure {
            problem: Problem::Missing,
            limit: None,
        }
    }

    pub(crate) fn limit(mut self, limit: u64) -> Failure {
        self.limit = Some(limit);
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Problem::Missing => f.write_str("is required"),
            Problem::Keyed(text) | Problem::Pathed(text) => f.write_str(text),
            Problem::Element { message, .. } => f.write_str(message),
            Problem::TooMany(limit) => write!(f, "too many (limit {limit})"),
        }
    }
}

/// The error a field type returns from `deserialize`: the failure travels beside it.
pub(crate) fn fail<E: serde::de::Error>(failure: Failure) -> E {
    let text = failure.to_string();
    PENDING.with(|p| *p.borrow_mut() = Some(failure));
    E::custom(text)
}

/// The error of the request deserializers: the failing member and what is wrong with it.
#[derive(Debug)]
pub(crate) struct DeError {
    key: Option<&'static str>,
    failure: Failure,
}

impl DeError {
    fn at(mut self, key: &'static str) -> DeError {
        self.key.get_or_insert(key);
        self
    }

    fn take_pending(fallback: impl FnOnce() -> Failure) -> DeError {
        let failure = PENDING
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(fallback);
        DeError { key: None, failure }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key.unwrap_or("body"), self.failure)
    }
}

impl std::error::Error for DeError {}

impl serde::de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::take_pending(|| Failure::keyed(format!("is not valid: {msg}")))
    }
}

/// Where a decoded member sits, for error reports.
#[derive(Clone, Copy)]
enum Place<'p> {
    /// A body member: `validation_failed` naming `<prefix><key>` and `index`.
    Body {
        prefix: &'p str,
        index: Option<usize>,
    },
    /// A query or path parameter: `invalid_parameter` naming the key.
    Param,
}

impl DeError {
    fn into_api<T: Contract>(self, place: Place<'_>) -> ApiError {
        let key = self.key.unwrap_or_default();
        let prefix = match place {
            Place::Body { prefix, .. } => prefix,
            Place::Param => "",
        };
        let mut element_index = None;
        let (field, message) = match self.failure.problem {
            Problem::TooMany(limit) => return ApiError::too_many_items(key, limit),
            Problem::Missing => (key.to_owned(), T::missing(key, &format!("{prefix}{key}"))),
            Problem::Keyed(text) => (key.to_owned(), format!("{key} {text}")),
            Problem::Pathed(text) => (key.to_owned(), format!("{prefix}{key} {text}")),
            Problem::Element {
                suffix,
                message,
                index,
            } => {
                element_index = index;
                (format!("{key}{suffix}"), message)
            }
        };
        let error = match place {
            Place::Body { prefix, index } => {
                let error = ApiError::validation(message).field(format!("{prefix}{field}"));
                match element_index.or(index) {
                    Some(i) => error.index(i),
                    None => error,
                }
            }
            Place::Param => ApiError::invalid_parameter(&field, message),
        };
        match self.failure.limit {
            Some(limit) => error.limit(limit),
            None => error,
        }
    }
}

impl<'a> Object<'a> {
    /// This object as the request type `T`, its members checked in `T`'s order.
    ///
    /// # Errors
    /// `400 validation_failed` (or `too_many_items`) naming the first bad member.
    pub(crate) fn decode<T: Contract + Deserialize<'a>>(
        &self,
        limits: Limits,
    ) -> Result<T, ApiError> {
        with_limits(limits, || T::deserialize(de::ObjectDe::new(self)))
            .map_err(|e| {
                e.into_api::<T>(Place::Body {
                    prefix: self.prefix(),
                    index: self.index(),
                })
            })?
            .validated()
    }
}

/// A request body as the request type `T` (which may borrow from it): read as a JSON object under
/// `JSON_DEPTH_MAX` (a zero-length body is `{}`), then decoded.
///
/// # Errors
/// `400 invalid_json`, `validation_failed`, `too_many_items`.
pub(crate) fn decode<'a, T: Contract + Deserialize<'a>>(
    bytes: &'a [u8],
    config: &Config,
) -> Result<T, ApiError> {
    body::parse_object(bytes, config.json_depth_max)?.decode(Limits::of(config))
}

/// The query of a request as the parameter type `T`.
///
/// # Errors
/// `400 invalid_parameter` naming the first bad parameter.
pub(crate) fn decode_query<T: Contract + DeserializeOwned>(
    raw: Option<&str>,
    limits: Limits,
) -> Result<T, ApiError> {
    let query = Query::parse(raw);
    with_limits(limits, || T::deserialize(de::ParamsDe::query(&query)))
        .map_err(|e| e.into_api::<T>(Place::Param))?
        .validated()
}

/// The path parameters of a request (by the names of its route template) as `T`.
///
/// # Errors
/// `400 invalid_parameter` naming the first bad parameter.
pub(crate) fn decode_path<T: Contract + DeserializeOwned>(
    template: &str,
    path: &str,
    limits: Limits,
) -> Result<T, ApiError> {
    let values = de::path_values(template, path)?;
    with_limits(limits, || T::deserialize(de::ParamsDe::path(&values)))
        .map_err(|e| e.into_api::<T>(Place::Param))?
        .validated()
}

/// A validated JSON body of the request type `T` (owned): extract it last, it consumes the
/// request.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: Contract + DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let BodyBytes(bytes) = BodyBytes::from_request(request, state).await?;
        decode(&bytes, &state.get().config).map(Body)
    }
}

/// The validated query parameters of the request, as `T`.
pub(crate) struct Params<T>(pub(crate) T);

impl<T: Contract + DeserializeOwned> FromRequestParts<AppState> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let limits = Limits::of(&state.get().config);
        decode_query(parts.uri.query(), limits).map(Params)
    }
}

/// The validated path parameters of the request, read by the names of the matched route's
/// template, as `T`.
pub(crate) struct PathParams<T>(pub(crate) T);

impl<T: Contract + DeserializeOwned> FromRequestParts<AppState> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let template = parts
            .extensions
            .get::<MatchedPath>()
            .map(|m| m.as_str().to_owned())
            .ok_or_else(|| ApiError::internal("path parameters outside a matched route"))?;
        let limits = Limits::of(&state.get().config);
        decode_path(&template, parts.uri.path(), limits).map(PathParams)
    }
}

#[cfg(test)]
mod tests;
