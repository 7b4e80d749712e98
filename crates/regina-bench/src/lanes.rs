//! How a producer makes its requests: which partitions each request's items go to (the plan's
//! layout), and the lanes and sequences their payloads carry for the checks.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::Value;

use crate::plan::{Item, Layout, Plan};

/// A delivered payload's lane, sequence, send time (µs, 0 when absent) and poison mark.
pub fn decode(data: &Value) -> Option<(u32, u64, u64, bool)> {
    if let (Some(lane), Some(seq)) = (data["l"].as_u64(), data["s"].as_u64()) {
        let t = data["t"].as_u64().unwrap_or(0);
        return Some((lane as u32, seq, t, data["x"].as_bool().unwrap_or(false)));
    }
    let n = data["n"].as_u64()?;
    Some(((n >> 32) as u32, n & 0xffff_ffff, 0, false))
}

/// One producer's lanes: which partitions it writes and the next sequence of each lane.
pub struct Lanes {
    index: usize,
    owned: Vec<usize>,
    cursor: usize,
    next: HashMap<u32, u64>,
    rng: StdRng,
    pad: String,
}

impl Lanes {
    /// The lanes of producer `index`.
    pub fn new(plan: &Plan, index: usize) -> Lanes {
        let total = plan.lanes_total();
        let owned: Vec<usize> = if plan.producers <= total {
            (index..total).step_by(plan.producers).collect()
        } else {
            vec![index % total]
        };
        Lanes {
            index,
            owned,
            cursor: 0,
            next: HashMap::new(),
            rng: StdRng::from_entropy(),
            pad: "x".repeat(plan.pad),
        }
    }

    /// The slots (queue × partition) of the next request's items.
    fn slots(&mut self, plan: &Plan) -> Vec<usize> {
        let total = plan.lanes_total();
        let n = plan.items_per_push;
        match plan.layout {
            Layout::Owned => (0..n)
                .map(|_| {
                    let slot = self.owned[self.cursor % self.owned.len()];
                    self.cursor += 1;
                    slot
                })
                .collect(),
            Layout::Spread => {
                // Distinct partitions while there are enough, then around again.
                let mut slots =
                    rand::seq::index::sample(&mut self.rng, total, n.min(total)).into_vec();
                while slots.len() < n {
                    slots.push(slots[slots.len() % total]);
                }
                slots
            }
            Layout::Random => (0..n).map(|_| self.rng.gen_range(0..total)).collect(),
            Layout::Hot => vec![0; n],
        }
    }

    /// The next request: its items and, per item, (lane, seq, poison) for the ledger.
    pub fn request(
        &mut self,
        plan: &Plan,
        sent_us: u64,
        poison: impl Fn(u32, u64) -> bool,
    ) -> (Vec<Item>, Vec<(u32, u64, bool)>) {
        let total = plan.lanes_total();
        let slots = self.slots(plan);
        let mut items = Vec::with_capacity(slots.len());
        let mut keys = Vec::with_capacity(slots.len());
        for slot in slots {
            let lane = (self.index * total + slot) as u32;
            let seq = self.next.entry(lane).or_insert(0);
            let poisoned = poison(lane, *seq);
            keys.push((lane, *seq, poisoned));
            items.push(plan.item(slot, lane, *seq, sent_us, poisoned, &self.pad));
            *seq += 1;
        }
        (items, keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes_of(plan: &Plan, index: usize) -> Vec<(u32, u64)> {
        let mut lanes = Lanes::new(plan, index);
        let (items, keys) = lanes.request(plan, 1, |_, _| false);
        assert_eq!(items.len(), plan.items_per_push);
        for (item, (lane, seq, _)) in items.iter().zip(&keys) {
            let data: Value = serde_json::from_str(&item.payload).expect("JSON payload");
            let (l, s, _, _) = decode(&data).expect("decodable");
            assert_eq!((l, s), (*lane, *seq), "{}", item.payload);
        }
        keys.iter().map(|(l, s, _)| (*l, *s)).collect()
    }

    #[test]
    fn spread_requests_touch_distinct_partitions() {
        let plan = Plan::named("bp-100-spread").expect("plan");
        let keys = lanes_of(&plan, 3);
        let mut partitions: Vec<u32> = keys.iter().map(|(l, _)| *l).collect();
        partitions.sort_unstable();
        partitions.dedup();
        assert_eq!(partitions.len(), 100);
        let narrow = Plan::named("bp-100").expect("plan");
        let mut owned: Vec<u32> = lanes_of(&narrow, 3).iter().map(|(l, _)| *l).collect();
        owned.sort_unstable();
        owned.dedup();
        assert_eq!(
            owned.len(),
            20,
            "narrow bp-100: a producer owns 20 partitions"
        );
    }

    #[test]
    fn hot_and_random_shapes() {
        let hot = Plan::named("bp-hot").expect("plan");
        let keys = lanes_of(&hot, 7);
        assert!(keys.iter().all(|(l, _)| *l == 7));
        assert_eq!(
            keys.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        let random = Plan::named("bp-random-100k").expect("plan");
        let keys = lanes_of(&random, 49);
        assert!(keys
            .iter()
            .all(|(l, _)| (*l as usize) / 100_000 == 49 && (*l as usize) < 50 * 100_000));
    }
}
