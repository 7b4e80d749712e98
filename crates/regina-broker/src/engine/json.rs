//! JSON for the database and the wire. Requests to SQL are small `Serialize` structs; results
//! from SQL are spliced as text (never re-parsed), so payloads pass through untouched.

use std::fmt::Write as _;

use serde::Serialize;

/// `value` as JSON text. Only for plain structs of strings, numbers, booleans and options, whose
/// serialization cannot fail.
pub(crate) fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("plain data serializes to JSON")
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
    fn index_is_inserted_first() {
        assert_eq!(
            indexed_array([r#"{"a": 1}"#, "{}", r#" {"b": [2]}"#]),
            r#"[{"index":0,"a": 1},{"index":1},{"index":2,"b": [2]}]"#
        );
    }
}
