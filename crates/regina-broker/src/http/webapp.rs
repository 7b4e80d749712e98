//! The dashboard at `/` (http-api.md §1.2, §7 `WEBAPP_ROOT`): its static files, and `index.html`
//! for every other `GET` outside the API prefixes, so that a reload or a shared link of a
//! client-side route opens the same page. Everything else keeps the API's JSON `404`.
//!
//! The files are those of `dashboard/dist`, embedded at build time, or a directory read at each
//! request (`crate::site`). A binary built before the dashboard was built serves a short page saying how to
//! build it. Vite names the files under `assets/` by their content hash, so those are cached for
//! ever; every other file is revalidated. Responses are gzip-compressed when the client accepts it.

use std::borrow::Cow;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::compression::CompressionLayer;

use super::OriginalPath;
use crate::site::{Site, INDEX};
use crate::state::AppState;

/// Path prefixes of the API: never the dashboard's, whatever the method (http-api.md §1.2).
const API_PREFIXES: [&str; 4] = ["/api", "/streams", "/health", "/metrics"];
/// Vite writes content-hashed file names below this directory.
const HASHED_DIR: &str = "assets/";
const CACHE_IMMUTABLE: &str = "public, max-age=31536000, immutable";
const CACHE_REVALIDATE: &str = "no-cache";

/// Served at `/` by a binary built before `dashboard/dist` existed.
const NOT_BUILT_PAGE: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Regina</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2937}
code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}</style></head>
<body><h1>Regina is running</h1>
<p>This broker was built without its web dashboard. Build the dashboard, then the broker:</p>
<p><code>make dashboard</code> then <code>cargo build --release -p regina</code>
(or simply <code>make run</code>, which does both; it needs Node.js 20 and npm).</p>
<p>Or serve a built dashboard from a directory with <code>WEBAPP_ROOT=/path/to/dist</code>.</p>
<p>The HTTP API answers under <code>/api/v1/</code>; <a href=\"/health\">/health</a> shows this instance.</p>
</body></html>
";

/// Whether a request is the dashboard's to answer: a `GET` (or `HEAD`) whose path is not under
/// `/api/`, `/streams/`, `/health` or `/metrics`. Such requests are public (http-api.md §1.6).
pub(crate) fn is_dashboard_request(method: &Method, path: &str) -> bool {
    let api = API_PREFIXES.iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    (method == Method::GET || method == Method::HEAD) && !api
}

/// The fallback of the API router: the dashboard, or the JSON `404` of an unknown route.
pub(super) fn router(state: AppState) -> Router {
    Router::new()
        .fallback(fallback)
        .layer(CompressionLayer::new().gzip(true))
        .with_state(state)
}

async fn fallback(
    State(state): State<AppState>,
    original: Option<axum::Extension<OriginalPath>>,
    request: Request,
) -> Response {
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let site = &state.get().site;
    let relative = match site {
        Site::Off => None,
        _ if !is_dashboard_request(&method, uri.path()) => None,
        _ => relative_path(uri.path()),
    };
    let Some(relative) = relative else {
        return super::not_found(method, uri, original)
            .await
            .into_response();
    };
    if !relative.is_empty() && relative != INDEX {
        if let Some(body) = site.file(&relative).await {
            return file_response(&relative, body);
        }
        // A missing script or style must not come back as a page the browser cannot run.
        if relative.starts_with(HASHED_DIR) {
            return super::not_found(method, uri, original)
                .await
                .into_response();
        }
    }
    match site.file(INDEX).await {
        Some(body) => file_response(INDEX, body),
        None => file_response(INDEX, Cow::Borrowed(NOT_BUILT_PAGE.as_bytes())),
    }
}

/// The percent-decoded path below the site root, without its leading `/`; `None` when it is not
/// UTF-8 or could leave the root (`..`, `.` or empty segments, backslashes, NUL).
fn relative_path(path: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let relative = decoded.strip_prefix('/').unwrap_or(&decoded);
    if relative.is_empty() {
        return Some(String::new());
    }
    let normal = relative
        .split('/')
        .all(|segment| !matches!(segment, "" | "." | "..") && !segment.contains(['\\', '\0']));
    normal.then(|| relative.to_owned())
}

fn file_response(relative: &str, body: Cow<'static, [u8]>) -> Response {
    let cache = if relative.starts_with(HASHED_DIR) {
        CACHE_IMMUTABLE
    } else {
        CACHE_REVALIDATE
    };
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&content_type(relative)) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The content type of a file by its extension; text types say they are UTF-8.
fn content_type(relative: &str) -> String {
    let mime = mime_guess::from_path(relative).first_or_octet_stream();
    let text = mime.type_() == mime_guess::mime::TEXT
        || matches!(
            mime.subtype().as_str(),
            "javascript" | "json" | "manifest+json"
        );
    if text && mime.get_param(mime_guess::mime::CHARSET).is_none() {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_prefixes_are_never_the_dashboard() {
        for path in [
            "/api",
            "/api/v1/nope",
            "/streams/v1/x",
            "/health",
            "/metrics",
            "/metrics/prometheus",
        ] {
            assert!(!is_dashboard_request(&Method::GET, path), "{path}");
        }
        for path in ["/", "/queues/orders", "/apis", "/healthy", "/assets/a.js"] {
            assert!(is_dashboard_request(&Method::GET, path), "{path}");
            assert!(is_dashboard_request(&Method::HEAD, path), "{path}");
            assert!(!is_dashboard_request(&Method::POST, path), "{path}");
        }
    }

    #[test]
    fn relative_paths_stay_below_the_root() {
        assert_eq!(relative_path("/"), Some(String::new()));
        assert_eq!(
            relative_path("/assets/index-1a2b.js"),
            Some("assets/index-1a2b.js".into())
        );
        assert_eq!(
            relative_path("/queues/billing%2Eorders"),
            Some("queues/billing.orders".into())
        );
        for bad in [
            "/../etc/passwd",
            "/assets/%2e%2e/%2e%2e/x",
            "/a/./b",
            "/a//b",
            "/a%5Cb",
            "/a%00",
            "/%ff",
        ] {
            assert_eq!(relative_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn content_types_follow_extensions() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("assets/a.css"), "text/css; charset=utf-8");
        assert!(content_type("assets/a.js").ends_with("javascript; charset=utf-8"));
        assert_eq!(content_type("favicon.svg"), "image/svg+xml");
        assert_eq!(content_type("blob"), "application/octet-stream");
    }
}
