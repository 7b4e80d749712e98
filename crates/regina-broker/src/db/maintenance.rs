//! Statements of the maintenance switches.

use tokio_postgres::Client;

use super::error::classify;
use super::{pairs, Db, DbError, Stmt};

/// Reads both maintenance switches.
pub(super) const MAINTENANCE_GET: &str = "select kind, enabled from regina.maintenance_get()";

impl Db {
    /// `regina.maintenance_set(kind, enabled)`: stores a switch and announces it to every
    /// instance.
    pub(crate) async fn maintenance_set(&self, kind: &str, enabled: bool) -> Result<(), DbError> {
        self.query(Stmt::MaintenanceSet, &[&kind, &enabled])
            .await
            .map(drop)
    }

    /// The stored maintenance switches: `(kind, enabled)`.
    pub(crate) async fn maintenance_get(&self) -> Result<Vec<(String, bool)>, DbError> {
        pairs(&self.query(Stmt::MaintenanceGet, &[]).await?)
    }
}

/// The stored maintenance switches, read on a session of its own (the LISTEN session reads
/// them each time it connects, so no announcement missed while disconnected is lost).
pub(crate) async fn maintenance_read(client: &Client) -> Result<Vec<(String, bool)>, DbError> {
    let rows = client
        .query(MAINTENANCE_GET, &[])
        .await
        .map_err(|e| classify(&e))?;
    pairs(&rows)
}
