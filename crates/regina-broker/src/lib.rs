//! The Regina broker: HTTP API, batching engine, long-poll waiters and PostgreSQL access.
//!
//! Public surface used by the binary and the test kit:
//! - [`Config`]: every setting, with the spec's defaults (`Config::default()` reads no environment);
//! - [`serve`]: run the broker on a bound listener until `shutdown` resolves;
//! - [`migrate`]: apply migrations and re-apply SQL functions;
//! - [`app`] and [`AppState`]: the router, testable without a socket;
//! - [`openapi_document`]: the OpenAPI 3.1 document of the HTTP API.

mod args;
mod auth;
mod config;
mod db;
mod encryption;
mod engine;
mod error;
mod failover;
mod http;
mod maintenance;
mod metrics;
mod push;
mod secret;
mod services;
mod site;
mod state;
mod waiters;

use std::future::Future;
use std::time::Duration;

pub use auth::settings::{AuthConfig, JwtAlgorithm};
pub use config::{defaults, Config, LogFormat, SubscriptionMode, WebappRoot};
pub use error::Error;
pub use http::app;
pub use http::openapi::document_text as openapi_document;
pub use secret::Secret;
pub use state::AppState;

/// Time given to closing after the grace period is used up by open requests.
const CLOSE_TIME_MIN: Duration = Duration::from_millis(200);

/// Applies pending migrations and re-applies every SQL function, under an advisory lock so
/// brokers starting together do not collide. Running it twice changes nothing.
///
/// # Errors
/// [`Error::Connect`] when PostgreSQL is unreachable, [`Error::Migration`] naming a file that
/// failed, [`Error::Database`] otherwise.
pub async fn migrate(config: &Config) -> Result<(), Error> {
    let settings = db::ConnectSettings::new(config, "migrate")?
        // Migrations may rewrite large tables: no statement timeout for this session.
        .with_statement_timeout_ms(0);
    let mut client = settings
        .connect()
        .await
        .map_err(|e| Error::Connect(e.to_string()))?;
    db::migrate::run(&mut client).await
}

/// Runs the broker on `listener` until `shutdown` resolves: connects, migrates, serves, then
/// shuts down gracefully — stops accepting, answers parked long-polls `204 shutdown`, lets
/// in-flight requests and batches finish — bounded by `SHUTDOWN_GRACE_MS`.
///
/// # Errors
/// Startup failures ([`Error::Connect`], [`Error::Migration`], [`Error::Config`]) and socket
/// errors ([`Error::Io`]).
pub async fn serve(
    config: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    auth::Authenticator::check(&config.auth)?;
    migrate(&config).await?;
    let grace = config.shutdown_grace();
    let state = AppState::start(config).await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = http::server::run(
        listener,
        app(state.clone()),
        state.get().config.http_read_buffer_bytes_max,
        stopped,
    );
    let mut server = tokio::spawn(server);
    tracing::info!("broker serving");
    let mut deadline = None;
    let result = tokio::select! {
        finished = &mut server => finished,
        () = shutdown => {
            tracing::info!(grace_ms = grace.as_millis() as u64, "shutting down");
            let until = tokio::time::Instant::now() + grace;
            deadline = Some(until);
            state.begin_shutdown();
            let _ = stop.send(true);
            match tokio::time::timeout_at(until, &mut server).await {
                Ok(finished) => finished,
                Err(_) => {
                    tracing::warn!("grace period over; dropping remaining connections");
                    server.abort();
                    Ok(Ok(()))
                }
            }
        }
    };
    // Closing (drainer, buffer fsync, background sessions) shares the grace period, with a
    // short floor so that the buffer's last fsync is never cut.
    let closing = deadline.map_or(Duration::MAX, |until| {
        until
            .saturating_duration_since(tokio::time::Instant::now())
            .max(CLOSE_TIME_MIN)
    });
    if tokio::time::timeout(closing, state.close()).await.is_err() {
        tracing::warn!("grace period over while closing; exiting");
    }
    match result {
        Ok(outcome) => outcome.map_err(Error::Io),
        Err(join) => Err(Error::Io(std::io::Error::other(join))),
    }
}
