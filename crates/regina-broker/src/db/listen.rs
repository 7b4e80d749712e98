//! The LISTEN session that carries push notifications between broker instances (spec §4.9):
//! brokers announce their committed pushes on `regina_push` (see `engine::announce`), and so does
//! `regina.push(…, i_notify => true)` for pushes made from SQL in other transactions.

use std::future::poll_fn;

use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::error::{classify, DbError};
use super::ConnectSettings;

/// Notification channel of committed pushes.
const PUSH_CHANNEL: &str = "regina_push";

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
    /// Opens a session listening on the push channel. The notices arrive on the receiver until
    /// the session ends (then the receiver closes); keep the client alive meanwhile.
    ///
    /// # Errors
    /// [`DbError::Unavailable`] when the session cannot be opened.
    pub(crate) async fn listen_pushes(
        &self,
    ) -> Result<(Client, mpsc::UnboundedReceiver<PushNotice>), DbError> {
        let connecting = async {
            let (client, mut connection) =
                self.pg().connect(NoTls).await.map_err(|e| classify(&e))?;
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                    match message {
                        Ok(AsyncMessage::Notification(n)) => {
                            match serde_json::from_str::<PushNotice>(n.payload()) {
                                Ok(notice) => {
                                    let notice = PushNotice {
                                        sender_pid: n.process_id(),
                                        ..notice
                                    };
                                    if sender.send(notice).is_err() {
                                        return;
                                    }
                                }
                                Err(error) => {
                                    tracing::warn!(%error, payload = n.payload(), "unreadable push notification")
                                }
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
                .batch_execute(&format!("listen {PUSH_CHANNEL}"))
                .await
                .map_err(|e| classify(&e))?;
            Ok::<_, DbError>((client, receiver))
        };
        match tokio::time::timeout(self.connect_timeout(), connecting).await {
            Ok(result) => result.map_err(|e| DbError::Unavailable(e.to_string())),
            Err(_) => Err(DbError::Unavailable("connect timed out".to_owned())),
        }
    }
}
