//! Request bodies (http-api.md §2.4): read under `BODY_BYTES_MAX`, nesting checked by a byte scan
//! before parsing, and fields read from borrowed raw JSON so payloads are never built into trees.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::value::RawValue;
use tokio::sync::OwnedSemaphorePermit;

use super::error::ApiError;
use crate::state::{AppState, BodyBudget};

/// A request body read whole under `BODY_BYTES_MAX`: the first step of every JSON endpoint
/// (extract it last, as it consumes the request). Its bytes count against `BODY_BYTES_HELD_MAX`
/// until the last reference to them is dropped.
pub(crate) struct BodyBytes(pub(crate) Bytes);

impl FromRequest<AppState> for BodyBytes {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let shared = state.get();
        let (parts, body) = request.into_parts();
        read(
            &parts.headers,
            body,
            shared.config.body_bytes_max,
            &shared.bodies,
        )
        .await
        .map(BodyBytes)
    }
}

/// Reads the whole body, refusing more than `limit` bytes with `413 body_too_large`, then waits
/// for room for it in `budget` before anything decodes it.
///
/// The bytes are copied into an allocation of their exact size, so the reader's buffers, often
/// much larger than the body, go back at once; that allocation holds the room until it is freed.
/// Room is taken only once the body is whole: a client that sends its body slowly holds none,
/// and so cannot stall anyone else's request.
///
/// # Errors
/// `413` over the limit, `400 invalid_json` when the body cannot be read.
pub(crate) async fn read(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    budget: &BodyBudget,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::body_too_large(limit));
    }
    // Each chunk is copied out at once, letting go of the reader's buffer it was split from. The
    // copy grows to at most twice what arrived and never past the declared length, where it
    // ends at its exact size: a slow sender costs what it sent.
    let expected = declared.and_then(|n| usize::try_from(n).ok());
    let mut bytes: Vec<u8> = Vec::new();
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::invalid_json(format!("cannot read body: {e}")))?;
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        let total = bytes.len() + chunk.len();
        if total > limit {
            return Err(ApiError::body_too_large(limit));
        }
        if total > bytes.capacity() {
            let doubled = total.max(2 * bytes.len());
            let size = expected.map_or(doubled, |n| n.min(doubled).max(total));
            bytes.reserve_exact(size - bytes.len());
        }
        bytes.extend_from_slice(&chunk);
    }
    let bytes = bytes.into_boxed_slice();
    let room = room(budget, bytes.len()).await?;
    Ok(Bytes::from_owner(Held { bytes, _room: room }))
}

async fn room(budget: &BodyBudget, bytes: usize) -> Result<OwnedSemaphorePermit, ApiError> {
    budget
        .take(bytes)
        .await
        .map_err(|_| ApiError::shutting_down())
}

/// A body's bytes with the budget room they take.
struct Held {
    bytes: Box<[u8]>,
    _room: OwnedSemaphorePermit,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// True when JSON text nests arrays/objects deeper than `max`; a cheap scan that runs before
/// the parser so a hostile body cannot make it recurse.
pub(crate) fn depth_exceeds(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses a request body that must be a JSON object; a zero-length body is `{}`.
///
/// # Errors
/// `400 invalid_json` (syntax, depth), `400 validation_failed` (not an object).
pub(crate) fn parse_object(bytes: &[u8], depth_max: usize) -> Result<Object<'_>, ApiError> {
    if bytes.is_empty() {
        return Ok(Object {
            fields: HashMap::new(),
            prefix: String::new(),
            index: None,
        });
    }
    if depth_exceeds(bytes, depth_max) {
        return Err(
            ApiError::invalid_json(format!("nested deeper than {depth_max} levels"))
                .limit(depth_max as u64),
        );
    }
    let raw: &RawValue = serde_json::from_slice(bytes).map_err(ApiError::invalid_json)?;
    Object::from_raw(raw, String::new(), None)
        .map_err(|_| ApiError::validation("Request body must be a JSON object"))
}

/// A JSON object whose members are still raw text.
pub(crate) struct Object<'a> {
    fields: HashMap<String, &'a RawValue>,
    /// Field path prefix for error reports, e.g. `items[3].`.
    prefix: String,
    /// Array position for error reports.
    index: Option<usize>,
}

/// The first byte of a raw JSON value, which tells its type.
fn kind(raw: &RawValue) -> u8 {
    raw.get()
        .trim_start()
        .as_bytes()
        .first()
        .copied()
        .unwrap_or(b'n')
}

/// Whether a raw JSON value is `null`.
pub(crate) fn is_null(raw: &RawValue) -> bool {
    kind(raw) == b'n'
}

impl<'a> Object<'a> {
    /// Reads `raw` as an object; errors name `prefix` (without its trailing dot) and `index`.
    ///
    /// # Errors
    /// `400 validation_failed` when `raw` is not an object.
    pub(crate) fn from_raw(
        raw: &'a RawValue,
        prefix: String,
        index: Option<usize>,
    ) -> Result<Self, ApiError> {
        let not_object = || {
            let mut error = ApiError::validation(format!(
                "{} must be an object",
                if prefix.is_empty() {
                    "body"
                } else {
                    prefix.trim_end_matches('.')
                }
            ))
            .field(prefix.trim_end_matches('.'));
            if let Some(i) = index {
                error = error.index(i);
            }
            error
        };
        if kind(raw) != b'{' {
            return Err(not_object());
        }
        let fields = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
        Ok(Object {
            fields,
            prefix,
            index,
        })
    }

    /// The field path prefix of this object's members (`items[3].`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The array position this object reports in errors.
    pub(crate) fn index(&self) -> Option<usize> {
        self.index
    }

    /// `400 validation_failed` naming `key` of this object.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ApiError {
        let error = ApiError::validation(message).field(format!("{}{key}", self.prefix));
        match self.index {
            Some(i) => error.index(i),
            None => error,
        }
    }

    /// The raw member, if present (`null` included).
    pub(crate) fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.get(key).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn headers(length: Option<usize>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(length) = length {
            headers.insert(header::CONTENT_LENGTH, length.into());
        }
        headers
    }

    /// Reads a body of `len` bytes sent whole with its length declared.
    async fn read_whole(len: usize, limit: usize, budget: &BodyBudget) -> Result<Bytes, ApiError> {
        read(
            &headers(Some(len)),
            Body::from(vec![b' '; len]),
            limit,
            budget,
        )
        .await
    }

    #[tokio::test]
    async fn a_body_holds_its_room_until_its_last_reference_is_dropped() {
        let budget = BodyBudget::new(1000);
        let first = read_whole(600, 4096, &budget).await.expect("read");
        let copy = first.slice(10..20);
        assert_eq!(budget.held(), 600);
        // The next body needs more than what is left: read, it waits for room.
        let mut second = Box::pin(read_whole(600, 4096, &budget));
        assert!((&mut second).now_or_never().is_none());
        drop(first);
        assert!(
            (&mut second).now_or_never().is_none(),
            "a slice still holds it"
        );
        drop(copy);
        let second = second.await.expect("read");
        assert_eq!((second.len(), budget.held()), (600, 600));
        drop(second);
        assert_eq!(budget.held(), 0);
    }

    #[tokio::test]
    async fn a_body_still_arriving_holds_no_room() {
        let budget = BodyBudget::new(1000);
        let (sender, chunks) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
        let declared = headers(Some(600));
        let mut slow = Box::pin(read(&declared, Body::from_stream(chunks), 4096, &budget));
        sender
            .unbounded_send(Ok(Bytes::from(vec![b' '; 100])))
            .expect("sent");
        assert!((&mut slow).now_or_never().is_none());
        assert_eq!(budget.held(), 0, "a partial body takes no room");
        // Others go by meanwhile.
        let other = read_whole(900, 4096, &budget).await.expect("read");
        sender
            .unbounded_send(Ok(Bytes::from(vec![b' '; 500])))
            .expect("sent");
        drop(sender);
        assert!(
            (&mut slow).now_or_never().is_none(),
            "whole, it waits for room"
        );
        drop(other);
        let slow = slow.await.expect("read");
        assert_eq!((slow.len(), budget.held()), (600, 600));
    }

    #[tokio::test]
    async fn a_body_larger_than_the_budget_takes_all_of_it() {
        let budget = BodyBudget::new(1000);
        let small = read_whole(10, 8192, &budget).await.expect("read");
        let mut big = Box::pin(read_whole(5000, 8192, &budget));
        assert!(
            (&mut big).now_or_never().is_none(),
            "it waits for all of it"
        );
        drop(small);
        let big = big.await.expect("read");
        assert_eq!((big.len(), budget.held()), (5000, 1000));
        drop(big);
        // Without a declared length, the room is taken once the body is read.
        let unsized_body = read(&headers(None), Body::from(vec![b' '; 300]), 8192, &budget)
            .await
            .expect("read");
        assert_eq!((unsized_body.len(), budget.held()), (300, 300));
    }

    #[tokio::test]
    async fn a_body_over_the_limit_takes_no_room() {
        let budget = BodyBudget::new(1000);
        let refused = read_whole(5000, 4096, &budget).await;
        assert!(refused.is_err());
        let refused = read(&headers(None), Body::from(vec![b' '; 5000]), 4096, &budget).await;
        assert!(refused.is_err());
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn depth_scan_counts_nesting_outside_strings() {
        assert!(!depth_exceeds(br#"{"a":[1,{"b":2}]}"#, 3));
        assert!(depth_exceeds(br#"{"a":[1,{"b":[2]}]}"#, 3));
        assert!(!depth_exceeds(br#"{"a":"[[[[[[\"[[[["}"#, 1));
        assert!(!depth_exceeds(b"]]]]}}}", 1));
        let deep = "[".repeat(65) + &"]".repeat(65);
        assert!(depth_exceeds(deep.as_bytes(), 64));
        assert!(!depth_exceeds(deep.as_bytes(), 65));
    }

    #[test]
    fn empty_body_is_an_empty_object_and_others_must_be_objects() {
        assert!(parse_object(b"", 64).is_ok());
        let not_object = parse_object(b"[1]", 64).err().map(|e| format!("{e:?}"));
        assert!(not_object.is_some_and(|e| e.contains("validation_failed")));
        let invalid = parse_object(b"{\"a\":", 64).err().map(|e| format!("{e:?}"));
        assert!(invalid.is_some_and(|e| e.contains("invalid_json")));
        let deep = parse_object(b"{\"a\":[[[]]]}", 3)
            .err()
            .map(|e| format!("{e:?}"));
        assert!(deep.is_some_and(|e| e.contains("invalid_json")));
    }

    #[test]
    fn nested_objects_report_their_path_and_index() {
        let raw = RawValue::from_string("5".to_owned()).expect("raw");
        let error = format!(
            "{:?}",
            Object::from_raw(&raw, "items[0].".into(), Some(0)).err()
        );
        assert!(
            error.contains("items[0] must be an object") && error.contains("index: Some(0)"),
            "{error}"
        );
    }
}
