//! Resource accounting and database telemetry during a run: broker and PostgreSQL CPU and memory
//! from `/proc`, a once-a-second `pg_stat_activity` snapshot by wait class, WAL volume,
//! checkpoints, and hot-table statistics before and after.
//!
//! (Placeholder: returns empty reports until the sampler lands.)

use std::time::Duration;

use crate::model::{Environment, TelemetryReport};

/// Which processes are PostgreSQL's.
#[derive(Clone, Debug)]
pub enum PostgresPids {
    /// The postmaster's pid: it and its children.
    Postmaster(u32),
    /// Every process whose name (`/proc/<pid>/comm`) is `postgres`.
    ByName,
}

/// What to sample.
#[derive(Clone, Debug)]
pub struct TelemetryConfig {
    /// A connection URL to the benchmark database (the sampler opens its own connection).
    pub database_url: String,
    /// The broker's pid; None for the `raw` target.
    pub broker_pid: Option<u32>,
    /// PostgreSQL's processes.
    pub postgres: PostgresPids,
    /// Sampling interval (normally one second).
    pub interval: Duration,
}

/// A running sampler. Start it when the measured interval starts.
#[derive(Debug)]
pub struct Telemetry {
    _config: TelemetryConfig,
}

impl Telemetry {
    /// Takes the "before" snapshot and starts sampling.
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn start(config: TelemetryConfig) -> anyhow::Result<Telemetry> {
        Ok(Telemetry { _config: config })
    }

    /// Stops sampling and takes the "after" snapshot.
    ///
    /// # Errors
    /// The database cannot be reached.
    pub async fn finish(self) -> anyhow::Result<TelemetryReport> {
        Ok(TelemetryReport::default())
    }
}

/// Hardware, kernel and PostgreSQL facts of this machine and database.
///
/// # Errors
/// The database cannot be reached.
pub async fn environment(database_url: &str) -> anyhow::Result<Environment> {
    let _ = database_url;
    Ok(Environment::default())
}
