//! The listener: wakes this instance's waiters for pushes other instances committed, and applies
//! the maintenance switches as they change. Pushes of this instance wake their waiters directly
//! after commit, so their notifications are skipped.

use std::sync::Arc;

use tokio::sync::watch;

use super::{stop_requested, RECONNECT_DELAY};
use crate::db::{ConnectSettings, Db, Notice};
use crate::maintenance::Maintenance;
use crate::waiters::Waiters;

pub(super) async fn run(
    settings: ConnectSettings,
    db: Db,
    waiters: Arc<Waiters>,
    maintenance: Arc<Maintenance>,
    listening: watch::Sender<bool>,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match settings.listen().await {
            Ok((_client, mut notices)) => loop {
                listening.send_replace(true);
                tokio::select! {
                    notice = notices.recv() => match notice {
                        Some(Notice::Push(notice)) if !db.owns_backend(notice.sender_pid) => {
                            let partitions: Vec<&str> = notice.partitions.iter().map(String::as_str).collect();
                            waiters.push_committed(&notice.queue, &partitions);
                        }
                        Some(Notice::Push(_)) => {}
                        Some(Notice::Maintenance { kind, enabled }) => {
                            maintenance.announced(&kind, enabled);
                        }
                        None => break,
                    },
                    _ = stopped.changed() => return,
                }
            },
            Err(error) => tracing::debug!(%error, "push listener cannot connect"),
        }
        listening.send_replace(false);
        if stop_requested(&mut stopped, RECONNECT_DELAY).await {
            return;
        }
    }
}
