//! Names of queues, partitions and consumer groups (http-api.md §6), request ids (§1.2) and path
//! segments (§2.4).

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

/// A path segment percent-decoded as UTF-8 (`+` stays `+`).
///
/// # Errors
/// `400 invalid_parameter` naming `key` when it is not UTF-8.
pub(crate) fn decode_segment(raw: &str, key: &str) -> Result<String, ApiError> {
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
    fn path_segments_are_percent_decoded() {
        assert_eq!(
            decode_segment("a%2Fb+c%C3%A9", "queue").ok().as_deref(),
            Some("a/b+cé")
        );
        let bad = format!("{:?}", decode_segment("%FF", "partition").err());
        assert!(bad.contains("invalid_parameter") && bad.contains("partition"));
    }
}
