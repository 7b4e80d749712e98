//! The route catalogue: every route of the HTTP API (spec §3) with its access level (§1.6), its
//! parameters, body and answers. It is the one source of the access levels the middleware
//! enforces (`access`) and of the OpenAPI document (`openapi`).
//!
//! Path templates use the router's `{param}` syntax. Templates are compared with parameter names
//! normalised ([`template_key`]), so a route registered as `/x/{name}` matches a catalogue entry
//! `/x/{queue}`.

mod routes_core;
mod routes_feeds;
mod routes_resources;
mod routes_streams;
pub(crate) mod schemas;

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::http::Method;
use serde_json::{json, Value};

/// Who may call a route (spec §1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// Anyone, with or without a token.
    Public,
    /// Any role (`read-only`, `read-write`, `admin`).
    ReadOnly,
    /// `read-write` or `admin`.
    ReadWrite,
    /// `admin` only.
    Admin,
}

impl Access {
    /// The level's name in the spec's table (and in the OpenAPI document).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Access::Public => "PUBLIC",
            Access::ReadOnly => "RO",
            Access::ReadWrite => "RW",
            Access::Admin => "ADMIN",
        }
    }
}

/// A query parameter: name, JSON Schema of its value (with default and limits), meaning.
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) schema: Value,
    pub(crate) description: &'static str,
}

/// The success answer of a route.
pub(crate) struct Success {
    pub(crate) status: u16,
    pub(crate) description: &'static str,
    /// The media type and schema of the body; `None` for an answer without body.
    pub(crate) content: Option<(&'static str, Value)>,
}

/// One route of the API.
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) path: &'static str,
    pub(crate) access: Access,
    pub(crate) tag: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) query: Vec<Param>,
    /// JSON Schema of the request body, when the route reads one.
    pub(crate) body: Option<Value>,
    /// Success answers, in status order.
    pub(crate) success: Vec<Success>,
    /// Error statuses particular to this route (the common ones are added for every route).
    pub(crate) errors: Vec<u16>,
}

impl Route {
    fn new(method: Method, path: &'static str, access: Access, tag: &'static str) -> Route {
        Route {
            method,
            path,
            access,
            tag,
            summary: "",
            query: Vec::new(),
            body: None,
            success: Vec::new(),
            errors: Vec::new(),
        }
    }

    pub(crate) fn get(path: &'static str, access: Access, tag: &'static str) -> Route {
        Route::new(Method::GET, path, access, tag)
    }

    pub(crate) fn post(path: &'static str, access: Access, tag: &'static str) -> Route {
        Route::new(Method::POST, path, access, tag)
    }

    pub(crate) fn delete(path: &'static str, access: Access, tag: &'static str) -> Route {
        Route::new(Method::DELETE, path, access, tag)
    }

    pub(crate) fn summary(mut self, summary: &'static str) -> Route {
        self.summary = summary;
        self
    }

    pub(crate) fn query(mut self, params: Vec<Param>) -> Route {
        self.query = params;
        self
    }

    pub(crate) fn body(mut self, schema: Value) -> Route {
        self.body = Some(schema);
        self
    }

    /// A JSON success answer.
    pub(crate) fn ok(mut self, status: u16, description: &'static str, schema: Value) -> Route {
        self.success.push(Success {
            status,
            description,
            content: Some(("application/json", schema)),
        });
        self
    }

    /// A success answer with another media type (`None`: no body).
    pub(crate) fn ok_as(
        mut self,
        status: u16,
        description: &'static str,
        content: Option<(&'static str, Value)>,
    ) -> Route {
        self.success.push(Success {
            status,
            description,
            content,
        });
        self
    }

    pub(crate) fn errors(mut self, statuses: &[u16]) -> Route {
        self.errors = statuses.to_vec();
        self
    }

    /// The names of the path parameters, in order.
    pub(crate) fn path_params(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
    }
}

/// A query parameter taking an integer in `min..=max`, `default` when absent.
pub(crate) fn int(
    name: &'static str,
    min: i64,
    max: Option<i64>,
    default: Option<i64>,
    description: &'static str,
) -> Param {
    let mut schema = json!({"type": "integer", "minimum": min});
    if let Some(max) = max {
        schema["maximum"] = json!(max);
    }
    if let Some(default) = default {
        schema["default"] = json!(default);
    }
    Param {
        name,
        schema,
        description,
    }
}

/// A boolean query parameter (`true/1/yes/on`, `false/0/no/off`).
pub(crate) fn flag(name: &'static str, default: bool, description: &'static str) -> Param {
    Param {
        name,
        schema: json!({"type": "boolean", "default": default}),
        description,
    }
}

/// A text query parameter.
pub(crate) fn text(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema: json!({"type": "string"}),
        description,
    }
}

/// A queue, partition or group name in the query.
pub(crate) fn param_name(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema: schemas::name(),
        description,
    }
}

/// A timestamp query parameter (RFC 3339, or a date).
pub(crate) fn instant(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema: json!({"type": "string", "description": "RFC 3339 timestamp, or YYYY-MM-DD"}),
        description,
    }
}

/// One of a fixed set of values.
pub(crate) fn choice(
    name: &'static str,
    values: &[&str],
    default: Option<&str>,
    description: &'static str,
) -> Param {
    let mut schema = json!({"type": "string", "enum": values});
    if let Some(default) = default {
        schema["default"] = json!(default);
    }
    Param {
        name,
        schema,
        description,
    }
}

/// `limit` and `offset` of a paged listing.
pub(crate) fn paging(default: i64, max: i64) -> Vec<Param> {
    vec![
        int("limit", 1, Some(max), Some(default), "Page size"),
        int("offset", 0, None, Some(0), "Rows skipped before the page"),
    ]
}

/// `from` and `to` of a time range.
pub(crate) fn range(from: &'static str, to: &'static str) -> Vec<Param> {
    vec![instant("from", from), instant("to", to)]
}

/// Every route, in the order of the spec's sections.
pub(crate) fn routes() -> &'static [Route] {
    static ROUTES: OnceLock<Vec<Route>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        let mut all = routes_core::routes();
        all.extend(routes_resources::routes());
        all.extend(routes_feeds::routes());
        all.extend(routes_streams::routes());
        all
    })
}

/// `path` with every `{param}` written `{}`: the form in which templates are compared.
pub(crate) fn template_key(path: &str) -> String {
    path.split('/')
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                "{}"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The access level of the route the router matched: `method` and its path template. `HEAD`
/// is a `GET`. `None` for a route missing from the catalogue.
pub(crate) fn access(method: &Method, template: &str) -> Option<Access> {
    static INDEX: OnceLock<HashMap<(Method, String), Access>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        routes()
            .iter()
            .map(|r| ((r.method.clone(), template_key(r.path)), r.access))
            .collect()
    });
    let method = if method == Method::HEAD {
        Method::GET
    } else {
        method.clone()
    };
    index.get(&(method, template_key(template))).copied()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn templates_compare_with_parameter_names_normalised() {
        assert_eq!(
            template_key("/api/v1/pop/queue/{name}/partition/{p}"),
            "/api/v1/pop/queue/{}/partition/{}"
        );
        assert_eq!(
            access(&Method::GET, "/api/v1/resources/queues/{other}"),
            Some(Access::ReadOnly)
        );
        assert_eq!(
            access(&Method::HEAD, "/health"),
            Some(Access::Public),
            "HEAD is a GET"
        );
        assert_eq!(access(&Method::PUT, "/api/v1/push"), None);
    }

    #[test]
    fn every_route_is_listed_once_with_a_summary_and_an_answer() {
        let mut seen = HashSet::new();
        for route in routes() {
            let key = (route.method.clone(), template_key(route.path));
            assert!(
                seen.insert(key),
                "listed twice: {} {}",
                route.method,
                route.path
            );
            assert!(!route.summary.is_empty(), "{} {}", route.method, route.path);
            assert!(!route.success.is_empty(), "{} {}", route.method, route.path);
        }
    }
}
