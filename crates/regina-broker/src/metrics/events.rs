//! What the SQL functions report for the metrics, beside their results (sql/README.md): the
//! `events` of a pop, and the metrics columns of ack, transaction, sweep and deletion jobs.

use std::borrow::Cow;

use serde::Deserialize;

use super::queues::AckStatus;
use super::Metrics;
use crate::db::AckEvents;

/// One element of a pop's `events`: one claim that delivered or settled something.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimEvents<'a> {
    #[serde(borrow)]
    queue: Cow<'a, str>,
    #[serde(default)]
    delivered: u64,
    #[serde(default)]
    first_ages_ms: Option<Vec<f64>>,
    #[serde(default)]
    expired: u64,
    #[serde(default)]
    leases_expired: u64,
    #[serde(default)]
    dead_lettered: u64,
}

impl Metrics {
    /// Counts a pop's `events` (a JSON array, see `regina.pop`). Unreadable events are logged
    /// and skipped: they never fail the pop.
    pub(crate) fn pop_events(&self, events: &str) {
        let claims: Vec<ClaimEvents<'_>> = match serde_json::from_str(events) {
            Ok(claims) => claims,
            Err(error) => {
                tracing::warn!(%error, "unreadable pop events");
                return;
            }
        };
        for claim in claims {
            let queue = self.queue(&claim.queue);
            queue.delivered.inc_by(claim.delivered);
            queue.expired.inc_by(claim.expired);
            queue.leases_expired.inc_by(claim.leases_expired);
            queue.dead_lettered.inc_by(claim.dead_lettered);
            for ms in claim.first_ages_ms.iter().flatten() {
                queue.first_delivery(*ms);
            }
        }
    }

    /// Counts one ack item (of `/ack`, `/ack/batch` or a committed transaction).
    pub(crate) fn ack_events(&self, events: &AckEvents) {
        let Some(name) = events.queue.as_deref() else {
            return;
        };
        let status = events.acked.as_deref().and_then(AckStatus::parse);
        if status.is_none() && events.dead_lettered == 0 && events.leases_expired == 0 {
            return;
        }
        let queue = self.queue(name);
        if let Some(status) = status {
            queue.acked[status as usize].inc();
        }
        queue.dead_lettered.inc_by(events.dead_lettered);
        queue.leases_expired.inc_by(events.leases_expired);
    }

    /// Counts one lease the leader's sweep ended.
    pub(crate) fn lease_swept(&self, queue: &str, dead_lettered: bool) {
        let queue = self.queue(queue);
        queue.leases_expired.inc();
        if dead_lettered {
            queue.dead_lettered.inc();
        }
    }

    /// Counts messages a retention batch deleted from `queue`, `completed` of them for
    /// `completedRetentionSeconds`.
    pub(crate) fn retention_deleted(&self, queue: &str, removed: u64, completed: u64) {
        let queue = self.queue(queue);
        queue.retention_deleted.inc_by(removed);
        queue
            .completed_deleted
            .fetch_add(completed.min(removed), std::sync::atomic::Ordering::Relaxed);
    }

    /// Counts messages an eviction batch deleted from `queue`.
    pub(crate) fn evicted(&self, queue: &str, removed: u64) {
        self.queue(queue).evicted.inc_by(removed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn pop_events_count_per_queue_and_first_delivery() {
        let metrics = Metrics::new(Instant::now(), 10);
        metrics.pop_events(
            r#"[{"queue":"a","delivered":3,"firstAgesMs":[10.0,20.0],"expired":1,
                 "leasesExpired":1,"deadLettered":1},
                {"queue":"b\"q","delivered":1,"firstAgesMs":null,"expired":0,
                 "leasesExpired":0,"deadLettered":0}]"#,
        );
        let a = metrics.queue("a");
        assert_eq!(a.delivered.get(), 3);
        assert_eq!(a.expired.get(), 1);
        assert_eq!(a.leases_expired.get(), 1);
        assert_eq!(a.dead_lettered.get(), 1);
        assert_eq!(a.end_to_end.get_sample_count(), 2);
        let b = metrics.queue("b\"q");
        assert_eq!(b.delivered.get(), 1);
        assert_eq!(
            b.end_to_end.get_sample_count(),
            0,
            "a redelivery is no sample"
        );
        metrics.pop_events("not json");
        assert_eq!(a.delivered.get(), 3);
    }

    #[test]
    fn ack_items_count_their_status_and_dead_letters() {
        let metrics = Metrics::new(Instant::now(), 10);
        let item = |acked: Option<&str>, dead: u64, expired: u64| AckEvents {
            queue: Some("q".into()),
            acked: acked.map(str::to_owned),
            dead_lettered: dead,
            leases_expired: expired,
        };
        metrics.ack_events(&item(Some("completed"), 0, 0));
        metrics.ack_events(&item(Some("failed"), 1, 0));
        metrics.ack_events(&item(Some("dlq"), 1, 0));
        metrics.ack_events(&item(None, 1, 1));
        metrics.ack_events(&AckEvents::default());
        let q = metrics.queue("q");
        let by_status: Vec<u64> = q.acked.iter().map(|c| c.get()).collect();
        assert_eq!(by_status, vec![1, 1, 0, 1]);
        assert_eq!(q.dead_lettered.get(), 3);
        assert_eq!(q.leases_expired.get(), 1);
    }
}
