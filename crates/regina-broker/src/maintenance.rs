//! The two maintenance switches (http-api.md §3.13, §4.14): push maintenance sends every push to
//! the failover buffer and pauses its replay; pop maintenance answers every pop `204 paused` at
//! once.
//!
//! The switches are cluster-wide: stored in `regina.maintenance` and announced on the
//! `regina_maintenance` channel. Each instance reads them at startup and whenever its LISTEN
//! session (re)connects, and applies every announcement as it arrives; a switch changed through
//! this instance's API is applied here at once, without waiting for its announcement.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::db::{Db, DbError};
use crate::waiters::Waiters;

/// Which switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MaintenanceKind {
    /// Push maintenance: every push is buffered and drainers pause.
    Push,
    /// Pop maintenance: every pop answers `204 paused` at once.
    Pop,
}

impl MaintenanceKind {
    /// The `kind` value in the database.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MaintenanceKind::Push => "push",
            MaintenanceKind::Pop => "pop",
        }
    }

    /// The switch named `kind` in the database, if it is one.
    pub(crate) fn parse(kind: &str) -> Option<MaintenanceKind> {
        match kind {
            "push" => Some(MaintenanceKind::Push),
            "pop" => Some(MaintenanceKind::Pop),
            _ => None,
        }
    }
}

/// The switches in force on this instance, and what changing them sets in motion here.
pub(crate) struct Maintenance {
    push: AtomicBool,
    pop: AtomicBool,
    /// Parked pops, answered `paused` when pop maintenance starts.
    waiters: Arc<Waiters>,
    /// Signalled when push maintenance ends, so that the buffer's replay resumes at once.
    push_resumed: Notify,
}

impl Maintenance {
    /// The switches in the positions `switches` gives (the others off), applied silently: this
    /// is the state the instance starts in, before anything waits or replays.
    pub(crate) fn new(waiters: &Arc<Waiters>, switches: &[(MaintenanceKind, bool)]) -> Maintenance {
        let maintenance = Maintenance {
            push: AtomicBool::new(false),
            pop: AtomicBool::new(false),
            waiters: waiters.clone(),
            push_resumed: Notify::new(),
        };
        for (kind, enabled) in switches {
            maintenance.set(*kind, *enabled);
        }
        maintenance
    }

    /// The switches stored in the database, in force from the start.
    ///
    /// # Errors
    /// The [`DbError`] of the read.
    pub(crate) async fn load(db: &Db, waiters: &Arc<Waiters>) -> Result<Maintenance, DbError> {
        let switches: Vec<(MaintenanceKind, bool)> = db
            .maintenance_get()
            .await?
            .into_iter()
            .filter_map(|(kind, enabled)| Some((MaintenanceKind::parse(&kind)?, enabled)))
            .collect();
        Ok(Maintenance::new(waiters, &switches))
    }

    /// Whether push maintenance is on.
    pub(crate) fn push_on(&self) -> bool {
        self.push.load(Ordering::SeqCst)
    }

    /// Whether pop maintenance is on.
    pub(crate) fn pop_on(&self) -> bool {
        self.pop.load(Ordering::SeqCst)
    }

    /// Stores a switch and announces it to every instance, then applies it here.
    ///
    /// # Errors
    /// The [`DbError`] of the store; nothing changed then.
    pub(crate) async fn switch(
        &self,
        db: &Db,
        kind: MaintenanceKind,
        enabled: bool,
    ) -> Result<(), DbError> {
        db.maintenance_set(kind.as_str(), enabled).await?;
        self.apply(kind, enabled);
        Ok(())
    }

    /// Applies an announced switch (`kind` as the database names it).
    pub(crate) fn announced(&self, kind: &str, enabled: bool) {
        match MaintenanceKind::parse(kind) {
            Some(kind) => self.apply(kind, enabled),
            None => tracing::warn!(%kind, "unknown maintenance switch"),
        }
    }

    /// Applies a switch. Pop maintenance answers every parked pop `paused`; turning push
    /// maintenance off resumes the buffer's replay at once.
    pub(crate) fn apply(&self, kind: MaintenanceKind, enabled: bool) {
        if !self.set(kind, enabled) {
            return;
        }
        tracing::info!(kind = kind.as_str(), enabled, "maintenance switched");
        match (kind, enabled) {
            (MaintenanceKind::Pop, true) => self.waiters.wake_all(),
            (MaintenanceKind::Push, false) => self.push_resumed.notify_one(),
            _ => {}
        }
    }

    /// Resolves once push maintenance has ended since the last time it resolved (the failover
    /// drainer is its one listener).
    pub(crate) async fn push_resumed(&self) {
        self.push_resumed.notified().await;
    }

    /// Sets a switch; returns whether it changed.
    fn set(&self, kind: MaintenanceKind, enabled: bool) -> bool {
        let switch = match kind {
            MaintenanceKind::Push => &self.push,
            MaintenanceKind::Pop => &self.pop,
        };
        switch.swap(enabled, Ordering::SeqCst) != enabled
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    #[test]
    fn ending_push_maintenance_resumes_replay_once() {
        let waiters = Arc::new(Waiters::new(10));
        let maintenance = Maintenance::new(&waiters, &[(MaintenanceKind::Push, true)]);
        assert!(maintenance.push_on() && !maintenance.pop_on());
        assert!(maintenance.push_resumed().now_or_never().is_none());
        maintenance.apply(MaintenanceKind::Push, false);
        assert!(!maintenance.push_on());
        // The signal is kept until the drainer next waits for it, and consumed then.
        assert!(maintenance.push_resumed().now_or_never().is_some());
        assert!(maintenance.push_resumed().now_or_never().is_none());
        maintenance.apply(MaintenanceKind::Push, false);
        assert!(
            maintenance.push_resumed().now_or_never().is_none(),
            "a switch already off signals nothing"
        );
    }

    #[test]
    fn announcements_name_the_switch_as_the_database_does() {
        let waiters = Arc::new(Waiters::new(10));
        let maintenance = Maintenance::new(&waiters, &[]);
        maintenance.announced("pop", true);
        assert!(maintenance.pop_on());
        maintenance.announced("neither", true);
        assert!(!maintenance.push_on());
        assert_eq!(
            MaintenanceKind::parse(MaintenanceKind::Push.as_str()),
            Some(MaintenanceKind::Push)
        );
    }
}
