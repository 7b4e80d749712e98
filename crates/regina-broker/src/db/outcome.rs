//! What one pop attempt produced, read from a `regina.pop_text` row: the engine's answer to a
//! pop, and what a push hands a long-poll whose pop it ran.

use std::time::Duration;

use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::time::Instant;
use uuid::Uuid;

use super::DbError;

/// What one pop attempt produced.
#[derive(Debug)]
pub(crate) enum PopOutcome {
    /// Messages were delivered: the §3.4 response body, and the lease (none with autoAck).
    Delivered {
        /// Response body.
        body: String,
        /// The claiming lease, released if the client left.
        lease_id: Option<Uuid>,
        /// See [`Quiet`].
        quiet: Option<Quiet>,
    },
    /// Nothing deliverable now.
    Empty {
        /// `empty`, `queue_not_found`, `partition_not_found`, `lease_held`, `window_buffer`.
        reason: String,
        /// Earliest instant something may become eligible (database clock).
        wake_at: Option<OffsetDateTime>,
        /// See [`Quiet`].
        quiet: Option<Quiet>,
    },
}

/// For a pop of one named queue over its partitions: after the call nothing was due for the
/// group there until an instant (database clock), or until an event (`regina._pop_one`'s
/// `o_quiet`). Absent when something may be due now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// Until this instant, or an event before it.
    Until(OffsetDateTime),
    /// Until an event.
    UntilEvent,
}

/// `wakeAt` comes from the database clock (microseconds); waking a hair late absorbs a small
/// difference between that clock and this host's, so the retry does not come early.
const WAKE_MARGIN: Duration = Duration::from_millis(1);

/// Time from now until the database instant `at`, plus a margin.
pub(crate) fn delay_until(at: OffsetDateTime) -> Duration {
    let left = at - OffsetDateTime::now_utc();
    Duration::try_from(left).unwrap_or(Duration::ZERO) + WAKE_MARGIN
}

impl Quiet {
    /// The local instant until which this answer is trusted: its instant, and at most `ttl`
    /// from now.
    pub(crate) fn local_until(self, ttl: Duration) -> Instant {
        let now = Instant::now();
        match self {
            Quiet::Until(at) => now + delay_until(at).min(ttl),
            Quiet::UntilEvent => now + ttl,
        }
    }

    fn parse(text: Option<&str>) -> Option<Quiet> {
        match text? {
            "infinity" => Some(Quiet::UntilEvent),
            at => OffsetDateTime::parse(at, &Rfc3339).ok().map(Quiet::Until),
        }
    }
}

#[derive(Deserialize)]
struct PopProbe {
    empty: Option<String>,
    #[serde(rename = "wakeAt")]
    wake_at: Option<String>,
    #[serde(rename = "leaseId")]
    lease_id: Option<String>,
}

impl PopOutcome {
    /// Reads a `regina.pop` result (and its `quiet`) without building a tree of its payloads.
    pub(crate) fn from_result(result: String, quiet: Option<&str>) -> Result<PopOutcome, DbError> {
        let probe: PopProbe = serde_json::from_str(&result)
            .map_err(|e| DbError::Internal(format!("unreadable pop result: {e}")))?;
        let quiet = Quiet::parse(quiet);
        Ok(match probe.empty {
            Some(reason) => PopOutcome::Empty {
                reason,
                wake_at: probe
                    .wake_at
                    .and_then(|t| OffsetDateTime::parse(&t, &Rfc3339).ok()),
                quiet,
            },
            None => PopOutcome::Delivered {
                lease_id: probe.lease_id.and_then(|id| Uuid::parse_str(&id).ok()),
                body: result,
                quiet,
            },
        })
    }

    /// See [`Quiet`].
    pub(crate) fn quiet(&self) -> Option<Quiet> {
        match self {
            PopOutcome::Delivered { quiet, .. } | PopOutcome::Empty { quiet, .. } => *quiet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pop_results_are_told_apart() {
        let empty = PopOutcome::from_result(
            r#"{"empty": "lease_held", "wakeAt": "2026-05-10T09:00:01.123Z"}"#.into(),
            None,
        );
        assert!(
            matches!(empty, Ok(PopOutcome::Empty { ref reason, wake_at: Some(_), quiet: None }) if reason == "lease_held")
        );
        let lease = "0196a1b2-0000-7000-8000-000000000001";
        let body = format!(
            r#"{{"success": true, "leaseId": "{lease}", "messages": [{{"data": {{"x": [1]}}}}]}}"#
        );
        match PopOutcome::from_result(body.clone(), Some("infinity")) {
            Ok(PopOutcome::Delivered {
                body: b,
                lease_id,
                quiet,
            }) => {
                assert_eq!(b, body);
                assert_eq!(lease_id.map(|l| l.to_string()).as_deref(), Some(lease));
                assert_eq!(quiet, Some(Quiet::UntilEvent));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn quiet_is_an_instant_infinity_or_nothing() {
        let at = "2026-05-10T09:00:01.123456Z";
        assert_eq!(
            Quiet::parse(Some(at)),
            Some(Quiet::Until(
                OffsetDateTime::parse(at, &Rfc3339).expect("instant")
            ))
        );
        assert_eq!(Quiet::parse(Some("infinity")), Some(Quiet::UntilEvent));
        assert_eq!(Quiet::parse(None), None);
        assert_eq!(Quiet::parse(Some("soon")), None, "unreadable: not trusted");
    }
}
