//! Per-queue counters under a bounded set of `queue` label values (http-api.md §3.1): the first
//! `METRICS_QUEUE_LABELS_MAX` distinct queue names an instance meets get a label of their own,
//! every later one is counted under [`OTHER`]. A label, once given, stays for the life of the
//! process, so a series never changes meaning.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec};

/// The label of queues beyond the cap (and of a queue that is itself named so).
pub(crate) const OTHER: &str = "_other";

/// How an ack settled its message (`messages_acked_total{status}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AckStatus {
    /// `completed` (or `success`).
    Completed,
    /// `failed`.
    Failed,
    /// `retry`.
    Retry,
    /// `dlq`.
    Dlq,
}

impl AckStatus {
    /// Every status, in label order.
    pub(crate) const ALL: [AckStatus; 4] = [
        AckStatus::Completed,
        AckStatus::Failed,
        AckStatus::Retry,
        AckStatus::Dlq,
    ];

    /// The status as SQL reports it.
    pub(crate) fn parse(text: &str) -> Option<AckStatus> {
        AckStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AckStatus::Completed => "completed",
            AckStatus::Failed => "failed",
            AckStatus::Retry => "retry",
            AckStatus::Dlq => "dlq",
        }
    }
}

/// The labelled families whose children a [`QueueMetrics`] holds.
#[derive(Clone)]
pub(crate) struct QueueFamilies {
    pub(crate) pushed: IntCounterVec,
    pub(crate) delivered: IntCounterVec,
    pub(crate) dead_lettered: IntCounterVec,
    pub(crate) expired: IntCounterVec,
    pub(crate) evicted: IntCounterVec,
    pub(crate) retention_deleted: IntCounterVec,
    pub(crate) leases_expired: IntCounterVec,
    pub(crate) acked: IntCounterVec,
    pub(crate) end_to_end: HistogramVec,
}

/// The counters of one `queue` label, resolved once so that counting is an atomic add.
pub(crate) struct QueueMetrics {
    /// The label value: the queue name, or [`OTHER`].
    pub(crate) label: Box<str>,
    pub(crate) pushed: IntCounter,
    pub(crate) delivered: IntCounter,
    pub(crate) dead_lettered: IntCounter,
    pub(crate) expired: IntCounter,
    pub(crate) evicted: IntCounter,
    /// Both retention options (`retentionSeconds`, `completedRetentionSeconds`).
    pub(crate) retention_deleted: IntCounter,
    pub(crate) leases_expired: IntCounter,
    /// By [`AckStatus`], in the order of [`AckStatus::ALL`].
    pub(crate) acked: [IntCounter; 4],
    /// createdAt → first delivery, seconds.
    pub(crate) end_to_end: Histogram,
    /// The part of `retention_deleted` due to `completedRetentionSeconds` (history only).
    pub(crate) completed_deleted: AtomicU64,
    /// Committed transactions that pushed to or acked on the queue (history only).
    pub(crate) transactions: AtomicU64,
    /// Largest end-to-end latency since the history writer last took it, milliseconds as `f64`
    /// bits (history only).
    lag_ms_max: AtomicU64,
}

impl QueueMetrics {
    fn new(families: &QueueFamilies, label: &str) -> QueueMetrics {
        let child = |family: &IntCounterVec| family.with_label_values(&[label]);
        QueueMetrics {
            label: label.into(),
            pushed: child(&families.pushed),
            delivered: child(&families.delivered),
            dead_lettered: child(&families.dead_lettered),
            expired: child(&families.expired),
            evicted: child(&families.evicted),
            retention_deleted: child(&families.retention_deleted),
            leases_expired: child(&families.leases_expired),
            acked: AckStatus::ALL.map(|s| families.acked.with_label_values(&[label, s.as_str()])),
            end_to_end: families.end_to_end.with_label_values(&[label]),
            completed_deleted: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            lag_ms_max: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Counts one first delivery that took `ms` milliseconds from createdAt.
    pub(crate) fn first_delivery(&self, ms: f64) {
        let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
        self.end_to_end.observe(ms / 1000.0);
        let _ = self
            .lag_ms_max
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                (ms > f64::from_bits(bits)).then_some(ms.to_bits())
            });
    }

    /// The largest first-delivery latency since the last call, milliseconds (0 when none).
    pub(crate) fn lag_ms_max_take(&self) -> f64 {
        f64::from_bits(self.lag_ms_max.swap(0f64.to_bits(), Ordering::Relaxed))
    }
}

/// The `queue` labels of this instance, at most `max` plus [`OTHER`].
pub(crate) struct QueueLabels {
    max: usize,
    families: QueueFamilies,
    by_name: DashMap<Box<str>, Arc<QueueMetrics>>,
    /// Labels given (reserved before insertion, so concurrent newcomers cannot pass `max`).
    given: AtomicUsize,
    other: Arc<QueueMetrics>,
}

impl QueueLabels {
    /// No label given yet; `max` is `METRICS_QUEUE_LABELS_MAX`.
    pub(crate) fn new(families: QueueFamilies, max: usize) -> QueueLabels {
        let other = Arc::new(QueueMetrics::new(&families, OTHER));
        QueueLabels {
            max,
            families,
            by_name: DashMap::new(),
            given: AtomicUsize::new(0),
            other,
        }
    }

    /// The counters of `queue`: its own label while fewer than `max` were given, else
    /// [`OTHER`]'s. Looking up a known queue takes one shard read.
    pub(crate) fn get(&self, queue: &str) -> Arc<QueueMetrics> {
        if let Some(found) = self.by_name.get(queue) {
            return found.clone();
        }
        if queue == OTHER {
            return self.other.clone();
        }
        // Reserve a place first: a name that lost the race for it still gets `_other`.
        let reserved = self
            .given
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok();
        if !reserved {
            return self.other.clone();
        }
        let mut inserted = false;
        let entry = self
            .by_name
            .entry(queue.into())
            .or_insert_with(|| {
                inserted = true;
                Arc::new(QueueMetrics::new(&self.families, queue))
            })
            .clone();
        if !inserted {
            // Another caller admitted the same name meanwhile: give the place back.
            self.given.fetch_sub(1, Ordering::AcqRel);
        }
        entry
    }

    /// Every label's counters, [`OTHER`] last.
    pub(crate) fn all(&self) -> Vec<Arc<QueueMetrics>> {
        let mut all: Vec<Arc<QueueMetrics>> = self.by_name.iter().map(|e| e.clone()).collect();
        all.push(self.other.clone());
        all
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{HistogramOpts, Opts};

    use super::*;

    fn families() -> QueueFamilies {
        let counter = |name: &str| {
            IntCounterVec::new(Opts::new(name, "test"), &["queue"]).expect("valid family")
        };
        QueueFamilies {
            pushed: counter("pushed"),
            delivered: counter("delivered"),
            dead_lettered: counter("dead_lettered"),
            expired: counter("expired"),
            evicted: counter("evicted"),
            retention_deleted: counter("retention_deleted"),
            leases_expired: counter("leases_expired"),
            acked: IntCounterVec::new(Opts::new("acked", "test"), &["queue", "status"])
                .expect("valid family"),
            end_to_end: HistogramVec::new(HistogramOpts::new("e2e", "test"), &["queue"])
                .expect("valid family"),
        }
    }

    #[test]
    fn queues_beyond_the_cap_share_the_other_label() {
        let labels = QueueLabels::new(families(), 2);
        assert_eq!(&*labels.get("a").label, "a");
        assert_eq!(&*labels.get("b").label, "b");
        assert_eq!(&*labels.get("c").label, OTHER);
        assert_eq!(&*labels.get("a").label, "a", "a given label stays");
        labels.get("c").pushed.inc_by(2);
        labels.get("d").pushed.inc();
        assert_eq!(
            labels.get("zzz").pushed.get(),
            3,
            "one counter for every latecomer"
        );
        let all: Vec<String> = labels.all().iter().map(|m| m.label.to_string()).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all.last().map(String::as_str), Some(OTHER));
    }

    #[test]
    fn a_queue_named_other_takes_no_place() {
        let labels = QueueLabels::new(families(), 1);
        labels.get(OTHER).pushed.inc();
        assert_eq!(&*labels.get("a").label, "a", "the one place is still free");
        assert_eq!(
            labels.get("b").pushed.get(),
            1,
            "b and _other share one counter"
        );
        assert_eq!(labels.all().len(), 2, "_other is listed once");
    }

    #[test]
    fn concurrent_newcomers_never_pass_the_cap() {
        let labels = Arc::new(QueueLabels::new(families(), 50));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let labels = labels.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        // Half the names are shared between threads, half are their own.
                        let name = if i % 2 == 0 {
                            format!("shared-{i}")
                        } else {
                            format!("own-{t}-{i}")
                        };
                        labels.get(&name).pushed.inc();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no panic");
        }
        let all = labels.all();
        assert_eq!(all.len(), 51, "50 labels and _other");
        let total: u64 = all.iter().map(|m| m.pushed.get()).sum();
        assert_eq!(total, 800, "every count landed somewhere, once");
    }

    #[test]
    fn the_largest_latency_is_taken_once() {
        let labels = QueueLabels::new(families(), 1);
        let q = labels.get("q");
        q.first_delivery(12.5);
        q.first_delivery(40.0);
        q.first_delivery(3.0);
        q.first_delivery(f64::NAN);
        assert_eq!(q.lag_ms_max_take(), 40.0);
        assert_eq!(q.lag_ms_max_take(), 0.0);
        assert_eq!(q.end_to_end.get_sample_count(), 4);
        assert!((q.end_to_end.get_sample_sum() - 0.0555).abs() < 1e-9);
    }
}
