//! Classification of database failures into what the HTTP layer must answer.

use std::fmt;

/// A failed database call, classified by what the caller should do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DbError {
    /// PostgreSQL is unreachable, the connection broke, or no connection came in time.
    Unavailable(String),
    /// `statement_timeout` or `lock_timeout` fired.
    Timeout(String),
    /// Deadlock or serialization failure: the same call may succeed when repeated.
    Conflict(String),
    /// The statement itself failed (SQLSTATE given): the request, not the database, is at fault.
    Statement {
        /// Five-character SQLSTATE.
        code: String,
        /// The server's message.
        message: String,
    },
    /// A transaction (`regina.transaction`) was refused and nothing was applied: SQLSTATE
    /// `RGTXA`, whose detail is `{code, error, results}` (sql/README.md).
    TransactionAborted {
        /// The detail text, JSON.
        detail: String,
    },
    /// Anything else (a result of an unexpected shape, a client-side conversion failure).
    Internal(String),
}

impl DbError {
    /// Whether re-running each fused request on its own may isolate the fault (http-api.md §3.3,
    /// §5.5).
    pub(crate) fn is_isolatable(&self) -> bool {
        matches!(self, DbError::Statement { .. } | DbError::Internal(_))
    }

    /// SQLSTATE class `22` (data exception): a value the database refused, e.g. `\u0000` in jsonb.
    pub(crate) fn is_data_exception(&self) -> bool {
        matches!(self, DbError::Statement { code, .. } if code.starts_with("22"))
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Unavailable(m) => write!(f, "database unavailable: {m}"),
            DbError::Timeout(m) => write!(f, "database timeout: {m}"),
            DbError::Conflict(m) => write!(f, "database conflict: {m}"),
            DbError::Statement { code, message } => {
                write!(f, "statement failed ({code}): {message}")
            }
            DbError::TransactionAborted { detail } => write!(f, "transaction aborted: {detail}"),
            DbError::Internal(m) => write!(f, "database client error: {m}"),
        }
    }
}

/// SQLSTATE raised by `regina.transaction` when an operation fails (nothing applied).
const TRANSACTION_ABORTED: &str = "RGTXA";

/// Maps a `tokio_postgres` error onto [`DbError`].
pub(crate) fn classify(error: &tokio_postgres::Error) -> DbError {
    let Some(db_error) = error.as_db_error() else {
        if error.is_closed() || has_io_source(error) {
            return DbError::Unavailable(error.to_string());
        }
        return DbError::Internal(error.to_string());
    };
    let code = db_error.code().code();
    let message = db_error.message().to_owned();
    match code {
        TRANSACTION_ABORTED => DbError::TransactionAborted {
            detail: db_error.detail().unwrap_or("{}").to_owned(),
        },
        // query_canceled (statement_timeout), lock_not_available (lock_timeout)
        "57014" | "55P03" => DbError::Timeout(message),
        // serialization_failure, deadlock_detected
        "40001" | "40P01" => DbError::Conflict(message),
        // admin/crash shutdown, cannot_connect_now, too_many_connections, read-only transaction
        "57P01" | "57P02" | "57P03" | "53300" | "25006" => DbError::Unavailable(message),
        c if c.starts_with("08") => DbError::Unavailable(message),
        _ => DbError::Statement {
            code: code.to_owned(),
            message,
        },
    }
}

fn has_io_source(error: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_statement_and_internal_errors_are_isolated() {
        assert!(DbError::Statement {
            code: "P0001".into(),
            message: String::new()
        }
        .is_isolatable());
        assert!(!DbError::Unavailable(String::new()).is_isolatable());
        assert!(!DbError::Timeout(String::new()).is_isolatable());
        assert!(DbError::Statement {
            code: "22P05".into(),
            message: String::new()
        }
        .is_data_exception());
    }
}
