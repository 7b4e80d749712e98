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
    let element = item.element();
    let mut json = Vec::with_capacity(element.text_len_hint() + item.payload.len() + 40);
    json.extend_from_slice(b"{\"at\":");
    json.extend_from_slice(at_ms.to_string().as_bytes());
    json.extend_from_slice(b",\"item\":");
    element.write(&mut json);
    json.extend_from_slice(b",\"payload\":");
    json.extend_from_slice(item.payload.as_bytes());
    json.push(b'}');
    seal(json)
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
    /// The element [`PushItem::element`] wrote, read back.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Element {
        queue: String,
        partition: String,
        transaction_id: String,
        message_id: Uuid,
        trace_id: Option<String>,
        producer_sub: Option<String>,
        payload_key_id: Option<String>,
    }
    let json = open(body)?;
    let stored: Stored<'_> =
        serde_json::from_slice(&json).map_err(|e| format!("unreadable record: {e}"))?;
    let element: Element = serde_json::from_str(stored.item.get())
        .map_err(|e| format!("record without its identity: {e}"))?;
    Ok(Record {
        item: PushItem {
            queue: element.queue.into(),
            partition: element.partition.into(),
            transaction_id: element.transaction_id.into(),
            message_id: element.message_id,
            trace_id: element.trace_id.map(Into::into),
            producer_sub: element.producer_sub.map(Into::into),
            payload_key_id: element.payload_key_id.map(Into::into),
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
        PushItem {
            queue: "q\"1".into(),
            partition: "p".into(),
            transaction_id: "t-1".into(),
            message_id: Uuid::now_v7(),
            trace_id: Some("trace-7".into()),
            producer_sub: Some("alice".into()),
            payload_key_id: Some("k1".into()),
            payload: payload.into(),
        }
    }

    fn element_text(item: &PushItem) -> String {
        let mut out = Vec::new();
        item.element().write(&mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn an_item_survives_the_round_trip_verbatim() {
        let original = item(r#"{"n": [1, 2.50], "s": "a\u0000b"}"#);
        let record = decode(&encode(&original, 1_700_000_000_123)).expect("decodes");
        assert_eq!(record.at_ms, 1_700_000_000_123);
        assert_eq!(&*record.item.queue, "q\"1");
        assert_eq!(&*record.item.partition, "p");
        assert_eq!(&*record.item.transaction_id, "t-1");
        assert_eq!(record.item.message_id, original.message_id);
        assert_eq!(record.item.trace_id.as_deref(), Some("trace-7"));
        assert_eq!(record.item.producer_sub.as_deref(), Some("alice"));
        assert_eq!(record.item.payload_key_id.as_deref(), Some("k1"));
        assert_eq!(element_text(&record.item), element_text(&original));
        assert_eq!(
            record.item.payload, original.payload,
            "payload text kept as sent"
        );
    }

    #[test]
    fn a_record_without_the_optional_members_reads_them_as_absent() {
        let id = Uuid::now_v7();
        let body = format!(
            "\u{0}{{\"at\":5,\"item\":{{\"queue\":\"q\",\"partition\":\"p\",\
             \"transactionId\":\"t\",\"messageId\":\"{id}\"}},\"payload\":1}}"
        );
        let record = decode(body.as_bytes()).expect("decodes");
        assert_eq!(record.item.message_id, id);
        assert!(record.item.trace_id.is_none() && record.item.payload_key_id.is_none());
        assert_eq!(record.item.payload, "1");
    }

    #[test]
    fn anything_but_a_record_is_refused() {
        assert!(decode(b"").is_err());
        assert!(decode(b"\x07{}").is_err(), "unknown seal");
        assert!(decode(b"\x00{\"at\":1}").is_err(), "no item");
        assert!(decode(b"\x00{\"at\":1,\"item\":{},\"payload\":1}").is_err());
    }
}
