//! The deserializers behind the typed requests: a body object, one body member, and query or
//! path parameters. Each presents the members a struct declares, in its order, whether the
//! request has them or not, so every field type decides what absence means and the first error
//! is the first bad field of the type.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::value::RawValue;

use super::{DeError, Failure};
use crate::http::body::Object;
use crate::http::error::ApiError;
use crate::http::names::decode_segment;
use crate::http::query::Query;

/// A body object, read as a struct.
pub(super) struct ObjectDe<'o, 'a> {
    object: &'o Object<'a>,
}

impl<'o, 'a> ObjectDe<'o, 'a> {
    pub(super) fn new(object: &'o Object<'a>) -> Self {
        ObjectDe { object }
    }
}

fn not_a_struct() -> DeError {
    DeError::take_pending(|| Failure::keyed("is not a request type"))
}

impl<'de> de::Deserializer<'de> for ObjectDe<'_, 'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, DeError> {
        Err(not_a_struct())
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_map(Members {
            fields: fields.iter(),
            current: "",
            value: move |key| MemberDe {
                raw: self.object.raw(key),
            },
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The declared members of a struct, each with its value (present or not).
struct Members<F> {
    fields: std::slice::Iter<'static, &'static str>,
    current: &'static str,
    value: F,
}

impl<'de, F, D> MapAccess<'de> for Members<F>
where
    F: Fn(&'static str) -> D,
    D: de::Deserializer<'de, Error = DeError>,
{
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(&key) = self.fields.next() else {
            return Ok(None);
        };
        self.current = key;
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let key = self.current;
        seed.deserialize((self.value)(key)).map_err(|e| e.at(key))
    }
}

/// One body member as the request has it: absent, or its raw JSON text.
struct MemberDe<'a> {
    raw: Option<&'a RawValue>,
}

fn json_error(error: serde_json::Error) -> DeError {
    DeError::take_pending(|| Failure::keyed(format!("is not valid: {error}")))
}

impl<'de> de::Deserializer<'de> for MemberDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.raw {
            None => visitor.visit_none(),
            Some(raw) => {
                let mut json = serde_json::Deserializer::from_str(raw.get());
                de::Deserializer::deserialize_any(&mut json, visitor).map_err(json_error)
            }
        }
    }

    /// Absent is `None`; anything present, `null` included, is `Some`: the field type decides
    /// what `null` means.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.raw {
            None => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    /// Raw JSON members (`&RawValue`) come through here.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.raw {
            None => visitor.visit_none(),
            Some(raw) => {
                let mut json = serde_json::Deserializer::from_str(raw.get());
                de::Deserializer::deserialize_newtype_struct(&mut json, name, visitor)
                    .map_err(json_error)
            }
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// Query or path parameters, read as a struct.
pub(super) struct ParamsDe<'p> {
    source: Source<'p>,
}

enum Source<'p> {
    Query(&'p Query),
    Path(&'p [(String, String)]),
}

impl<'p> ParamsDe<'p> {
    pub(super) fn query(query: &'p Query) -> Self {
        ParamsDe {
            source: Source::Query(query),
        }
    }

    pub(super) fn path(values: &'p [(String, String)]) -> Self {
        ParamsDe {
            source: Source::Path(values),
        }
    }

    /// The value of `key`: absent (`None`), or its text. A query value that is empty is absent;
    /// one that is not UTF-8 or holds U+0000 is refused (http-api.md §2.4).
    fn value(&self, key: &str) -> Result<Option<&'p str>, Failure> {
        match self.source {
            Source::Query(query) => query.text(key).map_err(Failure::keyed),
            Source::Path(values) => Ok(values
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())),
        }
    }
}

impl<'de> de::Deserializer<'de> for ParamsDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, DeError> {
        Err(not_a_struct())
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_map(Members {
            fields: fields.iter(),
            current: "",
            value: move |key| ParamDe {
                value: self.value(key),
            },
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// One parameter: absent, its text, or why its text cannot be read.
struct ParamDe<'p> {
    value: Result<Option<&'p str>, Failure>,
}

impl<'de> de::Deserializer<'de> for ParamDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Err(failure) => Err(DeError { key: None, failure }),
            Ok(None) => visitor.visit_none(),
            Ok(Some(text)) => visitor.visit_borrowed_str(text),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Err(failure) => Err(DeError { key: None, failure }),
            Ok(None) => visitor.visit_none(),
            Ok(Some(_)) => visitor.visit_some(self),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The path parameters of `path` by the names of `template` (`/x/{name}/y`): each segment in
/// the place of a `{name}`, percent-decoded as UTF-8.
///
/// # Errors
/// `400 invalid_parameter` naming a parameter whose segment is missing or not UTF-8.
pub(super) fn path_values(template: &str, path: &str) -> Result<Vec<(String, String)>, ApiError> {
    let mut segments = path.split('/');
    let mut out = Vec::new();
    for part in template.split('/') {
        let segment = segments.next();
        let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else {
            continue;
        };
        let raw = segment
            .ok_or_else(|| ApiError::invalid_parameter(name, format!("{name} is missing")))?;
        out.push((name.to_owned(), decode_segment(raw, name)?));
    }
    Ok(out)
}
