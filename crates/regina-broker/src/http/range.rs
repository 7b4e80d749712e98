//! The time range of the status and analytics feeds (http-api.md §3.12): `from` and `to` as
//! timestamps (§1.5), the last hour by default, at most 31 days long, and the bucket size that
//! range gets.

use schemars::JsonSchema;
use serde::Deserialize;
use time::{Duration, OffsetDateTime};

use super::contract::params::RangeBound;
use super::contract::Contract;
use super::error::ApiError;
use super::timestamp;

/// Longest range a feed covers, days (http-api.md §3.12).
pub(super) const RANGE_DAYS_MAX: i64 = 31;
/// Range when neither bound is given, and before `to` when only `to` is.
const RANGE_DEFAULT: Duration = Duration::HOUR;
/// Bucket sizes by range (http-api.md §3.12): up to each range, buckets of that many seconds.
const BUCKETS: [(Duration, i64); 4] = [
    (Duration::hours(2), 60),
    (Duration::hours(12), 300),
    (Duration::days(2), 900),
    (Duration::days(7), 3_600),
];
/// Bucket of longer ranges, seconds.
const BUCKET_LONGEST_SECONDS: i64 = 21_600;

/// A feed's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TimeRange {
    pub(super) from: OffsetDateTime,
    pub(super) to: OffsetDateTime,
}

/// `from` and `to` of a feed (`to` is read first): a missing `to` is now, a missing `from` an
/// hour before `to`; `from` not after `to`, at most 31 days apart.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RangeQuery {
    /// End of the range (default now)
    #[serde(default)]
    to: RangeBound,
    /// Start of the range (default an hour before `to`; at most 31 days before it)
    #[serde(default)]
    from: RangeBound,
}

/// The range's checks need the instant of the request: [`RangeQuery::at`] makes them, before
/// the parameters read after the range.
impl Contract for RangeQuery {}

impl RangeQuery {
    /// The range, now being `now`.
    ///
    /// # Errors
    /// See [`TimeRange::of`].
    pub(super) fn at(&self, now: OffsetDateTime) -> Result<TimeRange, ApiError> {
        TimeRange::of(self, now)
    }
}

impl TimeRange {
    /// The range of `query`; a missing `to` is `now`, a missing `from` is an hour before `to`.
    ///
    /// # Errors
    /// `400 invalid_parameter` for `from` after `to`, or a range longer than 31 days.
    pub(super) fn of(query: &RangeQuery, now: OffsetDateTime) -> Result<TimeRange, ApiError> {
        let to = query.to.0.unwrap_or(now);
        let from = query.from.0.unwrap_or(to - RANGE_DEFAULT);
        if from > to {
            return Err(ApiError::invalid_parameter(
                "from",
                "from must not be later than to",
            ));
        }
        if to - from > Duration::days(RANGE_DAYS_MAX) {
            return Err(ApiError::invalid_parameter(
                "to",
                format!("from and to must be at most {RANGE_DAYS_MAX} days apart"),
            )
            .limit(RANGE_DAYS_MAX as u64));
        }
        Ok(TimeRange { from, to })
    }

    /// The bucket size of this range, seconds: 1 min up to 2 h, 5 min up to 12 h, 15 min up to
    /// 2 days, 1 h up to 7 days, else 6 h.
    pub(super) fn bucket_seconds(&self) -> i64 {
        let length = self.to - self.from;
        BUCKETS
            .iter()
            .find(|(up_to, _)| length <= *up_to)
            .map_or(BUCKET_LONGEST_SECONDS, |(_, seconds)| *seconds)
    }

    /// `from` as ISO-8601 UTC text, for SQL.
    pub(super) fn start_text(&self) -> String {
        timestamp::to_text(self.from)
    }

    /// `to` as ISO-8601 UTC text, for SQL.
    pub(super) fn end_text(&self) -> String {
        timestamp::to_text(self.to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode_query, Limits};
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-05-10 12:00:00 UTC);

    fn range(query: &str) -> Result<TimeRange, ApiError> {
        let query: RangeQuery = decode_query(Some(query), Limits::of(&Config::default()))?;
        query.at(NOW)
    }
    #[test]
    fn the_last_hour_by_default() {
        let r = range("").expect("valid");
        assert_eq!((r.from, r.to), (NOW - Duration::HOUR, NOW));
        let only_to = range("to=2026-05-01").expect("valid");
        assert_eq!(only_to.from, datetime!(2026-04-30 23:00:00 UTC));
        let only_from = range("from=2026-05-10T09:30:00%2B02:00").expect("valid");
        assert_eq!(
            (only_from.from, only_from.to),
            (datetime!(2026-05-10 07:30:00 UTC), NOW)
        );
    }

    #[test]
    fn buckets_grow_with_the_range() {
        for (from, seconds) in [
            ("2026-05-10T10:00:00Z", 60),
            ("2026-05-10T09:59:59Z", 300),
            ("2026-05-10T00:00:00Z", 300),
            ("2026-05-09T23:59:59Z", 900),
            ("2026-05-08T12:00:00Z", 900),
            ("2026-05-08T11:59:59Z", 3_600),
            ("2026-05-03T12:00:00Z", 3_600),
            ("2026-05-03T11:59:59Z", 21_600),
            ("2026-04-09T12:00:00Z", 21_600),
        ] {
            let r = range(&format!("from={from}")).expect(from);
            assert_eq!(r.bucket_seconds(), seconds, "{from}");
        }
    }

    #[test]
    fn long_reversed_or_malformed_ranges_are_refused() {
        for bad in [
            "from=2026-04-09T11:59:59Z",
            "from=2026-05-10T12:00:01Z",
            "from=yesterday",
            "to=1715331601",
        ] {
            let error = format!("{:?}", range(bad).err());
            assert!(error.contains("invalid_parameter"), "{bad}: {error}");
        }
    }
}
