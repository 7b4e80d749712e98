//! The listener: wakes this instance's waiters for pushes other instances committed, and applies
//! the maintenance switches as they change. Pushes of this instance wake their waiters directly
//! after commit, so their notifications are skipped.
//!
//! It also tells the pool whether anyone else listens, so that an instance alone on its database
//! does not announce its pushes (each announcement is a PostgreSQL transaction and a wake-up of
//! its own listen session, about a sixth of PostgreSQL's CPU per message when each push is one
//! message): it looks for other instances' listen sessions when it connects and every
//! [`PEERS_CHECK`], and a listen session that starts says so on `regina_peer`, which turns
//! announcing on at once. Until it knows, and whenever its own session is down, it announces.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{stop_requested, RECONNECT_DELAY};
use crate::db::{ConnectSettings, Db, Notice};
use crate::maintenance::Maintenance;
use crate::waiters::Waiters;

/// How often the listener looks for other instances' listen sessions (one that starts is heard
/// of at once; this notices those that ended).
const PEERS_CHECK: Duration = Duration::from_secs(5);

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
            Ok(mut session) => {
                listening.send_replace(true);
                let mut check = tokio::time::interval(PEERS_CHECK);
                loop {
                    tokio::select! {
                        _ = check.tick() => match session.peers_listening().await {
                            Ok(peers) => db.set_announcing(peers),
                            Err(error) => {
                                tracing::debug!(%error, "listen session failed");
                                break;
                            }
                        },
                        notice = session.notices.recv() => match notice {
                            Some(Notice::Push(notice)) if !db.owns_backend(notice.sender_pid) => {
                                let partitions: Vec<&str> = notice.partitions.iter().map(String::as_str).collect();
                                waiters.push_committed(&notice.queue, &partitions);
                            }
                            Some(Notice::Push(_)) => {}
                            Some(Notice::Maintenance { kind, enabled }) => {
                                maintenance.announced(&kind, enabled);
                            }
                            Some(Notice::Peer { sender_pid }) => {
                                if sender_pid != session.pid {
                                    db.set_announcing(true);
                                }
                            }
                            None => break,
                        },
                        _ = stopped.changed() => return,
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "push listener cannot connect"),
        }
        db.set_announcing(true);
        listening.send_replace(false);
        if stop_requested(&mut stopped, RECONNECT_DELAY).await {
            return;
        }
    }
}
