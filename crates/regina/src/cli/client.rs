//! The HTTP side of the client verbs: one broker, its base URL and token, JSON answers.

use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderMap, AUTHORIZATION};
use reqwest::{Method, RequestBuilder, StatusCode, Url};
use serde_json::Value;

use super::error::CliError;
use super::Connection;

/// How long a connection to the broker may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an ordinary request may take (long-polls add their wait, [`long_poll_timeout`]).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Everything but the unreserved characters of RFC 3986 is escaped in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A broker reached over HTTP(S).
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// One answer of the broker: status, headers and body text.
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// Body, verbatim (empty for `204`).
    pub text: String,
}

impl Client {
    /// A client for the broker named by `connection`.
    ///
    /// # Errors
    /// `Usage` when the URL is not an absolute `http`/`https` URL.
    pub fn new(connection: &Connection) -> Result<Client, CliError> {
        let url = Url::parse(&connection.server)
            .map_err(|e| CliError::Usage(format!("--server {}: {e}", connection.server)))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(CliError::Usage(format!(
                "--server {}: expected http://HOST[:PORT] or https://HOST[:PORT]",
                connection.server
            )));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(CliError::Usage(format!(
                "--server {}: the base URL takes no query or fragment",
                connection.server
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("regina/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Usage(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base: url.as_str().trim_end_matches('/').to_owned(),
            token: connection.token.clone().filter(|t| !t.is_empty()),
        })
    }

    /// A request for `path`, whose segments are percent-encoded one by one, with the token and
    /// the ordinary timeout.
    ///
    /// # Errors
    /// `Usage` when a segment is empty (a name the broker could never match).
    pub fn request(&self, method: Method, path: &[&str]) -> Result<RequestBuilder, CliError> {
        let mut url = self.base.clone();
        for segment in path {
            if segment.is_empty() {
                return Err(CliError::Usage(
                    "names and ids in a path must not be empty".to_owned(),
                ));
            }
            url.push('/');
            url.extend(utf8_percent_encode(segment, SEGMENT));
        }
        let mut request = self.http.request(method, url).timeout(REQUEST_TIMEOUT);
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        Ok(request)
    }

    /// Sends `request` and reads the whole answer, whatever its status.
    ///
    /// # Errors
    /// `Unreachable` or `Timeout` when no complete answer arrived.
    pub async fn send(&self, request: RequestBuilder) -> Result<Reply, CliError> {
        let request = request
            .build()
            .map_err(|e| CliError::Usage(format!("cannot build the request: {e}")))?;
        let url = request.url().to_string();
        let timeout = request.timeout().copied().unwrap_or(REQUEST_TIMEOUT);
        let network = |e: reqwest::Error| {
            if e.is_timeout() {
                CliError::Timeout {
                    url: url.clone(),
                    seconds: timeout.as_secs(),
                }
            } else {
                CliError::Unreachable {
                    url: url.clone(),
                    reason: causes(&e),
                }
            }
        };
        let response = self.http.execute(request).await.map_err(network)?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.map_err(network)?;
        Ok(Reply {
            status,
            headers,
            text,
        })
    }

    /// Sends `request` and returns its answer when the status is a success.
    ///
    /// # Errors
    /// As [`Client::send`]; `Server` for an error status, with the broker's `{error, code}`.
    pub async fn send_ok(&self, request: RequestBuilder) -> Result<Reply, CliError> {
        let reply = self.send(request).await?;
        if reply.status.is_client_error() || reply.status.is_server_error() {
            return Err(reply.error());
        }
        Ok(reply)
    }
}

impl Reply {
    /// The body parsed as JSON.
    ///
    /// # Errors
    /// `InvalidResponse` when it is not JSON.
    pub fn json(&self) -> Result<Value, CliError> {
        serde_json::from_str(&self.text).map_err(|e| {
            CliError::InvalidResponse(format!("status {}, body is not JSON: {e}", self.status))
        })
    }

    /// A header's value, when present and readable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// This (error) answer as an error: the broker's `{error, code}` when the body has them,
    /// else the status and the start of the body (a proxy's error page, say).
    pub fn error(&self) -> CliError {
        let status = self.status.as_u16();
        let body: Option<Value> = serde_json::from_str(&self.text).ok();
        match body
            .as_ref()
            .and_then(|b| Some((b["error"].as_str()?, b["code"].as_str()?)))
        {
            Some((error, code)) => CliError::Server {
                status,
                error: error.to_owned(),
                code: code.to_owned(),
                body: Some(self.text.trim().to_owned()),
            },
            None => {
                let start: String = self.text.chars().take(200).collect();
                CliError::Server {
                    status,
                    error: format!("HTTP {}: {}", self.status, start.trim()),
                    code: "invalid_response".to_owned(),
                    body: None,
                }
            }
        }
    }
}

/// The error and its causes on one line, without repeats (reqwest nests the same text).
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// Request timeout of a long-poll of `wait_ms`: the wait plus the ordinary allowance.
pub fn long_poll_timeout(wait_ms: u64) -> Duration {
    Duration::from_millis(wait_ms).saturating_add(REQUEST_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(server: &str) -> Result<Client, CliError> {
        Client::new(&Connection {
            server: server.to_owned(),
            token: None,
            json: false,
        })
    }

    fn url(client: &Client, path: &[&str]) -> String {
        let request = client
            .request(Method::GET, path)
            .ok()
            .and_then(|r| r.build().ok());
        request.map(|r| r.url().to_string()).unwrap_or_default()
    }

    #[test]
    fn path_segments_are_percent_encoded_one_by_one() {
        let Ok(c) = client("http://127.0.0.1:6632") else {
            panic!("a valid server URL")
        };
        assert_eq!(
            url(
                &c,
                &[
                    "api",
                    "v1",
                    "pop",
                    "queue",
                    "a b/c?d",
                    "partition",
                    "é.x-_~"
                ]
            ),
            "http://127.0.0.1:6632/api/v1/pop/queue/a%20b%2Fc%3Fd/partition/%C3%A9.x-_~"
        );
    }

    #[test]
    fn a_base_url_keeps_its_path_prefix() {
        let Ok(c) = client("https://mq.example.com/regina/") else {
            panic!("a valid server URL")
        };
        assert_eq!(
            url(&c, &["api", "v1", "dlq"]),
            "https://mq.example.com/regina/api/v1/dlq"
        );
    }

    #[test]
    fn unusable_server_urls_and_empty_names_are_usage_errors() {
        for server in ["ftp://host", "localhost:6632", "http://h/?x=1", "not a url"] {
            assert!(
                matches!(client(server), Err(CliError::Usage(_))),
                "{server} accepted"
            );
        }
        let Ok(c) = client("http://127.0.0.1:6632") else {
            panic!("a valid server URL")
        };
        assert!(matches!(
            c.request(Method::GET, &["api", "v1", "pop", "queue", ""]),
            Err(CliError::Usage(_))
        ));
    }
}
