//! What can go wrong in a client verb, each case with a stable code for `--json` output.

use serde_json::{json, Value};

/// A failed client verb. Every case prints as `{error, code}` (http-api.md §1.3); the codes of the
/// broker's registry (http-api.md §2.3) pass through unchanged, and the client adds its own:
/// `usage`, `unreachable`, `timeout`, `invalid_response` and `io`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line or its input cannot be used (nothing was sent for the failing part).
    #[error("{0}")]
    Usage(String),
    /// The broker answered with an error, for the request or for one of its items (in-band).
    #[error("{error}")]
    Server {
        /// HTTP status of the answer (200 for an in-band item failure).
        status: u16,
        /// The broker's `error` text.
        error: String,
        /// The broker's `code`.
        code: String,
        /// The broker's error body, verbatim, when it was a JSON object.
        body: Option<String>,
    },
    /// No connection to the broker could be made or kept.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL requested.
        url: String,
        /// Why, innermost cause last.
        reason: String,
    },
    /// The broker did not answer in time.
    #[error("no answer from {url} within {seconds} s")]
    Timeout {
        /// The URL requested.
        url: String,
        /// The time allowed.
        seconds: u64,
    },
    /// The broker answered something this client cannot read.
    #[error("unexpected answer from the broker: {0}")]
    InvalidResponse(String),
    /// Reading the input or writing the output failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl CliError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &str {
        match self {
            CliError::Usage(_) => "usage",
            CliError::Server { code, .. } => code,
            CliError::Unreachable { .. } => "unreachable",
            CliError::Timeout { .. } => "timeout",
            CliError::InvalidResponse(_) => "invalid_response",
            CliError::Io(_) => "io",
        }
    }

    /// The error as one line of JSON: the broker's own body when there is one, else
    /// `{error, code}`.
    pub fn to_json_line(&self) -> String {
        match self {
            CliError::Server {
                body: Some(body), ..
            } if !body.contains('\n') => body.clone(),
            _ => json!({"error": self.to_string(), "code": self.code()}).to_string(),
        }
    }

    /// The error for people: the text, then the HTTP status (for broker errors) and the code.
    pub fn to_human_line(&self) -> String {
        match self {
            CliError::Server {
                status,
                error,
                code,
                ..
            } if *status >= 400 => format!("{error} ({status} {code})"),
            _ => format!("{self} ({})", self.code()),
        }
    }

    /// An in-band failure reported in one item of an answer (`{error, code, …}`).
    pub fn from_item(status: u16, item: &Value) -> CliError {
        let error = item["error"]
            .as_str()
            .unwrap_or("the broker rejected the item");
        let code = item["code"].as_str().unwrap_or("internal");
        CliError::Server {
            status,
            error: error.to_owned(),
            code: code.to_owned(),
            body: Some(json!({"error": error, "code": code}).to_string()),
        }
    }

    /// Whether writing to stdout failed because the reader went away (`regina tail | head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_errors_print_verbatim_as_json_and_with_status_for_people() {
        let body = r#"{"error":"Queue not found","code":"queue_not_found"}"#;
        let error = CliError::Server {
            status: 404,
            error: "Queue not found".to_owned(),
            code: "queue_not_found".to_owned(),
            body: Some(body.to_owned()),
        };
        assert_eq!(error.to_json_line(), body);
        assert_eq!(
            error.to_human_line(),
            "Queue not found (404 queue_not_found)"
        );
    }

    #[test]
    fn client_errors_carry_their_own_codes() {
        let error = CliError::Usage("no payload".to_owned());
        assert_eq!(
            error.to_json_line(),
            r#"{"code":"usage","error":"no payload"}"#
        );
        assert_eq!(error.to_human_line(), "no payload (usage)");
        let item = json!({"index": 0, "success": false, "error": "Invalid or expired lease",
                          "code": "lease_expired"});
        let error = CliError::from_item(200, &item);
        assert_eq!(error.code(), "lease_expired");
        assert_eq!(
            error.to_human_line(),
            "Invalid or expired lease (lease_expired)"
        );
    }
}
