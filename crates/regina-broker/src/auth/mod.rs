//! JWT authentication (http-api.md §1.6): settings, key material, token verification, roles and
//! queue scopes. The HTTP layer (`http::access`) decides which routes need which role; this module
//! only says who the caller is.

mod claims;
mod jwks;
pub(crate) mod settings;

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

pub(crate) use claims::{Role, Scopes};
use jwks::Jwks;
use settings::{AuthConfig, JwtAlgorithm, SkipPaths};

use crate::error::Error;

/// The family of a verification key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Rsa,
    Ed,
}

/// A verified caller.
#[derive(Clone, Debug)]
pub(crate) struct Caller {
    /// The token's `sub`, stamped on pushed messages as `producerSub`.
    pub(crate) sub: Option<String>,
    pub(crate) role: Role,
    /// `None`: every queue allowed.
    pub(crate) scopes: Option<Scopes>,
}

/// Why a request was not authenticated: each is a `401` (http-api.md §1.6).
#[derive(Debug)]
pub(crate) enum Failure {
    /// No token.
    Missing,
    /// Past `exp` (plus the skew).
    Expired,
    /// Anything else; the reason goes into `Token verification failed: <reason>`.
    Invalid(String),
}

impl Failure {
    pub(crate) fn invalid(reason: impl Into<String>) -> Failure {
        Failure::Invalid(reason.into())
    }
}

/// Verifies tokens with the configured algorithm and keys.
pub(crate) struct Authenticator {
    settings: AuthConfig,
    skip: SkipPaths,
    secret: Option<DecodingKey>,
    rsa: Option<DecodingKey>,
    ed: Option<DecodingKey>,
    jwks: Option<Jwks>,
}

impl Authenticator {
    /// The authenticator of `settings`, `None` when authentication is off. Fetches the JWKS
    /// once when one is configured (a failure is logged; the fetch is retried on use).
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable: no key material for the algorithm, a public key
    /// that is not a PEM RSA or Ed25519 key, an unusable JWKS URL.
    pub(crate) async fn start(settings: &AuthConfig) -> Result<Option<Authenticator>, Error> {
        if !settings.jwt_enabled {
            return Ok(None);
        }
        let authenticator = Authenticator::new(settings).map_err(Error::Config)?;
        if let Some(jwks) = &authenticator.jwks {
            jwks.fetch_now().await;
        }
        Ok(Some(authenticator))
    }

    /// Checks the settings without fetching anything, so a broker with unusable ones stops
    /// before it touches the database.
    ///
    /// # Errors
    /// As [`Authenticator::start`].
    pub(crate) fn check(settings: &AuthConfig) -> Result<(), Error> {
        if settings.jwt_enabled {
            Authenticator::new(settings).map_err(Error::Config)?;
        }
        Ok(())
    }

    fn new(settings: &AuthConfig) -> Result<Authenticator, String> {
        let secret = settings
            .jwt_secret
            .as_ref()
            .filter(|s| !s.0.is_empty())
            .map(|s| DecodingKey::from_secret(s.0.as_bytes()));
        let pem = settings
            .jwt_public_key
            .as_deref()
            .filter(|k| !k.trim().is_empty())
            .map(pem_text)
            .transpose()?;
        let (rsa, ed) = match &pem {
            Some(pem) => {
                let rsa = DecodingKey::from_rsa_pem(pem.as_bytes()).ok();
                let ed = DecodingKey::from_ed_pem(pem.as_bytes()).ok();
                if rsa.is_none() && ed.is_none() {
                    return Err("JWT_PUBLIC_KEY is not a PEM RSA or Ed25519 public key".into());
                }
                (rsa, ed)
            }
            None => (None, None),
        };
        let jwks = settings
            .jwt_jwks_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
            .map(|url| Jwks::new(url.trim(), settings))
            .transpose()?;
        let asymmetric = pem.is_some() || jwks.is_some();
        let missing = match settings.jwt_algorithm {
            JwtAlgorithm::Hs256 if secret.is_none() => Some("JWT_SECRET"),
            JwtAlgorithm::Rs256 | JwtAlgorithm::EdDsa if !asymmetric => {
                Some("JWT_PUBLIC_KEY or JWT_JWKS_URL")
            }
            JwtAlgorithm::Auto if secret.is_none() && !asymmetric => {
                Some("JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL")
            }
            _ => None,
        };
        if let Some(names) = missing {
            return Err(format!("JWT_ENABLED is on but {names} is not set"));
        }
        if pem.is_some() && jwks.is_none() {
            let wrong = match settings.jwt_algorithm {
                JwtAlgorithm::Rs256 if rsa.is_none() => Some("RSA"),
                JwtAlgorithm::EdDsa if ed.is_none() => Some("Ed25519"),
                _ => None,
            };
            if let Some(kind) = wrong {
                return Err(format!("JWT_PUBLIC_KEY is not a PEM {kind} public key"));
            }
        }
        Ok(Authenticator {
            skip: SkipPaths::parse(&settings.jwt_skip_paths),
            settings: settings.clone(),
            secret,
            rsa,
            ed,
            jwks,
        })
    }

    /// Whether `path` is served without authentication (`JWT_SKIP_PATHS`).
    pub(crate) fn skips(&self, path: &str) -> bool {
        self.skip.skips(path)
    }

    /// Verifies `token`: signature, algorithm, `iss`/`aud` when configured, `exp`/`nbf`/`iat`.
    ///
    /// # Errors
    /// [`Failure::Expired`] or [`Failure::Invalid`] with the reason.
    pub(crate) async fn verify(&self, token: &str) -> Result<Caller, Failure> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| Failure::Invalid(reason(&e)))?;
        let allowed = match self.settings.jwt_algorithm {
            JwtAlgorithm::Hs256 => header.alg == Algorithm::HS256,
            JwtAlgorithm::Rs256 => header.alg == Algorithm::RS256,
            JwtAlgorithm::EdDsa => header.alg == Algorithm::EdDSA,
            JwtAlgorithm::Auto => matches!(
                header.alg,
                Algorithm::HS256 | Algorithm::RS256 | Algorithm::EdDSA
            ),
        };
        if !allowed {
            return Err(Failure::invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let keys = self.keys(header.alg, header.kid.as_deref()).await;
        if keys.is_empty() {
            return Err(Failure::invalid(match header.kid {
                Some(kid) => format!("no key for kid {kid:?}"),
                None => format!("no key for algorithm {:?}", header.alg),
            }));
        }
        let claims = self.decode(token, header.alg, &keys)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        claims::check_times(&claims, now, self.settings.jwt_clock_skew_s)?;
        Ok(Caller {
            sub: claims::subject(&claims),
            role: claims::role(&claims, &self.settings),
            scopes: claims::scopes(&claims, &self.settings),
        })
    }

    async fn keys(&self, alg: Algorithm, kid: Option<&str>) -> Vec<DecodingKey> {
        let (pem, kind) = match alg {
            Algorithm::HS256 => return self.secret.iter().cloned().collect(),
            Algorithm::RS256 => (&self.rsa, KeyKind::Rsa),
            _ => (&self.ed, KeyKind::Ed),
        };
        match (pem, &self.jwks) {
            (Some(key), _) => vec![key.clone()],
            (None, Some(jwks)) => jwks.keys(kind, kid).await,
            (None, None) => Vec::new(),
        }
    }

    /// The claims of `token`, signed with one of `keys`.
    fn decode(
        &self,
        token: &str,
        alg: Algorithm,
        keys: &[DecodingKey],
    ) -> Result<Map<String, Value>, Failure> {
        let mut validation = Validation::new(alg);
        validation.required_spec_claims.clear();
        // Dates are checked by `claims::check_times`, which refuses non-numeric ones.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        match &self.settings.jwt_audience {
            Some(audience) if !audience.is_empty() => validation.set_audience(&[audience]),
            _ => validation.validate_aud = false,
        }
        if let Some(issuer) = self
            .settings
            .jwt_issuer
            .as_deref()
            .filter(|i| !i.is_empty())
        {
            validation.set_issuer(&[issuer]);
        }
        let mut last = Failure::invalid("invalid signature");
        for key in keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) if *e.kind() == ErrorKind::InvalidSignature => {}
                Err(e) => last = Failure::Invalid(reason(&e)),
            }
        }
        Err(last)
    }
}

/// The public key text: PEM as given (with `\n` escapes turned into line breaks), or the
/// content of the file it names.
fn pem_text(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.starts_with("-----BEGIN") {
        return Ok(value.replace("\\n", "\n"));
    }
    std::fs::read_to_string(value).map_err(|e| {
        format!("JWT_PUBLIC_KEY is neither PEM text nor a readable PEM file ({value}: {e})")
    })
}

/// The reason of a verification failure, as put after `Token verification failed: `.
fn reason(error: &jsonwebtoken::errors::Error) -> String {
    match error.kind() {
        ErrorKind::InvalidSignature => "invalid signature",
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => "algorithm mismatch",
        ErrorKind::InvalidIssuer => "invalid issuer",
        ErrorKind::InvalidAudience => "invalid audience",
        ErrorKind::InvalidKeyFormat | ErrorKind::InvalidRsaKey(_) | ErrorKind::InvalidEcdsaKey => {
            "unusable key"
        }
        ErrorKind::InvalidToken
        | ErrorKind::Base64(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => "malformed token",
        _ => "invalid token",
    }
    .to_owned()
}
