//! Totals with a per-second rate over the last minute, for `GET /metrics` (http-api.md §3.1).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Length of the rate window, seconds ("rate (per s, last minute)").
const RATE_WINDOW_SECONDS: u32 = 60;

/// A running total and the counts of the last `RATE_WINDOW_SECONDS` seconds, lock-free.
///
/// Each slot packs the second it counts (high 32 bits, seconds since the origin) with its count
/// (low 32 bits), so a slot is reused for a new second and counted in one atomic update.
pub(crate) struct RateCounter {
    total: AtomicU64,
    slots: [AtomicU64; RATE_WINDOW_SECONDS as usize],
}

impl Default for RateCounter {
    fn default() -> Self {
        RateCounter {
            total: AtomicU64::new(0),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

fn pack(second: u32, count: u32) -> u64 {
    (u64::from(second) << 32) | u64::from(count)
}

fn unpack(slot: u64) -> (u32, u32) {
    ((slot >> 32) as u32, slot as u32)
}

impl RateCounter {
    /// Adds `count` at `second` (seconds since the origin).
    pub(crate) fn add(&self, second: u32, count: u64) {
        self.total.fetch_add(count, Ordering::Relaxed);
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        let slot = &self.slots[(second % RATE_WINDOW_SECONDS) as usize];
        // `None` drops a count whose slot already moved on to a later second: the caller was
        // held up for a whole window, and its second has left the window anyway.
        let _ = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |packed| {
            let (stamp, stored) = unpack(packed);
            match stamp.cmp(&second) {
                std::cmp::Ordering::Equal => Some(pack(stamp, stored.saturating_add(count))),
                std::cmp::Ordering::Less => Some(pack(second, count)),
                std::cmp::Ordering::Greater => None,
            }
        });
    }

    /// The count of seconds `second - 59 ..= second`.
    fn recent(&self, second: u32) -> u64 {
        self.slots
            .iter()
            .map(|slot| unpack(slot.load(Ordering::Relaxed)))
            .filter(|(stamp, _)| *stamp <= second && second - *stamp < RATE_WINDOW_SECONDS)
            .map(|(_, count)| u64::from(count))
            .sum()
    }

    /// Everything counted since the origin.
    pub(crate) fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The total and the per-second rate of the last minute, `elapsed` after the origin.
    pub(crate) fn total_and_rate(&self, elapsed: Duration) -> (u64, f64) {
        let second = u32::try_from(elapsed.as_secs()).unwrap_or(u32::MAX);
        let total = self.total.load(Ordering::Relaxed);
        (total, rate(self.recent(second), elapsed))
    }
}

/// `count` over the time the ring covers `elapsed` after the origin: from the start of its
/// oldest second to now, at least one second so a young instance does not report spikes.
/// Rounded to thousandths.
fn rate(count: u64, elapsed: Duration) -> f64 {
    let oldest = elapsed
        .as_secs()
        .saturating_sub(u64::from(RATE_WINDOW_SECONDS) - 1);
    let covered = (elapsed.as_secs_f64() - oldest as f64).max(1.0);
    (count as f64 / covered * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_counts_the_last_sixty_seconds_only() {
        let counter = RateCounter::default();
        counter.add(0, 30);
        counter.add(10, 5);
        counter.add(10, 5);
        assert_eq!(counter.recent(10), 40);
        assert_eq!(counter.recent(59), 40);
        assert_eq!(counter.recent(60), 10, "second 0 left the window");
        counter.add(70, 3);
        assert_eq!(counter.recent(70), 3, "second 10's slot was reused");
        counter.add(10, 1);
        assert_eq!(
            counter.recent(70),
            3,
            "a count older than its slot is dropped"
        );
        assert_eq!(counter.total.load(Ordering::Relaxed), 44);
    }

    #[test]
    fn the_rate_divides_by_the_time_covered() {
        assert_eq!(rate(10, Duration::from_millis(200)), 10.0, "at least 1 s");
        assert_eq!(rate(30, Duration::from_secs(15)), 2.0);
        assert_eq!(rate(120, Duration::from_secs(600)), 2.034, "covers 59 s");
        assert_eq!(rate(120, Duration::from_millis(600_500)), 2.017);
    }

    #[test]
    fn a_full_slot_saturates_instead_of_wrapping() {
        let counter = RateCounter::default();
        counter.add(3, u64::from(u32::MAX));
        counter.add(3, 10);
        assert_eq!(counter.recent(3), u64::from(u32::MAX));
        assert_eq!(
            counter.total.load(Ordering::Relaxed),
            u64::from(u32::MAX) + 10
        );
    }
}
