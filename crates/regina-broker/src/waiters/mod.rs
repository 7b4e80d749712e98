//! The long-poll registry (http-api.md §4.9). A pop that found nothing parks here, holding no
//! database connection, and is woken the moment something may have become eligible for it: a push
//! committed to its queue (and partition), or a lease of its group ending there.
//!
//! A waiter is registered *before* its first pop attempt, so an event that lands while the attempt
//! runs leaves a permit behind and the waiter retries instead of parking: no wake-up is lost.
//! Parked waiters of one key are woken one per pushed partition (spec SHOULD); a woken waiter that
//! leaves without finishing its retry passes the wake-up on.
//!
//! A push may instead take the pops of the parked waiters it would wake and run them in its own
//! transaction (`take_for_push`, then `hand`): those waiters get their answer at the push's
//! commit, and the push's wake-up counts them as woken.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::db::PopOutcome;

use quiet::Quiet;

mod quiet;

/// What a waiter waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum WaitKey {
    /// A pop on one queue, on one partition or any.
    Queue {
        /// Queue name.
        queue: String,
        /// Partition name, for the single-partition route.
        partition: Option<String>,
        /// Consumer group.
        group: String,
    },
    /// A namespace/task pop over many queues; woken by any push.
    Selector {
        /// Consumer group.
        group: String,
    },
}

/// `LONGPOLL_WAITERS_MAX` waiters are registered already.
#[derive(Debug)]
pub(crate) struct Overloaded;

struct Entry {
    partition: Option<String>,
    group: String,
    notify: Arc<Notify>,
    /// Waiting for an event (not running a pop attempt).
    parked: bool,
    /// Chosen by a targeted wake-up and not yet parked again or done.
    woken: bool,
    /// Its `regina.pop` element, for a push to run (a queue long-poll that offered it), and
    /// whether its answer tells the group's quiet.
    offer: Option<(Arc<str>, bool)>,
    /// A push took its pop and has not handed the answer yet.
    taken: bool,
    /// What a push that took its pop handed it, not yet read.
    handed: Option<Handed>,
}

impl Entry {
    fn wake(&mut self, targeted: bool) {
        self.parked = false;
        self.woken |= targeted;
        self.notify.notify_one();
    }
}

/// What became of a long-poll's pop that a push took (`take_for_push`).
#[derive(Debug)]
pub(crate) enum Handed {
    /// It ran in the push's transaction, which committed: the pop's outcome.
    Ran(PopOutcome),
    /// It did not run (its group had no subscription to the queue yet, or the push's call
    /// failed): the long-poll asks on its own.
    NotRun,
}

/// A long-poll's pop that a push took, to run in its transaction and [`Waiters::hand`] back.
#[derive(Debug)]
pub(crate) struct Taken {
    id: u64,
    queue: String,
    group: String,
    /// The pop's `regina.pop` element.
    pub(crate) json: Arc<str>,
    /// The quiet ticket its answer is learnt with (see `quiet`): the push's own event does not
    /// end it, the pop having run after the push's items were stored.
    ticket: Option<u64>,
}

/// How a parked waiter resumed ([`WaiterGuard::park_until`]).
#[derive(Debug)]
pub(crate) enum Resumed {
    /// An event woke it.
    Event,
    /// Its time came.
    Timer,
    /// A push that took its pop handed this.
    Handed(Handed),
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    count: usize,
    /// Queue waiters by queue name, then by registration order.
    queues: HashMap<String, BTreeMap<u64, Entry>>,
    selectors: BTreeMap<u64, Entry>,
    /// Queues and groups known to have nothing due (see `quiet`); every event below updates it
    /// under this same lock.
    quiet: Quiet,
}

impl Registry {
    /// See [`Waiters::quiet_learn`].
    fn learn_quiet(&mut self, queue: &str, group: &str, ticket: u64, quiet: Option<Instant>) {
        if !self.quiet.learn(queue, group, ticket, quiet) {
            return;
        }
        let next = self.queues.get_mut(queue).and_then(|entries| {
            entries
                .values_mut()
                .find(|e| e.parked && e.group == group && e.partition.is_none())
        });
        if let Some(next) = next {
            next.wake(true);
        }
    }
}

/// The registry of parked pops of this instance.
pub(crate) struct Waiters {
    registry: Mutex<Registry>,
    max: usize,
    shutting_down: AtomicBool,
}

impl Waiters {
    /// An empty registry admitting `max` waiters (`LONGPOLL_WAITERS_MAX`), and knowing at most
    /// as many quiet (queue, group) pairs.
    pub(crate) fn new(max: usize) -> Waiters {
        Waiters {
            registry: Mutex::new(Registry {
                quiet: Quiet::new(max),
                ..Registry::default()
            }),
            max,
            shutting_down: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a waiter; it counts against the limit until the guard is dropped.
    ///
    /// # Errors
    /// [`Overloaded`] when `LONGPOLL_WAITERS_MAX` waiters exist.
    pub(crate) fn register(self: &Arc<Self>, key: WaitKey) -> Result<WaiterGuard, Overloaded> {
        let mut registry = self.lock();
        if registry.count >= self.max {
            return Err(Overloaded);
        }
        registry.next_id += 1;
        registry.count += 1;
        let id = registry.next_id;
        let notify = Arc::new(Notify::new());
        let (queue, partition, group) = match key {
            WaitKey::Queue {
                queue,
                partition,
                group,
            } => (Some(queue), partition, group),
            WaitKey::Selector { group } => (None, None, group),
        };
        let entry = Entry {
            partition,
            group,
            notify: notify.clone(),
            parked: false,
            woken: false,
            offer: None,
            taken: false,
            handed: None,
        };
        match &queue {
            Some(queue) => {
                registry
                    .queues
                    .entry(queue.clone())
                    .or_default()
                    .insert(id, entry);
            }
            None => {
                registry.selectors.insert(id, entry);
            }
        }
        Ok(WaiterGuard {
            waiters: self.clone(),
            id,
            queue,
            notify,
        })
    }

    /// Waiters registered now.
    pub(crate) fn len(&self) -> usize {
        self.lock().count
    }

    /// Waiters parked now: past their first pop attempt and waiting for an event or a timer. A
    /// registered waiter that is not parked is running an attempt (its first, which a database
    /// outage still ends with `503`, or a retry).
    pub(crate) fn parked(&self) -> usize {
        let registry = self.lock();
        let queued = registry.queues.values().flat_map(BTreeMap::values);
        queued
            .chain(registry.selectors.values())
            .filter(|e| e.parked)
            .count()
    }

    /// Waiters registered now on each queue (namespace/task waiters are on none).
    pub(crate) fn per_queue(&self) -> HashMap<String, usize> {
        let registry = self.lock();
        registry
            .queues
            .iter()
            .filter(|(_, entries)| !entries.is_empty())
            .map(|(queue, entries)| (queue.clone(), entries.len()))
            .collect()
    }

    /// A push committed to `partitions` of `queue`: per group, wake one waiter per pushed
    /// partition (any-partition waiters) or per matching partition — parked waiters first, then
    /// waiters running a pop attempt right now (which may have read before the commit) — and
    /// every multi-queue waiter. Waking every running attempt instead would make each push cost
    /// one pop per consumer of the group.
    ///
    /// A group known to be quiet whose every pushed partition woke a parked any-partition waiter
    /// is handed to those waiters (see `quiet`); what is known of every other group ends.
    pub(crate) fn push_committed(&self, queue: &str, partitions: &[&str]) {
        self.push_committed_serving(queue, partitions, &[]);
    }

    /// [`Waiters::push_committed`] for a push that ran the pops it took from this registry
    /// (`served`, see [`Waiters::take_for_push`]): those waiters use their keys' wake-ups first
    /// and are not woken. Pops another push took are woken as running attempts are: their
    /// waiters ask again if that push's pops found nothing.
    pub(crate) fn push_committed_serving(
        &self,
        queue: &str,
        partitions: &[&str],
        served: &[Taken],
    ) {
        let mut registry = self.lock();
        let Registry { queues, quiet, .. } = &mut *registry;
        // Per group: parked any-partition waiters this push woke.
        let mut handed: HashMap<String, usize> = HashMap::new();
        if let Some(entries) = queues.get_mut(queue) {
            let mut budgets: HashMap<(Option<String>, String), usize> = HashMap::new();
            let served = |id: &u64| served.iter().any(|t| t.id == *id && t.queue == queue);
            // Waiters whose pops ran in this push's transaction were served by it: they use
            // their key's budget first, and are not woken.
            for (_, entry) in entries.iter_mut().filter(|(id, _)| served(id)) {
                if let Some(budget) = push_budget(entry, partitions) {
                    take_budget(entry, &mut budgets, budget);
                }
            }
            for parked in [true, false] {
                for (_, entry) in entries
                    .iter_mut()
                    .filter(|(id, e)| e.parked == parked && !served(id))
                {
                    let Some(budget) = push_budget(entry, partitions) else {
                        continue;
                    };
                    if wake_within_budget(entry, &mut budgets, budget)
                        && parked
                        && entry.partition.is_none()
                    {
                        *handed.entry(entry.group.clone()).or_default() += 1;
                    }
                }
            }
        }
        for group in quiet.groups(queue) {
            // A pop that ran in this push's transaction answers for this push: what it says of
            // its group is learnt when it is handed.
            let answered = served
                .iter()
                .any(|t| t.ticket.is_some() && t.queue == queue && t.group == group);
            if answered {
                continue;
            }
            let woken = handed.get(&group).copied().unwrap_or(0);
            quiet.push_for_group(queue, &group, partitions.len(), woken);
        }
        for entry in registry.selectors.values_mut() {
            entry.wake(false);
        }
    }

    /// A push to `targets` (queue, partitions) is about to run: takes the pops of the parked
    /// queue long-polls that its commit would wake first (per key, one per pushed partition, as
    /// [`Waiters::push_committed`]), to run in the push's transaction. Each must be given back
    /// with [`Waiters::hand`]; until then it is neither parked nor woken by the push.
    pub(crate) fn take_for_push(&self, targets: &[(&str, Vec<&str>)]) -> Vec<Taken> {
        let mut registry = self.lock();
        let mut taken = Vec::new();
        if self.is_shutting_down() {
            return taken;
        }
        let Registry { queues, quiet, .. } = &mut *registry;
        for (queue, partitions) in targets {
            let Some(entries) = queues.get_mut(*queue) else {
                continue;
            };
            let mut budgets = HashMap::new();
            for (id, entry) in entries.iter_mut().filter(|(_, e)| e.parked && !e.taken) {
                let (Some((json, tells_quiet)), Some(budget)) =
                    (&entry.offer, push_budget(entry, partitions))
                else {
                    continue;
                };
                let (json, tells_quiet) = (json.clone(), *tells_quiet);
                if take_budget(entry, &mut budgets, budget) {
                    entry.parked = false;
                    entry.taken = true;
                    // Chosen: if its client leaves before the answer, another waiter retries.
                    entry.woken = true;
                    let ticket = tells_quiet
                        .then(|| quiet.ask_for_pushed_pop(queue, &entry.group))
                        .flatten();
                    taken.push(Taken {
                        id: *id,
                        queue: (*queue).to_owned(),
                        group: entry.group.clone(),
                        json,
                        ticket,
                    });
                }
            }
        }
        taken
    }

    /// Gives a pop that [`Waiters::take_for_push`] took back to its waiter, with what became of
    /// it; call after the push's [`Waiters::push_committed_serving`] (or its failure). Returns
    /// it when the waiter is gone (its client left): the caller ends a lease it holds.
    ///
    /// What its answer says of its group's quiet on the queue is learnt as a long-poll's own
    /// attempt's is, trusted for at most `quiet_ttl` (`LONGPOLL_QUIET_MS`).
    pub(crate) fn hand(&self, taken: Taken, handed: Handed, quiet_ttl: Duration) -> Option<Handed> {
        let mut registry = self.lock();
        if let Some(ticket) = taken.ticket {
            let quiet = match &handed {
                Handed::Ran(outcome) => outcome.quiet().map(|q| q.local_until(quiet_ttl)),
                Handed::NotRun => None,
            };
            registry.learn_quiet(&taken.queue, &taken.group, ticket, quiet);
        }
        let entry = registry
            .queues
            .get_mut(&taken.queue)
            .and_then(|e| e.get_mut(&taken.id));
        let Some(entry) = entry else {
            return Some(handed);
        };
        entry.taken = false;
        entry.handed = Some(handed);
        entry.notify.notify_one();
        None
    }

    /// A lease of `group` on `queue` ended (ack, sweep, release): its partition may be eligible
    /// again for that group. Wakes one waiter per key (parked first) and every multi-queue waiter
    /// of the group.
    pub(crate) fn lease_ended(&self, queue: &str, group: &str) {
        let mut registry = self.lock();
        registry.quiet.remove(queue, group);
        if let Some(entries) = registry.queues.get_mut(queue) {
            let mut budgets = HashMap::new();
            for parked in [true, false] {
                for entry in entries
                    .values_mut()
                    .filter(|e| e.group == group && e.parked == parked)
                {
                    wake_within_budget(entry, &mut budgets, 1);
                }
            }
        }
        for entry in registry.selectors.values_mut().filter(|e| e.group == group) {
            entry.wake(false);
        }
    }

    /// Where `group` stands on `queue` changed for many partitions at once (a seek, a group
    /// delete, a new subscription start): every waiter of the group there retries, and every
    /// multi-queue waiter of the group. Rare, so waking all costs nothing worth budgeting.
    pub(crate) fn group_moved(&self, queue: &str, group: &str) {
        let mut registry = self.lock();
        registry.quiet.remove(queue, group);
        if let Some(entries) = registry.queues.get_mut(queue) {
            for entry in entries.values_mut().filter(|e| e.group == group) {
                entry.wake(false);
            }
        }
        for entry in registry.selectors.values_mut().filter(|e| e.group == group) {
            entry.wake(false);
        }
    }

    /// Starts shutdown: every waiter wakes and answers `204 shutdown`.
    pub(crate) fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.wake_all();
    }

    /// Wakes every waiter (shutdown, pop maintenance): each re-checks why it waits.
    pub(crate) fn wake_all(&self) {
        let mut registry = self.lock();
        registry.quiet.clear();
        let Registry {
            queues, selectors, ..
        } = &mut *registry;
        for entry in queues
            .values_mut()
            .flat_map(|e| e.values_mut())
            .chain(selectors.values_mut())
        {
            entry.wake(false);
        }
    }

    /// Whether `group` is known to have nothing due on `queue` now (see `quiet`): until when, or
    /// an event before it.
    pub(crate) fn quiet(&self, queue: &str, group: &str) -> Option<Instant> {
        self.lock().quiet.known(queue, group, Instant::now())
    }

    /// A pop of `group` on `queue` is about to ask the database: the ticket to pass to
    /// [`Waiters::quiet_learn`] with its answer (none: the answer will not be kept).
    pub(crate) fn quiet_ask(&self, queue: &str, group: &str) -> Option<u64> {
        self.lock().quiet.ask(queue, group)
    }

    /// The answer of the pop holding `ticket`: nothing due until `Some(until)` (or an event), or
    /// `None`, something may be due. Kept only if no event came since the ticket.
    ///
    /// The last answer of a hand-off, when one of its answers said something may still be due,
    /// ends it and wakes one parked waiter of the group: the long-polls that parked meanwhile
    /// would otherwise have asked.
    pub(crate) fn quiet_learn(
        &self,
        queue: &str,
        group: &str,
        ticket: u64,
        quiet: Option<Instant>,
    ) {
        self.lock().learn_quiet(queue, group, ticket, quiet);
    }

    /// Whether shutdown has started.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    fn with_entry(&self, id: u64, queue: Option<&str>, change: impl FnOnce(&mut Entry)) {
        let mut registry = self.lock();
        let entry = match queue {
            Some(q) => registry.queues.get_mut(q).and_then(|e| e.get_mut(&id)),
            None => registry.selectors.get_mut(&id),
        };
        if let Some(entry) = entry {
            change(entry);
        }
    }

    fn deregister(&self, id: u64, queue: Option<&str>) {
        let mut registry = self.lock();
        let removed = match queue {
            Some(q) => {
                let entries = registry.queues.get_mut(q);
                let removed = entries.and_then(|e| e.remove(&id));
                if registry.queues.get(q).is_some_and(BTreeMap::is_empty) {
                    registry.queues.remove(q);
                }
                removed
            }
            None => registry.selectors.remove(&id),
        };
        let Some(removed) = removed else { return };
        registry.count -= 1;
        // It was chosen for a wake-up it will not use: hand it to a parked waiter of its key, or,
        // with none, end a hand-off of its group to it (the next long-poll asks).
        if removed.woken {
            let Some(queue) = queue else { return };
            let heir = registry.queues.get_mut(queue).and_then(|entries| {
                entries.values_mut().find(|e| {
                    e.parked && e.group == removed.group && e.partition == removed.partition
                })
            });
            match heir {
                Some(heir) => heir.wake(true),
                None => registry.quiet.remove(queue, &removed.group),
            }
        }
    }
}

/// The wake-ups a push to `partitions` owes `entry`'s key: one per pushed partition for an
/// any-partition waiter, one for a waiter of a pushed partition, none otherwise.
fn push_budget(entry: &Entry, partitions: &[&str]) -> Option<usize> {
    match entry.partition.as_deref() {
        None => Some(partitions.len()),
        Some(p) if partitions.contains(&p) => Some(1),
        Some(_) => None,
    }
}

/// Uses one of the wake-ups of `entry`'s key in this event, if any is left (returns whether one
/// was), the key starting with `budget`.
fn take_budget(
    entry: &Entry,
    budgets: &mut HashMap<(Option<String>, String), usize>,
    budget: usize,
) -> bool {
    let left = budgets
        .entry((entry.partition.clone(), entry.group.clone()))
        .or_insert(budget);
    if *left == 0 {
        return false;
    }
    *left -= 1;
    true
}

/// Wakes `entry` if its key still has budget left in this event (returns whether it did): a
/// parked waiter retries at once; one running a pop attempt gets a permit and retries after it.
/// Either way it is marked chosen, so that if it leaves without retrying, the wake-up passes to
/// another waiter.
fn wake_within_budget(
    entry: &mut Entry,
    budgets: &mut HashMap<(Option<String>, String), usize>,
    budget: usize,
) -> bool {
    let chosen = take_budget(entry, budgets, budget);
    if chosen {
        entry.wake(true);
    }
    chosen
}

/// A registered waiter; dropping it deregisters (a client that left creates no lease).
pub(crate) struct WaiterGuard {
    waiters: Arc<Waiters>,
    id: u64,
    queue: Option<String>,
    notify: Arc<Notify>,
}

impl WaiterGuard {
    /// Offers this queue long-poll's pop (its `regina.pop` element) to the pushes that would
    /// wake it, to run in their transactions while it is parked; `tells_quiet`: its answer says
    /// whether its group is quiet on the queue, which is then learnt as its own attempts' are.
    pub(crate) fn offer(&self, json: Arc<str>, tells_quiet: bool) {
        self.waiters
            .with_entry(self.id, self.queue.as_deref(), |e| {
                e.offer = Some((json, tells_quiet));
            });
    }

    /// Parks until woken by an event, until `until`, or until a push that took its pop hands
    /// the answer, whichever comes first. A push that took its pop before `until` is waited for:
    /// that pop's answer is this waiter's to give (shutdown included).
    pub(crate) async fn park_until(&self, until: tokio::time::Instant) -> Resumed {
        self.waiters
            .with_entry(self.id, self.queue.as_deref(), |e| {
                e.parked = true;
                e.woken = false;
            });
        let notified = tokio::select! {
            _ = self.notify.notified() => true,
            _ = tokio::time::sleep_until(until) => false,
        };
        loop {
            let mut state = (false, None);
            self.waiters
                .with_entry(self.id, self.queue.as_deref(), |e| {
                    e.parked = false;
                    state = (e.taken, e.handed.take());
                });
            match state {
                (_, Some(handed)) => return Resumed::Handed(handed),
                (true, None) => self.notify.notified().await,
                (false, None) => break,
            }
        }
        if notified {
            Resumed::Event
        } else {
            Resumed::Timer
        }
    }

    /// The waiter got its answer: a wake-up it received is used, not to be passed on.
    pub(crate) fn done(&self) {
        self.waiters
            .with_entry(self.id, self.queue.as_deref(), |e| e.woken = false);
    }
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        self.waiters.deregister(self.id, self.queue.as_deref());
    }
}

#[cfg(test)]
mod tests;
