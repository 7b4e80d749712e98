//! The fault runs' delivery check. One producer owns each lane (a partition) and pushes it
//! sequentially, retrying a request with the same transactionIds until the broker acknowledges it,
//! so sequence `s` of a lane is pushed only after every earlier sequence was acknowledged. Hence,
//! per consumer group:
//! - **lost**: an acknowledged push never delivered;
//! - **out of order**: a delivery of `s` while some earlier sequence of its lane had never been
//!   delivered (a consumer skipped a message);
//! - **redelivered after ack**: a delivery of a message whose `completed` ack the broker had
//!   confirmed (redeliveries of unacknowledged messages are expected after crashes and expiries).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

/// Acknowledged pushes and every group's deliveries and confirmed acks.
#[derive(Default)]
pub struct FaultLedger {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Per lane, the acknowledged sequences.
    acknowledged: HashMap<u32, HashSet<u64>>,
    /// Items the broker answered `buffered` (stored in its failover buffer).
    buffered: u64,
    groups: BTreeMap<String, Group>,
}

#[derive(Default)]
struct Group {
    lanes: HashMap<u32, Lane>,
    deliveries: u64,
    redeliveries: u64,
    redelivered_after_ack: u64,
    out_of_order: u64,
}

#[derive(Default)]
struct Lane {
    delivered: HashSet<u64>,
    /// The lowest sequence never delivered: every one below it was. A delivery of `s` skipped a
    /// message exactly when this is below `s`, which makes that check O(1) instead of a scan of
    /// the lane (quadratic over a run of a few thousand messages per lane).
    prefix: u64,
    acked: HashSet<u64>,
}

/// The verdict of a fault run for a set of groups.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Pushes the broker acknowledged.
    pub acknowledged: u64,
    /// Of those, answered `buffered`.
    pub buffered: u64,
    /// Distinct messages delivered, per group.
    pub delivered: BTreeMap<String, u64>,
    /// Deliveries of already delivered (unacknowledged) messages, per group.
    pub redelivered: BTreeMap<String, u64>,
    /// Acknowledged pushes never delivered, all groups.
    pub lost: u64,
    /// Deliveries that skipped an earlier message, all groups.
    pub out_of_order: u64,
    /// Deliveries of messages whose completion the broker had confirmed, all groups.
    pub redelivered_after_ack: u64,
}

impl Verdict {
    /// Whether nothing was lost, skipped or delivered again after a confirmed ack.
    pub fn passed(&self) -> bool {
        self.lost == 0 && self.out_of_order == 0 && self.redelivered_after_ack == 0
    }
}

impl FaultLedger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Items answered `buffered` so far.
    pub fn buffered(&self) -> u64 {
        self.lock().buffered
    }

    /// Records pushes the broker acknowledged; `buffered` of them went to its failover buffer.
    pub fn acknowledged(&self, lane: u32, seqs: impl IntoIterator<Item = u64>, buffered: u64) {
        let mut inner = self.lock();
        inner.acknowledged.entry(lane).or_default().extend(seqs);
        inner.buffered += buffered;
    }

    /// Records one pop answer of `group`, `(lane, seq)` in answer order.
    pub fn delivered(&self, group: &str, seen: &[(u32, u64)]) {
        let mut inner = self.lock();
        let g = inner.groups.entry(group.to_owned()).or_default();
        for &(lane_no, seq) in seen {
            g.deliveries += 1;
            let lane = g.lanes.entry(lane_no).or_default();
            if lane.prefix < seq {
                g.out_of_order += 1;
            }
            if lane.delivered.insert(seq) {
                while lane.delivered.contains(&lane.prefix) {
                    lane.prefix += 1;
                }
            } else {
                g.redeliveries += 1;
                if lane.acked.contains(&seq) {
                    g.redelivered_after_ack += 1;
                }
            }
        }
    }

    /// Records acks of `group` that the broker confirmed (`success: true`, status `completed`).
    pub fn acked(&self, group: &str, confirmed: &[(u32, u64)]) {
        let mut inner = self.lock();
        let g = inner.groups.entry(group.to_owned()).or_default();
        for &(lane, seq) in confirmed {
            g.lanes.entry(lane).or_default().acked.insert(seq);
        }
    }

    /// Distinct messages delivered so far, all groups: what a drain's progress is measured by.
    pub fn distinct_deliveries(&self) -> u64 {
        let inner = self.lock();
        inner
            .groups
            .values()
            .flat_map(|g| g.lanes.values())
            .map(|l| l.delivered.len() as u64)
            .sum()
    }

    /// Whether every group has received every acknowledged push.
    pub fn complete(&self, groups: &[String]) -> bool {
        let inner = self.lock();
        groups.iter().all(|name| {
            let Some(g) = inner.groups.get(name) else {
                return inner.acknowledged.values().all(HashSet::is_empty);
            };
            inner.acknowledged.iter().all(|(lane, seqs)| {
                let Some(l) = g.lanes.get(lane) else {
                    return seqs.is_empty();
                };
                seqs.iter()
                    .all(|s| *s < l.prefix || l.delivered.contains(s))
            })
        })
    }

    /// The verdict for `groups`.
    pub fn verdict(&self, groups: &[String]) -> Verdict {
        let inner = self.lock();
        let mut v = Verdict {
            acknowledged: inner.acknowledged.values().map(|s| s.len() as u64).sum(),
            buffered: inner.buffered,
            ..Verdict::default()
        };
        let empty = Group::default();
        for name in groups {
            let g = inner.groups.get(name).unwrap_or(&empty);
            for (lane, seqs) in &inner.acknowledged {
                let delivered = g.lanes.get(lane).map(|l| &l.delivered);
                v.lost += seqs
                    .iter()
                    .filter(|s| !delivered.is_some_and(|d| d.contains(s)))
                    .count() as u64;
            }
            let distinct = g.lanes.values().map(|l| l.delivered.len() as u64).sum();
            v.delivered.insert(name.clone(), distinct);
            v.redelivered.insert(name.clone(), g.redeliveries);
            v.out_of_order += g.out_of_order;
            v.redelivered_after_ack += g.redelivered_after_ack;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Vec<String> {
        vec!["g".to_owned()]
    }

    #[test]
    fn in_order_delivery_of_everything_passes() {
        let l = FaultLedger::default();
        l.acknowledged(0, [0, 1, 2], 0);
        l.delivered("g", &[(0, 0), (0, 1)]);
        l.delivered("g", &[(0, 2)]);
        assert!(l.complete(&groups()));
        let v = l.verdict(&groups());
        assert!(v.passed(), "{v:?}");
        assert_eq!(v.delivered["g"], 3);
    }

    #[test]
    fn a_missing_message_is_lost_and_a_skip_is_out_of_order() {
        let l = FaultLedger::default();
        l.acknowledged(0, [0, 1, 2], 0);
        l.delivered("g", &[(0, 0), (0, 2)]);
        assert!(!l.complete(&groups()));
        let v = l.verdict(&groups());
        assert_eq!((v.lost, v.out_of_order), (1, 1));
        assert!(!v.passed());
    }

    /// The O(1) skip check counts what the definition does: a delivery of `s` while some earlier
    /// sequence of its lane was never delivered.
    #[test]
    fn skips_are_counted_as_defined_whatever_the_delivery_order() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..50 {
            let l = FaultLedger::default();
            let mut delivered: HashMap<u32, HashSet<u64>> = HashMap::new();
            let mut expected = 0;
            for _ in 0..200 {
                let (lane, seq) = (u32::try_from(next(3)).expect("below 3"), next(40));
                let seen = delivered.entry(lane).or_default();
                if (0..seq).any(|q| !seen.contains(&q)) {
                    expected += 1;
                }
                seen.insert(seq);
                l.delivered("g", &[(lane, seq)]);
            }
            assert_eq!(l.verdict(&groups()).out_of_order, expected);
        }
    }

    #[test]
    fn redelivery_is_fine_until_the_ack_was_confirmed() {
        let l = FaultLedger::default();
        l.acknowledged(0, [0, 1], 0);
        l.delivered("g", &[(0, 0), (0, 1)]);
        l.acked("g", &[(0, 0)]);
        l.delivered("g", &[(0, 1)]);
        let v = l.verdict(&groups());
        assert!(v.passed(), "{v:?}");
        assert_eq!(v.redelivered["g"], 1);
        l.delivered("g", &[(0, 0)]);
        assert_eq!(l.verdict(&groups()).redelivered_after_ack, 1);
    }
}
