//! §1.6: access levels of every route, proved route by route against a broker with
//! authentication on; the catalogue (as the OpenAPI document shows it) covers exactly the spec's
//! routes, and every one of them is served.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};

use crate::jwt::{assert_401, call, claims, hs256, hs256_with, now, start_auth};
use crate::support::{start, Api, Reply};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Public,
    Ro,
    Rw,
    Admin,
}
use Level::{Admin, Public, Ro, Rw};

/// Every route of http-api.md §3 with its level, written from the table of http-api.md §1.6 (and
/// §3's per-endpoint levels). Independent of the broker's catalogue on purpose.
const SPEC_ROUTES: &[(&str, &str, Level)] = &[
    ("GET", "/health", Public),
    ("GET", "/metrics", Public),
    ("GET", "/metrics/prometheus", Public),
    ("GET", "/api/openapi.json", Public),
    ("POST", "/api/v1/configure", Rw),
    ("POST", "/api/v1/push", Rw),
    ("GET", "/api/v1/pop/queue/{queue}", Rw),
    ("GET", "/api/v1/pop/queue/{queue}/partition/{partition}", Rw),
    ("GET", "/api/v1/pop", Rw),
    ("POST", "/api/v1/ack", Rw),
    ("POST", "/api/v1/ack/batch", Rw),
    ("POST", "/api/v1/lease/{leaseId}/extend", Rw),
    ("POST", "/api/v1/transaction", Rw),
    ("GET", "/api/v1/resources/overview", Ro),
    ("GET", "/api/v1/resources/queues", Ro),
    ("GET", "/api/v1/resources/queues/{queue}", Ro),
    ("DELETE", "/api/v1/resources/queues/{queue}", Admin),
    ("DELETE", "/api/v1/queues/{queue}/clear", Admin),
    ("GET", "/api/v1/resources/namespaces", Ro),
    ("GET", "/api/v1/resources/tasks", Ro),
    ("GET", "/api/v1/resources/partitions", Ro),
    ("GET", "/api/v1/messages", Ro),
    ("GET", "/api/v1/messages/{partitionId}/{transactionId}", Ro),
    (
        "DELETE",
        "/api/v1/messages/{partitionId}/{transactionId}",
        Rw,
    ),
    (
        "POST",
        "/api/v1/messages/{partitionId}/{transactionId}/retry",
        Rw,
    ),
    (
        "POST",
        "/api/v1/messages/{partitionId}/{transactionId}/dlq",
        Rw,
    ),
    ("GET", "/api/v1/dlq", Ro),
    ("GET", "/api/v1/consumer-groups", Ro),
    ("GET", "/api/v1/consumer-groups/lagging", Ro),
    ("GET", "/api/v1/consumer-groups/{group}", Ro),
    ("DELETE", "/api/v1/consumer-groups/{group}", Admin),
    (
        "DELETE",
        "/api/v1/consumer-groups/{group}/queues/{queue}",
        Admin,
    ),
    ("POST", "/api/v1/consumer-groups/{group}/subscription", Rw),
    (
        "POST",
        "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
        Rw,
    ),
    (
        "POST",
        "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
        Rw,
    ),
    ("POST", "/api/v1/traces", Rw),
    ("GET", "/api/v1/traces/{partitionId}/{transactionId}", Ro),
    ("GET", "/api/v1/traces/by-name/{traceName}", Ro),
    ("GET", "/api/v1/traces/names", Ro),
    ("GET", "/api/v1/status", Ro),
    ("GET", "/api/v1/status/queues", Ro),
    ("GET", "/api/v1/status/queues/{queue}", Ro),
    ("GET", "/api/v1/status/queues/{queue}/messages", Ro),
    ("GET", "/api/v1/status/analytics", Ro),
    ("GET", "/api/v1/status/buffers", Ro),
    ("GET", "/api/v1/analytics/system-metrics", Ro),
    ("GET", "/api/v1/analytics/worker-metrics", Ro),
    ("GET", "/api/v1/analytics/queue-lag", Ro),
    ("GET", "/api/v1/analytics/queue-ops", Ro),
    ("GET", "/api/v1/analytics/queue-parked-replicas", Ro),
    ("GET", "/api/v1/analytics/retention", Ro),
    ("GET", "/api/v1/analytics/postgres-stats", Ro),
    ("GET", "/api/v1/system/maintenance", Admin),
    ("POST", "/api/v1/system/maintenance", Admin),
    ("GET", "/api/v1/system/maintenance/pop", Admin),
    ("POST", "/api/v1/system/maintenance/pop", Admin),
    ("POST", "/api/v1/stats/refresh", Admin),
    // streams-api.md §3: registration and cycles write, state reads only read.
    ("POST", "/streams/v1/queries", Rw),
    ("POST", "/streams/v1/cycle", Rw),
    ("POST", "/streams/v1/state/get", Ro),
    ("GET", "/api/v1/resources/streams", Ro),
];

/// A template with parameter names dropped: `/x/{a}` → `/x/{}`.
fn normalised(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// A concrete path for a template: each parameter gets a valid sample value.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|segment| match segment {
            "{partitionId}" | "{leaseId}" => "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            "{queue}" => "access-q",
            "{partition}" => "Default",
            "{group}" => "access-g",
            "{transactionId}" => "access-t",
            "{traceName}" => "access-n",
            other if other.starts_with('{') => "x",
            other => other,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn method(name: &str) -> Method {
    Method::from_bytes(name.as_bytes()).unwrap()
}

/// The (method, template) pairs of the broker's catalogue, as its OpenAPI document lists them.
async fn catalogue(api: &Api) -> BTreeSet<(String, String)> {
    let doc = api.get("/api/openapi.json").await;
    assert_eq!(doc.status, 200, "{doc:?}");
    assert_eq!(doc.body["openapi"], "3.1.0");
    let mut routes = BTreeSet::new();
    for (path, item) in doc.body["paths"].as_object().unwrap() {
        for verb in item.as_object().unwrap().keys() {
            routes.insert((verb.to_uppercase(), normalised(path)));
        }
    }
    routes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalogue_lists_exactly_the_routes_of_the_spec() {
    let (_b, api) = start().await;
    let served = catalogue(&api).await;
    let spec: BTreeSet<(String, String)> = SPEC_ROUTES
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), normalised(p)))
        .collect();
    assert_eq!(spec.len(), SPEC_ROUTES.len(), "a route is listed twice");
    let missing: Vec<_> = spec.difference(&served).collect();
    let extra: Vec<_> = served.difference(&spec).collect();
    assert!(
        missing.is_empty(),
        "routes missing from the catalogue: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "catalogue routes the spec does not have: {extra:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalogue_route_is_served() {
    let (_b, api) = start().await;
    for (verb, path) in catalogue(&api).await {
        let r = call(
            &api,
            method(&verb),
            &concrete(&path),
            Some(&json!({})),
            None,
        )
        .await;
        let unserved = r.code() == "route_not_found" || r.status == 405;
        assert!(!unserved, "{verb} {path} is not served: {r:?}");
    }
}

/// The answer to one caller must be 401 (`code`), 403, or neither.
#[derive(Debug, PartialEq)]
enum Outcome {
    Unauthorized(&'static str),
    Forbidden,
    Allowed,
}

fn outcome(reply: &Reply) -> Outcome {
    match reply.status {
        401 => {
            assert_eq!(
                reply.header("www-authenticate"),
                Some("Bearer"),
                "{reply:?}"
            );
            match reply.code() {
                "token_expired" => Outcome::Unauthorized("token_expired"),
                _ => Outcome::Unauthorized("unauthorized"),
            }
        }
        403 => {
            assert_eq!(
                reply.body,
                json!({"error": "Insufficient permissions", "code": "forbidden"})
            );
            Outcome::Forbidden
        }
        _ => Outcome::Allowed,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_each_caller_as_its_access_level_says() {
    let (_b, api) = start_auth(|_| {}).await;
    let expired = hs256(&json!({"sub": "x", "role": "admin", "exp": now() - 3_600}));
    let forged = hs256_with(&claims("x", "admin"), "not-the-secret");
    let roleless = hs256(&claims("x", "guest"));
    let read_only = hs256(&claims("r", "read-only"));
    let read_write = hs256(&claims("w", "read-write"));
    let admin = hs256(&claims("a", "admin"));
    let mut checked = 0;
    for (verb, template, level) in SPEC_ROUTES {
        let path = concrete(template);
        let body = json!({});
        let ask = |token: Option<String>| {
            let (api, path, body) = (api.clone(), path.clone(), body.clone());
            async move { outcome(&call(&api, method(verb), &path, Some(&body), token.as_deref()).await) }
        };
        let (anonymous, bad_time, bad_signature) = if *level == Public {
            (Outcome::Allowed, Outcome::Allowed, Outcome::Allowed)
        } else {
            (
                Outcome::Unauthorized("unauthorized"),
                Outcome::Unauthorized("token_expired"),
                Outcome::Unauthorized("unauthorized"),
            )
        };
        let by_role = |needed: Level, held: Level| {
            if held >= needed || needed == Public {
                Outcome::Allowed
            } else {
                Outcome::Forbidden
            }
        };
        let context = format!("{verb} {template}");
        assert_eq!(ask(None).await, anonymous, "no token: {context}");
        assert_eq!(
            ask(Some(expired.clone())).await,
            bad_time,
            "expired: {context}"
        );
        assert_eq!(
            ask(Some(forged.clone())).await,
            bad_signature,
            "forged: {context}"
        );
        // A verified token with no known role holds no level at all.
        let none = if *level == Public {
            Outcome::Allowed
        } else {
            Outcome::Forbidden
        };
        assert_eq!(
            ask(Some(roleless.clone())).await,
            none,
            "no role: {context}"
        );
        assert_eq!(
            ask(Some(read_only.clone())).await,
            by_role(*level, Ro),
            "read-only: {context}"
        );
        assert_eq!(
            ask(Some(read_write.clone())).await,
            by_role(*level, Rw),
            "read-write: {context}"
        );
        assert_eq!(
            ask(Some(admin.clone())).await,
            by_role(*level, Admin),
            "admin: {context}"
        );
        checked += 1;
    }
    assert_eq!(checked, SPEC_ROUTES.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_have_the_exact_bodies_of_the_spec() {
    let (_b, api) = start_auth(|_| {}).await;
    let r = call(&api, Method::GET, "/api/v1/resources/queues", None, None).await;
    assert_401(&r, "unauthorized");
    assert_eq!(
        r.body,
        json!({"error": "Authentication required", "code": "unauthorized"})
    );
    let expired = hs256(&json!({"role": "admin", "exp": now() - 3_600}));
    let r = call(
        &api,
        Method::GET,
        "/api/v1/resources/queues",
        None,
        Some(&expired),
    )
    .await;
    assert_401(&r, "token_expired");
    assert_eq!(
        r.body,
        json!({"error": "Token has expired", "code": "token_expired"})
    );
    let forged = hs256_with(&claims("x", "admin"), "wrong");
    let r = call(
        &api,
        Method::GET,
        "/api/v1/resources/queues",
        None,
        Some(&forged),
    )
    .await;
    assert_401(&r, "unauthorized");
    assert_eq!(
        r.body["error"],
        "Token verification failed: invalid signature"
    );
    let r = call(
        &api,
        Method::GET,
        "/api/v1/resources/queues",
        None,
        Some("not.a.jwt"),
    )
    .await;
    assert_401(&r, "unauthorized");
    assert!(r.body["error"]
        .as_str()
        .unwrap()
        .starts_with("Token verification failed: "));
    // Unknown routes keep their JSON 404 and wrong methods their 405, without asking for a token.
    let r = call(&api, Method::GET, "/api/v1/nope", None, None).await;
    r.assert_error(404, "route_not_found");
    let r = call(&api, Method::PUT, "/api/v1/resources/queues", None, None).await;
    r.assert_error(405, "method_not_allowed");
    // OPTIONS is always public.
    let r = call(&api, Method::OPTIONS, "/api/v1/push", None, None).await;
    assert_eq!(r.status, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_is_off_by_default() {
    let (_b, api) = start().await;
    let r = api
        .push(json!([{"queue": "open-q", "payload": 1, "producerSub": "me"}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let r = api.pop("open-q", "").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.messages()[0]["producerSub"], Value::Null);
    let r = api
        .send(Method::DELETE, "/api/v1/resources/queues/open-q", None, &[])
        .await;
    assert_eq!(r.status, 200, "{r:?}");
}
