//! The body of one buffered record: one push item with the identity it was given at the edge.
//!
//! ```text
//! flags: u8 | JSON {"at": <ms since the epoch>, "item": <regina.push element>, "payload": <raw>}
//! ```
//!
//! `item` is the element `regina.push` takes (queue, partition, transactionId, messageId, traceId,
//! producerSub), so a replay stores exactly what the direct push would have stored, under the same
//! ids; `payload` is the client's JSON text, untouched. `flags` says how the rest is sealed:
//! `0` is plain JSON. Sealing with the encryption key (http-api.md §4.14) takes the next value,
//! applied in [`seal`] and [`open`]; no key handling exists in this version, so records are plain.

use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::engine::PushItem;

/// `flags` of a plain record.
const FLAGS_PLAIN: u8 = 0;

/// A record read back: the item to replay and when it was buffered.
#[derive(Debug)]
pub(crate) struct Record {
    /// The push item, as the edge prepared it.
    pub(crate) item: PushItem,
    /// When it was buffered, milliseconds since the Unix epoch.
    pub(crate) at_ms: i64,
}

/// The body of the record of `item`, buffered at `at_ms`.
pub(super) fn encode(item: &PushItem, at_ms: i64) -> Vec<u8> {
    let mut json = String::with_capacity(item.json.len() + item.payload.len() + 40);
    json.push_str("{\"at\":");
    json.push_str(&at_ms.to_string());
    json.push_str(",\"item\":");
    json.push_str(&item.json);
    json.push_str(",\"payload\":");
    json.push_str(&item.payload);
    json.push('}');
    seal(json.into_bytes())
}

/// Reads a verified body back.
///
/// # Errors
/// A description of what is wrong: an unknown seal, or content that is not a record. Either means
/// the record cannot be trusted (it is treated like a checksum failure).
pub(super) fn decode(body: &[u8]) -> Result<Record, String> {
    #[derive(Deserialize)]
    struct Stored<'a> {
        at: i64,
        #[serde(borrow)]
        item: &'a RawValue,
        #[serde(borrow)]
        payload: &'a RawValue,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Identity {
        queue: String,
        partition: String,
        transaction_id: String,
        message_id: Uuid,
    }
    let json = open(body)?;
    let stored: Stored<'_> =
        serde_json::from_slice(&json).map_err(|e| format!("unreadable record: {e}"))?;
    let identity: Identity = serde_json::from_str(stored.item.get())
        .map_err(|e| format!("record without its identity: {e}"))?;
    Ok(Record {
        item: PushItem {
            queue: identity.queue,
            partition: identity.partition,
            transaction_id: identity.transaction_id,
            message_id: identity.message_id,
            json: stored.item.get().to_owned(),
            payload: stored.payload.get().to_owned(),
        },
        at_ms: stored.at,
    })
}

/// Prefixes the flags; the place where records would be encrypted.
fn seal(json: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 1);
    out.push(FLAGS_PLAIN);
    out.extend_from_slice(&json);
    out
}

/// The JSON of a sealed body.
fn open(body: &[u8]) -> Result<Vec<u8>, String> {
    match body.split_first() {
        Some((&FLAGS_PLAIN, json)) => Ok(json.to_vec()),
        Some((flags, _)) => Err(format!("unknown record flags {flags}")),
        None => Err("empty record".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(payload: &str) -> PushItem {
        let message_id = Uuid::now_v7();
        PushItem {
            queue: "q\"1".into(),
            partition: "p".into(),
            transaction_id: "t-1".into(),
            message_id,
            json: serde_json::json!({"queue": "q\"1", "partition": "p", "transactionId": "t-1",
                                     "messageId": message_id, "traceId": null, "producerSub": null})
            .to_string(),
            payload: payload.into(),
        }
    }

    #[test]
    fn an_item_survives_the_round_trip_verbatim() {
        let original = item(r#"{"n": [1, 2.50], "s": "a\u0000b"}"#);
        let record = decode(&encode(&original, 1_700_000_000_123)).expect("decodes");
        assert_eq!(record.at_ms, 1_700_000_000_123);
        assert_eq!(record.item.queue, "q\"1");
        assert_eq!(record.item.partition, "p");
        assert_eq!(record.item.transaction_id, "t-1");
        assert_eq!(record.item.message_id, original.message_id);
        assert_eq!(record.item.json, original.json);
        assert_eq!(
            record.item.payload, original.payload,
            "payload text kept as sent"
        );
    }

    #[test]
    fn anything_but_a_record_is_refused() {
        assert!(decode(b"").is_err());
        assert!(decode(b"\x07{}").is_err(), "unknown seal");
        assert!(decode(b"\x00{\"at\":1}").is_err(), "no item");
        assert!(decode(b"\x00{\"at\":1,\"item\":{},\"payload\":1}").is_err());
    }
}
