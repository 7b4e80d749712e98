//! Encryption at rest of payloads (http-api.md §4.13, ADR 0006): AES-256-GCM, a random 96-bit nonce
//! per message, the message id as associated data. A sealed payload is stored as the JSON string
//! `"<base64(nonce ‖ ciphertext ‖ tag)>"` beside the id of the key (`payload_key_id`); the
//! database never sees the key.
//!
//! Which queues encrypt is the database's to say: `regina.push` refuses a plaintext item for such
//! a queue (`encryption_required`) and the broker seals and pushes it again. The set kept here
//! only spares that round trip; it may be stale or empty without ever letting plaintext in.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::config::Config;
use crate::error::Error;
use crate::secret::Secret;

/// Bytes of a GCM nonce.
const NONCE_BYTES: usize = 12;
/// How long a queue learned to encrypt is sealed for without asking the database again; past
/// it, an option turned off elsewhere stops sealing this instance's pushes.
const ENCRYPTING_TTL: Duration = Duration::from_secs(30);
/// Queues remembered at most; beyond it the set starts afresh (it is only a hint).
const ENCRYPTING_QUEUES_MAX: usize = 100_000;
/// The member the SQL layer puts beside a sealed payload (`regina._sealed_mark`).
const SEALED_MARK: &str = "\"payloadKeyId\"";

/// Why a payload could not be read (`http::error` gives each its answer).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OpenError {
    /// No key is configured (`503 encryption_unavailable`).
    #[error("no encryption key is configured")]
    NoKey,
    /// Authentication failed: another key, or damaged data (`500 decryption_failed`).
    #[error("an encrypted payload failed authentication")]
    Failed,
    /// The body the database sent is not what this module expects (a bug: `500 internal`).
    #[error("unreadable sealed payload: {0}")]
    Malformed(String),
}

/// The configured key with its identifier.
struct PayloadKey {
    cipher: Aes256Gcm,
    id: String,
}

/// The payload key, if any, and the queues known to encrypt.
pub(crate) struct Encryption {
    key: Option<PayloadKey>,
    encrypting: Mutex<HashMap<String, Instant>>,
}

impl Encryption {
    /// The key of `REGINA_ENCRYPTION_KEY`, else `QUEEN_ENCRYPTION_KEY`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable when a key is not 64 hex characters, or naming both
    /// when both are set and differ.
    pub(crate) fn from_config(config: &Config) -> Result<Encryption, Error> {
        let regina = config
            .regina_encryption_key
            .as_ref()
            .filter(|k| !k.0.is_empty());
        let queen = config
            .queen_encryption_key
            .as_ref()
            .filter(|k| !k.0.is_empty());
        let (name, secret) = match (regina, queen) {
            (Some(r), Some(q)) if !r.0.eq_ignore_ascii_case(&q.0) => {
                return Err(Error::Config(
                    "REGINA_ENCRYPTION_KEY and QUEEN_ENCRYPTION_KEY are both set and differ"
                        .to_owned(),
                ))
            }
            (Some(r), _) => ("REGINA_ENCRYPTION_KEY", r),
            (None, Some(q)) => ("QUEEN_ENCRYPTION_KEY", q),
            (None, None) => return Ok(Encryption::with_key(None)),
        };
        let bytes = key_bytes(secret).ok_or_else(|| {
            Error::Config(format!(
                "{name} must be 64 hexadecimal characters (32 bytes)"
            ))
        })?;
        Ok(Encryption::with_key(Some(&bytes)))
    }

    fn with_key(bytes: Option<&[u8; 32]>) -> Encryption {
        let key = bytes.map(|bytes| PayloadKey {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(bytes)),
            id: key_id(bytes),
        });
        Encryption {
            key,
            encrypting: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a key is configured.
    pub(crate) fn available(&self) -> bool {
        self.key.is_some()
    }

    /// Seals `payload` (JSON text) of message `message_id`: the stored JSON string and the key
    /// id. None without a key.
    pub(crate) fn seal(&self, message_id: Uuid, payload: &str) -> Option<(String, &str)> {
        let key = self.key.as_ref()?;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = key
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: payload.as_bytes(),
                    aad: message_id.as_bytes(),
                },
            )
            // Encryption fails only for inputs beyond GCM's 64 GiB bound, far above any body.
            .expect("a payload under BODY_BYTES_MAX encrypts");
        let mut bytes = Vec::with_capacity(NONCE_BYTES + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        Some((format!("\"{}\"", BASE64.encode(bytes)), &key.id))
    }

    /// The JSON text sealed as `sealed` (the stored JSON string) for message `message_id`.
    ///
    /// # Errors
    /// [`OpenError::NoKey`] without a key; [`OpenError::Failed`] when the key differs or the
    /// data does not authenticate.
    pub(crate) fn open(
        &self,
        message_id: Uuid,
        key_id: &str,
        sealed: &str,
    ) -> Result<String, OpenError> {
        let key = self.key.as_ref().ok_or(OpenError::NoKey)?;
        if key_id != key.id {
            return Err(OpenError::Failed);
        }
        let text: String = serde_json::from_str(sealed).map_err(|_| OpenError::Failed)?;
        let bytes = BASE64.decode(text).map_err(|_| OpenError::Failed)?;
        if bytes.len() < NONCE_BYTES {
            return Err(OpenError::Failed);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = key
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: message_id.as_bytes(),
                },
            )
            .map_err(|_| OpenError::Failed)?;
        String::from_utf8(plain).map_err(|_| OpenError::Failed)
    }

    /// Decrypts the sealed payloads of a body whose `messages` hold `data` (a pop result, a DLQ
    /// listing) and removes their marks. Bodies without a sealed payload come back untouched.
    ///
    /// # Errors
    /// See [`Encryption::open`]; [`OpenError::Malformed`] for a body of another shape.
    pub(crate) fn open_messages(&self, body: String) -> Result<String, OpenError> {
        if !body.contains(SEALED_MARK) {
            return Ok(body);
        }
        let mut listing: Listing =
            serde_json::from_str(&body).map_err(|e| OpenError::Malformed(e.to_string()))?;
        for entry in &mut listing.messages {
            let Some(key_id) = entry.key_id.take() else {
                continue;
            };
            let message_id = entry
                .rest
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| Uuid::parse_str(id).ok())
                .ok_or_else(|| OpenError::Malformed("sealed entry without an id".to_owned()))?;
            let plain = self.open(message_id, &key_id, entry.data.get())?;
            entry.data =
                RawValue::from_string(plain).map_err(|e| OpenError::Malformed(e.to_string()))?;
        }
        serde_json::to_string(&listing).map_err(|e| OpenError::Malformed(e.to_string()))
    }

    /// Whether pushes to `queue` are sealed before the database sees them.
    pub(crate) fn queue_encrypts(&self, queue: &str) -> bool {
        let encrypting = self
            .encrypting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        encrypting
            .get(queue)
            .is_some_and(|learned| learned.elapsed() < ENCRYPTING_TTL)
    }

    /// Records what this instance learned about `queue` (from configure or a refused push).
    pub(crate) fn remember(&self, queue: &str, encrypts: bool) {
        let mut encrypting = self
            .encrypting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !encrypts {
            encrypting.remove(queue);
            return;
        }
        if encrypting.len() >= ENCRYPTING_QUEUES_MAX {
            encrypting.retain(|_, learned| learned.elapsed() < ENCRYPTING_TTL);
            if encrypting.len() >= ENCRYPTING_QUEUES_MAX {
                encrypting.clear();
            }
        }
        encrypting.insert(queue.to_owned(), Instant::now());
    }
}

/// A body with `messages`, each with `data` kept verbatim; every other member passes through.
#[derive(Deserialize, Serialize)]
struct Listing {
    messages: Vec<Entry>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize, Serialize)]
struct Entry {
    data: Box<RawValue>,
    #[serde(rename = "payloadKeyId", default, skip_serializing)]
    key_id: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// 64 hex characters → 32 bytes.
fn key_bytes(secret: &Secret) -> Option<[u8; 32]> {
    let text = secret.0.trim().as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(text.chunks(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(bytes)
}

/// The key's identifier: the first 8 hex digits of its SHA-256, enough to tell keys apart.
fn key_id(bytes: &[u8; 32]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
