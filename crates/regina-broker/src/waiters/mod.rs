//! The long-poll registry (http-api.md §4.9). A pop that found nothing parks here, holding no
//! database connection, and is woken the moment something may have become eligible for it: a push
//! committed to its queue (and partition), or a lease of its group ending there.
//!
//! A waiter is registered *before* its first pop attempt, so an event that lands while the attempt
//! runs leaves a permit behind and the waiter retries instead of parking: no wake-up is lost.
//! Parked waiters of one key are woken one per pushed partition (spec SHOULD); a woken waiter that
//! leaves without finishing its retry passes the wake-up on.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

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
}

impl Entry {
    fn wake(&mut self, targeted: bool) {
        self.parked = false;
        self.woken |= targeted;
        self.notify.notify_one();
    }
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
        let mut registry = self.lock();
        let Registry { queues, quiet, .. } = &mut *registry;
        // Per group: parked any-partition waiters this push woke.
        let mut handed: HashMap<String, usize> = HashMap::new();
        if let Some(entries) = queues.get_mut(queue) {
            let mut budgets: HashMap<(Option<String>, String), usize> = HashMap::new();
            for parked in [true, false] {
                for entry in entries.values_mut().filter(|e| e.parked == parked) {
                    let budget = match entry.partition.as_deref() {
                        None => partitions.len(),
                        Some(p) if partitions.contains(&p) => 1,
                        Some(_) => continue,
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
            let woken = handed.get(&group).copied().unwrap_or(0);
            quiet.push_for_group(queue, &group, partitions.len(), woken);
        }
        for entry in registry.selectors.values_mut() {
            entry.wake(false);
        }
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
        let mut registry = self.lock();
        if !registry.quiet.learn(queue, group, ticket, quiet) {
            return;
        }
        let next = registry.queues.get_mut(queue).and_then(|entries| {
            entries
                .values_mut()
                .find(|e| e.parked && e.group == group && e.partition.is_none())
        });
        if let Some(next) = next {
            next.wake(true);
        }
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

/// Wakes `entry` if its key still has budget left in this event (returns whether it did): a
/// parked waiter retries at once; one running a pop attempt gets a permit and retries after it.
/// Either way it is marked chosen, so that if it leaves without retrying, the wake-up passes to
/// another waiter.
fn wake_within_budget(
    entry: &mut Entry,
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
    entry.wake(true);
    true
}

/// A registered waiter; dropping it deregisters (a client that left creates no lease).
pub(crate) struct WaiterGuard {
    waiters: Arc<Waiters>,
    id: u64,
    queue: Option<String>,
    notify: Arc<Notify>,
}

impl WaiterGuard {
    /// Parks until woken by an event or until `until`, whichever comes first. Returns true when
    /// woken by an event (including shutdown).
    pub(crate) async fn park_until(&self, until: tokio::time::Instant) -> bool {
        self.waiters
            .with_entry(self.id, self.queue.as_deref(), |e| {
                e.parked = true;
                e.woken = false;
            });
        let woken = tokio::select! {
            _ = self.notify.notified() => true,
            _ = tokio::time::sleep_until(until) => false,
        };
        self.waiters
            .with_entry(self.id, self.queue.as_deref(), |e| e.parked = false);
        woken
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
