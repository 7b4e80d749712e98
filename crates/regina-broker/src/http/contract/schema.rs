//! JSON Schema of the request types for the OpenAPI document: one generator for the whole
//! document, whose named schemas become `#/components/schemas/<Name>`.

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// How a route's request part produces its schema (a `fn` so catalogue entries stay plain data).
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T` where it is used: a `$ref` to its component, or inline for field types.
pub(crate) fn reference<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<T>();
    tidy(&mut schema);
    schema
}

/// The schema of `T` itself (an object schema for a parameter type, whose properties are the
/// parameters).
pub(crate) fn object<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = T::json_schema(generator);
    tidy(&mut schema);
    schema
}

/// Drops the `default: null` schemars writes for optional members (absent is not `null`).
fn drop_null_default(schema: &mut Schema) {
    if schema.get("default") == Some(&Value::Null) {
        schema.remove("default");
    }
}

fn tidy(schema: &mut Schema) {
    RecursiveTransform(drop_null_default).transform(schema);
}

/// A generator for OpenAPI 3.1: JSON Schema 2020-12, named schemas under `components`.
pub(crate) fn generator() -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    settings
        .transforms
        .push(Box::new(RecursiveTransform(drop_null_default)));
    settings.into_generator()
}

/// One parameter of a parameter type: name, schema (with its description), required.
pub(crate) struct Parameter {
    pub(crate) name: String,
    pub(crate) schema: Value,
    pub(crate) required: bool,
}

/// The parameters of a parameter type's object schema, in declaration order, and the
/// object-level constraints between them (`anyOf`, …), if any.
pub(crate) fn parameters(schema: &Schema) -> (Vec<Parameter>, Map<String, Value>) {
    let object = schema.as_object().cloned().unwrap_or_default();
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let parameters = object
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, schema)| Parameter {
                    name: name.clone(),
                    schema: schema.clone(),
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default();
    let constraints = object
        .into_iter()
        .filter(|(k, _)| matches!(k.as_str(), "anyOf" | "oneOf" | "allOf" | "not"))
        .collect();
    (parameters, constraints)
}
