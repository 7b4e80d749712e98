//! The leader's stats refresh (http-api.md §4.15): every `STATS_INTERVAL_MS`, while this instance
//! leads, one pass of `db::stats::refresh` on a session of its own with its own statement timeout.
//! A pass that finds the stats lock taken (a `POST /api/v1/stats/refresh` running, or another
//! instance that still believes it leads) is skipped; the next tick tries again.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_postgres::Client;

use crate::config::Config;
use crate::db::stats::{self, BatchLimits, Refresh};
use crate::db::{ConnectSettings, DbError};

/// `statement_timeout` of the stats sessions, milliseconds: one batch must fit.
pub(crate) const STATS_STATEMENT_TIMEOUT_MS: u64 = 60_000;

/// The refresh's settings, from `Config`.
#[derive(Clone, Debug)]
pub(crate) struct StatsSettings {
    /// `STATS_INTERVAL_MS`.
    pub(crate) interval: Duration,
    /// `STATS_BATCH_SIZE` and `STATS_BATCH_ROWS`.
    pub(crate) batch: BatchLimits,
    /// This instance's `WORKER_ID`, recorded with each pass.
    pub(crate) worker_id: String,
}

impl StatsSettings {
    /// The refresh's settings in `config`.
    pub(crate) fn new(config: &Config) -> StatsSettings {
        StatsSettings {
            interval: Duration::from_millis(config.stats_interval_ms.max(1)),
            batch: BatchLimits {
                partitions: i32::try_from(config.stats_batch_size.max(1)).unwrap_or(i32::MAX),
                rows: i64::try_from(config.stats_batch_rows.max(1)).unwrap_or(i64::MAX),
            },
            worker_id: config.worker_id(),
        }
    }
}

pub(super) async fn run(
    settings: ConnectSettings,
    stats: StatsSettings,
    leader: watch::Receiver<bool>,
    stopped: watch::Receiver<bool>,
) {
    let settings = settings.with_statement_timeout_ms(STATS_STATEMENT_TIMEOUT_MS);
    super::while_leading(settings, stats, leader, stopped).await;
}

impl super::LeaderTask for StatsSettings {
    const SESSION: &'static str = "stats";

    fn run<'a>(
        &'a self,
        client: &'a Client,
        leader: &'a mut watch::Receiver<bool>,
        stopped: &'a mut watch::Receiver<bool>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(refresh_while_leader(client, self, leader, stopped))
    }
}

/// Refreshes at every tick (the first at once). Returns true when asked to stop, false when
/// leadership or the session was lost.
async fn refresh_while_leader(
    client: &Client,
    stats: &StatsSettings,
    leader: &mut watch::Receiver<bool>,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let mut ticker = tokio::time::interval(stats.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            changed = leader.changed() => {
                if changed.is_err() || !*leader.borrow_and_update() {
                    return false;
                }
                continue;
            }
            _ = stopped.changed() => return true,
        }
        let keep_going = || *leader.borrow() && !*stopped.borrow();
        match stats::refresh(client, stats.batch, &stats.worker_id, keep_going).await {
            Ok(Refresh::Done {
                duration,
                recounted,
            }) => tracing::debug!(
                recounted,
                duration_ms = duration.as_millis() as u64,
                "stats refreshed"
            ),
            Ok(Refresh::Busy) => tracing::debug!("a stats refresh runs elsewhere"),
            Err(error) => {
                tracing::warn!(%error, "stats refresh failed");
                if matches!(error, DbError::Unavailable(_)) || client.is_closed() {
                    return false;
                }
            }
        }
    }
}
