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
//!
//! A push to a quiet group whose every pushed partition woke a parked waiter of the group hands
//! the group to those waiters: they ask the database (a woken waiter always does), and until
//! each has answered, other long-polls of the group park as if it were quiet. Without this, a
//! consumer coming back for its next message at 1 000 pushes a second asks the database while
//! the woken waiter is claiming the one message there is, and finds nothing. When the last of
//! them has answered and one of the answers said something may still be due, the hand-off ends
//! and one more waiter is woken (see `Waiters::quiet_learn`): an answer read while another handed
//! waiter had yet to claim its message says so. A handed waiter that leaves without asking passes
//! its wake-up on, or ends the hand-off when no waiter is parked.

use std::collections::HashMap;

use tokio::time::Instant;

/// The state of one (queue, group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// A pop holding this ticket is asking the database.
    Asking(u64),
    /// Nothing due until then, or an event.
    Known(Instant),
    /// Handed to woken waiters: `left` answers of pops that asked after ticket `after` are
    /// awaited; `quiet` is the earliest of the quiet answers so far (none yet: `None`), `due`
    /// whether an answer said something may still be due. Other long-polls park meanwhile, until
    /// `until` at the latest.
    Handed {
        after: u64,
        left: usize,
        quiet: Option<Instant>,
        due: bool,
        until: Instant,
    },
}

impl Slot {
    /// This slot with `more` answers awaited: a known quiet handed to them (answers of tickets
    /// after `next_ticket` count), a hand-off awaiting them too; none for a pop asking.
    fn handed_to(self, more: usize, next_ticket: u64) -> Option<Slot> {
        match self {
            Slot::Known(until) => Some(Slot::Handed {
                after: next_ticket,
                left: more,
                quiet: None,
                due: false,
                until,
            }),
            Slot::Handed {
                after,
                left,
                quiet,
                due,
                until,
            } => Some(Slot::Handed {
                after,
                left: left + more,
                quiet,
                due,
                until,
            }),
            Slot::Asking(_) => None,
        }
    }
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
            Slot::Known(until) | Slot::Handed { until, .. } if now < until => Some(until),
            Slot::Known(_) | Slot::Handed { .. } => {
                self.remove(queue, group);
                None
            }
            Slot::Asking(_) => None,
        }
    }

    /// A push to the queue woke `woken` parked waiters of the group for its `pushed` partitions:
    /// when the group was quiet (or already handed) and every partition has its waiter, the
    /// group is handed to them; otherwise what was known of it ends.
    pub(super) fn push_for_group(&mut self, queue: &str, group: &str, pushed: usize, woken: usize) {
        let Some(slot) = self.by_queue.get_mut(queue).and_then(|g| g.get_mut(group)) else {
            return;
        };
        let handed = if pushed == 0 || woken < pushed {
            None
        } else {
            slot.handed_to(woken, self.next_ticket)
        };
        match handed {
            Some(handed) => *slot = handed,
            None => self.remove(queue, group),
        }
    }

    /// A pop of the group on the queue is about to ask the database: its ticket, or none when the
    /// table is full (the answer will not be kept).
    pub(super) fn ask(&mut self, queue: &str, group: &str) -> Option<u64> {
        let slot = self
            .by_queue
            .get(queue)
            .and_then(|groups| groups.get(group));
        if let Some(Slot::Handed { .. }) = slot {
            // A handed waiter asking: the hand-off stays, awaiting its answer.
            self.next_ticket += 1;
            return Some(self.next_ticket);
        }
        let exists = slot.is_some();
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

    /// A push is taking a waiter's pop of the group on the queue to run in its transaction: the
    /// ticket its answer is learnt with. A group known quiet is handed to that pop (as to a
    /// waiter the push woke, `push_for_group`), and a group already handed awaits its answer
    /// too: the long-polls that come back meanwhile park as before, the pop's answer deciding
    /// what is known after it. Otherwise the pop asks as a long-poll's attempt does.
    pub(super) fn ask_for_pushed_pop(&mut self, queue: &str, group: &str) -> Option<u64> {
        let Some(slot) = self.by_queue.get_mut(queue).and_then(|g| g.get_mut(group)) else {
            return self.ask(queue, group);
        };
        match slot.handed_to(1, self.next_ticket) {
            Some(handed) => *slot = handed,
            None => return self.ask(queue, group),
        }
        self.next_ticket += 1;
        Some(self.next_ticket)
    }

    /// The answer of the pop holding `ticket`: quiet until `Some(until)`, or not quiet (`None`).
    /// Kept only while the ticket is still the latest and no event came since, or when it is
    /// the answer of a handed waiter. Returns true when it was the last answer of a hand-off
    /// and one of them said something may still be due: the hand-off ends, and the caller wakes
    /// one more waiter of the group.
    pub(super) fn learn(
        &mut self,
        queue: &str,
        group: &str,
        ticket: u64,
        quiet: Option<Instant>,
    ) -> bool {
        let Some(slot) = self.by_queue.get_mut(queue).and_then(|g| g.get_mut(group)) else {
            return false;
        };
        match (*slot, quiet) {
            (Slot::Asking(asked), Some(until)) if asked == ticket => *slot = Slot::Known(until),
            (Slot::Asking(asked), None) if asked == ticket => self.remove(queue, group),
            (Slot::Handed { after, .. }, _) if ticket <= after => {}
            (
                Slot::Handed {
                    after,
                    left,
                    quiet: known,
                    due,
                    until: handed_until,
                },
                answer,
            ) => {
                let due = due || answer.is_none();
                let earliest = match (known, answer) {
                    (Some(k), Some(a)) => Some(k.min(a)),
                    (k, a) => k.or(a),
                };
                match earliest {
                    _ if left > 1 => {
                        *slot = Slot::Handed {
                            after,
                            left: left - 1,
                            quiet: earliest,
                            due,
                            until: handed_until,
                        };
                    }
                    Some(until) if !due => *slot = Slot::Known(until),
                    _ => {
                        self.remove(queue, group);
                        return true;
                    }
                }
            }
            _ => {}
        }
        false
    }

    /// The groups known of on the queue.
    pub(super) fn groups(&self, queue: &str) -> Vec<String> {
        self.by_queue
            .get(queue)
            .map(|groups| groups.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// An event on the queue for one group (a lease end, a seek, a push it was not handed).
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
