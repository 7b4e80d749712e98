//! The OpenAPI 3.1 document of the API, generated from the route catalogue and served at
//! `GET /api/openapi.json` (http-api.md §3.1). The same text is committed as `api/openapi.json`.

use std::sync::OnceLock;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Map, Value};

use schemars::SchemaGenerator;

use super::catalog::{self, schemas, Access, Route};
use super::contract::schema::{self as request_schema, SchemaFn};
use super::error::json_response;

pub(super) async fn serve() -> Response {
    static TEXT: OnceLock<String> = OnceLock::new();
    let text = TEXT.get_or_init(|| serde_json::to_string(&document()).unwrap_or_default());
    json_response(StatusCode::OK, text.clone())
}

/// The document, pretty-printed with a final newline: the text of `api/openapi.json`.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

/// Statuses any route may answer (http-api.md §3) and those of authenticated routes (§1.6).
const COMMON_ERRORS: &[u16] = &[400, 413, 500, 503];
const AUTH_ERRORS: &[u16] = &[401, 403];

/// The OpenAPI document. Objects are maps with sorted keys, so the text is stable.
pub(crate) fn document() -> Value {
    let mut generator = request_schema::generator();
    let mut paths = Map::new();
    for route in catalog::routes() {
        let item = paths
            .entry(route.path.to_owned())
            .or_insert_with(|| json!({}));
        item[route.method.as_str().to_ascii_lowercase()] = operation(route, &mut generator);
    }
    let mut components = schemas::components();
    components.extend(generator.take_definitions(true));
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Regina HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Partitioned message queue on PostgreSQL, compatible with Queen MQ v1",
            "description": "Access levels (x-regina-access): PUBLIC needs no token; RO any role; \
                            RW read-write or admin; ADMIN admin. Authentication applies only when \
                            the broker runs with JWT_ENABLED.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "http://localhost:6632"}],
        "tags": tags(),
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": error_responses(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
    })
}

fn tags() -> Value {
    let mut names: Vec<&str> = catalog::routes().iter().map(|r| r.tag).collect();
    names.sort_unstable();
    names.dedup();
    Value::Array(names.into_iter().map(|n| json!({"name": n})).collect())
}

/// The parameters of `types` (`in`: `path` or `query`), each with its schema and description,
/// and the constraints between them.
fn typed_parameters(
    types: &[SchemaFn],
    location: &str,
    generator: &mut SchemaGenerator,
) -> (Vec<Value>, Vec<Value>) {
    let mut out = Vec::new();
    let mut constraints = Vec::new();
    for schema_of in types {
        let (parameters, between) = request_schema::parameters(&schema_of(generator));
        out.extend(parameters.into_iter().map(|p| {
            let mut schema = p.schema;
            let description = schema.as_object_mut().and_then(|o| o.remove("description"));
            let mut parameter = json!({"name": p.name, "in": location,
                                       "required": location == "path" || p.required,
                                       "schema": schema});
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        }));
        if !between.is_empty() {
            constraints.push(Value::Object(between));
        }
    }
    (out, constraints)
}

fn operation(route: &Route, generator: &mut SchemaGenerator) -> Value {
    let (mut parameters, _) = typed_parameters(&route.path_types, "path", generator);
    let (query, constraints) = typed_parameters(&route.query_types, "query", generator);
    parameters.extend(query);
    let mut responses = Map::new();
    for success in &route.success {
        let mut answer = json!({"description": success.description});
        if let Some((media, schema)) = &success.content {
            answer["content"] = json!({ *media: {"schema": schema} });
        }
        responses.insert(success.status.to_string(), answer);
    }
    let auth: &[u16] = if route.access == Access::Public {
        &[]
    } else {
        AUTH_ERRORS
    };
    for status in route.errors.iter().chain(COMMON_ERRORS).chain(auth) {
        responses
            .entry(status.to_string())
            .or_insert_with(|| json!({"$ref": format!("#/components/responses/{status}")}));
    }
    let security = if route.access == Access::Public {
        json!([])
    } else {
        json!([{"bearer": []}])
    };
    let mut op = json!({
        "operationId": operation_id(route),
        "summary": route.summary,
        "tags": [route.tag],
        "x-regina-access": route.access.as_str(),
        "security": security,
        "responses": responses,
    });
    if !parameters.is_empty() {
        op["parameters"] = Value::Array(parameters);
    }
    // Rules between query parameters (e.g. `namespace` or `task`), which OpenAPI parameters
    // cannot state: JSON Schema over the query as an object of its parameters.
    if !constraints.is_empty() {
        op["x-regina-query-constraints"] = Value::Array(constraints);
    }
    if let Some(body) = route.body {
        let schema = Value::from(body(generator));
        op["requestBody"] = json!({
            "required": false,
            "content": {"application/json": {"schema": schema}},
        });
    }
    op
}

/// `get` + `/api/v1/resources/queues/{queue}` → `getResourcesQueuesByQueue`.
fn operation_id(route: &Route) -> String {
    let mut id = route.method.as_str().to_ascii_lowercase();
    let path = route.path.strip_prefix("/api/v1").unwrap_or(route.path);
    for segment in path.split(['/', '-', '.']).filter(|s| !s.is_empty()) {
        let (prefix, word) = match segment.strip_prefix('{') {
            Some(param) => ("By", param.trim_end_matches('}')),
            None => ("", segment),
        };
        id.push_str(prefix);
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            id.extend(first.to_uppercase());
            id.push_str(chars.as_str());
        }
    }
    id
}

/// The error answers by status, each with the shared error body (http-api.md §1.3, §2.3).
fn error_responses() -> Value {
    let error = json!({"application/json": {"schema": schemas::named("Error")}});
    let mut out = Map::new();
    for (status, description) in [
        (400, "Invalid JSON, body, parameter, or too many items"),
        (
            401,
            "No token, an expired token, or a token that failed verification",
        ),
        (403, "Role or queue scope insufficient"),
        (404, "Unknown route or resource"),
        (409, "Conflict with the current state"),
        (413, "Body larger than BODY_BYTES_MAX"),
        (429, "Queue full"),
        (500, "Internal error"),
        (
            503,
            "Database unavailable or timed out, overloaded, or shutting down",
        ),
    ] {
        let mut answer = json!({"description": description, "content": error});
        if status == 401 {
            answer["headers"] = json!({"WWW-Authenticate": {
                "description": "Always `Bearer`",
                "schema": {"type": "string", "const": "Bearer"},
            }});
        }
        if matches!(status, 429 | 503) {
            answer["headers"] = json!({"Retry-After": {
                "description": "Seconds to wait before retrying",
                "schema": {"type": "integer"},
            }});
        }
        out.insert(status.to_string(), answer);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique_and_readable() {
        let mut ids: Vec<String> = catalog::routes().iter().map(operation_id).collect();
        assert!(ids.contains(&"getResourcesQueuesByQueue".to_owned()));
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count, "operation ids repeat");
    }

    #[test]
    fn committed_document_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../api/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == document_text(),
            "api/openapi.json differs from the document the catalogue generates: \
             run `make openapi` and commit the result"
        );
    }
}
