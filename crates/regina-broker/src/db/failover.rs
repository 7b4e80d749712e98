//! Statements of the failover buffer.

use super::{indexed, Db, DbError, IndexedRow, Stmt};

impl Db {
    /// `regina.failover_replay(items, payloads)`: one row per buffered item, in one transaction.
    pub(crate) async fn failover_replay(
        &self,
        items: &str,
        payloads: &str,
    ) -> Result<Vec<IndexedRow>, DbError> {
        let rows = self
            .query(Stmt::FailoverReplay, &[&items, &payloads])
            .await?;
        rows.iter().map(indexed).collect()
    }
}
