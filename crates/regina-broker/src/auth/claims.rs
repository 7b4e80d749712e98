//! What a verified token says: its time claims checked with the clock skew, its roles, its queue
//! scopes and its subject (http-api.md §1.6).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::settings::AuthConfig;
use super::Failure;

/// The role level of a caller: `admin` ⊃ `read-write` ⊃ `read-only` (http-api.md §1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// A verified token with no role this broker knows.
    None,
    /// `read-only`.
    ReadOnly,
    /// `read-write`.
    ReadWrite,
    /// `admin`.
    Admin,
}

/// The queues a token may touch: names, and prefixes written with a trailing `*` (http-api.md
/// §1.6). Matches as `regina._queue_in_scopes` does in SQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scopes(Arc<[String]>);

impl Scopes {
    pub(crate) fn new(entries: Vec<String>) -> Scopes {
        Scopes(entries.into())
    }

    /// Whether `queue` is allowed.
    pub(crate) fn allows(&self, queue: &str) -> bool {
        self.0.iter().any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => queue.starts_with(prefix),
            None => entry == queue,
        })
    }

    /// The entries, as the SQL listings take them (`scopes` key of their query JSON).
    pub(crate) fn entries(&self) -> &[String] {
        &self.0
    }
}

/// A claim by name; a name not found at the top level is read as a dotted path into objects
/// (`realm_access.roles`).
fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A numeric date claim (`exp`, `nbf`, `iat`), seconds since the epoch, if present.
fn date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, Failure> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(Failure::invalid(format!("{name} is not a number"))),
    }
}

/// Checks `exp`, `nbf` and `iat` against `now` (seconds since the epoch) with `skew_s` seconds
/// of tolerance each way. Absent claims are not required.
///
/// # Errors
/// [`Failure::Expired`] past `exp`; [`Failure::Invalid`] before `nbf`, for an `iat` in the
/// future, or for a date that is not a number.
pub(crate) fn check_times(
    claims: &Map<String, Value>,
    now: f64,
    skew_s: u64,
) -> Result<(), Failure> {
    let skew = skew_s as f64;
    if date(claims, "exp")?.is_some_and(|exp| now >= exp + skew) {
        return Err(Failure::Expired);
    }
    if date(claims, "nbf")?.is_some_and(|nbf| now + skew < nbf) {
        return Err(Failure::invalid("token is not valid yet (nbf)"));
    }
    if date(claims, "iat")?.is_some_and(|iat| iat > now + skew) {
        return Err(Failure::invalid("token is issued in the future (iat)"));
    }
    Ok(())
}

/// The highest role the token's role claims name.
pub(crate) fn role(claims: &Map<String, Value>, settings: &AuthConfig) -> Role {
    let mut names: Vec<&str> = Vec::new();
    if let Some(Value::String(name)) = claim(claims, &settings.jwt_roles_claim) {
        names.push(name);
    }
    if let Some(Value::Array(items)) = claim(claims, &settings.jwt_roles_array_claim) {
        names.extend(items.iter().filter_map(Value::as_str));
    }
    names
        .into_iter()
        .map(|name| {
            if name == settings.jwt_role_admin {
                Role::Admin
            } else if name == settings.jwt_role_read_write {
                Role::ReadWrite
            } else if name == settings.jwt_role_read_only {
                Role::ReadOnly
            } else {
                Role::None
            }
        })
        .max()
        .unwrap_or(Role::None)
}

/// The token's queue scopes: none without the claim (every queue allowed). A string counts as a
/// one-entry array; any other value allows nothing.
pub(crate) fn scopes(claims: &Map<String, Value>, settings: &AuthConfig) -> Option<Scopes> {
    match claim(claims, &settings.jwt_queues_claim)? {
        Value::Null => None,
        Value::String(entry) => Some(Scopes::new(vec![entry.clone()])),
        Value::Array(items) => Some(Scopes::new(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )),
        _ => Some(Scopes::new(Vec::new())),
    }
}

/// The token's `sub`, when it is a string.
pub(crate) fn subject(claims: &Map<String, Value>) -> Option<String> {
    claims.get("sub").and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn times_are_checked_with_the_skew() {
        let now = 1_000_000.0;
        assert!(check_times(&map(json!({"exp": now + 1.0})), now, 0).is_ok());
        assert!(matches!(
            check_times(&map(json!({"exp": now - 10.0})), now, 5),
            Err(Failure::Expired)
        ));
        assert!(check_times(&map(json!({"exp": now - 10.0})), now, 30).is_ok());
        assert!(check_times(&map(json!({"nbf": now + 10.0})), now, 5).is_err());
        assert!(check_times(&map(json!({"nbf": now + 10.0})), now, 30).is_ok());
        assert!(check_times(&map(json!({"iat": now + 60.0})), now, 30).is_err());
        assert!(check_times(&map(json!({"exp": "soon"})), now, 30).is_err());
        assert!(check_times(&map(json!({})), now, 0).is_ok());
    }

    #[test]
    fn roles_take_the_highest_known_name_of_both_claims() {
        let settings = AuthConfig::default();
        assert_eq!(
            role(&map(json!({"role": "read-only"})), &settings),
            Role::ReadOnly
        );
        assert_eq!(
            role(
                &map(json!({"role": "read-only", "roles": ["x", "admin"]})),
                &settings
            ),
            Role::Admin
        );
        assert_eq!(role(&map(json!({"roles": "admin"})), &settings), Role::None);
        let nested = AuthConfig {
            jwt_roles_array_claim: "realm.roles".into(),
            jwt_role_read_write: "writer".into(),
            ..AuthConfig::default()
        };
        assert_eq!(
            role(&map(json!({"realm": {"roles": ["writer"]}})), &nested),
            Role::ReadWrite
        );
    }

    #[test]
    fn scopes_match_names_and_prefixes() {
        let settings = AuthConfig::default();
        let scopes =
            scopes(&map(json!({"queues": ["orders", "audit.*", 7]})), &settings).expect("scoped");
        assert!(scopes.allows("orders"));
        assert!(!scopes.allows("orders.eu"));
        assert!(scopes.allows("audit.x"));
        assert!(!scopes.allows("audit"));
        assert_eq!(scopes.entries().len(), 2);
        assert!(super::scopes(&map(json!({})), &settings).is_none());
        let none = super::scopes(&map(json!({"queues": {}})), &settings).expect("scoped");
        assert!(!none.allows("orders"));
    }
}
