//! Counters and latency histograms: per second for the timeline, and over the measured interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use regina_bench::model::{IntervalSample, LatencySeries};

/// A latency histogram in microseconds (1 µs to 1 h, 3 significant digits).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// One latency kind: the current interval, the measured interval, and a count of every
/// observation of the run.
pub struct Latency {
    name: &'static str,
    interval: Mutex<Histogram<u64>>,
    total: Mutex<Histogram<u64>>,
    observed: AtomicU64,
}

impl Latency {
    fn new(name: &'static str) -> Latency {
        Latency {
            name,
            interval: Mutex::new(histogram()),
            total: Mutex::new(histogram()),
            observed: AtomicU64::new(0),
        }
    }

    /// Records one observation; `measured`: it belongs to the measured interval.
    pub fn record(&self, latency: Duration, measured: bool) {
        self.observed.fetch_add(1, Ordering::Relaxed);
        let us = (latency.as_micros() as u64).clamp(1, 3_600_000_000);
        if let Ok(mut h) = self.interval.lock() {
            let _ = h.record(us);
        }
        if measured {
            if let Ok(mut h) = self.total.lock() {
                let _ = h.record(us);
            }
        }
    }

    fn take_interval(&self) -> (f64, f64) {
        let Ok(mut h) = self.interval.lock() else {
            return (0.0, 0.0);
        };
        let out = if h.is_empty() {
            (0.0, 0.0)
        } else {
            (
                h.value_at_quantile(0.5) as f64 / 1000.0,
                h.value_at_quantile(0.99) as f64 / 1000.0,
            )
        };
        h.reset();
        out
    }

    /// The measured interval's series (None when nothing was recorded in it).
    pub fn series(&self) -> Option<LatencySeries> {
        let h = self.total.lock().ok()?;
        if h.is_empty() {
            return None;
        }
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Some(LatencySeries {
            name: self.name.to_owned(),
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            max_ms: h.max() as f64 / 1000.0,
        })
    }
}

/// Everything a run counts.
pub struct Stats {
    /// Messages acknowledged by push responses.
    pub pushed: AtomicU64,
    /// Successful push requests.
    pub push_requests: AtomicU64,
    /// Messages delivered (all groups).
    pub delivered: AtomicU64,
    /// Messages acknowledged (explicit acks).
    pub acked: AtomicU64,
    /// Failed requests.
    pub errors: AtomicU64,
    /// Push request latency.
    pub push: Latency,
    /// Pop request latency (non-empty answers).
    pub pop: Latency,
    /// Ack request latency.
    pub ack: Latency,
    /// Push sent (or scheduled) → delivered.
    pub e2e: Latency,
    last: Mutex<[u64; 4]>,
}

impl Stats {
    /// Zeroed.
    pub fn new() -> Stats {
        Stats {
            pushed: AtomicU64::new(0),
            push_requests: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            push: Latency::new("push"),
            pop: Latency::new("pop"),
            ack: Latency::new("ack"),
            e2e: Latency::new("e2e"),
            last: Mutex::new([0; 4]),
        }
    }

    /// Current totals: pushed, delivered, acked, errors.
    pub fn totals(&self) -> [u64; 4] {
        [
            self.pushed.load(Ordering::Relaxed),
            self.delivered.load(Ordering::Relaxed),
            self.acked.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        ]
    }

    /// Closes one timeline interval ending at `t_secs`.
    pub fn interval(&self, t_secs: f64) -> IntervalSample {
        let now = self.totals();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let delta: Vec<u64> = now.iter().zip(last.iter()).map(|(a, b)| a - b).collect();
        *last = now;
        let (push_p50_ms, push_p99_ms) = self.push.take_interval();
        let (e2e_p50_ms, e2e_p99_ms) = self.e2e.take_interval();
        IntervalSample {
            t_secs,
            pushed: delta[0],
            delivered: delta[1],
            acked: delta[2],
            errors: delta[3],
            push_p50_ms,
            push_p99_ms,
            e2e_p50_ms,
            e2e_p99_ms,
        }
    }

    /// Observations per series over the whole run (measured or not).
    pub fn observations(&self) -> std::collections::BTreeMap<String, u64> {
        [&self.push, &self.pop, &self.ack, &self.e2e]
            .iter()
            .map(|l| (l.name.to_owned(), l.observed.load(Ordering::Relaxed)))
            .collect()
    }

    /// Measured-interval latency series that have observations.
    pub fn series(&self) -> Vec<LatencySeries> {
        [&self.push, &self.pop, &self.ack, &self.e2e]
            .iter()
            .filter_map(|l| l.series())
            .collect()
    }
}
