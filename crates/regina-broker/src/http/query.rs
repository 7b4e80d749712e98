//! Query strings parsed by hand exactly as spec §2.4 says: split on `&`, keys matched exactly after
//! percent-decoding, `+` is a space, the first occurrence wins, an empty value means "default",
//! unknown keys are ignored.

use percent_encoding::percent_decode;

use super::error::ApiError;

/// A parsed query string.
#[derive(Debug, Default)]
pub(crate) struct Query {
    /// (key, value) in order; a value is `None` when it is not valid UTF-8.
    pairs: Vec<(String, Option<String>)>,
}

fn decode(component: &str) -> Option<String> {
    let spaced = component.replace('+', " ");
    percent_decode(spaced.as_bytes())
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

impl Query {
    /// Parses the query part of a URI (without `?`).
    pub(crate) fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                Some((decode(key)?, decode(value)))
            })
            .collect();
        Query { pairs }
    }

    /// The first value of `key`; `None` when absent or empty. Values may reach PostgreSQL
    /// `text`, which cannot hold U+0000, so a NUL is refused here.
    ///
    /// # Errors
    /// `400 invalid_parameter` when the value is not valid UTF-8 or contains U+0000.
    pub(crate) fn string(&self, key: &str) -> Result<Option<&str>, ApiError> {
        match self.pairs.iter().find(|(k, _)| k == key) {
            None => Ok(None),
            Some((_, None)) => Err(ApiError::invalid_parameter(
                key,
                format!("{key} is not valid UTF-8"),
            )),
            Some((_, Some(v))) if v.is_empty() => Ok(None),
            Some((_, Some(v))) if v.contains('\0') => Err(ApiError::invalid_parameter(
                key,
                format!("{key} must not contain NUL characters"),
            )),
            Some((_, Some(v))) => Ok(Some(v.as_str())),
        }
    }

    /// A boolean: `true/1/yes/on` or `false/0/no/off`, any case; `default` when absent or empty.
    ///
    /// # Errors
    /// `400 invalid_parameter` naming the key for any other value.
    pub(crate) fn boolean(&self, key: &str, default: bool) -> Result<bool, ApiError> {
        let Some(value) = self.string(key)? else {
            return Ok(default);
        };
        parse_bool(value).ok_or_else(|| {
            ApiError::invalid_parameter(
                key,
                format!("{key} must be a boolean (true/false), got {value:?}"),
            )
        })
    }

    /// An integer (optional sign, decimal digits) in `min..=max`; `default` when absent or empty.
    ///
    /// # Errors
    /// `400 invalid_parameter` naming the key for anything else or a value out of range.
    pub(crate) fn integer(
        &self,
        key: &str,
        min: i64,
        max: i64,
        default: i64,
    ) -> Result<i64, ApiError> {
        let Some(value) = self.string(key)? else {
            return Ok(default);
        };
        let out_of_range = || {
            ApiError::invalid_parameter(
                key,
                format!("{key} must be an integer from {min} to {max}"),
            )
            .limit(max.max(0) as u64)
        };
        let parsed = parse_int(value).ok_or_else(out_of_range)?;
        if parsed < min || parsed > max {
            return Err(out_of_range());
        }
        Ok(parsed)
    }
}

/// `true/1/yes/on` → true, `false/0/no/off` → false, case-insensitive.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Optional `+`/`-` followed by decimal digits only.
fn parse_int(value: &str) -> Option<i64> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_exactly_and_the_first_wins() {
        let query = Query::parse(Some("xbatch=9&batch=5&batch=7&Batch=3"));
        assert_eq!(query.integer("batch", 1, 100, 1).ok(), Some(5));
    }

    #[test]
    fn values_are_percent_and_plus_decoded() {
        let query = Query::parse(Some("consumerGroup=a+b%2Bc%C3%A9&k%65y=v"));
        assert_eq!(query.string("consumerGroup").ok().flatten(), Some("a b+cé"));
        assert_eq!(query.string("key").ok().flatten(), Some("v"));
    }

    #[test]
    fn empty_values_mean_default() {
        let query = Query::parse(Some("batch=&wait&timeout="));
        assert_eq!(query.integer("batch", 1, 10, 4).ok(), Some(4));
        assert_eq!(query.boolean("wait", false).ok(), Some(false));
        assert_eq!(query.string("timeout").ok(), Some(None));
    }

    #[test]
    fn booleans_accept_the_spec_spellings_only() {
        for (text, value) in [
            ("true", true),
            ("YES", true),
            ("On", true),
            ("1", true),
            ("off", false),
            ("0", false),
        ] {
            let query = Query::parse(Some(&format!("wait={text}")));
            assert_eq!(query.boolean("wait", !value).ok(), Some(value), "{text}");
        }
        let bad = Query::parse(Some("wait=maybe"))
            .boolean("wait", false)
            .err();
        assert!(
            format!("{bad:?}").contains("invalid_parameter") && format!("{bad:?}").contains("wait")
        );
    }

    #[test]
    fn integers_take_a_sign_and_digits_only() {
        let query = Query::parse(Some("a=%2B5&b=-3&c=1.0&d=0x10&e=99999999999999999999&f=12"));
        assert_eq!(query.integer("a", -10, 10, 0).ok(), Some(5));
        assert_eq!(query.integer("b", -10, 10, 0).ok(), Some(-3));
        assert!(query.integer("c", -10, 10, 0).is_err());
        assert!(query.integer("d", -10, 100, 0).is_err());
        assert!(query.integer("e", 0, i64::MAX, 0).is_err());
        assert!(query.integer("f", 0, 10, 0).is_err());
    }

    #[test]
    fn invalid_utf8_is_an_invalid_parameter() {
        let query = Query::parse(Some("queue=%FF"));
        assert!(query.string("queue").is_err());
    }

    #[test]
    fn nul_characters_are_an_invalid_parameter() {
        let error = Query::parse(Some("namespace=a%00b"))
            .string("namespace")
            .err();
        let error = format!("{error:?}");
        assert!(
            error.contains("invalid_parameter")
                && error.contains("namespace must not contain NUL characters"),
            "{error}"
        );
    }
}
