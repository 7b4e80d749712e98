//! Query strings read exactly as http-api.md §2.4 says: split on `&`, keys matched exactly after
//! percent-decoding, `+` is a space, the first occurrence wins, an empty value means "default",
//! unknown keys are ignored. The parameter types of `contract::params` read their values here.

use percent_encoding::percent_decode;

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
    /// The problem, as text after the key: `is not valid UTF-8`, `must not contain NUL
    /// characters`.
    pub(crate) fn text(&self, key: &str) -> Result<Option<&str>, &'static str> {
        match self.pairs.iter().find(|(k, _)| k == key) {
            None => Ok(None),
            Some((_, None)) => Err("is not valid UTF-8"),
            Some((_, Some(v))) if v.is_empty() => Ok(None),
            Some((_, Some(v))) if v.contains('\0') => Err("must not contain NUL characters"),
            Some((_, Some(v))) => Ok(Some(v.as_str())),
        }
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
pub(crate) fn parse_int(value: &str) -> Option<i64> {
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
        assert_eq!(query.text("batch"), Ok(Some("5")));
    }

    #[test]
    fn values_are_percent_and_plus_decoded() {
        let query = Query::parse(Some("consumerGroup=a+b%2Bc%C3%A9&k%65y=v"));
        assert_eq!(query.text("consumerGroup"), Ok(Some("a b+cé")));
        assert_eq!(query.text("key"), Ok(Some("v")));
    }

    #[test]
    fn empty_values_are_absent() {
        let query = Query::parse(Some("batch=&wait&timeout="));
        assert_eq!(query.text("batch"), Ok(None));
        assert_eq!(query.text("wait"), Ok(None));
        assert_eq!(query.text("timeout"), Ok(None));
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
            ("False", false),
        ] {
            assert_eq!(parse_bool(text), Some(value), "{text}");
        }
        assert_eq!(parse_bool("maybe"), None);
    }

    #[test]
    fn integers_take_a_sign_and_digits_only() {
        assert_eq!(parse_int("+5"), Some(5));
        assert_eq!(parse_int("-3"), Some(-3));
        for bad in ["1.0", "0x10", "99999999999999999999", "", "+", " 1"] {
            assert_eq!(parse_int(bad), None, "{bad}");
        }
    }

    #[test]
    fn invalid_utf8_and_nul_are_refused() {
        assert_eq!(
            Query::parse(Some("queue=%FF")).text("queue"),
            Err("is not valid UTF-8")
        );
        assert_eq!(
            Query::parse(Some("namespace=a%00b")).text("namespace"),
            Err("must not contain NUL characters")
        );
    }
}
