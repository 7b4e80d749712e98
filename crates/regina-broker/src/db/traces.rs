//! The SQL of the traces endpoints (http-api.md §3.11). Each function answers the response body as
//! JSON text (sql/functions/84_traces.sql). Recording may run once per processed message, so its
//! statement is prepared per session; the readings are rare and are not.

use super::{single_text, DbError, Stmt};
use crate::db::Db;

impl Db {
    /// `regina.trace_record(request, data)`: `{success: true, traceId}`, or `success: false`
    /// with `message_not_found` or `forbidden`.
    pub(crate) async fn trace_record(&self, request: &str, data: &str) -> Result<String, DbError> {
        single_text(&self.query(Stmt::TraceRecord, &[&request, &data]).await?)
    }

    /// `regina.traces_by_message(query)`: a message's events, oldest first.
    pub(crate) async fn traces_by_message(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.traces_by_message($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.traces_by_name(query)`: one page of a name's events, newest first, with sealed
    /// payloads still marked (the caller decrypts them).
    pub(crate) async fn traces_by_name(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.traces_by_name($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }

    /// `regina.trace_names_list(query)`: one page of trace names, most recently seen first.
    pub(crate) async fn trace_names_list(&self, query: &str) -> Result<String, DbError> {
        let sql = "select regina.trace_names_list($1::text::jsonb)::text";
        single_text(&self.query_unprepared(sql, &[&query]).await?)
    }
}
