//! Timestamp inputs (http-api.md §1.5): RFC 3339 with `Z` or an offset, a value without offset is
//! UTC, and date-only `YYYY-MM-DD` is midnight UTC. Normalised to ISO-8601 UTC text with
//! microseconds before they reach SQL.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// The instant `text` names, as `YYYY-MM-DDTHH:MM:SS.ffffffZ`; `None` when it is not a timestamp.
pub(crate) fn normalize(text: &str) -> Option<String> {
    format(instant(text)?)
}

/// The instant `text` names, in UTC; `None` when it is not a timestamp.
pub(crate) fn instant(text: &str) -> Option<OffsetDateTime> {
    parse(text.trim()).map(|i| i.to_offset(UtcOffset::UTC))
}

/// An instant as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC).
pub(crate) fn to_text(instant: OffsetDateTime) -> String {
    format(instant.to_offset(UtcOffset::UTC)).unwrap_or_default()
}

fn parse(text: &str) -> Option<OffsetDateTime> {
    if let Ok(instant) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(instant);
    }
    let without_offset = format_description!(
        version = 2,
        "[year]-[month]-[day][first [T] [t] [ ]][hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    if let Ok(local) = PrimitiveDateTime::parse(text, &without_offset) {
        return Some(local.assume_utc());
    }
    let date_only = format_description!(version = 2, "[year]-[month]-[day]");
    Date::parse(text, &date_only)
        .ok()
        .map(|d| d.midnight().assume_utc())
}

fn format(instant: OffsetDateTime) -> Option<String> {
    let layout = format_description!(
        version = 2,
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    instant.format(&layout).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_converted_to_utc() {
        assert_eq!(
            normalize("2026-05-10T09:00:01Z").as_deref(),
            Some("2026-05-10T09:00:01.000000Z")
        );
        assert_eq!(
            normalize("2026-05-10T11:00:01.5+02:00").as_deref(),
            Some("2026-05-10T09:00:01.500000Z")
        );
        assert_eq!(
            normalize("2026-05-10t09:00:01.123456789z").as_deref(),
            Some("2026-05-10T09:00:01.123456Z")
        );
    }

    #[test]
    fn missing_offset_means_utc_and_dates_mean_midnight() {
        assert_eq!(
            normalize("2026-05-10T09:00:01.25").as_deref(),
            Some("2026-05-10T09:00:01.250000Z")
        );
        assert_eq!(
            normalize("2026-05-10 09:00:01").as_deref(),
            Some("2026-05-10T09:00:01.000000Z")
        );
        assert_eq!(
            normalize("2026-05-10").as_deref(),
            Some("2026-05-10T00:00:00.000000Z")
        );
    }

    #[test]
    fn anything_else_is_rejected() {
        for bad in [
            "",
            "now",
            "2026-05-10T09:00Z",
            "2026-13-01",
            "2026-02-30",
            "10/05/2026",
            "1715331601",
        ] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }
}
