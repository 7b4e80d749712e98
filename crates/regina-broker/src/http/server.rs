//! The accept loop: one HTTP/1.1 connection task per socket, each reading into a buffer of at
//! most `HTTP_READ_BUFFER_BYTES_MAX`, and a graceful stop that closes idle keep-alive
//! connections, lets every request in flight finish, then returns.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt as _;

use crate::config::HTTP_READ_BUFFER_BYTES_MIN;

/// Pause after an accept error other than a connection's own (file descriptors exhausted…).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop` turns true, then waits for the open connections to
/// end their requests in flight.
pub(crate) async fn run(
    listener: TcpListener,
    router: Router,
    read_buffer_bytes_max: usize,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(read_buffer_bytes_max.max(HTTP_READ_BUFFER_BYTES_MIN));
    // Every connection task holds a receiver; the stop waits until all are dropped.
    let (open, closed) = watch::channel(());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) if connection_error(&error) => continue,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            () = stopping(&mut stop) => break,
        };
        // Small responses go out at once on keep-alive connections (no Nagle delay behind an
        // unacknowledged segment).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
        let service = router
            .clone()
            .map_request(|request: Request<Incoming>| request.map(Body::new));
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let mut stop = stop.clone();
        let closed = closed.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => finished(result),
                () = stopping(&mut stop) => {
                    connection.as_mut().graceful_shutdown();
                    finished(connection.await);
                }
            }
            drop(closed);
        });
    }
    drop(listener);
    drop(closed);
    open.closed().await;
    Ok(())
}

/// Resolves once `stop` is true (at once if it already is, or if its sender is gone).
async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

fn finished(result: hyper::Result<()>) {
    if let Err(error) = result {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// Errors that belong to one connection (it went away before being accepted), not to the
/// listener.
fn connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
