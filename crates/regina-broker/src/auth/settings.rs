//! The authentication settings (http-api.md §1.6, §7 "Authentication"): their own flattened group
//! of
//! `regina serve` flags and environment variables.

use crate::args::{command_line_defaults, parse_flag};
use crate::secret::Secret;

/// The default of every authentication setting with one, as the command line takes it.
pub mod defaults {
    /// `JWT_CLOCK_SKEW`, seconds.
    pub const JWT_CLOCK_SKEW_S: u64 = 30;
    /// `JWT_SKIP_PATHS`: comma-separated paths served without authentication.
    pub const JWT_SKIP_PATHS: &str = "/health,/metrics,/metrics/prometheus,/api/openapi.json,/";
    /// `JWT_JWKS_REFRESH_INTERVAL`, seconds.
    pub const JWT_JWKS_REFRESH_INTERVAL_S: u64 = 3_600;
    /// `JWT_JWKS_TIMEOUT_MS`, milliseconds.
    pub const JWT_JWKS_TIMEOUT_MS: u64 = 5_000;
    /// `JWT_JWKS_REFETCH_MIN_INTERVAL_MS`, milliseconds.
    pub const JWT_JWKS_REFETCH_MIN_INTERVAL_MS: u64 = 10_000;
    /// `JWT_JWKS_BYTES_MAX`, bytes (1 MiB).
    pub const JWT_JWKS_BYTES_MAX: usize = 1024 * 1024;
    /// `JWT_ROLES_CLAIM`.
    pub const JWT_ROLES_CLAIM: &str = "role";
    /// `JWT_ROLES_ARRAY_CLAIM`.
    pub const JWT_ROLES_ARRAY_CLAIM: &str = "roles";
    /// `JWT_ROLE_ADMIN`.
    pub const JWT_ROLE_ADMIN: &str = "admin";
    /// `JWT_ROLE_READ_WRITE`.
    pub const JWT_ROLE_READ_WRITE: &str = "read-write";
    /// `JWT_ROLE_READ_ONLY`.
    pub const JWT_ROLE_READ_ONLY: &str = "read-only";
    /// `JWT_QUEUES_CLAIM`.
    pub const JWT_QUEUES_CLAIM: &str = "queues";
}

/// Which signatures a token may carry (`JWT_ALGORITHM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtAlgorithm {
    /// HMAC with SHA-256 and the shared secret `JWT_SECRET`.
    Hs256,
    /// RSA PKCS#1 v1.5 with SHA-256; key from `JWT_PUBLIC_KEY` or `JWT_JWKS_URL`.
    Rs256,
    /// Ed25519; key from `JWT_PUBLIC_KEY` or `JWT_JWKS_URL`.
    EdDsa,
    /// Whichever of the three the token's header names.
    Auto,
}

impl JwtAlgorithm {
    /// Parses `HS256`, `RS256`, `EdDSA` or `auto` (case-insensitive).
    ///
    /// # Errors
    /// Any other text, with the accepted values.
    pub fn parse(text: &str) -> Result<JwtAlgorithm, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "hs256" => Ok(JwtAlgorithm::Hs256),
            "rs256" => Ok(JwtAlgorithm::Rs256),
            "eddsa" => Ok(JwtAlgorithm::EdDsa),
            "auto" => Ok(JwtAlgorithm::Auto),
            _ => Err(format!(
                "unknown algorithm {:?} (HS256, RS256, EdDSA or auto)",
                text.trim()
            )),
        }
    }
}

/// The authentication settings. Off by default: every route is open and `producerSub` is null.
#[derive(clap::Args, Clone, Debug)]
pub struct AuthConfig {
    /// Require a verified JWT on every route that is not public (http-api.md §1.6).
    #[arg(long, env = "JWT_ENABLED", default_value = "false", value_parser = parse_flag,
          num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub jwt_enabled: bool,
    /// Accepted signature: `HS256`, `RS256`, `EdDSA` or `auto` (from the token header, one of those
    /// three).
    #[arg(long, env = "JWT_ALGORITHM", default_value = "HS256", value_parser = JwtAlgorithm::parse)]
    pub jwt_algorithm: JwtAlgorithm,
    /// Shared secret of `HS256` tokens. Default: none.
    #[arg(long, env = "JWT_SECRET", hide_env_values = true, value_parser = parse_secret)]
    pub jwt_secret: Option<Secret>,
    /// Public key of `RS256` or `EdDSA` tokens: PEM text (`\n` escapes allowed) or the path of a
    /// PEM file. Default: none.
    #[arg(long, env = "JWT_PUBLIC_KEY")]
    pub jwt_public_key: Option<String>,
    /// URL of a JSON Web Key Set holding the `RS256` / `EdDSA` keys, selected by `kid`.
    /// Default: none.
    #[arg(long, env = "JWT_JWKS_URL")]
    pub jwt_jwks_url: Option<String>,
    /// Expected `iss`. Default: any.
    #[arg(long, env = "JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Expected `aud` (one of the token's). Default: any.
    #[arg(long, env = "JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Tolerance on `exp`, `nbf` and `iat`, seconds.
    #[arg(long = "jwt-clock-skew", env = "JWT_CLOCK_SKEW", value_name = "SECONDS",
          default_value_t = defaults::JWT_CLOCK_SKEW_S,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub jwt_clock_skew_s: u64,
    /// Paths served without authentication, comma-separated: an entry matches exactly, and an
    /// entry ending in `/` (other than `/` itself) also matches every path below it.
    #[arg(long, env = "JWT_SKIP_PATHS", default_value = defaults::JWT_SKIP_PATHS)]
    pub jwt_skip_paths: String,
    /// Age after which the JWKS is fetched again, seconds.
    #[arg(long = "jwt-jwks-refresh-interval", env = "JWT_JWKS_REFRESH_INTERVAL", value_name = "SECONDS",
          default_value_t = defaults::JWT_JWKS_REFRESH_INTERVAL_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub jwt_jwks_refresh_interval_s: u64,
    /// Timeout of one JWKS fetch, milliseconds.
    #[arg(long, env = "JWT_JWKS_TIMEOUT_MS", default_value_t = defaults::JWT_JWKS_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub jwt_jwks_timeout_ms: u64,
    /// Least time between two JWKS fetches caused by tokens naming an unknown `kid` (or by a failed
    /// refresh), milliseconds: a flood of such tokens costs at most one fetch per interval.
    #[arg(long, env = "JWT_JWKS_REFETCH_MIN_INTERVAL_MS",
          default_value_t = defaults::JWT_JWKS_REFETCH_MIN_INTERVAL_MS)]
    pub jwt_jwks_refetch_min_interval_ms: u64,
    /// Largest JWKS document accepted, bytes.
    #[arg(long, env = "JWT_JWKS_BYTES_MAX", default_value_t = defaults::JWT_JWKS_BYTES_MAX)]
    pub jwt_jwks_bytes_max: usize,
    /// Claim holding one role name (a string); a dotted path reaches into objects.
    #[arg(long, env = "JWT_ROLES_CLAIM", default_value = defaults::JWT_ROLES_CLAIM)]
    pub jwt_roles_claim: String,
    /// Claim holding role names (an array); a dotted path reaches into objects.
    #[arg(long, env = "JWT_ROLES_ARRAY_CLAIM", default_value = defaults::JWT_ROLES_ARRAY_CLAIM)]
    pub jwt_roles_array_claim: String,
    /// Role name of administrators.
    #[arg(long, env = "JWT_ROLE_ADMIN", default_value = defaults::JWT_ROLE_ADMIN)]
    pub jwt_role_admin: String,
    /// Role name of producers and consumers.
    #[arg(long, env = "JWT_ROLE_READ_WRITE", default_value = defaults::JWT_ROLE_READ_WRITE)]
    pub jwt_role_read_write: String,
    /// Role name of readers.
    #[arg(long, env = "JWT_ROLE_READ_ONLY", default_value = defaults::JWT_ROLE_READ_ONLY)]
    pub jwt_role_read_only: String,
    /// Claim holding the token's queue scopes (an array of names and `prefix*` entries); a token
    /// without it may touch every queue.
    #[arg(long, env = "JWT_QUEUES_CLAIM", default_value = defaults::JWT_QUEUES_CLAIM)]
    pub jwt_queues_claim: String,
}

impl Default for AuthConfig {
    /// The command line's defaults; reads no environment.
    fn default() -> Self {
        command_line_defaults()
    }
}

/// The skip rules of `JWT_SKIP_PATHS` (http-api.md §1.6).
#[derive(Clone, Debug, Default)]
pub(crate) struct SkipPaths {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl SkipPaths {
    pub(crate) fn parse(list: &str) -> SkipPaths {
        let mut rules = SkipPaths::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            rules.exact.push(entry.to_owned());
            if entry.len() > 1 && entry.ends_with('/') {
                rules.prefixes.push(entry.to_owned());
            }
        }
        rules
    }

    /// Whether `path` (as routed: one trailing `/` already dropped) is served without
    /// authentication.
    pub(crate) fn skips(&self, path: &str) -> bool {
        self.exact.iter().any(|e| {
            e == path
                || e.strip_suffix('/')
                    .is_some_and(|t| !t.is_empty() && t == path)
        }) || self.prefixes.iter().any(|p| path.starts_with(p.as_str()))
    }
}

fn parse_secret(text: &str) -> Result<Secret, String> {
    Ok(Secret(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_paths_match_exactly_or_below_a_trailing_slash() {
        let rules = SkipPaths::parse(" /health, /metrics,/docs/ ,/");
        assert!(rules.skips("/health"));
        assert!(!rules.skips("/health/x"));
        assert!(!rules.skips("/healthz"));
        assert!(rules.skips("/metrics"));
        assert!(!rules.skips("/metrics/prometheus"));
        assert!(rules.skips("/docs/a/b"));
        assert!(rules.skips("/docs"), "the routed form of /docs/");
        assert!(rules.skips("/"));
        assert!(!rules.skips("/api/v1/push"), "/ is exact only");
    }

    #[test]
    fn algorithms_parse_the_spec_spellings() {
        assert_eq!(JwtAlgorithm::parse("eddsa"), Ok(JwtAlgorithm::EdDsa));
        assert_eq!(JwtAlgorithm::parse("RS256"), Ok(JwtAlgorithm::Rs256));
        assert!(JwtAlgorithm::parse("ES256").is_err());
    }
}
