//! `GET /api/v1/dlq` (http-api.md §3.9): dead letters, newest failure first, filtered and paged;
//! only those of queues the caller's scopes allow (http-api.md §1.6).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::access::Auth;
use super::contract::params::{Offset, PageLimit, QueryInstant, QueryName};
use super::contract::{Contract, Params};
use super::error::{json_response, ApiError};
use crate::engine::json::to_json;
use crate::state::AppState;

/// Query of `GET /api/v1/dlq`, and the `regina.dlq_list` argument: the filters given (absent
/// ones null), timestamps normalised.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DlqQuery {
    /// Only this queue
    #[serde(default)]
    queue: QueryName,
    /// Only this group
    #[serde(default)]
    consumer_group: QueryName,
    /// Only this partition
    #[serde(default)]
    partition: QueryName,
    /// Oldest failedAt
    #[serde(default)]
    from: QueryInstant,
    /// Newest failedAt
    #[serde(default)]
    to: QueryInstant,
    /// Page size
    #[serde(default)]
    limit: PageLimit<100, 1_000>,
    /// Rows skipped before the page
    #[serde(default)]
    offset: Offset,
}

impl Contract for DlqQuery {}

pub(super) async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Params(query): Params<DlqQuery>,
) -> Result<Response, ApiError> {
    let request = auth.scoped(to_json(&query));
    let body = state.get().db.dlq_list(&request).await?;
    let body = state.get().encryption.open_messages(body)?;
    Ok(json_response(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::http::contract::{decode_query, Limits};

    fn dlq_query(query: &str) -> Result<String, ApiError> {
        decode_query::<DlqQuery>(Some(query), Limits::of(&Config::default())).map(|q| to_json(&q))
    }

    #[test]
    fn filters_and_paging_are_passed_normalised() {
        let value: serde_json::Value = serde_json::from_str(
            &dlq_query("queue=q&from=2026-05-10&limit=5&offset=10&unknown=1").expect("valid"),
        )
        .expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"queue":"q","consumerGroup":null,"partition":null,
                               "from":"2026-05-10T00:00:00.000000Z","to":null,"limit":5,"offset":10})
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        for bad in [
            "limit=0",
            "limit=1001",
            "offset=-1",
            "from=yesterday",
            "queue=%00",
        ] {
            assert!(dlq_query(bad).is_err(), "{bad}");
        }
    }
}
