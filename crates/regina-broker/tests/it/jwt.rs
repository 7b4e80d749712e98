//! Test tokens for the authentication tests: fixture keys, claims, signing with each algorithm,
//! requests carrying a token, and a broker with authentication on.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use regina_testkit::TestBroker;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{enc, start_with, Api, Reply};

/// The shared secret of HS256 test tokens.
pub const SECRET: &str = "regina-test-secret-0123456789abcdef";

/// A test key file under `tests/fixtures/jwt/`.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/jwt/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Claims of a valid token for `sub` with the string role `role`.
pub fn claims(sub: &str, role: &str) -> Value {
    json!({"sub": sub, "role": role, "iat": now(), "exp": now() + 600})
}

/// `claims` signed with HS256 and `secret`.
pub fn hs256_with(claims: &Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

/// `claims` signed with HS256 and [`SECRET`].
pub fn hs256(claims: &Value) -> String {
    hs256_with(claims, SECRET)
}

/// `claims` signed with RS256 by the fixture key `rsa-<key>`, with `kid` in the header.
pub fn rs256(claims: &Value, key: &str, kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = kid.map(str::to_owned);
    let pem = fixture(&format!("rsa-{key}.key.pem"));
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// `claims` signed with EdDSA by the fixture Ed25519 key, with `kid` in the header.
pub fn eddsa(claims: &Value, kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = kid.map(str::to_owned);
    let pem = fixture("ed.key.pem");
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// Sends `body` (JSON, or nothing) with `Authorization: Bearer <token>` when a token is given.
pub async fn call(
    api: &Api,
    method: Method,
    path: &str,
    body: Option<&Value>,
    token: Option<&str>,
) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(value) = &bearer {
        headers.push(("authorization", value));
    }
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
    api.send(method, path, bytes, &headers).await
}

/// A broker with authentication on (HS256 with [`SECRET`]) and `f` applied.
pub async fn start_auth(f: impl FnOnce(&mut regina_broker::Config)) -> (TestBroker, Api) {
    start_with(|c| {
        c.auth.jwt_enabled = true;
        c.auth.jwt_secret = Some(regina_broker::Secret(SECRET.to_owned()));
        f(c);
    })
    .await
}

/// Asserts a 401 with the given code and `WWW-Authenticate: Bearer` (http-api.md §1.6).
#[track_caller]
pub fn assert_401(reply: &Reply, code: &str) {
    reply.assert_error(401, code);
    assert_eq!(
        reply.header("www-authenticate"),
        Some("Bearer"),
        "{reply:?}"
    );
}

/// A token with `role`, `sub` and, when given, queue scopes.
pub fn token(sub: Option<&str>, role: &str, queues: Option<Value>) -> String {
    let mut claims = json!({"role": role, "exp": now() + 600});
    if let Some(sub) = sub {
        claims["sub"] = json!(sub);
    }
    if let Some(queues) = queues {
        claims["queues"] = queues;
    }
    hs256(&claims)
}

/// A client that sends one token with every request.
#[derive(Clone)]
pub struct As {
    pub api: Api,
    pub token: String,
}

impl As {
    pub async fn get(&self, path: &str) -> Reply {
        call(&self.api, Method::GET, path, None, Some(&self.token)).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        call(
            &self.api,
            Method::POST,
            path,
            Some(&body),
            Some(&self.token),
        )
        .await
    }
    pub async fn delete(&self, path: &str) -> Reply {
        call(&self.api, Method::DELETE, path, None, Some(&self.token)).await
    }
    pub async fn push(&self, items: Value) -> Reply {
        self.post("/api/v1/push", json!({ "items": items })).await
    }
    pub async fn pop(&self, queue: &str, query: &str) -> Reply {
        self.get(&format!("/api/v1/pop/queue/{}?{query}", enc(queue)))
            .await
    }
}
