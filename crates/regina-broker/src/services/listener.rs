//! The push listener: wakes this instance's waiters for pushes other instances committed. Pushes
//! of this instance wake their waiters directly after commit, so their notifications are skipped.

use std::sync::Arc;

use tokio::sync::watch;

use super::{stop_requested, RECONNECT_DELAY};
use crate::db::{ConnectSettings, Db};
use crate::waiters::Waiters;

pub(super) async fn run(
    settings: ConnectSettings,
    db: Db,
    waiters: Arc<Waiters>,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match settings.listen_pushes().await {
            Ok((_client, mut notices)) => loop {
                tokio::select! {
                    notice = notices.recv() => match notice {
                        Some(notice) if !db.owns_backend(notice.sender_pid) => {
                            let partitions: Vec<&str> = notice.partitions.iter().map(String::as_str).collect();
                            waiters.push_committed(&notice.queue, &partitions);
                        }
                        Some(_) => {}
                        None => break,
                    },
                    _ = stopped.changed() => return,
                }
            },
            Err(error) => tracing::debug!(%error, "push listener cannot connect"),
        }
        if stop_requested(&mut stopped, RECONNECT_DELAY).await {
            return;
        }
    }
}
