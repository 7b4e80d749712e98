//! What this instance knows to be quiet: per queue and group, that the database had nothing due
//! for the group on the queue as of a pop that ended after the last event this instance heard of
//! there (a push, a lease end, a seek). Until that knowledge expires or such an event arrives, a
//! long-poll of the group on the queue parks at once instead of asking the database the same
//! question: after a delivery, a consumer's next long-poll usually finds nothing, and that call
//! cost as much as a claim.
//!
//! A pop *asks* before it calls the database (a ticket) and *learns* after: the answer is kept
//! only if no event for the queue and group came in between (the event drops the ticket), so an
//! answer read before an event never outlives it. Knowledge expires after at most
//! `LONGPOLL_QUIET_MS`, bounding how late this instance sees changes it cannot hear of (a lease
//! ended on another instance).

use std::collections::HashMap;

use tokio::time::Instant;

/// The state of one (queue, group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// A pop holding this ticket is asking the database.
    Asking(u64),
    /// Nothing due until then, or an event.
    Known(Instant),
}

/// The quiet (queue, group) pairs of this instance, at most `max` of them.
#[derive(Debug, Default)]
pub(super) struct Quiet {
    by_queue: HashMap<String, HashMap<String, Slot>>,
    len: usize,
    max: usize,
    next_ticket: u64,
}

impl Quiet {
    pub(super) fn new(max: usize) -> Quiet {
        Quiet {
            max,
            ..Quiet::default()
        }
    }

    /// Whether the group is known to have nothing due on the queue now: until when.
    pub(super) fn known(&mut self, queue: &str, group: &str, now: Instant) -> Option<Instant> {
        let slot = *self.by_queue.get(queue)?.get(group)?;
        match slot {
            Slot::Known(until) if now < until => Some(until),
            Slot::Known(_) => {
                self.remove(queue, group);
                None
            }
            Slot::Asking(_) => None,
        }
    }

    /// A pop of the group on the queue is about to ask the database: its ticket, or none when the
    /// table is full (the answer will not be kept).
    pub(super) fn ask(&mut self, queue: &str, group: &str) -> Option<u64> {
        let exists = self
            .by_queue
            .get(queue)
            .is_some_and(|groups| groups.contains_key(group));
        if !exists && self.len >= self.max {
            // Pops that left while asking leave tickets behind: start afresh rather than grow.
            self.clear();
            if self.max == 0 {
                return None;
            }
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let groups = self.by_queue.entry(queue.to_owned()).or_default();
        if groups
            .insert(group.to_owned(), Slot::Asking(ticket))
            .is_none()
        {
            self.len += 1;
        }
        Some(ticket)
    }

    /// The answer of the pop holding `ticket`: quiet until `Some(until)`, or not quiet (`None`).
    /// Kept only while the ticket is still the latest and no event came since.
    pub(super) fn learn(&mut self, queue: &str, group: &str, ticket: u64, quiet: Option<Instant>) {
        let Some(slot) = self.by_queue.get_mut(queue).and_then(|g| g.get_mut(group)) else {
            return;
        };
        if *slot != Slot::Asking(ticket) {
            return;
        }
        match quiet {
            Some(until) => *slot = Slot::Known(until),
            None => self.remove(queue, group),
        }
    }

    /// An event on the queue for every group (a push).
    pub(super) fn forget_queue(&mut self, queue: &str) {
        if let Some(groups) = self.by_queue.remove(queue) {
            self.len -= groups.len();
        }
    }

    /// An event on the queue for one group (a lease end, a seek).
    pub(super) fn remove(&mut self, queue: &str, group: &str) {
        let Some(groups) = self.by_queue.get_mut(queue) else {
            return;
        };
        if groups.remove(group).is_some() {
            self.len -= 1;
        }
        if groups.is_empty() {
            self.by_queue.remove(queue);
        }
    }

    /// Forgets everything (pop maintenance, shutdown).
    pub(super) fn clear(&mut self) {
        self.by_queue.clear();
        self.len = 0;
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }
}
