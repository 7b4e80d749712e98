//! §1.6, §7: keys from a JWKS served by a real local HTTP server — chosen by `kid`, rotation
//! picked up, refetches bounded, the set refreshed once it is old.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use regina_broker::JwtAlgorithm;
use reqwest::Method;
use serde_json::{json, Value};

use crate::jwt::{assert_401, call, claims, eddsa, fixture, rs256};
use crate::support::{start_with, Api};

const QUEUES: &str = "/api/v1/resources/queues";

async fn status_with(api: &Api, token: &str) -> u16 {
    call(api, Method::GET, QUEUES, None, Some(token))
        .await
        .status
}

/// A JWKS endpoint on a real local socket: the keys it serves can change, and it counts fetches.
struct JwksServer {
    url: String,
    keys: Arc<Mutex<Value>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(keys: Value) -> JwksServer {
        let keys = Arc::new(Mutex::new(keys));
        let hits = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (keys.clone(), hits.clone());
        let app = Router::new().route(
            "/.well-known/jwks.json",
            get(move || {
                let (served, counted) = (served.clone(), counted.clone());
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = served.lock().unwrap().clone();
                    axum::Json(body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        JwksServer {
            url: format!("http://{address}/.well-known/jwks.json"),
            keys,
            hits,
        }
    }

    fn serve(&self, keys: Value) {
        *self.keys.lock().unwrap() = keys;
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn jwk(name: &str) -> Value {
    serde_json::from_str(&fixture(&format!("{name}.jwk.json"))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_keys_are_chosen_by_kid_and_a_rotation_is_picked_up() {
    let jwks = JwksServer::start(json!({"keys": [jwk("rsa-a"), jwk("ed")]})).await;
    let url = jwks.url.clone();
    let (_b, api) = start_with(move |c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_algorithm = JwtAlgorithm::Auto;
        c.auth.jwt_jwks_url = Some(url);
        c.auth.jwt_jwks_refetch_min_interval_ms = 0;
    })
    .await;
    assert_eq!(jwks.hits(), 1, "fetched once at start");
    let ok = rs256(&claims("u", "read-only"), "a", Some("rsa-a"));
    assert_eq!(status_with(&api, &ok).await, 200);
    assert_eq!(
        status_with(&api, &eddsa(&claims("u", "read-only"), Some("ed"))).await,
        200
    );
    assert_eq!(jwks.hits(), 1, "known kids are served from the cache");
    // A token signed by rsa-a but naming rsa-b's kid fails, once rsa-b exists.
    jwks.serve(json!({"keys": [jwk("rsa-b")]}));
    let rotated = rs256(&claims("u", "read-only"), "b", Some("rsa-b"));
    assert_eq!(
        status_with(&api, &rotated).await,
        200,
        "unknown kid refetches the set"
    );
    assert_eq!(jwks.hits(), 2);
    let lying = rs256(&claims("u", "read-only"), "a", Some("rsa-b"));
    assert_401(
        &call(&api, Method::GET, QUEUES, None, Some(&lying)).await,
        "unauthorized",
    );
    // rsa-a left the set: its tokens no longer verify.
    let r = call(&api, Method::GET, QUEUES, None, Some(&ok)).await;
    assert_401(&r, "unauthorized");
    assert!(r.body["error"].as_str().unwrap().contains("rsa-a"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kids_refetch_the_jwks_at_most_once_per_interval() {
    let jwks = JwksServer::start(json!({"keys": [jwk("rsa-a")]})).await;
    let url = jwks.url.clone();
    let (_b, api) = start_with(move |c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_algorithm = JwtAlgorithm::Rs256;
        c.auth.jwt_jwks_url = Some(url);
        c.auth.jwt_jwks_refetch_min_interval_ms = 60_000;
    })
    .await;
    assert_eq!(jwks.hits(), 1);
    for n in 0..20 {
        let token = rs256(
            &claims("u", "read-only"),
            "a",
            Some(&format!("made-up-{n}")),
        );
        assert_401(
            &call(&api, Method::GET, QUEUES, None, Some(&token)).await,
            "unauthorized",
        );
    }
    assert_eq!(
        jwks.hits(),
        1,
        "the start fetch is within the interval: no refetch"
    );
    assert_eq!(
        status_with(&api, &rs256(&claims("u", "read-only"), "a", Some("rsa-a"))).await,
        200
    );
}

/// The set fetched at start serves requests until it is a refresh interval (2 s) old; then the
/// next request fetches it again, once, and the withdrawn key fails. The first half holds only
/// for requests made within the interval after the start; a slower attempt starts over (a new
/// key server and broker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jwks_is_fetched_again_once_older_than_the_refresh_interval() {
    const REFRESH: Duration = Duration::from_secs(2);
    let (_b, api, jwks) =
        regina_testkit::conclusive("requests within the refresh interval", |_| async {
            let jwks = JwksServer::start(json!({"keys": [jwk("rsa-a")]})).await;
            let url = jwks.url.clone();
            // The start fetch comes after this instant.
            let starting = Instant::now();
            let (b, api) = start_with(move |c| {
                c.auth.jwt_enabled = true;
                c.auth.jwt_algorithm = JwtAlgorithm::Rs256;
                c.auth.jwt_jwks_url = Some(url);
                c.auth.jwt_jwks_refresh_interval_s = REFRESH.as_secs();
                c.auth.jwt_jwks_refetch_min_interval_ms = 60_000;
            })
            .await;
            let token = rs256(&claims("u", "read-only"), "a", Some("rsa-a"));
            let before = status_with(&api, &token).await;
            // The key is withdrawn: the cache keeps serving it until it is a refresh interval old.
            jwks.serve(json!({"keys": []}));
            let after = status_with(&api, &token).await;
            let took = starting.elapsed();
            if took >= REFRESH {
                return Err(format!("the requests came {took:?} after the start"));
            }
            assert_eq!((before, after), (200, 200), "served from the cache");
            assert_eq!(jwks.hits(), 1, "no fetch while the set is fresh");
            Ok((b, api, jwks))
        })
        .await;
    tokio::time::sleep(REFRESH + Duration::from_millis(100)).await;
    let token = rs256(&claims("u", "read-only"), "a", Some("rsa-a"));
    assert_401(
        &call(&api, Method::GET, QUEUES, None, Some(&token)).await,
        "unauthorized",
    );
    assert_eq!(
        jwks.hits(),
        2,
        "one refresh, no refetch within the minimum interval"
    );
}
