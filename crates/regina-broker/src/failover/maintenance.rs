//! The two maintenance switches as this instance applies them (http-api.md §3.13, §4.14).
//!
//! The switches are cluster-wide: stored in `regina.maintenance` and announced on the
//! `regina_maintenance` channel. Each instance reads them at startup and whenever its LISTEN
//! session (re)connects, and applies every announcement as it arrives.

use std::sync::atomic::{AtomicBool, Ordering};

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

/// The switches in force on this instance.
#[derive(Debug, Default)]
pub(crate) struct Maintenance {
    push: AtomicBool,
    pop: AtomicBool,
}

impl Maintenance {
    /// Whether push maintenance is on.
    pub(crate) fn push_on(&self) -> bool {
        self.push.load(Ordering::SeqCst)
    }

    /// Whether pop maintenance is on.
    pub(crate) fn pop_on(&self) -> bool {
        self.pop.load(Ordering::SeqCst)
    }

    /// Sets a switch; returns whether it changed.
    pub(super) fn set(&self, kind: MaintenanceKind, enabled: bool) -> bool {
        let switch = match kind {
            MaintenanceKind::Push => &self.push,
            MaintenanceKind::Pop => &self.pop,
        };
        switch.swap(enabled, Ordering::SeqCst) != enabled
    }
}
