//! Waiting for what happens by itself: a broker becoming healthy, a background job, a parked pop.
//!
//! Every such wait polls until its condition holds and fails only after [`DEADLINE`]. The deadline
//! is a guard against a broken broker, never a claim about speed: it is generous because test
//! machines are busy, and one constant serves every kit so that none is tighter than another.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

// The runtime's clock: the same as the system's, except in tests that pause time.
use tokio::time::Instant;

/// How long any wait of the tests may last before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Timeout, in milliseconds, of a long-poll pop that a test expects to be answered by an event
/// (a push, an ack, a timer for a delay): long enough that a `204 timeout` means the event never
/// woke it, not that the machine was slow. Tests that check that only the event can answer also
/// turn the broker's periodic re-check off (`longpoll_recheck_ms = 0`). It stays below
/// [`DEADLINE`] and below the request timeout of [`crate::http()`].
pub const PARKED_POP_TIMEOUT_MS: u64 = 30_000;

/// Pause between two checks of a waited-for condition.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Runs `check` until it returns `Ok`, and returns that value; each `Err` carries what was seen,
/// so that a failure shows the last observation.
///
/// # Panics
/// After [`DEADLINE`], naming `what` and the last `Err`.
///
/// ```no_run
/// # async fn example(broker: &regina_testkit::TestBroker) {
/// let api = broker.api();
/// let buffers = regina_testkit::eventually("the failover buffer is replayed", || async {
///     let reply = api.get("/api/v1/status/buffers").await;
///     if reply.body["pending"] == 0 { Ok(reply) } else { Err(reply) }
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<T, E, F, Fut>(what: &str, mut check: F) -> T
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "not within {DEADLINE:?}: {what}; last seen: {seen:?}"
            ),
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// [`eventually`] for a condition that is only true or false.
///
/// # Panics
/// After [`DEADLINE`], naming `what`.
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually(what, || {
        let holds = check();
        async move {
            if holds.await {
                Ok(())
            } else {
                Err("false")
            }
        }
    })
    .await;
}

/// Runs `attempt` with 0, 1, 2, … (so that each attempt can use names of its own) until one is
/// conclusive, and returns its value.
///
/// For a check whose setup needs something to happen *before* a time limit the test does not
/// control — a message must still be within its `ttl` or its delay when a request reads it — an
/// attempt measures whether that held. If it did, the attempt asserts what must be true and
/// returns `Ok`; if the machine was too slow for the attempt to tell, it returns `Err` with what
/// it saw, and the next attempt starts afresh. An attempt never returns `Err` for a wrong answer:
/// it asserts.
///
/// # Panics
/// After [`DEADLINE`] without a conclusive attempt, naming `what` and the last `Err`.
pub async fn conclusive<T, E, F, Fut>(what: &str, mut attempt: F) -> T
where
    E: Debug,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut next = 0;
    eventually(&format!("a conclusive attempt: {what}"), || {
        let n = next;
        next += 1;
        attempt(n)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_success_is_returned() {
        let attempts = Cell::new(0);
        let got = eventually("the third attempt", || {
            attempts.set(attempts.get() + 1);
            let n = attempts.get();
            async move {
                if n == 3 {
                    Ok(n)
                } else {
                    Err(n)
                }
            }
        })
        .await;
        assert_eq!(got, 3);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "not within 60s: never; last seen: \"no\"")]
    async fn a_wait_fails_at_the_deadline_with_what_it_saw() {
        let started = Instant::now();
        eventually::<(), _, _, _>("never", || async {
            assert!(
                started.elapsed() <= DEADLINE + POLL_INTERVAL,
                "polled past the deadline"
            );
            Err::<(), _>("no")
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_are_numbered_until_one_is_conclusive() {
        let got = conclusive("the third attempt", |n| async move {
            if n == 2 {
                Ok(n)
            } else {
                Err(format!("attempt {n} was too slow"))
            }
        })
        .await;
        assert_eq!(got, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_condition_is_awaited_until_it_holds() {
        let started = Instant::now();
        wait_until("a second of runtime time", || async {
            started.elapsed() >= Duration::from_secs(1)
        })
        .await;
        assert!(started.elapsed() < DEADLINE);
    }
}
