//! The route catalogue: every route of the HTTP API (http-api.md §3), declared once with its access
//! level (§1.6), the request types its handler parses (path, query, body), its answers and its
//! handler. It is the one source of the router ([`router`]), of the access levels the middleware
//! enforces (`access`) and of the OpenAPI document (`openapi`), whose request schemas come from
//! those types (`contract`). Adding a route: its request types and handler in their module, one
//! entry here.
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
use axum::routing::MethodRouter;
use axum::Router;
use schemars::JsonSchema;
use serde_json::Value;

use super::contract::schema::{self as request_schema, SchemaFn};
use crate::state::AppState;

/// Who may call a route (http-api.md §1.6).
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
    /// The types of the path parameters, in the order the handler reads them.
    pub(crate) path_types: Vec<SchemaFn>,
    /// The types of the query parameters, in the order the handler reads them.
    pub(crate) query_types: Vec<SchemaFn>,
    /// The type of the request body, when the route reads one.
    pub(crate) body: Option<SchemaFn>,
    /// Success answers, in status order.
    pub(crate) success: Vec<Success>,
    /// Error statuses particular to this route (the common ones are added for every route).
    pub(crate) errors: Vec<u16>,
    /// The handler: the router serves this route with it.
    pub(crate) handler: Option<MethodRouter<AppState>>,
}

impl Route {
    fn new(method: Method, path: &'static str, access: Access, tag: &'static str) -> Route {
        Route {
            method,
            path,
            access,
            tag,
            summary: "",
            path_types: Vec::new(),
            query_types: Vec::new(),
            body: None,
            success: Vec::new(),
            errors: Vec::new(),
            handler: None,
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

    /// Path parameters: the properties of the parameter type `T`.
    pub(crate) fn path<T: JsonSchema>(mut self) -> Route {
        self.path_types.push(request_schema::object::<T>);
        self
    }

    /// Query parameters: the properties of the parameter type `T`.
    pub(crate) fn query<T: JsonSchema>(mut self) -> Route {
        self.query_types.push(request_schema::object::<T>);
        self
    }

    /// The request body: the request type `T`.
    pub(crate) fn body<T: JsonSchema>(mut self) -> Route {
        self.body = Some(request_schema::reference::<T>);
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

    /// The handler of this route (`get(handler)`, `post(handler)`, …).
    pub(crate) fn to(mut self, handler: MethodRouter<AppState>) -> Route {
        self.handler = Some(handler);
        self
    }

    pub(crate) fn errors(mut self, statuses: &[u16]) -> Route {
        self.errors = statuses.to_vec();
        self
    }

    /// The names of the path parameters, in order.
    #[cfg(test)]
    pub(crate) fn path_params(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
    }
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

/// The router of every route of the catalogue, each served by its handler: a route is declared
/// once, here, with its access level, request types, answers and handler.
pub(crate) fn router() -> Router<AppState> {
    routes()
        .iter()
        .fold(Router::new(), |router, route| match &route.handler {
            Some(handler) => router.route(route.path, handler.clone()),
            None => router,
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
            assert!(
                route.handler.is_some(),
                "no handler: {} {}",
                route.method,
                route.path
            );
        }
    }

    #[test]
    fn every_path_parameter_has_a_type() {
        let mut generator = request_schema::generator();
        for route in routes() {
            let typed: Vec<String> = route
                .path_types
                .iter()
                .flat_map(|f| request_schema::parameters(&f(&mut generator)).0)
                .map(|p| p.name)
                .collect();
            for name in route.path_params() {
                assert!(
                    typed.iter().any(|t| t == name),
                    "{} {}: {{{name}}} has no path type",
                    route.method,
                    route.path
                );
            }
            assert_eq!(
                typed.len(),
                route.path_params().count(),
                "{} {}",
                route.method,
                route.path
            );
        }
    }
}
