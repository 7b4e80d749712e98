//! The SQL of the administration endpoints (http-api.md §3.8, §3.9): resource listings, queue
//! delete and clear, message browsing and message administration. These calls are rare, so their
//! statements are not prepared ahead (see [`Db::query_unprepared`]); each returns the response
//! body as JSON text, built by the SQL function (sql/README.md).

use tokio_postgres::Row;

use super::{single_text, DbError};
use crate::db::Db;

/// The response body of a call, or `None` when the function answered null (unknown resource).
fn optional_text(rows: &[Row]) -> Result<Option<String>, DbError> {
    match rows.first() {
        None => Ok(None),
        Some(row) => row.try_get(0).map_err(|e| DbError::Internal(e.to_string())),
    }
}

/// What a queue (or partition) clear did.
#[derive(Debug)]
pub(crate) enum Cleared {
    /// The response body, and the groups whose leases ended.
    Done {
        body: String,
        wake_groups: Vec<String>,
    },
    /// The queue has no partition of that name: nothing was cleared.
    PartitionMissing,
}

/// A body plus the waiters to wake that some functions return beside it.
fn text_and<T>(rows: &[Row]) -> Result<Option<(String, T)>, DbError>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let body: String = row
        .try_get(0)
        .map_err(|e| DbError::Internal(e.to_string()))?;
    let extra: T = row
        .try_get(1)
        .map_err(|e| DbError::Internal(e.to_string()))?;
    Ok(Some((body, extra)))
}

impl Db {
    /// `regina.queues_list(query)`: the queue listing body.
    pub(crate) async fn queues_list(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.queues_list($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.queue_detail(query)`: the queue body, `None` for an unknown queue.
    pub(crate) async fn queue_detail(&self, query: &str) -> Result<Option<String>, DbError> {
        let sql = "select regina.queue_detail($1::text::jsonb)::text";
        optional_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.queue_delete(queue)`: the delete body (idempotent).
    pub(crate) async fn queue_delete(&self, queue: &str) -> Result<String, DbError> {
        let sql = "select regina.queue_delete($1::text)::text";
        single_text(&self.query_unprepared(sql, &[&queue]).await?)
    }

    /// `regina.queue_clear(queue)`: the clear body and the groups whose leases ended, `None`
    /// for an unknown queue.
    pub(crate) async fn queue_clear(
        &self,
        queue: &str,
        partition: Option<&str>,
    ) -> Result<Option<Cleared>, DbError> {
        let sql = "select result::text, wake_groups, partition_missing \
                   from regina.queue_clear($1::text, $2::text)";
        let rows = self.query_unprepared(sql, &[&queue, &partition]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let column = |e: tokio_postgres::Error| DbError::Internal(e.to_string());
        if row.try_get::<_, bool>(2).map_err(column)? {
            return Ok(Some(Cleared::PartitionMissing));
        }
        Ok(Some(Cleared::Done {
            body: row.try_get(0).map_err(column)?,
            wake_groups: row.try_get(1).map_err(column)?,
        }))
    }

    /// `regina.partitions_list(query)`: the partition listing body.
    pub(crate) async fn partitions_list(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.partitions_list($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.labels_list(label, scopes)`: namespaces (`"namespace"`) or tasks (`"task"`) of
    /// the queues the scopes allow (`None`: every queue).
    pub(crate) async fn labels_list(
        &self,
        label: &str,
        scopes: Option<&[String]>,
    ) -> Result<String, DbError> {
        let sql = "select regina.labels_list($1::text, null, $2::text[])::text";
        single_text(&self.query_unprepared(sql, &[&label, &scopes]).await?)
    }

    /// `regina.messages_list(query)`: the message listing body.
    pub(crate) async fn messages_list(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.messages_list($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.message_detail(partitionId, transactionId)`: `None` for an unknown message.
    pub(crate) async fn message_detail(
        &self,
        partition_id: &str,
        transaction_id: &str,
    ) -> Result<Option<String>, DbError> {
        let sql = "select regina.message_detail($1::text, $2::text)::text";
        optional_text(
            &self
                .query_unprepared(sql, &[&partition_id, &transaction_id])
                .await?,
        )
    }

    /// `regina.message_delete(partitionId, transactionId)`: success or failure body.
    pub(crate) async fn message_delete(
        &self,
        partition_id: &str,
        transaction_id: &str,
    ) -> Result<String, DbError> {
        let sql = "select regina.message_delete($1::text, $2::text)::text";
        single_text(
            &self
                .query_unprepared(sql, &[&partition_id, &transaction_id])
                .await?,
        )
    }

    /// `regina.message_requeue(partitionId, transactionId, group)`: success or failure body,
    /// and the queue whose waiters should retry when something was requeued.
    pub(crate) async fn message_requeue(
        &self,
        partition_id: &str,
        transaction_id: &str,
        group: Option<&str>,
    ) -> Result<(String, Option<String>), DbError> {
        let sql = "select result::text, wake_queue \
                   from regina.message_requeue($1::text, $2::text, $3::text)";
        text_and(
            &self
                .query_unprepared(sql, &[&partition_id, &transaction_id, &group])
                .await?,
        )?
        .ok_or_else(|| DbError::Internal("no row returned".to_owned()))
    }

    /// `regina.message_dead_letter(partitionId, transactionId, group, error)`: success or
    /// failure body.
    pub(crate) async fn message_dead_letter(
        &self,
        partition_id: &str,
        transaction_id: &str,
        group: &str,
        error: &str,
    ) -> Result<String, DbError> {
        let sql = "select regina.message_dead_letter($1::text, $2::text, $3::text, $4::text)::text";
        single_text(
            &self
                .query_unprepared(sql, &[&partition_id, &transaction_id, &group, &error])
                .await?,
        )
    }
}
