//! Background services. Per database, one leader (elected with a session advisory lock on a
//! dedicated connection, http-api.md §4.15) runs the expired-lease sweep and, on sessions of their
//! own, the deletion jobs and the stats refresh; per instance, a LISTEN session wakes local waiters
//! for pushes committed by other instances (http-api.md §4.9) and applies the maintenance switches
//! (http-api.md §4.14).

mod leader;
mod listener;
mod policies;
mod stats;

pub(crate) use policies::PolicySettings;
pub(crate) use stats::{StatsSettings, STATS_STATEMENT_TIMEOUT_MS};

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::Client;

use crate::config::Config;
use crate::db::{ConnectSettings, Db};
use crate::maintenance::Maintenance;
use crate::metrics::Metrics;
use crate::waiters::Waiters;

/// Pause before reconnecting a background session after a failure.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// What the leader's jobs run with, from `Config`.
pub(crate) struct JobSettings {
    /// `LEASE_SWEEP_INTERVAL_MS`.
    pub(crate) sweep_interval: Duration,
    /// The deletion jobs.
    pub(crate) policy: PolicySettings,
    /// The stats refresh.
    pub(crate) stats: StatsSettings,
}

impl JobSettings {
    /// The leader's settings in `config`.
    pub(crate) fn new(config: &Config) -> JobSettings {
        JobSettings {
            sweep_interval: Duration::from_millis(config.lease_sweep_interval_ms),
            policy: PolicySettings::new(config),
            stats: StatsSettings::new(config),
        }
    }
}

/// The running background services.
pub(crate) struct Services {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// True while the listener's LISTEN session is up.
    listening: watch::Receiver<bool>,
}

impl Services {
    /// Starts the leader election loop, the deletion jobs and the stats refresh (active while
    /// leading) and the push listener.
    pub(crate) fn start(
        settings: ConnectSettings,
        jobs: JobSettings,
        db: Db,
        waiters: Arc<Waiters>,
        maintenance: Arc<Maintenance>,
        metrics: Arc<Metrics>,
    ) -> Services {
        let JobSettings {
            sweep_interval,
            policy,
            stats,
        } = jobs;
        let (stop, stopped) = watch::channel(false);
        let (leading, leader) = watch::channel(false);
        let (listen_up, listening) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(leader::run(
                settings.clone(),
                sweep_interval,
                waiters.clone(),
                metrics.clone(),
                leading,
                stopped.clone(),
            )),
            tokio::spawn(policies::run(
                settings.clone(),
                policy,
                metrics,
                leader.clone(),
                stopped.clone(),
            )),
            tokio::spawn(stats::run(settings.clone(), stats, leader, stopped.clone())),
            tokio::spawn(listener::run(
                settings.with_role(crate::db::LISTEN_ROLE),
                db,
                waiters,
                maintenance,
                listen_up,
                stopped,
            )),
        ];
        Services {
            stop,
            tasks,
            listening,
        }
    }

    /// Waits up to `within` for the LISTEN session, so that an instance that starts serving
    /// already hears the pushes other instances commit (http-api.md §4.9); false on timeout (the
    /// listener keeps trying, and parked pops fall back on their safety re-check meanwhile).
    pub(crate) async fn listening(&self, within: Duration) -> bool {
        let mut listening = self.listening.clone();
        tokio::time::timeout(within, listening.wait_for(|up| *up))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Stops the services; leadership ends with its session.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            if let Err(error) = task.await {
                tracing::warn!(%error, "background task ended abnormally");
            }
        }
    }
}

/// Work the leader does on a session of its own (the deletion jobs, the stats refresh).
trait LeaderTask: Send + Sync {
    /// The session's name in logs.
    const SESSION: &'static str;

    /// Works on `client` until asked to stop (true) or until leadership or the session is lost
    /// (false).
    fn run<'a>(
        &'a self,
        client: &'a Client,
        leader: &'a mut watch::Receiver<bool>,
        stopped: &'a mut watch::Receiver<bool>,
    ) -> BoxFuture<'a, bool>;
}

/// Runs `task` on a session of its own whenever this instance leads: waits for leadership,
/// connects with `settings` and runs the task; when leadership or the session is lost, waits for
/// leadership again and reconnects (`RECONNECT_DELAY` after a failure). Returns when asked to stop.
async fn while_leading(
    settings: ConnectSettings,
    task: impl LeaderTask,
    mut leader: watch::Receiver<bool>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        while !*leader.borrow_and_update() {
            tokio::select! {
                changed = leader.changed() => if changed.is_err() { return },
                _ = stopped.changed() => return,
            }
        }
        match settings.connect().await {
            Ok(client) => {
                if task.run(&client, &mut leader, &mut stopped).await {
                    return;
                }
            }
            Err(error) => {
                tracing::debug!(%error, session = session_name(&task), "session cannot connect");
            }
        }
        if stop_requested(&mut stopped, RECONNECT_DELAY).await {
            return;
        }
    }
}

fn session_name<T: LeaderTask>(_: &T) -> &'static str {
    T::SESSION
}

/// Sleeps `delay`; true when asked to stop meanwhile.
async fn stop_requested(stopped: &mut watch::Receiver<bool>, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => *stopped.borrow(),
        _ = stopped.changed() => true,
    }
}
