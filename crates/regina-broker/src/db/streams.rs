//! The SQL of the streams routes (streams-api.md): registration (rare, not prepared), state
//! reads, the cycle and the source queue of a query (hot, prepared), and the dashboard's listing.

use uuid::Uuid;

use super::{ack_row, column, single_text, AckRow, DbError, Stmt};
use crate::db::Db;

/// `regina.stream_cycle`: the columns of `regina.transaction`, then the row's kind.
pub(super) const CYCLE: &str = "select idx, result::text, wake_queue, wake_group, queue_name, \
     acked, dead_lettered, leases_expired, kind \
     from regina.stream_cycle($1::text::jsonb, $2::text::json)";

/// One row of `regina.stream_cycle`.
#[derive(Debug)]
pub(crate) struct CycleRow {
    /// `push` (one pushed item), `ack` (the source ack) or `cycle` (the summary, last).
    pub(crate) kind: String,
    /// The result, wake-up and metrics columns, as for a transaction.
    pub(crate) row: AckRow,
}

impl Db {
    /// `regina.stream_register(request)`: the success body, or the mismatch refusal
    /// (`success: false`, nothing changed).
    pub(crate) async fn stream_register(&self, request: &str) -> Result<String, DbError> {
        let sql = "select regina.stream_register($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&request]).await?)
    }

    /// `regina.stream_state_get(request)`: the response body.
    pub(crate) async fn stream_state_get(&self, request: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::StreamStateGet, &[&request]).await?)
    }

    /// The source queue of a query, `None` for an unknown query.
    pub(crate) async fn stream_source_queue(
        &self,
        query_id: Uuid,
    ) -> Result<Option<String>, DbError> {
        let rows = self.query(Stmt::StreamSourceQueue, &[&query_id]).await?;
        match rows.first() {
            Some(row) => column(row, 0),
            None => Ok(None),
        }
    }

    /// `regina.stream_cycle(request, payloads)`: every row, all committed; or
    /// [`DbError::TransactionAborted`] with nothing applied.
    pub(crate) async fn stream_cycle(
        &self,
        request: &str,
        payloads: &str,
    ) -> Result<Vec<CycleRow>, DbError> {
        let rows = self
            .query(Stmt::StreamCycle, &[&request, &payloads])
            .await?;
        rows.iter()
            .map(|row| {
                Ok(CycleRow {
                    kind: column(row, 8)?,
                    row: ack_row(row)?,
                })
            })
            .collect()
    }

    /// `regina.stream_queries_list(query)`: one page of the registered queries (dashboard).
    pub(crate) async fn stream_queries_list(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.stream_queries_list($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }
}
