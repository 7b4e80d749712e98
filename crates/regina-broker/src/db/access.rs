//! The lookups of queue scopes (http-api.md §1.6): which queue a partition or a lease belongs to.
//! Only requests of tokens with queue scopes make them, so unscoped traffic never pays for them.

use std::collections::HashMap;

use super::DbError;
use crate::db::Db;

fn column<T>(row: &tokio_postgres::Row, index: usize) -> Result<T, DbError>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    row.try_get(index)
        .map_err(|e| DbError::Internal(e.to_string()))
}

impl Db {
    /// The queue name of each existing partition among `partition_ids` (canonical UUID text),
    /// keyed by that text.
    pub(crate) async fn partition_queues(
        &self,
        partition_ids: &[String],
    ) -> Result<HashMap<String, String>, DbError> {
        let sql = "select p.uuid::text, q.name from regina.partitions p \
                   join regina.queues q on q.id = p.queue_id \
                   where p.uuid = any($1::text[]::uuid[])";
        let rows = self.query_unprepared(sql, &[&partition_ids]).await?;
        rows.iter()
            .map(|row| Ok((column(row, 0)?, column(row, 1)?)))
            .collect()
    }

    /// The queues whose partitions a lease (UUID text) holds or held.
    pub(crate) async fn lease_queues(&self, lease_id: &str) -> Result<Vec<String>, DbError> {
        let sql = "select distinct q.name from regina.cursors c \
                   join regina.queues q on q.id = c.queue_id \
                   where c.lease_id = $1::text::uuid";
        let rows = self.query_unprepared(sql, &[&lease_id]).await?;
        rows.iter().map(|row| column(row, 0)).collect()
    }
}
