//! `GET /metrics` (spec §3.1): this instance's request and push counters, pool, memory, CPU and
//! long-poll figures.
//!
//! Counters are atomics bumped by the edge middleware (every request) and the push handler
//! (items answered `queued`); a rate is the count of the last minute, kept in a ring of
//! per-second slots, over the time that ring covers. Memory and CPU are read from `/proc` on each
//! call; where `/proc` is unreadable (not Linux) they read `0`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::error::json_response;
use crate::state::AppState;

/// Length of the rate window, seconds ("rate (per s, last minute)").
const RATE_WINDOW_SECONDS: u32 = 60;
/// Clock ticks per second assumed when the kernel does not say (`AT_CLKTCK` in the auxiliary
/// vector): Linux's `USER_HZ` is 100 on every mainstream architecture. `sysconf` would need
/// `unsafe` or `libc`, which the workspace does without.
const CLOCK_TICKS_PER_SECOND_DEFAULT: u64 = 100;

/// The route; the edge exempts it from `HTTP_INFLIGHT_MAX` so a saturated instance stays
/// observable.
pub(super) const PATH: &str = "/metrics";

pub(super) fn routes() -> Router<AppState> {
    Router::new().route(PATH, get(metrics))
}

async fn metrics(State(state): State<AppState>) -> Response {
    let shared = state.get();
    let process = ProcessSample::read(shared.metrics.clock_ticks_per_second).await;
    let pool = shared.db.stats();
    let elapsed = shared.metrics.origin.elapsed();
    let (requests_total, requests_rate) = shared.metrics.requests.total_and_rate(elapsed);
    let (messages_total, messages_rate) = shared.metrics.messages_pushed.total_and_rate(elapsed);
    let body = serde_json::json!({
        "uptime": shared.started.elapsed().as_secs(),
        "requests": {"total": requests_total, "rate": requests_rate},
        "messages": {"total": messages_total, "rate": messages_rate},
        "database": {
            "poolSize": pool.size,
            "idleConnections": pool.idle,
            "waitingRequests": pool.waiting,
        },
        "memory": {"rssBytes": process.rss_bytes},
        "cpu": {"userSeconds": process.user_seconds, "systemSeconds": process.system_seconds},
        "longPoll": {"waiters": shared.waiters.len()},
    });
    json_response(StatusCode::OK, body.to_string())
}

/// The instance's counters, shared by every request.
pub(crate) struct Metrics {
    origin: Instant,
    clock_ticks_per_second: u64,
    requests: RateCounter,
    messages_pushed: RateCounter,
}

impl Metrics {
    /// Counters starting at `origin` (the instance's start). Reads the kernel's clock tick
    /// rate once.
    pub(crate) fn new(origin: Instant) -> Metrics {
        let auxv = std::fs::read("/proc/self/auxv").unwrap_or_default();
        Metrics {
            origin,
            clock_ticks_per_second: clock_ticks_per_second(&auxv)
                .unwrap_or(CLOCK_TICKS_PER_SECOND_DEFAULT),
            requests: RateCounter::default(),
            messages_pushed: RateCounter::default(),
        }
    }

    /// Counts one HTTP request.
    pub(crate) fn request_received(&self) {
        self.requests.add(self.second(), 1);
    }

    /// Counts `count` messages stored by a push of this instance.
    pub(crate) fn messages_pushed(&self, count: u64) {
        if count > 0 {
            self.messages_pushed.add(self.second(), count);
        }
    }

    fn second(&self) -> u32 {
        u32::try_from(self.origin.elapsed().as_secs()).unwrap_or(u32::MAX)
    }
}

/// A running total and the counts of the last `RATE_WINDOW_SECONDS` seconds, lock-free.
///
/// Each slot packs the second it counts (high 32 bits, seconds since the origin) with its count
/// (low 32 bits), so a slot is reused for a new second and counted in one atomic update.
struct RateCounter {
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
    fn add(&self, second: u32, count: u64) {
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

    /// The total and the per-second rate of the last minute, `elapsed` after the origin.
    fn total_and_rate(&self, elapsed: Duration) -> (u64, f64) {
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

/// Memory and CPU of this process.
struct ProcessSample {
    rss_bytes: u64,
    user_seconds: f64,
    system_seconds: f64,
}

impl ProcessSample {
    async fn read(clock_ticks_per_second: u64) -> ProcessSample {
        let status = tokio::fs::read_to_string("/proc/self/status").await;
        let stat = tokio::fs::read_to_string("/proc/self/stat").await;
        let (user, system) = stat.ok().and_then(|s| cpu_ticks(&s)).unwrap_or((0, 0));
        let ticks = clock_ticks_per_second.max(1) as f64;
        ProcessSample {
            rss_bytes: status.ok().and_then(|s| rss_bytes(&s)).unwrap_or(0),
            user_seconds: user as f64 / ticks,
            system_seconds: system as f64 / ticks,
        }
    }
}

/// Resident set size from `/proc/self/status` (`VmRSS:  1234 kB`), bytes.
fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let mut parts = line.split_whitespace();
    let kibibytes: u64 = parts.next()?.parse().ok()?;
    (parts.next() == Some("kB")).then_some(kibibytes * 1024)
}

/// User and system CPU time from `/proc/self/stat` (fields 14 and 15), clock ticks. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // After the name come field 3 (state) onwards: utime is the 12th of those.
    let mut fields = after_name.split_whitespace().skip(11);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some((user, system))
}

/// `AT_CLKTCK` from the auxiliary vector (`/proc/self/auxv`: native-endian word pairs
/// `(type, value)` ending with `AT_NULL`).
fn clock_ticks_per_second(auxv: &[u8]) -> Option<u64> {
    const AT_NULL: usize = 0;
    const AT_CLKTCK: usize = 17;
    let mut words = auxv
        .chunks_exact(std::mem::size_of::<usize>())
        .filter_map(|chunk| chunk.try_into().ok().map(usize::from_ne_bytes));
    loop {
        let (kind, value) = (words.next()?, words.next()?);
        match kind {
            AT_NULL => return None,
            AT_CLKTCK if value > 0 => return u64::try_from(value).ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_is_read_from_status_in_bytes() {
        let status = "Name:\tregina\nVmPeak:\t  9000 kB\nVmRSS:\t    5120 kB\nThreads:\t4\n";
        assert_eq!(rss_bytes(status), Some(5120 * 1024));
        assert_eq!(rss_bytes("Name:\tregina\n"), None);
        assert_eq!(rss_bytes("VmRSS:\t12 MB\n"), None);
        assert_eq!(rss_bytes("VmRSS:\tlots kB\n"), None);
    }

    #[test]
    fn cpu_ticks_are_fields_14_and_15_even_with_odd_command_names() {
        let stat = "4242 (reg) ina (x)) S 1 4242 4242 0 -1 4194560 2263 0 0 0 731 58 0 0 20 0 \
                    9 0 123456 123456789 1280 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some((731, 58)));
        assert_eq!(cpu_ticks("4242 (regina) S 1 2 3"), None);
        assert_eq!(cpu_ticks("no parenthesis"), None);
    }

    #[test]
    fn clock_tick_rate_is_found_in_the_auxiliary_vector() {
        let vector = |pairs: &[(usize, usize)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()])
                .flatten()
                .collect()
        };
        assert_eq!(
            clock_ticks_per_second(&vector(&[(6, 4096), (17, 250), (0, 0)])),
            Some(250)
        );
        assert_eq!(
            clock_ticks_per_second(&vector(&[(6, 4096), (0, 0), (17, 250)])),
            None
        );
        assert_eq!(clock_ticks_per_second(&vector(&[(6, 4096)])), None);
        assert_eq!(clock_ticks_per_second(&[1, 2, 3]), None);
    }

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
