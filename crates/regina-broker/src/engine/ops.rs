//! The four hot operation kinds: how their requests are fused into one SQL call, how results are
//! fanned back, and which waiters a committed call wakes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use super::announce::Announcer;
use super::batcher::BatchOp;
use crate::db::{Db, DbError, IndexedRow, PopOutcome, PopRow};
use crate::maintenance::Maintenance;
use crate::metrics::Metrics;
use crate::waiters::{Handed, Taken, Waiters};

/// `[a,b,c]` from pre-written JSON fragments (each a comma-separated run of elements), in one
/// allocation of the exact size: a fused call's arrays can be megabytes, and growing them by
/// doubling would hold up to three times that at once.
fn json_array<'a>(fragments: impl Iterator<Item = &'a str> + Clone) -> String {
    let size: usize = fragments.clone().map(|f| f.len() + 1).sum::<usize>() + 2;
    write_array(fragments.filter(|f| !f.is_empty()), size, |out, f| {
        out.extend_from_slice(f.as_bytes());
    })
}

/// `[…]` with `write` appending each item's JSON, comma-separated, into one allocation of `size`
/// bytes (the array's exact size when the caller knows it).
fn write_array<T>(
    items: impl Iterator<Item = T>,
    size: usize,
    mut write: impl FnMut(&mut Vec<u8>, T),
) -> String {
    let mut out = Vec::with_capacity(size);
    out.push(b'[');
    for item in items {
        if out.len() > 1 {
            out.push(b',');
        }
        write(&mut out, item);
    }
    out.push(b']');
    String::from_utf8(out).expect("JSON text is UTF-8")
}

/// Each row's value at its index among `total` slots; a slot no row names stays empty.
fn placed<T>(rows: impl IntoIterator<Item = (usize, T)>, total: usize) -> Vec<Option<T>> {
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(total).collect();
    for (idx, value) in rows {
        if let Some(slot) = slots.get_mut(idx) {
            *slot = Some(value);
        }
    }
    slots
}

fn row_missing() -> DbError {
    DbError::Internal("a result row is missing".to_owned())
}

/// Places each row at its index and splits the results into runs of `counts`.
pub(super) fn split_rows(
    rows: impl IntoIterator<Item = IndexedRow>,
    counts: impl Iterator<Item = usize> + Clone,
) -> Result<Vec<Vec<String>>, DbError> {
    let total: usize = counts.clone().sum();
    let mut slots = placed(rows.into_iter().map(|r| (r.idx, r.result)), total).into_iter();
    counts
        .map(|count| {
            slots
                .by_ref()
                .take(count)
                .collect::<Option<Vec<String>>>()
                .ok_or_else(row_missing)
        })
        .collect()
}

/// One push item, validated and given its ids at the edge (http-api.md §4.14 "identity first").
/// Its names are shared with the request that prepared it (cloning one is a count), and its
/// `regina.push` element is written only into the array of the call that carries it.
#[derive(Clone, Debug)]
pub(crate) struct PushItem {
    /// Queue name.
    pub(crate) queue: Arc<str>,
    /// Partition name.
    pub(crate) partition: Arc<str>,
    /// The client's or the generated transaction id.
    pub(crate) transaction_id: Arc<str>,
    /// The message id.
    pub(crate) message_id: Uuid,
    /// The client's correlation id.
    pub(crate) trace_id: Option<Arc<str>>,
    /// The verified token's `sub`.
    pub(crate) producer_sub: Option<Arc<str>>,
    /// The key that sealed `payload`; none for a payload as the client sent it.
    pub(crate) payload_key_id: Option<Arc<str>>,
    /// The payload: the client's JSON text, or the sealed form (an element of `i_payloads`).
    pub(crate) payload: String,
}

impl PushItem {
    /// Its `i_items` element.
    pub(crate) fn element(&self) -> PushElement<'_> {
        PushElement {
            queue: &self.queue,
            partition: &self.partition,
            transaction_id: &self.transaction_id,
            message_id: self.message_id,
            trace_id: self.trace_id.as_deref(),
            producer_sub: self.producer_sub.as_deref(),
            payload_key_id: self.payload_key_id.as_deref(),
        }
    }

    /// The bytes it adds to a call's arguments (exact unless a name needs escaping).
    fn bytes(&self) -> usize {
        self.element().text_len_hint() + self.payload.len()
    }
}

/// One `i_items` element of `regina.push`, and the `item` of a failover record.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PushElement<'a> {
    pub(crate) queue: &'a str,
    pub(crate) partition: &'a str,
    pub(crate) transaction_id: &'a str,
    pub(crate) message_id: Uuid,
    pub(crate) trace_id: Option<&'a str>,
    pub(crate) producer_sub: Option<&'a str>,
    pub(crate) payload_key_id: Option<&'a str>,
}

impl PushElement<'_> {
    /// The length of its JSON text when no character needs escaping: member names, quotes and
    /// separators and the message id (151 bytes with every string empty and every option null)
    /// plus the values.
    pub(crate) fn text_len_hint(&self) -> usize {
        let optional = |value: Option<&str>| value.map_or(4, |v| v.len() + 2);
        151 - 3 * 4
            + self.queue.len()
            + self.partition.len()
            + self.transaction_id.len()
            + optional(self.trace_id)
            + optional(self.producer_sub)
            + optional(self.payload_key_id)
    }

    /// Appends its JSON text to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("plain data serializes to JSON");
    }
}

/// The items of one push request (or a part of it), in request order. Shared, so that the
/// failover buffer still has them when the database call fails.
pub(crate) struct PushRequest {
    /// The request's items.
    pub(crate) items: Arc<[PushItem]>,
    /// The positions in `items` of this part's items (a request split over push lanes, see
    /// `lanes`); none: all of them.
    part: Option<Vec<usize>>,
    /// Their bytes in the call's arguments.
    bytes: usize,
}

impl PushRequest {
    pub(crate) fn new(items: Arc<[PushItem]>) -> PushRequest {
        let bytes = items.iter().map(PushItem::bytes).sum();
        PushRequest {
            items,
            part: None,
            bytes,
        }
    }

    /// The items of `items` at positions `part`, in that order (sharing them, not copying).
    pub(crate) fn part(items: Arc<[PushItem]>, part: Vec<usize>) -> PushRequest {
        let mut request = PushRequest {
            items,
            part: Some(part),
            bytes: 0,
        };
        request.bytes = request.iter().map(PushItem::bytes).sum();
        request
    }

    /// This request's (or part's) items, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &PushItem> + Clone {
        (0..self.len()).map(move |k| match &self.part {
            Some(part) => &self.items[part[k]],
            None => &self.items[k],
        })
    }

    /// How many items it has.
    pub(crate) fn len(&self) -> usize {
        self.part.as_ref().map_or(self.items.len(), Vec::len)
    }
}

/// `regina.push`'s `i_items` and `i_payloads` arrays for `items`, in order, each written in one
/// allocation of about its final size.
pub(crate) fn push_arrays<'a>(
    items: impl Iterator<Item = &'a PushItem> + Clone,
) -> (String, String) {
    // Each element and its comma, less the first comma, and the brackets.
    let size: usize = items
        .clone()
        .map(|i| i.element().text_len_hint() + 1)
        .sum::<usize>()
        .max(1)
        + 1;
    let elements = write_array(items.clone(), size, |out, i| i.element().write(out));
    (elements, json_array(items.map(|i| i.payload.as_str())))
}

/// Wakes this instance's waiters of every written partition and announces the push to the
/// other instances (http-api.md §4.9). Call only after the push committed.
pub(crate) fn push_committed<'a>(
    waiters: &Waiters,
    announcer: &Announcer,
    targets: impl Iterator<Item = (&'a str, &'a str)>,
) {
    push_committed_serving(waiters, announcer, &by_queue(targets), &[]);
}

/// [`push_committed`] for a push to `by_queue` (see [`by_queue`]) that ran the pops it took
/// (`served`) in its transaction.
fn push_committed_serving(
    waiters: &Waiters,
    announcer: &Announcer,
    by_queue: &[(&str, Vec<&str>)],
    served: &[Taken],
) {
    for (queue, partitions) in by_queue {
        waiters.push_committed_serving(queue, partitions, served);
        announcer.announce(queue, partitions);
    }
}

/// The distinct partitions of each queue among `targets` (queue, partition), in name order.
fn by_queue<'a>(targets: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut by_queue: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (queue, partition) in targets {
        by_queue.entry(queue).or_default().insert(partition);
    }
    by_queue
        .into_iter()
        .map(|(queue, partitions)| (queue, partitions.into_iter().collect()))
        .collect()
}

/// Fused `regina.push`, with the pops of the long-polls it would wake (`regina.push_pop_text`).
pub(crate) struct PushOp {
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) announcer: Announcer,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) maintenance: Arc<Maintenance>,
    /// `LONGPOLL_PUSH_POPS`.
    pub(crate) long_poll_pops: bool,
    /// `LONGPOLL_QUIET_MS`: how long what a pop says of its group's quiet is trusted.
    pub(crate) quiet_ttl: Duration,
}

/// The pops a push took ([`Waiters::take_for_push`]). Those not handed back when it is dropped
/// (the push's call failed, or its future was dropped) are handed back as not run: their
/// long-polls wait for them.
struct Lent<'a> {
    op: &'a PushOp,
    pops: Vec<Taken>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        for taken in self.pops.drain(..) {
            self.op
                .waiters
                .hand(taken, Handed::NotRun, self.op.quiet_ttl);
        }
    }
}

impl PushOp {
    /// Hands each taken pop its outcome (a row of `popped`, or none: it did not run), and ends
    /// the leases of those whose long-poll left meanwhile, as a pop call does for a departed
    /// client.
    async fn hand(&self, db: &Db, taken: Vec<Taken>, popped: Vec<PopRow>) {
        let total = taken.len();
        let rows = popped.into_iter().map(|row| {
            if let Some(events) = &row.events {
                self.metrics.pop_events(events);
            }
            (row.row.idx, (row.row.result, row.quiet))
        });
        let mut orphans = Vec::new();
        for (taken, slot) in taken.into_iter().zip(placed(rows, total)) {
            let outcome =
                slot.map(|(result, quiet)| PopOutcome::from_result(result, quiet.as_deref()));
            let handed = match outcome {
                Some(Ok(outcome)) => {
                    self.metrics.longpoll_push_pop();
                    Handed::Ran(outcome)
                }
                Some(Err(error)) => {
                    tracing::warn!(%error, "a pop run by a push answered unreadably");
                    Handed::NotRun
                }
                None => Handed::NotRun,
            };
            if let Some(Handed::Ran(outcome)) = self.waiters.hand(taken, handed, self.quiet_ttl) {
                orphans.push(outcome);
            }
        }
        if !orphans.is_empty() {
            release_departed(db, &self.waiters, orphans).await;
        }
    }
}

impl BatchOp for PushOp {
    type Executor = Db;
    type Request = PushRequest;
    type Response = Vec<String>;
    const NAME: &'static str = "push";

    fn weight(request: &PushRequest) -> usize {
        request.len()
    }

    fn bytes(request: &PushRequest) -> usize {
        request.bytes
    }

    async fn call(&self, db: &Db, requests: &[&PushRequest]) -> Result<Vec<Vec<String>>, DbError> {
        let (items, payloads) = push_arrays(requests.iter().flat_map(|r| r.iter()));
        // The written partitions of each queue, for the pops to take and the wake-ups after.
        let pushed = requests.iter().flat_map(|r| r.iter());
        let written = by_queue(pushed.map(|i| (&*i.queue, &*i.partition)));
        // The pops of the long-polls this push would wake run in its transaction.
        let mut lent = Lent {
            op: self,
            pops: if self.long_poll_pops && !self.maintenance.pop_on() {
                self.waiters.take_for_push(&written)
            } else {
                Vec::new()
            },
        };
        // No NOTIFY inside the transaction (see `announce`): other instances hear after commit.
        let (rows, popped) = if lent.pops.is_empty() {
            (db.push(&items, &payloads, false).await?, Vec::new())
        } else {
            let pops = json_array(lent.pops.iter().map(|t| &*t.json));
            db.push_pop(&items, &payloads, &pops).await?
        };
        let results = split_rows(rows, requests.iter().map(|r| r.len()));
        // Committed: wake the waiters of every written partition (http-api.md §4.9); those whose
        // pops ran here count as woken, and get their answers after.
        push_committed_serving(&self.waiters, &self.announcer, &written, &lent.pops);
        if !lent.pops.is_empty() {
            let taken = std::mem::take(&mut lent.pops);
            self.hand(db, taken, popped).await;
        }
        results
    }
}

/// One pop request, as an element of `regina.pop`'s `i_reqs`.
pub(crate) struct PopRequest {
    /// The JSON object.
    pub(crate) json: String,
    /// Its `batch`: the most messages it can bring back.
    pub(crate) batch: usize,
}

/// Fused `regina.pop`.
pub(crate) struct PopOp {
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) metrics: Arc<Metrics>,
    /// `AUTO_ACK_COMMIT_ASYNC`: autoAck pops commit without waiting for the WAL flush.
    pub(crate) commit_async: bool,
}

impl BatchOp for PopOp {
    type Executor = Db;
    type Request = PopRequest;
    type Response = PopOutcome;
    const NAME: &'static str = "pop";

    fn weight(request: &PopRequest) -> usize {
        request.batch
    }

    async fn call(&self, db: &Db, requests: &[&PopRequest]) -> Result<Vec<PopOutcome>, DbError> {
        let body = json_array(requests.iter().map(|r| r.json.as_str()));
        let rows = db.pop(&body, self.commit_async).await?;
        // Committed: what the claims delivered and settled is counted whether or not the
        // requester is still there.
        let rows = rows.into_iter().map(|row| {
            if let Some(events) = &row.events {
                self.metrics.pop_events(events);
            }
            (row.row.idx, (row.row.result, row.quiet))
        });
        placed(rows, requests.len())
            .into_iter()
            .map(|slot| {
                let (result, quiet) = slot.ok_or_else(row_missing)?;
                PopOutcome::from_result(result, quiet.as_deref())
            })
            .collect()
    }

    /// The client left before its messages were handed over: end those leases as if acked
    /// `retry`, so the messages are delivered again at once (http-api.md §4.8).
    async fn abandoned(&self, db: &Db, responses: Vec<PopOutcome>) {
        release_departed(db, &self.waiters, responses).await;
    }
}

/// Ends the leases of pop outcomes whose client left before receiving them, as if acked `retry`,
/// so their messages are delivered again at once (http-api.md §4.8).
async fn release_departed(db: &Db, waiters: &Waiters, outcomes: Vec<PopOutcome>) {
    let lease_ids: Vec<Uuid> = outcomes
        .into_iter()
        .filter_map(|r| match r {
            PopOutcome::Delivered { lease_id, .. } => lease_id,
            PopOutcome::Empty { .. } => None,
        })
        .collect();
    if lease_ids.is_empty() {
        return;
    }
    match db.lease_release(&lease_ids).await {
        Ok(ended) => {
            tracing::info!(
                leases = lease_ids.len(),
                "released leases of departed clients"
            );
            for (queue, group) in ended {
                waiters.lease_ended(&queue, &group);
            }
        }
        Err(error) => tracing::warn!(%error, "releasing leases of departed clients failed"),
    }
}

/// The items of one ack or ack/batch request.
pub(crate) struct AckRequest {
    /// Comma-separated JSON objects in the shape of `regina.ack`'s `i_acks` elements.
    pub(crate) items: String,
    /// Number of items.
    pub(crate) count: usize,
}

/// Fused `regina.ack`.
pub(crate) struct AckOp {
    pub(crate) waiters: Arc<Waiters>,
    pub(crate) metrics: Arc<Metrics>,
    /// `ACK_COMMIT_ASYNC`: commit without waiting for the WAL flush.
    pub(crate) commit_async: bool,
}

impl BatchOp for AckOp {
    type Executor = Db;
    type Request = AckRequest;
    type Response = Vec<String>;
    const NAME: &'static str = "ack";

    fn weight(request: &AckRequest) -> usize {
        request.count
    }

    async fn call(&self, db: &Db, requests: &[&AckRequest]) -> Result<Vec<Vec<String>>, DbError> {
        let items = json_array(requests.iter().map(|r| r.items.as_str()));
        let rows = db.ack(&items, self.commit_async).await?;
        let mut wakes = BTreeSet::new();
        let rows: Vec<IndexedRow> = rows
            .into_iter()
            .map(|r| {
                if let Some(wake) = r.wake {
                    wakes.insert(wake);
                }
                self.metrics.ack_events(&r.events);
                r.row
            })
            .collect();
        let results = split_rows(rows, requests.iter().map(|r| r.count))?;
        for (queue, group) in wakes {
            self.waiters.lease_ended(&queue, &group);
        }
        Ok(results)
    }
}

/// One lease extension, as an element of `regina.lease_extend`'s `i_reqs`.
pub(crate) struct ExtendRequest {
    /// The JSON object.
    pub(crate) json: String,
}

/// Fused `regina.lease_extend`.
pub(crate) struct ExtendOp;

impl BatchOp for ExtendOp {
    type Executor = Db;
    type Request = ExtendRequest;
    type Response = String;
    const NAME: &'static str = "lease_extend";

    async fn call(&self, db: &Db, requests: &[&ExtendRequest]) -> Result<Vec<String>, DbError> {
        let body = json_array(requests.iter().map(|r| r.json.as_str()));
        let rows = db.lease_extend(&body).await?;
        Ok(split_rows(rows, requests.iter().map(|_| 1))?
            .into_iter()
            .map(|mut results| results.pop().unwrap_or_default())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_split_by_request() {
        let rows = [(2, "c"), (0, "a"), (1, "b")]
            .into_iter()
            .map(|(idx, r)| IndexedRow {
                idx,
                result: r.to_owned(),
            });
        let split = split_rows(rows, [2usize, 0, 1].into_iter()).expect("complete");
        assert_eq!(
            split,
            vec![
                vec!["a".to_owned(), "b".to_owned()],
                vec![],
                vec!["c".to_owned()]
            ]
        );
        let missing = [IndexedRow {
            idx: 0,
            result: "a".into(),
        }];
        assert!(split_rows(missing, [2usize].into_iter()).is_err());
    }

    #[test]
    fn fragments_join_into_one_array() {
        assert_eq!(
            json_array(["{\"a\":1},{\"b\":2}", "", "{\"c\":3}"].into_iter()),
            "[{\"a\":1},{\"b\":2},{\"c\":3}]"
        );
    }
}
