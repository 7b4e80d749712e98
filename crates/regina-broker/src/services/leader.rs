//! The leader: holds the leader lock and runs the expired-lease sweep (http-api.md §4.8) every
//! `LEASE_SWEEP_INTERVAL_MS`, waking the waiters of every (queue, group) whose lease it ended;
//! the deletion jobs (`policies`) run while it leads.
//! When the leader's session dies, the lock goes with it and another instance takes over.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::Client;

use super::{stop_requested, RECONNECT_DELAY};
use crate::db::{self, ConnectSettings, DbError};
use crate::metrics::Metrics;
use crate::waiters::Waiters;

/// Leases accounted per sweep call.
const SWEEP_BATCH: i32 = 1_000;
/// Sweep calls per tick at most, so a backlog is worked off in bounded steps.
const SWEEP_ROUNDS_MAX: usize = 10;
/// `statement_timeout` of the leader session, milliseconds.
const JOB_STATEMENT_TIMEOUT_MS: u64 = 60_000;

/// Campaigns for leadership and sweeps while leading; `leading` tells the other jobs whether this
/// instance leads.
pub(super) async fn run(
    settings: ConnectSettings,
    sweep_interval: Duration,
    waiters: Arc<Waiters>,
    metrics: Arc<Metrics>,
    leading: watch::Sender<bool>,
    mut stopped: watch::Receiver<bool>,
) {
    let settings = settings.with_statement_timeout_ms(JOB_STATEMENT_TIMEOUT_MS);
    let sweeper = Sweeper {
        waiters: &waiters,
        metrics: &metrics,
    };
    while !*stopped.borrow() {
        match settings.connect().await {
            Ok(client) => {
                let stop =
                    lead_while_connected(&client, sweep_interval, &sweeper, &leading, &mut stopped)
                        .await;
                leading.send_replace(false);
                if stop {
                    return;
                }
            }
            Err(error) => tracing::debug!(%error, "leader session cannot connect"),
        }
        if stop_requested(&mut stopped, RECONNECT_DELAY).await {
            return;
        }
    }
}

/// Campaigns for leadership and, once leader, sweeps every tick. Returns true when asked to
/// stop, false when the session failed (the caller reconnects).
async fn lead_while_connected(
    client: &Client,
    sweep_interval: Duration,
    sweeper: &Sweeper<'_>,
    leading: &watch::Sender<bool>,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let mut leader = false;
    let mut ticker = tokio::time::interval(sweep_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stopped.changed() => return true,
        }
        if !leader {
            match db::leader::try_lock(client).await {
                Ok(true) => {
                    tracing::info!("this instance is now the leader");
                    leader = true;
                    leading.send_replace(true);
                }
                Ok(false) => continue,
                Err(error) => {
                    tracing::warn!(%error, "leader election failed");
                    return false;
                }
            }
        }
        if let Err(error) = sweeper.sweep(client).await {
            tracing::warn!(%error, "lease sweep failed");
            if matches!(error, DbError::Unavailable(_)) || client.is_closed() {
                tracing::info!("leadership lost with the leader session");
                return false;
            }
        }
    }
}

/// What a sweep wakes and counts.
struct Sweeper<'a> {
    waiters: &'a Waiters,
    metrics: &'a Metrics,
}

impl Sweeper<'_> {
    /// Accounts expired leases in bounded rounds, wakes the affected waiters and counts the
    /// expiries and their dead letters.
    async fn sweep(&self, client: &Client) -> Result<(), DbError> {
        for _ in 0..SWEEP_ROUNDS_MAX {
            let ended = db::leader::lease_sweep(client, SWEEP_BATCH).await?;
            if !ended.is_empty() {
                tracing::debug!(leases = ended.len(), "expired leases accounted");
            }
            let done = ended.len() < SWEEP_BATCH as usize;
            for lease in ended {
                self.metrics.lease_swept(&lease.queue, lease.dead_lettered);
                self.waiters.lease_ended(&lease.queue, &lease.group);
            }
            if done {
                break;
            }
        }
        Ok(())
    }
}
