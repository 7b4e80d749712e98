//! §1.2, §7 `WEBAPP_ROOT`: the dashboard's files at `/`, `index.html` for client-side routes,
//! the API's JSON 404/405 everywhere else.

use std::path::PathBuf;

use regina_broker::WebappRoot;
use reqwest::Method;

use crate::support::{start, start_with, Api, Reply};

const INDEX_HTML: &str = "<!doctype html><html><head><title>Regina test dashboard</title>\
    <script type=\"module\" src=\"/assets/app-1a2b3c.js\"></script></head><body></body></html>";
const SCRIPT: &str = "console.log('the dashboard script, long enough to be worth compressing');";

/// A built dashboard in a fresh temporary directory; removed on drop.
struct SiteDir(PathBuf);

impl SiteDir {
    fn new() -> SiteDir {
        let dir = std::env::temp_dir().join(format!("regina-webapp-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("assets")).unwrap();
        std::fs::write(dir.join("index.html"), INDEX_HTML).unwrap();
        std::fs::write(dir.join("assets/app-1a2b3c.js"), SCRIPT).unwrap();
        std::fs::write(dir.join("assets/app-4d5e6f.css"), "body { color: #111; }").unwrap();
        std::fs::write(
            dir.join("favicon.svg"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
        )
        .unwrap();
        SiteDir(dir)
    }
}

impl Drop for SiteDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn start_with_site(site: &SiteDir) -> (regina_testkit::TestBroker, Api) {
    let dir = site.0.clone();
    start_with(move |c| c.webapp_root = WebappRoot::Directory(dir)).await
}

#[track_caller]
fn assert_index(r: &Reply) {
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.text, INDEX_HTML, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_is_served_at_root_and_for_every_client_side_route() {
    let site = SiteDir::new();
    let (_b, api) = start_with_site(&site).await;
    for path in [
        "/",
        "/index.html",
        "/queues",
        "/queues/billing.orders",
        "/queues/billing.orders/",
        "/messages/0196a1b2-0000-7000-8000-000000000000/tx-1?tab=payload",
        "/consumer-groups/billing%20team",
        "/apis",
        "/healthy",
    ] {
        let r = api.get(path).await;
        assert_index(&r);
        assert_eq!(r.header("access-control-allow-origin"), Some("*"));
        assert!(r.header("x-request-id").is_some(), "{path}: {r:?}");
    }
    let head = api.send(Method::HEAD, "/queues/orders", None, &[]).await;
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(
        head.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(head.text.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_carry_their_content_type_and_hashed_ones_are_immutable() {
    let site = SiteDir::new();
    let (_b, api) = start_with_site(&site).await;
    let script = api.get("/assets/app-1a2b3c.js").await;
    assert_eq!(script.status, 200, "{script:?}");
    assert_eq!(script.text, SCRIPT);
    assert!(
        script
            .header("content-type")
            .is_some_and(|t| t.ends_with("javascript; charset=utf-8")),
        "{script:?}"
    );
    assert_eq!(
        script.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    let style = api.get("/assets/app-4d5e6f.css").await;
    assert_eq!(style.status, 200);
    assert_eq!(
        style.header("content-type"),
        Some("text/css; charset=utf-8")
    );
    let icon = api.get("/favicon.svg").await;
    assert_eq!(icon.status, 200);
    assert_eq!(icon.header("content-type"), Some("image/svg+xml"));
    // Not content-hashed: revalidated.
    assert_eq!(icon.header("cache-control"), Some("no-cache"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_gzipped_for_clients_that_accept_it() {
    let site = SiteDir::new();
    let (_b, api) = start_with_site(&site).await;
    let gzip = [("accept-encoding", "gzip")];
    let r = api
        .send(Method::GET, "/assets/app-1a2b3c.js", None, &gzip)
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-encoding"), Some("gzip"), "{r:?}");
    assert_ne!(r.text, SCRIPT, "the body must be the compressed bytes");
    let plain = api.get("/assets/app-1a2b3c.js").await;
    assert_eq!(plain.header("content-encoding"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_paths_missing_assets_and_other_methods_keep_json_errors() {
    let site = SiteDir::new();
    let (_b, api) = start_with_site(&site).await;
    let r = api.get("/api/v1/nope").await;
    r.assert_error(404, "route_not_found");
    assert_eq!(r.body["error"], "Not found: GET /api/v1/nope");
    assert!(r
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json")));
    for path in ["/api", "/streams/v1/nope", "/health/deep", "/metrics/nope"] {
        api.get(path).await.assert_error(404, "route_not_found");
    }
    // A missing script must not come back as a page.
    api.get("/assets/app-000000.js")
        .await
        .assert_error(404, "route_not_found");
    // Only GET (and HEAD) reach the dashboard.
    let r = api.post_raw("/", b"{}").await;
    r.assert_error(404, "route_not_found");
    assert_eq!(r.body["error"], "Not found: POST /");
    api.send(Method::DELETE, "/queues/orders", None, &[])
        .await
        .assert_error(404, "route_not_found");
    // Known API paths keep their own answers.
    api.get("/api/v1/push")
        .await
        .assert_error(405, "method_not_allowed");
    assert_eq!(api.get("/health").await.body["status"], "healthy");
    // A path that leaves the root is nobody's: never a file outside it.
    for path in ["/assets/..%2F..%2Fetc%2Fpasswd", "/..%2Findex.html"] {
        api.get(path).await.assert_error(404, "route_not_found");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webapp_root_off_leaves_root_a_json_404() {
    let (_b, api) = start_with(|c| c.webapp_root = WebappRoot::Off).await;
    for path in ["/", "/queues/orders", "/index.html"] {
        let r = api.get(path).await;
        r.assert_error(404, "route_not_found");
        assert_eq!(r.body["error"], format!("Not found: GET {path}"));
    }
    assert_eq!(api.get("/health").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_dashboard_answers_html_at_root() {
    // Either the dashboard built into this binary, or the page saying how to build it.
    let (_b, api) = start().await;
    for path in ["/", "/queues/orders"] {
        let r = api.get(path).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        assert!(r.text.to_ascii_lowercase().starts_with("<!doctype html>"));
        assert!(r.text.contains("Regina"), "{}", r.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webapp_root_without_index_stops_the_broker_at_startup() {
    let (broker, _api) = start().await;
    let empty = std::env::temp_dir().join(format!("regina-webapp-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&empty).unwrap();
    let config = regina_broker::Config {
        database_url: Some(broker.database_url.clone()),
        webapp_root: WebappRoot::Directory(empty.clone()),
        ..regina_broker::Config::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let outcome = regina_broker::serve(config, listener, std::future::pending()).await;
    std::fs::remove_dir_all(&empty).unwrap();
    let error = outcome.expect_err("a WEBAPP_ROOT without index.html must not start");
    assert!(
        error.to_string().contains("WEBAPP_ROOT"),
        "the error must name the setting: {error}"
    );
}
