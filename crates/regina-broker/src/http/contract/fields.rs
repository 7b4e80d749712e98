//! The field types of request bodies (http-api.md §2.4). Each reads its member as raw JSON and
//! applies the API's rule for it — absent, `null` and (for text) `""` mean absent; integers may be
//! written
//! `300.0`; booleans are JSON `true`/`false` only; text that reaches PostgreSQL refuses U+0000 —
//! and describes the same rule, limits included, as JSON Schema.
//!
//! Optional members are fields with `#[serde(default)]`; required ones have none.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{fail, Failure, Limits, Problem};
use crate::config::defaults;
use crate::http::body::Object;
use crate::http::error::ApiError;
use crate::http::names::name_problem;
use crate::http::timestamp;

/// The raw member: absent is `None`, `null` is `Some("null")`.
fn raw<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    Option::<&'de RawValue>::deserialize(deserializer)
}

fn is_null(raw: &RawValue) -> bool {
    crate::http::body::is_null(raw)
}

/// The first byte of a raw value, which tells its type.
fn kind(raw: &RawValue) -> u8 {
    raw.get()
        .trim_start()
        .as_bytes()
        .first()
        .copied()
        .unwrap_or(b'n')
}

/// A member as text, NULs included: absent, `null` and `""` are `None`.
fn string_member(raw: Option<&RawValue>) -> Result<Option<String>, Failure> {
    let Some(raw) = raw.filter(|r| !is_null(r)) else {
        return Ok(None);
    };
    if kind(raw) != b'"' {
        return Err(Failure::keyed("must be a string"));
    }
    let value: String = serde_json::from_str(raw.get())
        .map_err(|e| Failure::keyed(format!("is not a valid string: {e}")))?;
    Ok(Some(value).filter(|v| !v.is_empty()))
}

fn refuse_nul(value: String) -> Result<String, Failure> {
    if value.contains('\0') {
        return Err(Failure::keyed("must not contain NUL characters"));
    }
    Ok(value)
}

/// Optional text for a PostgreSQL `text` value: at most `MAX` characters (`0`: any length),
/// without U+0000.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Text<const MAX: usize = 0>(pub(crate) Option<String>);

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = string_member(raw(deserializer)?)
            .and_then(|v| v.map(refuse_nul).transpose())
            .map_err(fail)?;
        if MAX > 0 && value.as_ref().is_some_and(|v| v.chars().count() > MAX) {
            return Err(fail(Failure::keyed(format!(
                "must be at most {MAX} characters"
            ))));
        }
        Ok(Text(value))
    }
}

/// Required text without U+0000 (absent, `null`, `""` and other types are missing), at most
/// `MAX` characters (`0`: any length).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RequiredText<const MAX: usize = 0>(pub(crate) String);

impl<'de, const MAX: usize> Deserialize<'de> for RequiredText<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = string_member(raw(deserializer)?)
            .ok()
            .flatten()
            .ok_or_else(|| fail(Failure::missing()))?;
        let value = refuse_nul(value).map_err(fail)?;
        if MAX > 0 && value.chars().count() > MAX {
            return Err(fail(Failure::keyed(format!(
                "must be at most {MAX} characters"
            ))));
        }
        Ok(RequiredText(value))
    }
}

/// Optional free text, kept rather than matched: U+0000 becomes U+FFFD and text beyond `KEEP`
/// characters is cut (http-api.md §6).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FreeText<const KEEP: usize>(pub(crate) Option<String>);

impl<'de, const KEEP: usize> Deserialize<'de> for FreeText<KEEP> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = string_member(raw(deserializer)?).map_err(fail)?;
        Ok(FreeText(value.map(|v| {
            v.replace('\0', "\u{FFFD}").chars().take(KEEP).collect()
        })))
    }
}

/// A queue, partition or consumer group name (http-api.md §6): 1 to `NAME_CHARS_MAX` characters,
/// not only whitespace, no control characters.
fn checked_name(value: String) -> Result<String, Failure> {
    match name_problem(&value, Limits::current().name_chars_max) {
        Some(problem) => Err(Failure::keyed(problem)),
        None => Ok(value),
    }
}

/// An optional name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Name(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Text::<0>::deserialize(deserializer)?.0;
        value.map(checked_name).transpose().map(Name).map_err(fail)
    }
}

/// A required name (missing: absent, `null`, `""` or not a string).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RequiredName(pub(crate) String);

impl<'de> Deserialize<'de> for RequiredName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = RequiredText::<0>::deserialize(deserializer)?.0;
        checked_name(value).map(RequiredName).map_err(fail)
    }
}

/// Required text naming a UUID, kept as the client wrote it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct UuidText(pub(crate) String);

impl<'de> Deserialize<'de> for UuidText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = RequiredText::<0>::deserialize(deserializer)?.0;
        if uuid::Uuid::parse_str(&value).is_err() {
            return Err(fail(Failure::keyed("must be a UUID")));
        }
        Ok(UuidText(value))
    }
}

/// An optional integer in `MIN..=MAX`; `300.0` counts as `300` (http-api.md §2.4).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Int<const MIN: i64, const MAX: i64>(pub(crate) Option<i64>);

/// `raw` as an integer in `min..=max`: `None` when absent or `null`.
pub(crate) fn int_member(
    raw: Option<&RawValue>,
    min: i64,
    max: i64,
) -> Result<Option<i64>, Failure> {
    let Some(raw) = raw.filter(|r| !is_null(r)) else {
        return Ok(None);
    };
    let out_of_range = || Failure::keyed(format!("must be an integer from {min} to {max}"));
    let number: serde_json::Number = serde_json::from_str(raw.get()).map_err(|_| out_of_range())?;
    let value = match (number.as_i64(), number.as_f64()) {
        (Some(i), _) => i,
        // 2^63 as f64 is just past i64::MAX; anything that large is out of every range here.
        (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i64,
        _ => return Err(out_of_range()),
    };
    if value < min || value > max {
        return Err(out_of_range());
    }
    Ok(Some(value))
}

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        int_member(raw(deserializer)?, MIN, MAX)
            .map(Int)
            .map_err(fail)
    }
}

/// An optional boolean: JSON `true` / `false` only.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag(pub(crate) Option<bool>);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match raw(deserializer)?.map(|r| r.get().trim()) {
            None | Some("null") => Ok(Flag(None)),
            Some("true") => Ok(Flag(Some(true))),
            Some("false") => Ok(Flag(Some(false))),
            Some(_) => Err(fail(Failure::keyed("must be a boolean"))),
        }
    }
}

/// A required boolean: anything but `true` / `false` is missing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequiredFlag(pub(crate) bool);

impl<'de> Deserialize<'de> for RequiredFlag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match raw(deserializer)?.map(|r| r.get().trim()) {
            Some("true") => Ok(RequiredFlag(true)),
            Some("false") => Ok(RequiredFlag(false)),
            _ => Err(fail(Failure::missing())),
        }
    }
}

fn normalized(value: String) -> Result<String, Failure> {
    timestamp::normalize(&value)
        .ok_or_else(|| Failure::keyed("must be an RFC 3339 timestamp or a date"))
}

/// A required timestamp (missing: absent, `null`, `""` or not a string).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RequiredInstant(pub(crate) String);

impl<'de> Deserialize<'de> for RequiredInstant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = RequiredText::<0>::deserialize(deserializer)?.0;
        normalized(value).map(RequiredInstant).map_err(fail)
    }
}

/// Any JSON value, kept as sent: absent is `None`, `null` is `Some("null")`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Json<'a>(pub(crate) Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        raw(deserializer).map(Json)
    }
}

/// An optional object member of request type `T`, decoded by the handler (its errors name
/// `<key>.<member>`); `null` is absent.
#[derive(Debug)]
pub(crate) struct Nested<'a, T> {
    pub(crate) raw: Option<&'a RawValue>,
    of: PhantomData<T>,
}

impl<T> Default for Nested<'_, T> {
    fn default() -> Self {
        Nested {
            raw: None,
            of: PhantomData,
        }
    }
}

impl<'de: 'a, 'a, T> Deserialize<'de> for Nested<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Nested {
            raw: raw(deserializer)?.filter(|r| !is_null(r)),
            of: PhantomData,
        })
    }
}

impl<'a, T: super::Contract + Deserialize<'a>> Nested<'a, T> {
    /// The member as a `T`, errors naming `<key>.<member>`; `None` when absent.
    ///
    /// # Errors
    /// `400 validation_failed` when it is not an object or a member is bad.
    pub(crate) fn decode(
        &self,
        key: &str,
        index: Option<usize>,
        limits: Limits,
    ) -> Result<Option<T>, ApiError> {
        self.raw
            .map(|raw| Object::from_raw(raw, format!("{key}."), index)?.decode(limits))
            .transpose()
    }
}

/// A configurable limit on the length of an array member, with its default for the schema.
pub(crate) trait ArrayLimit {
    /// The default (`regina serve --help`).
    const DEFAULT: usize;
    /// The limit in force.
    fn current() -> usize;
}

/// `PUSH_ITEMS_MAX`.
#[derive(Debug)]
pub(crate) struct PushItemsMax;

impl ArrayLimit for PushItemsMax {
    const DEFAULT: usize = defaults::PUSH_ITEMS_MAX;
    fn current() -> usize {
        Limits::current().push_items_max
    }
}

/// `ACK_ITEMS_MAX`.
#[derive(Debug)]
pub(crate) struct AckItemsMax;

impl ArrayLimit for AckItemsMax {
    const DEFAULT: usize = defaults::ACK_ITEMS_MAX;
    fn current() -> usize {
        Limits::current().ack_items_max
    }
}

/// `TRANSACTION_OPERATIONS_MAX`.
#[derive(Debug)]
pub(crate) struct OperationsMax;

impl ArrayLimit for OperationsMax {
    const DEFAULT: usize = defaults::TRANSACTION_OPERATIONS_MAX;
    fn current() -> usize {
        Limits::current().transaction_operations_max
    }
}

/// `STREAMS_STATE_KEYS_MAX`.
#[derive(Debug)]
pub(crate) struct StateKeysMax;

impl ArrayLimit for StateKeysMax {
    const DEFAULT: usize = defaults::STREAMS_STATE_KEYS_MAX;
    fn current() -> usize {
        Limits::current().streams_state_keys_max
    }
}

/// No limit of its own (the request's limit applies to a sum of arrays).
#[derive(Debug)]
pub(crate) struct Unlimited;

impl ArrayLimit for Unlimited {
    const DEFAULT: usize = 0;
    fn current() -> usize {
        usize::MAX
    }
}

/// `raw` as an array of raw elements; `None` when absent or `null`.
fn array_member(raw: Option<&RawValue>) -> Result<Option<Vec<&RawValue>>, Failure> {
    let Some(raw) = raw.filter(|r| !is_null(r)) else {
        return Ok(None);
    };
    if kind(raw) != b'[' {
        return Err(Failure::keyed("must be an array"));
    }
    serde_json::from_str(raw.get())
        .map(Some)
        .map_err(|e| Failure::keyed(format!("is not a valid array: {e}")))
}

fn within<L: ArrayLimit>(elements: Vec<&RawValue>) -> Result<Vec<&RawValue>, Failure> {
    let limit = L::current();
    if elements.len() > limit {
        return Err(Failure {
            problem: Problem::TooMany(limit),
            limit: None,
        });
    }
    Ok(elements)
}

/// A required array of `T` elements, at most `L` of them; the elements stay raw JSON, decoded by
/// the handler with their path and index (`items[3].queue`).
#[derive(Debug)]
pub(crate) struct Items<'a, T, L> {
    pub(crate) elements: Vec<&'a RawValue>,
    of: PhantomData<(T, L)>,
}

impl<T, L> Default for Items<'_, T, L> {
    fn default() -> Self {
        Items {
            elements: Vec::new(),
            of: PhantomData,
        }
    }
}

impl<'de: 'a, 'a, T, L: ArrayLimit> Deserialize<'de> for Items<'a, T, L> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let elements = array_member(raw(deserializer)?)
            .ok()
            .flatten()
            .ok_or_else(|| fail(Failure::missing()))?;
        Ok(Items {
            elements: within::<L>(elements).map_err(fail)?,
            of: PhantomData,
        })
    }
}

/// An optional array of `T` elements (absent and `null`: none), at most `L` of them.
#[derive(Debug)]
pub(crate) struct OptionalItems<'a, T, L> {
    pub(crate) elements: Vec<&'a RawValue>,
    of: PhantomData<(T, L)>,
}

impl<T, L> Default for OptionalItems<'_, T, L> {
    fn default() -> Self {
        OptionalItems {
            elements: Vec::new(),
            of: PhantomData,
        }
    }
}

impl<'de: 'a, 'a, T, L: ArrayLimit> Deserialize<'de> for OptionalItems<'a, T, L> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let elements = array_member(raw(deserializer)?)
            .map_err(fail)?
            .unwrap_or_default();
        Ok(OptionalItems {
            elements: within::<L>(elements).map_err(fail)?,
            of: PhantomData,
        })
    }
}

/// Decodes element `position` of an array member as a `T`: errors name
/// `<path>[<position>].<member>` and report `index`.
///
/// # Errors
/// `400 validation_failed` when the element is not an object or a member is bad.
pub(crate) fn element<'a, T: super::Contract + Deserialize<'a>>(
    raw: &'a RawValue,
    path: &str,
    position: usize,
    index: usize,
    limits: Limits,
) -> Result<T, ApiError> {
    Object::from_raw(raw, format!("{path}[{position}]."), Some(index))?.decode(limits)
}

// --- JSON Schema of the field types -------------------------------------------------------

/// Implements `JsonSchema` for a field type whose schema is inlined where it is used.
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

/// Text without U+0000 (what PostgreSQL `text` holds).
const NO_NUL: &str = "^[^\\u0000]*$";

/// The name rule of http-api.md §6: at least one character that is neither whitespace nor a control
/// character, and no control character.
pub(crate) const NAME_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*\
     [^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// The forms of a UUID the broker reads: hyphenated, simple (32 hex digits), braced or URN.
pub(crate) const UUID_PATTERN: &str =
    "^([0-9A-Fa-f]{32}|(urn:uuid:)?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-\
     [0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}|\\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-\
     [0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\\})$";

/// The schema of a UUID member or parameter.
pub(crate) fn uuid_schema() -> Value {
    json!({"type": "string", "format": "uuid", "pattern": UUID_PATTERN})
}

/// The timestamp forms of http-api.md §1.5: RFC 3339 (offset optional), or a date.
pub(crate) const INSTANT_PATTERN: &str =
    "^\\d{4}-\\d{2}-\\d{2}([Tt ]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})?)?$";

/// A name's schema: 1 to `NAME_CHARS_MAX` (default) characters.
pub(crate) fn name_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": defaults::NAME_CHARS_MAX,
           "pattern": NAME_PATTERN})
}

fn text_schema(max: usize, nullable: bool) -> Schema {
    let mut schema = json!({"type": if nullable { json!(["string", "null"]) } else { json!("string") },
                            "pattern": NO_NUL});
    if max > 0 {
        schema["maxLength"] = json!(max);
    }
    Schema::try_from(schema).unwrap_or_default()
}

fn nullable(mut schema: Value) -> Schema {
    if let Some(kind) = schema.get("type").and_then(Value::as_str) {
        schema["type"] = json!([kind, "null"]);
    }
    Schema::try_from(schema).unwrap_or_default()
}

inline_schema!("Text", [const MAX: usize] Text<MAX>, |_g| text_schema(MAX, true));
inline_schema!("RequiredText", [const MAX: usize] RequiredText<MAX>, |_g| {
    let mut schema = text_schema(MAX, false);
    schema.insert("minLength".into(), json!(1));
    schema
});
inline_schema!("FreeText", [const KEEP: usize] FreeText<KEEP>, |_g| json_schema!({
    "type": ["string", "null"],
    "description": format!("Kept as text: longer than {KEEP} characters is cut"),
}));
inline_schema!("Name", [] Name, |_g| nullable(name_schema()));
inline_schema!("RequiredName", [] RequiredName, |_g| Schema::try_from(name_schema())
    .unwrap_or_default());
inline_schema!("UuidText", [] UuidText, |_g| Schema::try_from(uuid_schema())
    .unwrap_or_default());
inline_schema!("Int", [const MIN: i64, const MAX: i64] Int<MIN, MAX>, |_g| json_schema!({
    "type": ["integer", "null"], "minimum": MIN, "maximum": MAX,
}));
inline_schema!("Flag", [] Flag, |_g| json_schema!({"type": ["boolean", "null"]}));
inline_schema!("RequiredFlag", [] RequiredFlag, |_g| json_schema!({"type": "boolean"}));
inline_schema!("RequiredInstant", [] RequiredInstant, |_g| json_schema!({
    "type": "string", "pattern": INSTANT_PATTERN,
    "description": "RFC 3339 timestamp (UTC without an offset), or YYYY-MM-DD",
}));
inline_schema!("Json", ['a] Json<'a>, |_g| json_schema!({}));
inline_schema!("Nested", ['a, T: JsonSchema] Nested<'a, T>, |g| {
    let inner = g.subschema_for::<T>();
    json_schema!({"anyOf": [inner, {"type": "null"}]})
});
inline_schema!("Items", ['a, T: JsonSchema, L: ArrayLimit] Items<'a, T, L>, |g| {
    let mut schema = json!({"type": "array", "items": g.subschema_for::<T>()});
    if L::DEFAULT > 0 {
        schema["maxItems"] = json!(L::DEFAULT);
    }
    Schema::try_from(schema).unwrap_or_default()
});
inline_schema!("OptionalItems", ['a, T: JsonSchema, L: ArrayLimit] OptionalItems<'a, T, L>, |g| {
    let mut schema = json!({"type": ["array", "null"], "items": g.subschema_for::<T>()});
    if L::DEFAULT > 0 {
        schema["maxItems"] = json!(L::DEFAULT);
    }
    Schema::try_from(schema).unwrap_or_default()
});

/// Serialization of the optional field types (their inner value) and of absence.
macro_rules! serialize_inner {
    ([$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*> serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }

        impl<$($generics)*> $ty {
            /// Whether the member was absent (for `skip_serializing_if`).
            pub(crate) fn is_absent(&self) -> bool {
                self.0.is_none()
            }
        }
    };
}

serialize_inner!([const MIN: i64, const MAX: i64] Int<MIN, MAX>);
serialize_inner!([] Flag);
