//! Errors of the broker's public functions ([`crate::serve`], [`crate::migrate`]).
//!
//! Request-level failures are not here: they are HTTP answers with a stable code (`http::error`).

/// A failure that stops the broker or a migration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting has an invalid value.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// PostgreSQL could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(String),
    /// A statement failed while preparing the database.
    #[error("database error: {0}")]
    Database(#[from] tokio_postgres::Error),
    /// A migration or function file failed to apply.
    #[error("applying {file} failed: {source}")]
    Migration {
        /// File name under `sql/`.
        file: &'static str,
        /// The database's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// Binding or serving the socket failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
