//! Access control (http-api.md §1.6): the middleware that authenticates a request and checks the
//! role its route needs, and the [`Auth`] extractor through which handlers read the caller (its
//! `sub` for `producerSub`, its queue scopes).
//!
//! The middleware runs as a route layer, so it knows the matched route template and takes the
//! route's level from the catalogue; unknown routes never reach it and keep their JSON 404.

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::catalog::{self, Access};
use super::error::ApiError;
use crate::auth::{Caller, Failure, Role, Scopes};
use crate::state::AppState;

/// Authenticates and authorises a request of a matched route; the verified caller goes into the
/// request's extensions for [`Auth`].
pub(super) async fn guard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(auth) = &state.get().auth else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    let access = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|matched| catalog::access(request.method(), matched.as_str()))
        .unwrap_or_else(|| uncatalogued(path));
    if access == Access::Public || auth.skips(path) {
        return next.run(request).await;
    }
    let Some(token) = bearer(request.headers()) else {
        return unauthorized(Failure::Missing);
    };
    let caller = match auth.verify(token).await {
        Ok(caller) => caller,
        Err(failure) => return unauthorized(failure),
    };
    if !permits(caller.role, access) {
        return forbidden().into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// The level of a served route the catalogue does not list: dashboard files are public (spec
/// §1.2, §1.6); anything else needs `admin`, so a route added without its catalogue entry is
/// closed rather than open.
fn uncatalogued(path: &str) -> Access {
    let api = ["/api/", "/streams/"].iter().any(|p| path.starts_with(p))
        || path == "/health"
        || path == "/metrics"
        || path.starts_with("/metrics/");
    if api {
        tracing::warn!(%path, "route missing from the catalogue: admin only");
        Access::Admin
    } else {
        Access::Public
    }
}

/// Whether a caller of `role` may use a route of level `access`.
fn permits(role: Role, access: Access) -> bool {
    match access {
        Access::Public => true,
        Access::ReadOnly => role >= Role::ReadOnly,
        Access::ReadWrite => role >= Role::ReadWrite,
        Access::Admin => role == Role::Admin,
    }
}

/// The token of the `Authorization` header: after a case-insensitive `Bearer `, or the whole
/// value when the prefix is absent (http-api.md §1.2).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    // `Bearer ` with nothing after it (the header value lost its trailing space).
    if value.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = match value.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("bearer ") => value[7..].trim_start(),
        _ => value,
    };
    (!token.is_empty()).then_some(token)
}

/// The `401` of a failure, with `WWW-Authenticate: Bearer` (http-api.md §1.6).
fn unauthorized(failure: Failure) -> Response {
    let (code, text) = match failure {
        Failure::Missing => ("unauthorized", "Authentication required".to_owned()),
        Failure::Expired => ("token_expired", "Token has expired".to_owned()),
        Failure::Invalid(reason) => (
            "unauthorized",
            format!("Token verification failed: {reason}"),
        ),
    };
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, code, text).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// `403 forbidden`: role or queue scope insufficient.
pub(crate) fn forbidden() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "Insufficient permissions",
    )
}

/// The verified caller of a request: `None` when authentication is off or the route is public.
#[derive(Clone, Debug, Default)]
pub(crate) struct Auth(pub(crate) Option<Caller>);

impl Auth {
    /// The `sub` to stamp on pushed messages as `producerSub`.
    pub(crate) fn sub(&self) -> Option<&str> {
        self.0.as_ref()?.sub.as_deref()
    }

    /// The caller's queue scopes; `None` allows every queue.
    pub(crate) fn scopes(&self) -> Option<&Scopes> {
        self.0.as_ref()?.scopes.as_ref()
    }

    /// The `scopes` value of a listing's query JSON: `null` (every queue) or the entries.
    pub(crate) fn scopes_value(&self) -> Option<&[String]> {
        self.scopes().map(Scopes::entries)
    }

    /// A listing's query JSON (an object) with the caller's scopes added as its `scopes` key,
    /// so the listing leaves out forbidden queues; unchanged when the caller has no scopes.
    /// Every listing that filters by queue passes its query through here.
    pub(crate) fn scoped(&self, query: String) -> String {
        let Some(entries) = self.scopes_value() else {
            return query;
        };
        let Some(body) = query.trim_end().strip_suffix('}') else {
            return query;
        };
        let separator = if body.trim_end().ends_with('{') {
            ""
        } else {
            ","
        };
        let scopes = serde_json::to_string(entries).unwrap_or_else(|_| "[]".to_owned());
        format!("{body}{separator}\"scopes\":{scopes}}}")
    }

    /// Whether the caller may touch `queue`.
    pub(crate) fn allows(&self, queue: &str) -> bool {
        self.scopes().is_none_or(|s| s.allows(queue))
    }

    /// `403 forbidden` unless the caller may touch `queue`.
    ///
    /// # Errors
    /// `403 forbidden`.
    pub(crate) fn check_queue(&self, queue: &str) -> Result<(), ApiError> {
        if self.allows(queue) {
            Ok(())
        } else {
            Err(forbidden())
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Auth {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Auth(parts.extensions.get::<Caller>().cloned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(value: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(value).expect("header"),
        );
        bearer(&headers).map(str::to_owned)
    }

    #[test]
    fn bearer_prefix_is_case_insensitive_and_optional() {
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bEaReR abc").as_deref(), Some("abc"));
        assert_eq!(token("abc").as_deref(), Some("abc"));
        assert_eq!(token("Bearer ").as_deref(), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }

    #[test]
    fn scoped_queries_carry_the_scopes_and_unscoped_ones_are_untouched() {
        let caller = |scopes: Option<Vec<String>>| {
            Auth(Some(Caller {
                sub: None,
                role: Role::Admin,
                scopes: scopes.map(Scopes::new),
            }))
        };
        let scoped = caller(Some(vec!["a".into(), "b*".into()]));
        let value: serde_json::Value =
            serde_json::from_str(&scoped.scoped(r#"{"limit":5}"#.to_owned())).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"limit": 5, "scopes": ["a", "b*"]})
        );
        let value: serde_json::Value =
            serde_json::from_str(&scoped.scoped("{}".to_owned())).expect("JSON");
        assert_eq!(value, serde_json::json!({"scopes": ["a", "b*"]}));
        assert_eq!(caller(None).scoped("{}".to_owned()), "{}");
        assert_eq!(
            Auth::default().scoped(r#"{"x":1}"#.to_owned()),
            r#"{"x":1}"#
        );
    }

    #[test]
    fn roles_nest() {
        assert!(permits(Role::None, Access::Public));
        assert!(!permits(Role::None, Access::ReadOnly));
        assert!(permits(Role::ReadOnly, Access::ReadOnly));
        assert!(!permits(Role::ReadOnly, Access::ReadWrite));
        assert!(permits(Role::Admin, Access::ReadWrite));
        assert!(!permits(Role::ReadWrite, Access::Admin));
    }

    #[test]
    fn uncatalogued_api_routes_are_closed_and_dashboard_files_open() {
        assert_eq!(uncatalogued("/api/v1/new"), Access::Admin);
        assert_eq!(uncatalogued("/metrics/x"), Access::Admin);
        assert_eq!(uncatalogued("/assets/app.js"), Access::Public);
        assert_eq!(uncatalogued("/"), Access::Public);
    }
}
