//! Writing JSON by hand: request arrays for SQL and response arrays spliced from SQL results, so
//! payloads pass through as text and are never re-parsed into trees.

use std::fmt::Write as _;

/// Appends `value` as a JSON string literal.
pub(crate) fn write_str(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `value` as a JSON string literal, or `null`.
pub(crate) fn write_opt_str(out: &mut String, value: Option<&str>) {
    match value {
        Some(v) => write_str(out, v),
        None => out.push_str("null"),
    }
}

/// Appends `"key":` to an object being written.
pub(crate) fn write_key(out: &mut String, key: &str) {
    write_str(out, key);
    out.push(':');
}

/// Appends the object `entry` with `"index":n` inserted as its first member.
pub(crate) fn write_indexed(out: &mut String, index: usize, entry: &str) {
    let entry = entry.trim();
    match entry.strip_prefix('{') {
        Some(rest) => {
            let _ = write!(out, "{{\"index\":{index}");
            if !rest.trim_start().starts_with('}') {
                out.push(',');
            }
            out.push_str(rest);
        }
        // Not an object (a contract violation of the SQL layer): wrap it so the array stays valid.
        None => {
            let _ = write!(out, "{{\"index\":{index},\"result\":{entry}}}");
        }
    }
}

/// `[{"index":0,…},{"index":1,…}]` from result entries in input order.
pub(crate) fn indexed_array<'a>(entries: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (index, entry) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_indexed(&mut out, index, entry);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut out = String::new();
        write_str(&mut out, "a\"b\\c\n\u{1}é");
        assert_eq!(out, r#""a\"b\\c\n\u0001é""#);
        let parsed: String = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(parsed, "a\"b\\c\n\u{1}é");
    }

    #[test]
    fn index_is_inserted_first() {
        assert_eq!(
            indexed_array([r#"{"a": 1}"#, "{}", r#" {"b": [2]}"#]),
            r#"[{"index":0,"a": 1},{"index":1},{"index":2,"b": [2]}]"#
        );
    }
}
