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
    /// Opens a session listening on both channels. The notices arrive on the receiver until
    /// the session ends (then the receiver closes), starting with the current maintenance
    /// switches; keep the client alive meanwhile.
    ///
    /// # Errors
    /// [`DbError::Unavailable`] when the session cannot be opened.
    pub(crate) async fn listen(
        &self,
    ) -> Result<(Client, mpsc::UnboundedReceiver<Notice>), DbError> {
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
                    "listen {PUSH_CHANNEL}; listen {MAINTENANCE_CHANNEL}"
                ))
                .await
                .map_err(|e| classify(&e))?;
            // Read after LISTEN: a switch changed in between is both read and announced.
            for (kind, enabled) in super::maintenance::maintenance_read(&client).await? {
                let _ = sender.send(Notice::Maintenance { kind, enabled });
            }
            Ok::<_, DbError>((client, receiver))
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
