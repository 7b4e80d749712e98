//! A keep-alive HTTP/1.1 client connection to the broker (one per virtual user), and the health
//! wait.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// A keep-alive HTTP/1.1 connection.
pub struct HttpConn {
    base: Arc<str>,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl HttpConn {
    /// A connection to the broker at `base` (`http://host:port`), opened on first use.
    pub fn new(base: &str) -> HttpConn {
        HttpConn {
            base: Arc::from(base.trim_end_matches('/')),
            sender: None,
        }
    }

    async fn connect(&mut self) -> anyhow::Result<&mut SendRequest<Full<Bytes>>> {
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            let authority = self
                .base
                .strip_prefix("http://")
                .ok_or_else(|| anyhow!("only http:// URLs are supported"))?
                .to_owned();
            let stream = TcpStream::connect(&authority)
                .await
                .with_context(|| format!("connect {authority}"))?;
            stream.set_nodelay(true)?;
            let (sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            self.sender = Some(sender);
        }
        self.sender.as_mut().ok_or_else(|| anyhow!("no connection"))
    }

    /// Sends one request; returns status and body. A transport error drops the connection (the
    /// next request opens a new one). A request the connection closed under before writing it
    /// (the broker may close a connection after answering, e.g. a body over its limit) is sent
    /// again once on a new connection, as HTTP clients do.
    ///
    /// # Errors
    /// Connecting, writing or reading failed.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<(u16, Bytes)> {
        let authority = self.base.trim_start_matches("http://").to_owned();
        let mut builder = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", authority);
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let mut request = builder.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
        let mut resent = false;
        loop {
            let sender = self.connect().await?;
            let sent = match sender.ready().await {
                Ok(()) => sender.try_send_request(request).await,
                Err(_) if !resent => {
                    self.sender = None;
                    resent = true;
                    continue;
                }
                Err(error) => {
                    self.sender = None;
                    return Err(error.into());
                }
            };
            let response = match sent {
                Ok(response) => response,
                Err(mut unsent) => {
                    self.sender = None;
                    match unsent.take_message() {
                        Some(message) if !resent => {
                            request = message;
                            resent = true;
                            continue;
                        }
                        _ => return Err(unsent.into_error().into()),
                    }
                }
            };
            let status = response.status().as_u16();
            return match response.into_body().collect().await {
                Ok(body) => Ok((status, body.to_bytes())),
                Err(error) => {
                    self.sender = None;
                    Err(error.into())
                }
            };
        }
    }
}

/// Waits until `GET /health` answers 200.
///
/// # Errors
/// Not healthy within `within`.
pub async fn wait_healthy(base: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + within;
    let mut conn = HttpConn::new(base);
    loop {
        if let Ok((200, _)) = conn.send("GET", "/health", None).await {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("broker at {base} not healthy within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
