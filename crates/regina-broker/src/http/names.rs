//! Names of queues, partitions and consumer groups (spec §6), request ids (§1.2) and path
//! parameters (§2.4).

use axum::http::Uri;
use percent_encoding::percent_decode_str;

use super::error::ApiError;

/// Why `name` is not a valid queue, partition or group name, if it is not: 1 to `chars_max`
/// characters, not only whitespace, no control characters (U+0000–001F, U+007F–009F).
pub(crate) fn name_problem(name: &str, chars_max: usize) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 {
        Some("must not be empty".to_owned())
    } else if chars > chars_max {
        Some(format!("must be at most {chars_max} characters"))
    } else if name.chars().all(char::is_whitespace) {
        Some("must not be only whitespace".to_owned())
    } else if name.chars().any(is_control) {
        Some("must not contain control characters".to_owned())
    } else {
        None
    }
}

fn is_control(c: char) -> bool {
    matches!(c as u32, 0x00..=0x1F | 0x7F..=0x9F)
}

/// The `X-Request-Id` to use: the client's when it is 1–128 printable ASCII characters,
/// otherwise a fresh one.
pub(crate) fn request_id(offered: Option<&[u8]>) -> String {
    match offered {
        Some(id)
            if (1..=128).contains(&id.len()) && id.iter().all(|b| (0x20..=0x7E).contains(b)) =>
        {
            String::from_utf8_lossy(id).into_owned()
        }
        _ => uuid::Uuid::now_v7().to_string(),
    }
}

/// Segment `index` of the request path (0 is the first segment after the leading `/`),
/// percent-decoded as UTF-8 (`+` stays `+`) and validated as a name.
///
/// Decoding here instead of in the router lets an invalid parameter be answered with the JSON
/// error naming its key.
///
/// # Errors
/// `400 invalid_parameter` naming `key`.
pub(crate) fn path_name(
    uri: &Uri,
    index: usize,
    key: &str,
    chars_max: usize,
) -> Result<String, ApiError> {
    let value = path_segment(uri, index, key)?;
    match name_problem(&value, chars_max) {
        Some(problem) => Err(ApiError::invalid_parameter(key, format!("{key} {problem}"))),
        None => Ok(value),
    }
}

/// Segment `index` of the request path, percent-decoded as UTF-8.
///
/// # Errors
/// `400 invalid_parameter` naming `key` when the segment is missing or not UTF-8.
pub(crate) fn path_segment(uri: &Uri, index: usize, key: &str) -> Result<String, ApiError> {
    let raw = uri
        .path()
        .split('/')
        .nth(index + 1)
        .ok_or_else(|| ApiError::invalid_parameter(key, format!("{key} is missing")))?;
    percent_decode_str(raw)
        .decode_utf8()
        .map(|v| v.into_owned())
        .map_err(|_| ApiError::invalid_parameter(key, format!("{key} is not valid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_spec_rules() {
        assert_eq!(name_problem("orders.v2", 255), None);
        assert_eq!(name_problem("é-名前 with spaces", 255), None);
        assert!(name_problem("", 255).is_some());
        assert!(name_problem("   \t", 255).is_some());
        assert!(name_problem("a\u{0}b", 255).is_some());
        assert!(name_problem("a\u{7f}", 255).is_some());
        assert!(name_problem("a\u{9f}", 255).is_some());
        assert_eq!(name_problem("a\u{a0}", 255), None);
        assert_eq!(name_problem(&"é".repeat(255), 255), None);
        assert!(name_problem(&"é".repeat(256), 255).is_some());
    }

    #[test]
    fn request_ids_are_echoed_only_when_printable_and_short() {
        assert_eq!(request_id(Some(b"abc-123")), "abc-123");
        assert_eq!(
            request_id(Some("x".repeat(128).as_bytes())),
            "x".repeat(128)
        );
        for bad in [
            &b""[..],
            "x".repeat(129).as_bytes(),
            b"tab\there",
            "é".as_bytes(),
        ] {
            let generated = request_id(Some(bad));
            assert_ne!(generated.as_bytes(), bad);
            assert!(uuid::Uuid::parse_str(&generated).is_ok());
        }
        assert!(uuid::Uuid::parse_str(&request_id(None)).is_ok());
    }

    #[test]
    fn path_segments_are_percent_decoded_and_validated() {
        let uri: Uri = "/api/v1/pop/queue/a%2Fb+c%C3%A9/partition/%FF"
            .parse()
            .expect("uri");
        assert_eq!(
            path_name(&uri, 4, "queue", 255).ok().as_deref(),
            Some("a/b+cé")
        );
        let bad = format!("{:?}", path_name(&uri, 6, "partition", 255).err());
        assert!(bad.contains("invalid_parameter") && bad.contains("partition"));
        let control: Uri = "/api/v1/pop/queue/%01".parse().expect("uri");
        assert!(path_name(&control, 4, "queue", 255).is_err());
        let nul: Uri = "/api/v1/pop/queue/a%00b".parse().expect("uri");
        let nul = format!("{:?}", path_name(&nul, 4, "queue", 255).err());
        assert!(nul.contains("invalid_parameter") && nul.contains("control characters"));
        assert!(path_segment(&control, 9, "queue").is_err());
    }
}
