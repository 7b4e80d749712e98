//! Push lanes: the partitions are spread over `DB_CALLS_PUSH` lanes by a hash of their queue and
//! partition names, and each lane has its own batcher with one fused call in flight. Two calls
//! that run at once therefore never write the same partition, so neither waits for the other's
//! partition locks. Fused calls of one batcher took their requests whole: with requests whose
//! items spread over many partitions, any two calls shared partitions, the second waited for the
//! first's commit, and pushes used one PostgreSQL core (docs/benchmarks.md, "Push lanes").
//!
//! A request of at least `PUSH_SPLIT_ITEMS_MIN` items that fall in several lanes is split: each
//! lane stores its part in order (the items of one partition keep their order, in one part), and
//! the answers are put back in item order. The parts commit separately: a request answered with
//! an error may have some of its parts stored, and repeating it is safe because its transaction
//! ids make those duplicates (http-api.md §3.3). A smaller request goes whole to the lane of its
//! first item: split, a few items would cost one more transaction each (closed-loop producers of
//! 10-item requests pushed 10–20 % less, cg-10), and its call may wait for another lane's locks
//! as every call did before lanes.
//!
//! Lanes run at once only when each has enough to do: a lane with fewer than
//! `PUSH_PARALLEL_ITEMS_MIN` items waiting does not start a call while another lane's call runs,
//! and waits for it instead (the batcher's `Company`). At a light load, two push transactions
//! committing at once wait for each other's flushes and spend PostgreSQL CPU doing it; one after
//! the other they do not (single-message producers at 1 000 msg/s: 14–26 % less PostgreSQL CPU
//! per message and a lower tail, docs/benchmarks.md, "Push lanes that wait for each other").

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::db::DbError;

use super::PushItem;

/// The lane of `item` among `lanes`: the same for every item of its partition.
pub(super) fn lane(item: &PushItem, lanes: usize) -> usize {
    // `DefaultHasher::new()` has fixed keys: a partition keeps its lane for the process's life.
    let mut hasher = DefaultHasher::new();
    (&*item.queue, &*item.partition).hash(&mut hasher);
    usize::try_from(hasher.finish() % lanes.max(1) as u64).unwrap_or(0)
}

/// The lane of each item, in order.
pub(super) fn lanes_of(items: &[PushItem], lanes: usize) -> Vec<usize> {
    items.iter().map(|item| lane(item, lanes)).collect()
}

/// One lane's answer per part, the parts in increasing lane order, put back in item order (`of`:
/// each item's lane). Fails with the first error of a part; one that is not
/// [`DbError::Unavailable`] comes before one that is: an unavailable database sends the whole
/// request to the failover buffer (the parts that committed replay as duplicates), which a part
/// that failed for another reason must not take.
pub(super) fn merge(
    of: &[usize],
    answers: Vec<(usize, Result<Vec<String>, DbError>)>,
) -> Result<Vec<String>, DbError> {
    let mut parts = Vec::with_capacity(answers.len());
    let mut unavailable = None;
    for (lane, answer) in answers {
        match answer {
            Ok(entries) => parts.push((lane, entries.into_iter())),
            Err(error @ DbError::Unavailable(_)) => unavailable = unavailable.or(Some(error)),
            Err(error) => return Err(error),
        }
    }
    if let Some(error) = unavailable {
        return Err(error);
    }
    of.iter()
        .map(|lane| {
            parts
                .iter_mut()
                .find(|(l, _)| l == lane)
                .and_then(|(_, entries)| entries.next())
                .ok_or_else(|| DbError::Internal("a push lane answered too few entries".to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(partition: &str) -> PushItem {
        PushItem {
            queue: "q".into(),
            partition: partition.into(),
            transaction_id: partition.into(),
            message_id: uuid::Uuid::now_v7(),
            trace_id: None,
            producer_sub: None,
            payload_key_id: None,
            payload: "1".to_owned(),
        }
    }

    #[test]
    fn a_partition_has_one_lane_and_partitions_spread_over_all() {
        let items: Vec<_> = (0..64).map(|p| item(&format!("p{p}"))).collect();
        let of = lanes_of(&items, 2);
        assert!(of.contains(&0) && of.contains(&1));
        assert_eq!(
            lane(&item("p7"), 2),
            of[7],
            "the same partition, the same lane"
        );
        assert!(lanes_of(&items, 1).iter().all(|l| *l == 0));
    }

    #[test]
    fn answers_come_back_in_item_order() {
        let of = [1, 0, 1, 0, 0];
        let merged = merge(
            &of,
            vec![
                (0, Ok(vec!["b".into(), "d".into(), "e".into()])),
                (1, Ok(vec!["a".into(), "c".into()])),
            ],
        )
        .expect("merged");
        assert_eq!(merged, ["a", "b", "c", "d", "e"]);
        assert!(merge(&of, vec![(0, Ok(vec!["b".into()])), (1, Ok(vec![]))]).is_err());
    }

    #[test]
    fn an_error_other_than_unavailable_comes_first() {
        let of = [0, 1, 2];
        let answers = || {
            vec![
                (0, Err(DbError::Unavailable("down".into()))),
                (1, Ok(vec!["b".into()])),
                (2, Err(DbError::Internal("bad".into()))),
            ]
        };
        assert!(matches!(merge(&of, answers()), Err(DbError::Internal(_))));
        let mut answers = answers();
        answers.pop();
        answers.push((2, Ok(vec!["c".into()])));
        assert!(matches!(merge(&of, answers), Err(DbError::Unavailable(_))));
    }
}
