//! The field types of query and path parameters (http-api.md §2.4): a parameter is text; an empty
//! query value means its default; integers are an optional sign and decimal digits; booleans are
//! `true/1/yes/on` or `false/0/no/off` in any case. Each type's JSON Schema describes the value
//! it stands for (an integer, a boolean, a name), its limits and its default.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use time::OffsetDateTime;

use super::fields::{name_schema, uuid_schema, INSTANT_PATTERN};
use super::{fail, Failure, Limits};
use crate::config::defaults;
use crate::http::names::name_problem;
use crate::http::query::{parse_bool, parse_int};
use crate::http::timestamp;

/// The parameter's text: `None` when absent (or, in a query, empty).
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(deserializer)
}

/// An integer parameter in `min..=max`.
fn int_param(value: Option<String>, min: i64, max: i64) -> Result<Option<i64>, Failure> {
    let Some(value) = value else {
        return Ok(None);
    };
    let out_of_range = || {
        Failure::keyed(format!("must be an integer from {min} to {max}")).limit(max.max(0) as u64)
    };
    let parsed = parse_int(&value).ok_or_else(out_of_range)?;
    if parsed < min || parsed > max {
        return Err(out_of_range());
    }
    Ok(Some(parsed))
}

/// Free text of at most `MAX` characters (`0`: any length).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct QueryText<const MAX: usize = 0>(pub(crate) Option<String>);

impl<'de, const MAX: usize> Deserialize<'de> for QueryText<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?;
        if MAX > 0 && value.as_ref().is_some_and(|v| v.chars().count() > MAX) {
            let failure = Failure::keyed(format!("must be at most {MAX} characters"));
            return Err(fail(failure.limit(MAX as u64)));
        }
        Ok(QueryText(value))
    }
}

/// A selector of at most 255 characters (`namespace` / `task` of a pop, http-api.md §6).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Label(pub(crate) Option<String>);

/// Longest `namespace` / `task` selector, characters (http-api.md §6).
const LABEL_CHARS_MAX: usize = 255;

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?;
        if value
            .as_ref()
            .is_some_and(|v| v.chars().count() > LABEL_CHARS_MAX)
        {
            let failure = Failure::keyed(format!("must be at most {LABEL_CHARS_MAX} characters"));
            return Err(fail(failure));
        }
        Ok(Label(value))
    }
}

/// A substring to search names for: at most `NAME_CHARS_MAX` characters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Search(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for Search {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?;
        let max = Limits::current().name_chars_max;
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            let failure = Failure::keyed(format!("must be at most {max} characters"));
            return Err(fail(failure.limit(max as u64)));
        }
        Ok(Search(value))
    }
}

/// An optional queue, partition or group name (http-api.md §6).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct QueryName(pub(crate) Option<String>);

fn checked_name(value: String) -> Result<String, Failure> {
    match name_problem(&value, Limits::current().name_chars_max) {
        Some(problem) => Err(Failure::keyed(problem)),
        None => Ok(value),
    }
}

impl<'de> Deserialize<'de> for QueryName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?;
        value
            .map(checked_name)
            .transpose()
            .map(QueryName)
            .map_err(fail)
    }
}

/// A name in the path (http-api.md §6).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PathName(pub(crate) String);

impl<'de> Deserialize<'de> for PathName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?.unwrap_or_default();
        checked_name(value).map(PathName).map_err(fail)
    }
}

/// Text in the path, taken as it is (`leaseId`: a lease id that is not a UUID names no lease).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PathText(pub(crate) String);

impl<'de> Deserialize<'de> for PathText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(PathText(text(deserializer)?.unwrap_or_default()))
    }
}

/// A UUID in the path, kept as the client wrote it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PathUuid(pub(crate) String);

impl<'de> Deserialize<'de> for PathUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?.unwrap_or_default();
        if uuid::Uuid::parse_str(&value).is_err() {
            return Err(fail(Failure::keyed("must be a UUID")));
        }
        Ok(PathUuid(value))
    }
}

/// Text in the path of 1 to `MAX` characters without U+0000.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PathKey<const MAX: usize>(pub(crate) String);

impl<'de, const MAX: usize> Deserialize<'de> for PathKey<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = text(deserializer)?.unwrap_or_default();
        let chars = value.chars().count();
        if chars == 0 || chars > MAX || value.contains('\0') {
            let message = format!("must be 1 to {MAX} characters without NUL");
            return Err(fail(Failure::keyed(message)));
        }
        Ok(PathKey(value))
    }
}

/// An optional integer in `MIN..=MAX`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueryInt<const MIN: i64, const MAX: i64>(pub(crate) Option<i64>);

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for QueryInt<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        int_param(text(deserializer)?, MIN, MAX)
            .map(QueryInt)
            .map_err(fail)
    }
}

/// `limit` of a page: 1 to `MAX` rows, `DEFAULT` when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageLimit<const DEFAULT: i64, const MAX: i64>(pub(crate) i64);

impl<const DEFAULT: i64, const MAX: i64> Default for PageLimit<DEFAULT, MAX> {
    fn default() -> Self {
        PageLimit(DEFAULT)
    }
}

impl<'de, const DEFAULT: i64, const MAX: i64> Deserialize<'de> for PageLimit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = int_param(text(deserializer)?, 1, MAX).map_err(fail)?;
        Ok(PageLimit(value.unwrap_or(DEFAULT)))
    }
}

/// Largest `offset` of a page.
const OFFSET_MAX: i64 = i32::MAX as i64;

/// `offset` of a page: rows skipped, 0 by default.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offset(pub(crate) i64);

impl<'de> Deserialize<'de> for Offset {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = int_param(text(deserializer)?, 0, OFFSET_MAX).map_err(fail)?;
        Ok(Offset(value.unwrap_or(0)))
    }
}

/// A configurable upper bound of an integer parameter, with its default for the schema.
pub(crate) trait IntLimit {
    /// Least value.
    const MIN: i64;
    /// The default bound (`regina serve --help`).
    const DEFAULT_MAX: i64;
    /// The value when absent, by default (`regina serve --help`).
    const DEFAULT: i64;
    /// The bound in force.
    fn current() -> i64;
}

/// `batch` of a pop: 1 to `POP_BATCH_MAX`.
#[derive(Debug)]
pub(crate) struct PopBatchMax;

impl IntLimit for PopBatchMax {
    const MIN: i64 = 1;
    const DEFAULT_MAX: i64 = defaults::POP_BATCH_MAX as i64;
    const DEFAULT: i64 = defaults::DEFAULT_BATCH_SIZE as i64;
    fn current() -> i64 {
        Limits::current().pop_batch_max
    }
}

/// `partitions` of a pop: 1 to `POP_PARTITIONS_MAX`.
#[derive(Debug)]
pub(crate) struct PopPartitionsMax;

impl IntLimit for PopPartitionsMax {
    const MIN: i64 = 1;
    const DEFAULT_MAX: i64 = defaults::POP_PARTITIONS_MAX as i64;
    const DEFAULT: i64 = 1;
    fn current() -> i64 {
        Limits::current().pop_partitions_max
    }
}

/// `timeout` of a pop: 0 to `POP_TIMEOUT_MS_MAX` milliseconds.
#[derive(Debug)]
pub(crate) struct PopTimeoutMax;

impl IntLimit for PopTimeoutMax {
    const MIN: i64 = 0;
    const DEFAULT_MAX: i64 = defaults::POP_TIMEOUT_MS_MAX as i64;
    const DEFAULT: i64 = defaults::DEFAULT_TIMEOUT_MS as i64;
    fn current() -> i64 {
        Limits::current().pop_timeout_ms_max
    }
}

/// An optional integer from `L::MIN` to the configured bound `L`.
#[derive(Debug)]
pub(crate) struct Bounded<L>(pub(crate) Option<i64>, PhantomData<L>);

impl<L> Default for Bounded<L> {
    fn default() -> Self {
        Bounded(None, PhantomData)
    }
}

impl<'de, L: IntLimit> Deserialize<'de> for Bounded<L> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = int_param(text(deserializer)?, L::MIN, L::current()).map_err(fail)?;
        Ok(Bounded(value, PhantomData))
    }
}

/// A boolean, `DEFAULT` when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueryFlag<const DEFAULT: bool>(pub(crate) bool);

impl<const DEFAULT: bool> Default for QueryFlag<DEFAULT> {
    fn default() -> Self {
        QueryFlag(DEFAULT)
    }
}

impl<'de, const DEFAULT: bool> Deserialize<'de> for QueryFlag<DEFAULT> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(value) = text(deserializer)? else {
            return Ok(QueryFlag(DEFAULT));
        };
        parse_bool(&value).map(QueryFlag).ok_or_else(|| {
            fail(Failure::keyed(format!(
                "must be a boolean (true/false), got {value:?}"
            )))
        })
    }
}

/// A timestamp (http-api.md §1.5), normalised to ISO-8601 UTC text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct QueryInstant(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for QueryInstant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(value) = text(deserializer)? else {
            return Ok(QueryInstant(None));
        };
        timestamp::normalize(&value)
            .map(|v| QueryInstant(Some(v)))
            .ok_or_else(|| fail(Failure::keyed("must be an RFC 3339 timestamp or a date")))
    }
}

/// A bound of a feed's time range (http-api.md §3.12), as an instant.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RangeBound(pub(crate) Option<OffsetDateTime>);

impl<'de> Deserialize<'de> for RangeBound {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(value) = text(deserializer)? else {
            return Ok(RangeBound(None));
        };
        timestamp::instant(&value)
            .map(|v| RangeBound(Some(v)))
            .ok_or_else(|| {
                fail(Failure::keyed(
                    "must be an RFC 3339 timestamp or a date (YYYY-MM-DD)",
                ))
            })
    }
}

/// Where a new group starts (http-api.md §3.4): `now` or a timestamp.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SubscriptionFrom(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for SubscriptionFrom {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(value) = text(deserializer)? else {
            return Ok(SubscriptionFrom(None));
        };
        if value.eq_ignore_ascii_case("now") {
            return Ok(SubscriptionFrom(Some("now".to_owned())));
        }
        timestamp::normalize(&value)
            .map(|v| SubscriptionFrom(Some(v)))
            .ok_or_else(|| fail(Failure::keyed("must be now or an RFC 3339 timestamp")))
    }
}

/// `subscriptionMode` (http-api.md §3.4, §4.10; docs/compatibility.md): `new` and `new-only` (any
/// case) start a new group now; every other value starts it from the beginning — no spelling is
/// refused. `None` when absent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SubscriptionMode(pub(crate) Option<&'static str>);

impl<'de> Deserialize<'de> for SubscriptionMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(SubscriptionMode(text(deserializer)?.map(|value| {
            match value.to_ascii_lowercase().as_str() {
                "new" | "new-only" => "new",
                _ => "all",
            }
        })))
    }
}

/// One of a fixed set of words: the type names the set, its default and the refusal's text.
pub(crate) trait Words {
    /// The accepted values.
    const VALUES: &'static [&'static str];
    /// The value when absent (`None`: no default).
    const DEFAULT: Option<&'static str>;
    /// The text after the key of a refusal of `value`.
    fn refusal(value: &str) -> String;
}

/// One of `W::VALUES` (exact spelling).
#[derive(Debug)]
pub(crate) struct Choice<W>(pub(crate) Option<&'static str>, PhantomData<W>);

impl<W: Words> Default for Choice<W> {
    fn default() -> Self {
        Choice(W::DEFAULT, PhantomData)
    }
}

impl<'de, W: Words> Deserialize<'de> for Choice<W> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(value) = text(deserializer)? else {
            return Ok(Choice::default());
        };
        W::VALUES
            .iter()
            .find(|v| **v == value)
            .map(|v| Choice(Some(*v), PhantomData))
            .ok_or_else(|| fail(Failure::keyed(W::refusal(&value))))
    }
}

// --- JSON Schema --------------------------------------------------------------------------

macro_rules! inline_schema {
    ($name:literal, [$($generics:tt)*] $ty:ty, |$generator:ident| $schema:expr) => {
        impl<$($generics)*> JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema($generator: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

inline_schema!("QueryText", [const MAX: usize] QueryText<MAX>, |_g| {
    let mut schema = json_schema!({"type": "string"});
    if MAX > 0 {
        schema.insert("maxLength".into(), MAX.into());
    }
    schema
});
inline_schema!("Label", [] Label, |_g| json_schema!({
    "type": "string", "maxLength": LABEL_CHARS_MAX,
}));
inline_schema!("Search", [] Search, |_g| json_schema!({
    "type": "string", "maxLength": defaults::NAME_CHARS_MAX,
}));
inline_schema!("QueryName", [] QueryName, |_g| Schema::try_from(name_schema())
    .unwrap_or_default());
inline_schema!("PathName", [] PathName, |_g| Schema::try_from(name_schema())
    .unwrap_or_default());
inline_schema!("PathText", [] PathText, |_g| json_schema!({"type": "string", "minLength": 1}));
inline_schema!("PathUuid", [] PathUuid, |_g| Schema::try_from(uuid_schema())
    .unwrap_or_default());
inline_schema!("PathKey", [const MAX: usize] PathKey<MAX>, |_g| json_schema!({
    "type": "string", "minLength": 1, "maxLength": MAX, "pattern": "^[^\\u0000]*$",
}));
inline_schema!("QueryInt", [const MIN: i64, const MAX: i64] QueryInt<MIN, MAX>, |_g| {
    json_schema!({"type": "integer", "minimum": MIN, "maximum": MAX})
});
inline_schema!("PageLimit", [const DEFAULT: i64, const MAX: i64] PageLimit<DEFAULT, MAX>, |_g| {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX, "default": DEFAULT})
});
inline_schema!("Offset", [] Offset, |_g| json_schema!({
    "type": "integer", "minimum": 0, "maximum": OFFSET_MAX, "default": 0,
}));
inline_schema!("Bounded", [L: IntLimit] Bounded<L>, |_g| json_schema!({
    "type": "integer", "minimum": L::MIN, "maximum": L::DEFAULT_MAX, "default": L::DEFAULT,
}));
inline_schema!("QueryFlag", [const DEFAULT: bool] QueryFlag<DEFAULT>, |_g| json_schema!({
    "type": "boolean", "default": DEFAULT,
}));
inline_schema!("QueryInstant", [] QueryInstant, |_g| json_schema!({
    "type": "string", "pattern": INSTANT_PATTERN,
    "description": "RFC 3339 timestamp (UTC without an offset), or YYYY-MM-DD",
}));
inline_schema!("RangeBound", [] RangeBound, |_g| json_schema!({
    "type": "string", "pattern": INSTANT_PATTERN,
    "description": "RFC 3339 timestamp (UTC without an offset), or YYYY-MM-DD",
}));
inline_schema!("SubscriptionFrom", [] SubscriptionFrom, |_g| json_schema!({
    "type": "string",
    "pattern": format!("^([Nn][Oo][Ww]|{})$", INSTANT_PATTERN.trim_start_matches('^').trim_end_matches('$')),
    "description": "`now`, or an RFC 3339 timestamp",
}));
inline_schema!("SubscriptionMode", [] SubscriptionMode, |_g| json_schema!({
    "type": "string",
    "examples": ["all", "new", "new-only", "from_beginning"],
    "description": "`new` or `new-only` (any case) start a new group now; any other value from \
                    the beginning (docs/compatibility.md)",
}));
inline_schema!("Choice", [W: Words] Choice<W>, |_g| {
    let mut schema = json_schema!({"type": "string", "enum": W::VALUES});
    if let Some(default) = W::DEFAULT {
        schema.insert("default".into(), default.into());
    }
    schema
});

// --- Serialization: a parameter type is also the argument its SQL function takes -----------

macro_rules! serialize_inner {
    ([$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*> serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }
    };
}

serialize_inner!([const MAX: usize] QueryText<MAX>);
serialize_inner!([] Search);
serialize_inner!([] QueryName);
serialize_inner!([] PathName);
serialize_inner!([const MIN: i64, const MAX: i64] QueryInt<MIN, MAX>);
serialize_inner!([const DEFAULT: i64, const MAX: i64] PageLimit<DEFAULT, MAX>);
serialize_inner!([] Offset);
serialize_inner!([] QueryInstant);
serialize_inner!([W] Choice<W>);

/// One page of a listing: `limit` (1 to `MAX` rows, `DEFAULT` when absent) and `offset`.
#[derive(Debug, Default, Deserialize, serde::Serialize, JsonSchema)]
pub(crate) struct Page<const DEFAULT: i64, const MAX: i64> {
    /// Page size
    #[serde(default)]
    pub(crate) limit: PageLimit<DEFAULT, MAX>,
    /// Rows skipped before the page
    #[serde(default)]
    pub(crate) offset: Offset,
}

impl<const DEFAULT: i64, const MAX: i64> super::Contract for Page<DEFAULT, MAX> {}

/// A route whose path names one queue.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct QueuePath {
    /// The queue
    pub(crate) queue: PathName,
}

impl super::Contract for QueuePath {}

/// The partition of a route that names one (read after the queue's scope is checked).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct PartitionPath {
    /// The partition
    pub(crate) partition: PathName,
}

impl super::Contract for PartitionPath {}
