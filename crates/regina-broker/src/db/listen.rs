//! The LISTEN session that carries notifications between broker instances: committed pushes on
//! `regina_push` (http-api.md §4.9; brokers announce theirs, see `engine::announce`, and so does
//! `regina.push(…, i_notify => true)` for pushes made from SQL in other transactions), and the
//! maintenance switches on `regina_maintenance` (http-api.md §4.14; `regina.maintenance_set`).

use std::future::poll_fn;

use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::error::{classify, DbError};
use super::ConnectSettings;

/// Notification channel of committed pushes.
const PUSH_CHANNEL: &str = "regina_push";
/// Notification channel of the maintenance switches.
const MAINTENANCE_CHANNEL: &str = "regina_maintenance";
/// Notification channel on which a listen session says it started.
const PEER_CHANNEL: &str = "regina_peer";
/// `application_name` role of the listen sessions: how instances find each other's.
pub(crate) const LISTEN_ROLE: &str = "listen";

/// One notification of the LISTEN session.
#[derive(Debug)]
pub(crate) enum Notice {
    /// Another session committed a push.
    Push(PushNotice),
    /// A maintenance switch is (now) in this position. The current positions are also sent
    /// each time the session connects.
    Maintenance {
        /// `push` or `pop`.
        kind: String,
        /// On or off.
        enabled: bool,
    },
    /// A listen session started (another instance, unless the pid is this session's own).
    Peer {
        /// Backend of the session that started.
        sender_pid: i32,
    },
}

/// An open listen session.
pub(crate) struct ListenSession {
    /// Keep it alive while reading the notices.
    pub(crate) client: Client,
    /// The notices, until the session ends (then the receiver closes).
    pub(crate) notices: mpsc::UnboundedReceiver<Notice>,
    /// This session's backend.
    pub(crate) pid: i32,
}

impl ListenSession {
    /// Whether the listen session of another broker instance is open on this database (they are
    /// named `regina-listen-…`; see [`LISTEN_ROLE`]).
    ///
    /// # Errors
    /// [`DbError`] when the session fails.
    pub(crate) async fn peers_listening(&self) -> Result<bool, DbError> {
        let row = self
            .client
            .query_one(
                "select exists (select 1 from pg_stat_activity
                                where datname = current_database() and pid <> pg_backend_pid()
                                  and application_name like 'regina-' || $1 || '-%')",
                &[&LISTEN_ROLE],
            )
            .await
            .map_err(|e| classify(&e))?;
        Ok(row.get(0))
    }
}

#[derive(Debug, Deserialize)]
struct MaintenanceNotice {
    kind: String,
    enabled: bool,
}

/// One committed push, as another session announced it.
#[derive(Debug, Deserialize)]
pub(crate) struct PushNotice {
    /// Queue written.
    pub(crate) queue: String,
    /// Partitions written.
    pub(crate) partitions: Vec<String>,
    /// Backend that sent it (to skip this instance's own pushes).
    #[serde(skip)]
    pub(crate) sender_pid: i32,
}

impl ConnectSettings {
    /// Opens a session listening on the three channels, and says on `regina_peer` that it
    /// started. The notices arrive until the session ends, starting with the current maintenance
    /// switches.
    ///
    /// # Errors
    /// [`DbError::Unavailable`] when the session cannot be opened.
    pub(crate) async fn listen(&self) -> Result<ListenSession, DbError> {
        let connecting = async {
            let (client, mut connection) =
                self.pg().connect(NoTls).await.map_err(|e| classify(&e))?;
            let (sender, receiver) = mpsc::unbounded_channel();
            let notices = sender.clone();
            tokio::spawn(async move {
                while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                    match message {
                        Ok(AsyncMessage::Notification(n)) => {
                            let Some(notice) = notice(&n) else { continue };
                            if notices.send(notice).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        Err(error) => {
                            tracing::warn!(%error, "listen session ended");
                            return;
                        }
                    }
                }
            });
            client
                .batch_execute(&format!(
                    "listen {PUSH_CHANNEL}; listen {MAINTENANCE_CHANNEL}; listen {PEER_CHANNEL}; \
                     notify {PEER_CHANNEL}"
                ))
                .await
                .map_err(|e| classify(&e))?;
            // Read after LISTEN: a switch changed in between is both read and announced.
            for (kind, enabled) in super::maintenance::maintenance_read(&client).await? {
                let _ = sender.send(Notice::Maintenance { kind, enabled });
            }
            let pid: i32 = client
                .query_one("select pg_backend_pid()", &[])
                .await
                .map_err(|e| classify(&e))?
                .get(0);
            Ok::<_, DbError>(ListenSession {
                client,
                notices: receiver,
                pid,
            })
        };
        match tokio::time::timeout(self.connect_timeout(), connecting).await {
            Ok(result) => result.map_err(|e| DbError::Unavailable(e.to_string())),
            Err(_) => Err(DbError::Unavailable("connect timed out".to_owned())),
        }
    }
}

/// The notice a notification carries, if it is readable.
fn notice(n: &tokio_postgres::Notification) -> Option<Notice> {
    let parsed = match n.channel() {
        MAINTENANCE_CHANNEL => {
            serde_json::from_str::<MaintenanceNotice>(n.payload()).map(|m| Notice::Maintenance {
                kind: m.kind,
                enabled: m.enabled,
            })
        }
        PEER_CHANNEL => {
            return Some(Notice::Peer {
                sender_pid: n.process_id(),
            })
        }
        _ => serde_json::from_str::<PushNotice>(n.payload()).map(|p| {
            Notice::Push(PushNotice {
                sender_pid: n.process_id(),
                ..p
            })
        }),
    };
    match parsed {
        Ok(notice) => Some(notice),
        Err(error) => {
            tracing::warn!(%error, channel = n.channel(), payload = n.payload(), "unreadable notification");
            None
        }
    }
}
