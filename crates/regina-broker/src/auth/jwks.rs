//! The JSON Web Key Set behind `JWT_JWKS_URL`: fetched at start, kept in memory, fetched again
//! when it is older than `JWT_JWKS_REFRESH_INTERVAL` or when a token names a key id it does not
//! hold — at most once per `JWT_JWKS_REFETCH_MIN_INTERVAL_MS`, so tokens with made-up key ids
//! cannot turn the broker into a load generator against the key server.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::DecodingKey;
use tokio::sync::{Mutex, RwLock};

use super::settings::AuthConfig;
use super::KeyKind;

/// One usable key of the set.
struct SetKey {
    kid: Option<String>,
    kind: KeyKind,
    key: DecodingKey,
}

#[derive(Default)]
struct Cached {
    keys: Vec<SetKey>,
    fetched_at: Option<Instant>,
}

/// The cached key set of one URL.
pub(crate) struct Jwks {
    url: String,
    client: reqwest::Client,
    refresh_interval: Duration,
    refetch_min_interval: Duration,
    bytes_max: usize,
    cached: RwLock<Cached>,
    /// When the last fetch started; held while fetching, so concurrent misses share one fetch.
    last_attempt: Mutex<Option<Instant>>,
}

impl Jwks {
    /// A cache for `url`; nothing is fetched yet.
    ///
    /// # Errors
    /// A message naming `JWT_JWKS_URL` when the URL or the HTTP client is unusable.
    pub(crate) fn new(url: &str, settings: &AuthConfig) -> Result<Jwks, String> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| format!("JWT_JWKS_URL is not a valid URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("JWT_JWKS_URL must be an http or https URL".to_owned());
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(settings.jwt_jwks_timeout_ms))
            .build()
            .map_err(|e| format!("JWT_JWKS_URL: cannot build an HTTP client: {e}"))?;
        Ok(Jwks {
            url: url.to_owned(),
            client,
            refresh_interval: Duration::from_secs(settings.jwt_jwks_refresh_interval_s),
            refetch_min_interval: Duration::from_millis(settings.jwt_jwks_refetch_min_interval_ms),
            bytes_max: settings.jwt_jwks_bytes_max,
            cached: RwLock::new(Cached::default()),
            last_attempt: Mutex::new(None),
        })
    }

    /// The keys of `kind` that a token with key id `kid` may be signed with: the one with that
    /// id, or every key of that kind when the token names none.
    pub(crate) async fn keys(&self, kind: KeyKind, kid: Option<&str>) -> Vec<DecodingKey> {
        let stale = self
            .cached
            .read()
            .await
            .fetched_at
            .is_none_or(|at| at.elapsed() >= self.refresh_interval);
        if stale {
            // A failing key server is asked again at most once per minimum interval.
            let gap = self.refetch_min_interval.min(self.refresh_interval);
            self.fetch_unless_within(gap).await;
        }
        let found = self.find(kind, kid).await;
        if !found.is_empty() || kid.is_none() {
            return found;
        }
        // An unknown key id: the set may have been rotated since the last fetch.
        if self.fetch_unless_within(self.refetch_min_interval).await {
            return self.find(kind, kid).await;
        }
        found
    }

    async fn find(&self, kind: KeyKind, kid: Option<&str>) -> Vec<DecodingKey> {
        self.cached
            .read()
            .await
            .keys
            .iter()
            .filter(|k| k.kind == kind && (kid.is_none() || k.kid.as_deref() == kid))
            .map(|k| k.key.clone())
            .collect()
    }

    /// Fetches the set now (at start).
    pub(crate) async fn fetch_now(&self) -> bool {
        self.fetch_unless_within(Duration::ZERO).await
    }

    /// Fetches the set unless a fetch started less than `gap` ago; whether the cache was
    /// replaced.
    async fn fetch_unless_within(&self, gap: Duration) -> bool {
        let mut last = self.last_attempt.lock().await;
        if last.is_some_and(|at| at.elapsed() < gap) {
            return false;
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => {
                tracing::debug!(url = %self.url, keys = keys.len(), "JWKS fetched");
                *self.cached.write().await = Cached {
                    keys,
                    fetched_at: Some(Instant::now()),
                };
                true
            }
            Err(error) => {
                // The keys already held stay in use until a fetch succeeds.
                tracing::warn!(url = %self.url, %error, "JWKS fetch failed");
                false
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<SetKey>, String> {
        let mut response = self
            .client
            .get(&self.url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > self.bytes_max {
                return Err(format!("larger than {} bytes", self.bytes_max));
            }
            body.extend_from_slice(&chunk);
        }
        let set: JwkSet = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        Ok(set.keys.iter().filter_map(usable).collect())
    }
}

/// An RSA or Ed25519 key of the set; other kinds are of no use to the accepted algorithms.
fn usable(jwk: &jsonwebtoken::jwk::Jwk) -> Option<SetKey> {
    let kind = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => KeyKind::Rsa,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => KeyKind::Ed,
        _ => return None,
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(SetKey {
        kid: jwk.common.key_id.clone(),
        kind,
        key,
    })
}
