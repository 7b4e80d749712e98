//! §1.6, §7: token verification — each algorithm with PEM keys, `iss`/`aud`, clock skew, skip
//! paths, role claims and names, the `Authorization` header forms, and settings refused at
//! startup. JWKS keys: `auth_jwks`.

use regina_broker::{JwtAlgorithm, Secret};
use reqwest::Method;
use serde_json::{json, Value};

use crate::jwt::{assert_401, call, claims, eddsa, fixture, hs256, now, rs256, start_auth, SECRET};
use crate::support::{start, start_with, Api};

const QUEUES: &str = "/api/v1/resources/queues";

async fn status_with(api: &Api, token: &str) -> u16 {
    call(api, Method::GET, QUEUES, None, Some(token))
        .await
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hs256_tokens_need_the_shared_secret_and_the_configured_algorithm() {
    let (_b, api) = start_auth(|_| {}).await;
    assert_eq!(
        status_with(&api, &hs256(&claims("u", "read-only"))).await,
        200
    );
    // The algorithm is fixed to HS256: an RS256 token is refused even with a valid signature.
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&rs256(&claims("u", "admin"), "a", None)),
    )
    .await;
    assert_401(&r, "unauthorized");
    assert!(
        r.body["error"].as_str().unwrap().contains("not accepted"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rs256_and_eddsa_tokens_verify_with_a_pem_public_key() {
    let (_b, rsa) = start_with(|c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_algorithm = JwtAlgorithm::Rs256;
        c.auth.jwt_public_key = Some(fixture("rsa-a.pub.pem"));
    })
    .await;
    assert_eq!(
        status_with(&rsa, &rs256(&claims("u", "read-only"), "a", None)).await,
        200
    );
    let other_key = rs256(&claims("u", "read-only"), "b", None);
    assert_401(
        &call(&rsa, Method::GET, QUEUES, None, Some(&other_key)).await,
        "unauthorized",
    );
    // PEM with escaped line breaks, as an environment variable often carries it.
    let (_b2, ed) = start_with(|c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_algorithm = JwtAlgorithm::EdDsa;
        c.auth.jwt_public_key = Some(fixture("ed.pub.pem").trim().replace('\n', "\\n"));
    })
    .await;
    assert_eq!(
        status_with(&ed, &eddsa(&claims("u", "read-only"), None)).await,
        200
    );
    assert_401(
        &call(
            &ed,
            Method::GET,
            QUEUES,
            None,
            Some(&hs256(&claims("u", "admin"))),
        )
        .await,
        "unauthorized",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_takes_the_algorithm_from_the_header_among_the_three() {
    let dir = std::env::temp_dir().join(format!("regina-auth-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("ed.pub.pem");
    std::fs::write(&key_file, fixture("ed.pub.pem")).unwrap();
    let (_b, api) = start_auth(|c| {
        c.auth.jwt_algorithm = JwtAlgorithm::Auto;
        // A path to a PEM file works as well as PEM text.
        c.auth.jwt_public_key = Some(key_file.display().to_string());
    })
    .await;
    assert_eq!(
        status_with(&api, &hs256(&claims("u", "read-only"))).await,
        200
    );
    assert_eq!(
        status_with(&api, &eddsa(&claims("u", "read-only"), None)).await,
        200
    );
    // No RSA key is configured: RS256 has nothing to verify with.
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&rs256(&claims("u", "admin"), "a", None)),
    )
    .await;
    assert_401(&r, "unauthorized");
    // HS384 is none of the three.
    let hs384 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS384),
        &claims("u", "admin"),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    let r = call(&api, Method::GET, QUEUES, None, Some(&hs384)).await;
    assert_401(&r, "unauthorized");
    assert!(
        r.body["error"].as_str().unwrap().contains("not accepted"),
        "{r:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issuer_and_audience_are_checked_when_configured() {
    let (_b, api) = start_auth(|c| {
        c.auth.jwt_issuer = Some("https://issuer.example".into());
        c.auth.jwt_audience = Some("regina".into());
    })
    .await;
    let with = |iss: Value, aud: Value| {
        let mut c = claims("u", "read-only");
        c["iss"] = iss;
        c["aud"] = aud;
        hs256(&c)
    };
    let good = with(json!("https://issuer.example"), json!(["other", "regina"]));
    assert_eq!(status_with(&api, &good).await, 200);
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&with(json!("evil"), json!("regina"))),
    )
    .await;
    assert_401(&r, "unauthorized");
    assert_eq!(r.body["error"], "Token verification failed: invalid issuer");
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&with(json!("https://issuer.example"), json!("else"))),
    )
    .await;
    assert_eq!(
        r.body["error"],
        "Token verification failed: invalid audience"
    );
    // Without them configured, any iss/aud is accepted.
    let (_b2, open) = start_auth(|_| {}).await;
    assert_eq!(
        status_with(&open, &with(json!("evil"), json!("else"))).await,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exp_nbf_and_iat_allow_the_configured_clock_skew() {
    let (_b, api) = start_auth(|c| c.auth.jwt_clock_skew_s = 60).await;
    let token = |exp: i64, nbf: i64, iat: i64| {
        hs256(
            &json!({"role": "read-only", "exp": now() + exp, "nbf": now() + nbf, "iat": now() + iat}),
        )
    };
    assert_eq!(
        status_with(&api, &token(-30, -30, -30)).await,
        200,
        "expired within the skew"
    );
    assert_eq!(
        status_with(&api, &token(600, 30, 30)).await,
        200,
        "early within the skew"
    );
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&token(-120, -300, -300)),
    )
    .await;
    assert_401(&r, "token_expired");
    let r = call(&api, Method::GET, QUEUES, None, Some(&token(600, 120, 0))).await;
    assert_401(&r, "unauthorized");
    assert!(
        r.body["error"].as_str().unwrap().contains("not valid yet"),
        "{r:?}"
    );
    let r = call(&api, Method::GET, QUEUES, None, Some(&token(600, 0, 120))).await;
    assert_401(&r, "unauthorized");
    let r = call(
        &api,
        Method::GET,
        QUEUES,
        None,
        Some(&hs256(&json!({"role": "admin", "exp": "tomorrow"}))),
    )
    .await;
    assert_401(&r, "unauthorized");
    // Without a skew the same 30 s-old expiry is refused.
    let (_b2, strict) = start_auth(|c| c.auth.jwt_clock_skew_s = 0).await;
    let r = call(
        &strict,
        Method::GET,
        QUEUES,
        None,
        Some(&token(-30, -30, -30)),
    )
    .await;
    assert_401(&r, "token_expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_paths_match_exactly_or_by_prefix() {
    let (_b, api) = start_auth(|c| {
        c.auth.jwt_skip_paths = "/health,/api/v1/resources/,/api/v1/dlq".into();
    })
    .await;
    for open in [
        "/health",
        "/api/v1/resources/queues",
        "/api/v1/resources/namespaces",
        "/api/v1/dlq",
    ] {
        let r = call(&api, Method::GET, open, None, None).await;
        assert_eq!(r.status, 200, "{open}: {r:?}");
    }
    // Not skipped any more: the defaults were replaced, and /api/v1/dlq is no prefix.
    for closed in [
        "/metrics",
        "/api/openapi.json",
        "/api/v1/messages",
        "/api/v1/consumer-groups",
    ] {
        let r = call(&api, Method::GET, closed, None, None).await;
        if closed == "/metrics" || closed == "/api/openapi.json" {
            // Public routes stay public whatever the skip list says.
            assert_eq!(r.status, 200, "{closed}: {r:?}");
        } else {
            assert_401(&r, "unauthorized");
        }
    }
    // A skipped route is served without an identity: pushes there carry no producerSub.
    let (_b2, skipped) = start_auth(|c| c.auth.jwt_skip_paths = "/api/v1/push".into()).await;
    let r = skipped
        .push(json!([{"queue": "skip-q", "payload": 1}]))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_come_from_the_string_and_array_claims_under_configured_names() {
    let (_b, api) = start_auth(|c| {
        c.auth.jwt_roles_claim = "scope".into();
        c.auth.jwt_roles_array_claim = "realm_access.roles".into();
        c.auth.jwt_role_admin = "ops".into();
        c.auth.jwt_role_read_write = "app".into();
        c.auth.jwt_role_read_only = "viewer".into();
    })
    .await;
    let token = |extra: Value| {
        let mut c = json!({"sub": "u", "exp": now() + 600});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        hs256(&c)
    };
    let delete = "/api/v1/resources/queues/roles-q";
    let ask = |t: String, method: Method, path: &'static str| {
        let api = api.clone();
        async move { call(&api, method, path, None, Some(&t)).await.status }
    };
    assert_eq!(
        ask(token(json!({"scope": "viewer"})), Method::GET, QUEUES).await,
        200
    );
    assert_eq!(
        ask(token(json!({"scope": "viewer"})), Method::DELETE, delete).await,
        403
    );
    assert_eq!(
        ask(
            token(json!({"realm_access": {"roles": ["x", "ops"]}})),
            Method::DELETE,
            delete
        )
        .await,
        200
    );
    assert_eq!(
        ask(
            token(json!({"scope": "viewer", "realm_access": {"roles": ["app"]}})),
            Method::GET,
            "/api/v1/pop/queue/roles-q"
        )
        .await,
        204
    );
    // The default names mean nothing under custom names.
    assert_eq!(
        ask(
            token(json!({"role": "admin", "roles": ["admin"]})),
            Method::GET,
            QUEUES
        )
        .await,
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_prefix_is_case_insensitive_and_optional() {
    let (_b, api) = start_auth(|_| {}).await;
    let token = hs256(&claims("u", "read-only"));
    for value in [
        format!("Bearer {token}"),
        format!("bearer {token}"),
        format!("BEARER  {token}"),
        token.clone(),
    ] {
        let r = api
            .send(
                Method::GET,
                QUEUES,
                None,
                &[("authorization", value.as_str())],
            )
            .await;
        assert_eq!(r.status, 200, "{value}: {r:?}");
    }
    let r = api
        .send(Method::GET, QUEUES, None, &[("authorization", "Bearer ")])
        .await;
    assert_401(&r, "unauthorized");
    assert_eq!(r.body["error"], "Authentication required");
}

/// A change to a configuration.
type Tweak = Box<dyn Fn(&mut regina_broker::Config)>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_settings_stop_the_broker_naming_the_variable() {
    let (b, _api) = start().await;
    let cases: Vec<(Tweak, &str)> = vec![
        (Box::new(|_| {}), "JWT_SECRET"),
        (
            Box::new(|c| c.auth.jwt_algorithm = JwtAlgorithm::Rs256),
            "JWT_PUBLIC_KEY or JWT_JWKS_URL",
        ),
        (
            Box::new(|c| {
                c.auth.jwt_algorithm = JwtAlgorithm::Rs256;
                c.auth.jwt_public_key = Some(
                    "-----BEGIN PUBLIC KEY-----\\nnot a key\\n-----END PUBLIC KEY-----".into(),
                );
            }),
            "JWT_PUBLIC_KEY",
        ),
        (
            Box::new(|c| {
                c.auth.jwt_algorithm = JwtAlgorithm::Rs256;
                c.auth.jwt_public_key = Some(fixture("ed.pub.pem"));
            }),
            "JWT_PUBLIC_KEY is not a PEM RSA",
        ),
        (
            Box::new(|c| {
                c.auth.jwt_algorithm = JwtAlgorithm::EdDsa;
                c.auth.jwt_jwks_url = Some("not a url".into());
            }),
            "JWT_JWKS_URL",
        ),
    ];
    for (tweak, variable) in cases {
        let mut config = regina_broker::Config {
            database_url: Some(b.database_url.clone()),
            ..regina_broker::Config::default()
        };
        config.auth.jwt_enabled = true;
        tweak(&mut config);
        let error = regina_broker::AppState::start(config)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            error.as_deref().is_some_and(|e| e.contains(variable)),
            "expected an error naming {variable}, got {error:?}"
        );
    }
    assert!(JwtAlgorithm::parse("ES256")
        .unwrap_err()
        .contains("unknown algorithm"));
    // A secret alone is enough for the default algorithm.
    let mut config = regina_broker::Config {
        database_url: Some(b.database_url.clone()),
        ..regina_broker::Config::default()
    };
    config.auth.jwt_enabled = true;
    config.auth.jwt_secret = Some(Secret(SECRET.into()));
    let state = regina_broker::AppState::start(config).await;
    assert!(state.is_ok());
    if let Ok(state) = state {
        state.close().await;
    }
}
