//! The delivery check. Every message carries its lane (queue × partition) and its sequence in the
//! lane; one producer owns each lane and pushes to it sequentially, so a lane's order is defined.
//! The ledger records acknowledged pushes and, per consumer group, every delivery.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use regina_bench::model::Verification;

/// What the producers know: per lane, how many sequence numbers were used, which of those are
/// uncertain (their push failed: stored or not), and which are poison (never completed).
#[derive(Default)]
struct Pushed {
    next: HashMap<u32, u64>,
    uncertain: HashSet<(u32, u64)>,
    poison: HashSet<(u32, u64)>,
}

#[derive(Default)]
struct Lane {
    /// Highest sequence delivered so far.
    max: Option<u64>,
    delivered: HashSet<u64>,
}

#[derive(Default)]
struct Group {
    lanes: HashMap<u32, Lane>,
    deliveries: u64,
    redeliveries: u64,
    out_of_order: u64,
}

/// Pushes and deliveries of a run.
pub struct Ledger {
    pushed: Mutex<Pushed>,
    groups: Mutex<BTreeMap<String, Group>>,
    /// Whether order across separate pops is observable (leases: a lane is not handed out again
    /// before the previous delivery was acknowledged). With autoAck two consumers can receive
    /// consecutive ranges of a lane and report them in either order.
    leases: bool,
}

/// One delivery as the consumer saw it.
pub struct Seen {
    /// Lane number.
    pub lane: u32,
    /// Sequence in the lane.
    pub seq: u64,
}

impl Ledger {
    /// An empty ledger; `leases`: consumers acknowledge explicitly.
    pub fn new(leases: bool) -> Ledger {
        Ledger {
            pushed: Mutex::new(Pushed::default()),
            groups: Mutex::new(BTreeMap::new()),
            leases,
        }
    }

    /// Records a push outcome for a request's (lane, seq) pairs.
    pub fn pushed(&self, items: &[(u32, u64, bool)], ok: bool) {
        let mut p = self
            .pushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for &(lane, seq, poison) in items {
            let next = p.next.entry(lane).or_insert(0);
            *next = (*next).max(seq + 1);
            if !ok {
                p.uncertain.insert((lane, seq));
            }
            if poison {
                p.poison.insert((lane, seq));
            }
        }
    }

    /// Records the deliveries of one pop answer for `group`, in answer order.
    pub fn delivered(&self, group: &str, seen: &[Seen]) {
        let pushed = self
            .pushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let skippable = |lane: u32, seq: u64| pushed.uncertain.contains(&(lane, seq));
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let g = groups.entry(group.to_owned()).or_default();
        let mut previous: HashMap<u32, u64> = HashMap::new();
        for s in seen {
            g.deliveries += 1;
            let lane = g.lanes.entry(s.lane).or_default();
            // Within one answer a lane's messages come in offset order with no gap, except
            // messages already settled (delivered before) and uncertain pushes.
            let expect_from = match previous.get(&s.lane) {
                Some(prev) => Some(prev + 1),
                None if self.leases => lane.max.map(|m| m + 1),
                None => None,
            };
            if let Some(from) = expect_from {
                let gap =
                    (from..s.seq).any(|q| !lane.delivered.contains(&q) && !skippable(s.lane, q));
                if s.seq > from && gap {
                    g.out_of_order += 1;
                }
            }
            previous.insert(s.lane, s.seq);
            if !lane.delivered.insert(s.seq) {
                // The verdict calls these duplicates unless the group injects failures.
                g.redeliveries += 1;
            }
            lane.max = Some(lane.max.map_or(s.seq, |m| m.max(s.seq)));
        }
    }

    /// Messages delivered so far to `group` (distinct).
    pub fn distinct_delivered(&self, group: &str) -> u64 {
        let groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        groups
            .get(group)
            .map(|g| g.lanes.values().map(|l| l.delivered.len() as u64).sum())
            .unwrap_or(0)
    }

    /// Acknowledged pushes that `group` should receive (uncertain ones excluded; poison ones
    /// included: they are delivered before they reach the dead-letter queue).
    pub fn expected(&self) -> u64 {
        let p = self
            .pushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        p.next.values().sum::<u64>() - p.uncertain.len() as u64
    }

    /// Poison messages pushed.
    pub fn poison(&self) -> u64 {
        self.pushed
            .lock()
            .map(|p| p.poison.len() as u64)
            .unwrap_or(0)
    }

    /// Whether every group in `groups` has received every acknowledged push.
    pub fn complete(&self, groups: &[String]) -> bool {
        let expected = self.expected();
        groups
            .iter()
            .all(|g| self.distinct_delivered(g) >= expected)
    }

    /// The verdict for `groups`; `explained` lists groups whose redeliveries are expected.
    pub fn verdict(&self, groups: &[String], explained: &[String]) -> Verification {
        let pushed = self
            .pushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let all = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let certain: u64 = pushed.next.values().sum::<u64>() - pushed.uncertain.len() as u64;
        let mut v = Verification {
            checked: true,
            pushed: certain,
            ..Verification::default()
        };
        let empty = Group::default();
        for name in groups {
            let g = all.get(name).unwrap_or(&empty);
            let mut lost = 0;
            for (&lane, &next) in &pushed.next {
                let delivered = g.lanes.get(&lane);
                for seq in 0..next {
                    if pushed.uncertain.contains(&(lane, seq)) {
                        continue;
                    }
                    if !delivered.is_some_and(|l| l.delivered.contains(&seq)) {
                        lost += 1;
                    }
                }
            }
            let distinct: u64 = g.lanes.values().map(|l| l.delivered.len() as u64).sum();
            v.delivered_per_group.insert(name.clone(), distinct);
            v.lost += lost;
            v.out_of_order += g.out_of_order;
            if explained.contains(name) {
                v.redelivered += g.redeliveries;
            } else {
                v.duplicates += g.redeliveries;
            }
            if lost > 0 {
                v.failures.push(format!(
                    "group {name}: {lost} acknowledged pushes never delivered"
                ));
            }
            if g.out_of_order > 0 {
                v.failures.push(format!(
                    "group {name}: {} deliveries out of order",
                    g.out_of_order
                ));
            }
            if g.redeliveries > 0 && !explained.contains(name) {
                v.failures.push(format!(
                    "group {name}: {} deliveries of already delivered messages",
                    g.redeliveries
                ));
            }
        }
        v.passed = v.failures.is_empty();
        v
    }
}

/// A stored message's lane and sequence: the `l` and `s` fields of a tagged payload, or decoded
/// from `n` (lane × 2^32 + seq) of a "Hello World" one. Null for the stored backlog.
const LANE: &str = "coalesce((payload->>'l')::bigint, (payload->>'n')::bigint >> 32)";
const SEQ: &str = "coalesce((payload->>'s')::bigint, (payload->>'n')::bigint & 4294967295)";

/// Push-only check: the tables of `schema` (`regina`, or the ceiling's) hold every acknowledged
/// push of the run's queues (names starting with `tag`) once, in order per lane. Offsets below
/// `first_seq` (a stored backlog) are not read, and rows without a lane are not the run's
/// pushes.
///
/// # Errors
/// The query fails.
pub async fn storage_check(
    database_url: &str,
    ledger: &Ledger,
    tag: &str,
    schema: &str,
    first_seq: i64,
) -> anyhow::Result<Verification> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client.batch_execute("set statement_timeout = 0").await?;
    let row = client
        .query_one(
            &format!(
                "select count(*)::bigint,
                        count(distinct (lane, s))::bigint,
                        count(*) filter (where s <= prev)::bigint
                 from (select lane, s, lag(s) over (partition by partition_id, lane order by seq) as prev
                       from (select m.partition_id, m.seq, {LANE} as lane, {SEQ} as s
                             from {schema}.messages m
                             where m.partition_id in (select p.id from {schema}.partitions p
                                                      join {schema}.queues q on q.id = p.queue_id
                                                      where q.name = $1 or q.name like $1 || '-%')
                               and m.seq >= $2) x
                       where lane is not null) y"
            ),
            &[&tag, &first_seq],
        )
        .await?;
    let (stored, distinct, out_of_order): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let expected = ledger.expected();
    let mut v = Verification {
        checked: true,
        pushed: expected,
        lost: expected.saturating_sub(distinct as u64),
        out_of_order: out_of_order as u64,
        duplicates: (stored - distinct) as u64,
        ..Verification::default()
    };
    v.delivered_per_group
        .insert("stored".to_owned(), stored as u64);
    if v.lost > 0 {
        v.failures.push(format!(
            "{} acknowledged pushes not in the database",
            v.lost
        ));
    }
    if v.out_of_order > 0 {
        v.failures
            .push(format!("{} messages stored out of order", v.out_of_order));
    }
    if v.duplicates > 0 {
        v.failures
            .push(format!("{} messages stored twice", v.duplicates));
    }
    v.passed = v.failures.is_empty();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(pairs: &[(u32, u64)]) -> Vec<Seen> {
        pairs
            .iter()
            .map(|&(lane, seq)| Seen { lane, seq })
            .collect()
    }

    #[test]
    fn complete_in_order_delivery_passes() {
        let l = Ledger::new(true);
        l.pushed(&[(0, 0, false), (0, 1, false), (1, 0, false)], true);
        l.delivered("g", &seen(&[(0, 0), (0, 1)]));
        l.delivered("g", &seen(&[(1, 0)]));
        let v = l.verdict(&["g".into()], &[]);
        assert!(v.passed, "{v:?}");
        assert_eq!(v.delivered_per_group["g"], 3);
    }

    #[test]
    fn a_missing_message_is_lost_and_a_gap_is_out_of_order() {
        let l = Ledger::new(true);
        l.pushed(&[(0, 0, false), (0, 1, false), (0, 2, false)], true);
        l.delivered("g", &seen(&[(0, 0), (0, 2)]));
        let v = l.verdict(&["g".into()], &[]);
        assert!(!v.passed);
        assert_eq!(v.lost, 1);
        assert_eq!(v.out_of_order, 1);
    }

    #[test]
    fn redeliveries_are_duplicates_unless_explained() {
        let l = Ledger::new(true);
        l.pushed(&[(0, 0, false), (0, 1, false)], true);
        l.delivered("g", &seen(&[(0, 0), (0, 1)]));
        l.delivered("g", &seen(&[(0, 1)]));
        assert!(l.verdict(&["g".into()], &["g".into()]).passed);
        let v = l.verdict(&["g".into()], &[]);
        assert_eq!(v.duplicates, 1);
        assert!(!v.passed);
    }

    #[test]
    fn uncertain_pushes_may_be_missing() {
        let l = Ledger::new(true);
        l.pushed(&[(0, 0, false)], true);
        l.pushed(&[(0, 1, false)], false);
        l.pushed(&[(0, 2, false)], true);
        l.delivered("g", &seen(&[(0, 0), (0, 2)]));
        assert!(l.verdict(&["g".into()], &[]).passed);
    }

    #[test]
    fn without_leases_order_across_answers_is_not_judged() {
        let l = Ledger::new(false);
        l.pushed(&[(0, 0, false), (0, 1, false)], true);
        l.delivered("g", &seen(&[(0, 1)]));
        l.delivered("g", &seen(&[(0, 0)]));
        assert!(l.verdict(&["g".into()], &[]).passed);
    }
}
