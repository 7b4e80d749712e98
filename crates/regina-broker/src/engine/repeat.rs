//! Deadlocks and serialization failures (http-api.md §4.14) are repeated in-process: the call
//! applied nothing, and every pushed item already carries its ids, so running it again is safe.

use std::future::Future;
use std::time::Instant;

use crate::db::DbError;
use crate::metrics::DbCallMetrics;

/// Repeats after a conflict, at most this many times.
pub(crate) const CONFLICT_RETRIES_MAX: usize = 3;

/// Runs `call`, and again after each conflict up to [`CONFLICT_RETRIES_MAX`] times. Every
/// attempt is timed into `calls` as one call carrying `requests` requests; `answered` tells the
/// outcomes that count as successful (an answer, even a refusal) from failed calls.
pub(crate) async fn repeating_conflicts<T, Fut>(
    what: &'static str,
    calls: &DbCallMetrics,
    requests: usize,
    answered: fn(&Result<T, DbError>) -> bool,
    mut call: impl FnMut() -> Fut,
) -> Result<T, DbError>
where
    Fut: Future<Output = Result<T, DbError>>,
{
    let mut attempt = 0;
    loop {
        let started = Instant::now();
        let outcome = call().await;
        calls.call(requests, started.elapsed(), answered(&outcome));
        match outcome {
            Err(DbError::Conflict(message)) if attempt < CONFLICT_RETRIES_MAX => {
                attempt += 1;
                tracing::debug!(what, attempt, %message, "conflict; repeating the call");
            }
            outcome => return outcome,
        }
    }
}

/// [`repeating_conflicts`]'s `answered` for calls whose every error is a failure.
pub(crate) fn succeeded<T>(outcome: &Result<T, DbError>) -> bool {
    outcome.is_ok()
}

/// ... and for calls that answer a refusal as [`DbError::TransactionAborted`].
pub(crate) fn committed_or_refused<T>(outcome: &Result<T, DbError>) -> bool {
    matches!(outcome, Ok(_) | Err(DbError::TransactionAborted { .. }))
}
