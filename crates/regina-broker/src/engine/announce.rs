//! Tells other broker instances about committed pushes (http-api.md §4.9) without putting `NOTIFY`
//! in the push transaction: PostgreSQL takes one database-wide lock while committing any
//! transaction that notified, so notifying inside every push would let only one push commit at a
//! time. After commit, the written (queue, partitions) are queued here instead and sent in
//! coalesced batches: everything that arrived while the previous batch was in flight goes out in
//! one statement. A lost announcement costs only latency: other instances re-check parked pops on
//! their own.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::mpsc;

use super::json::to_json;
use crate::db::Db;

/// PostgreSQL refuses notification payloads of 8 000 bytes or more; stay well below.
const NOTICE_BYTES_MAX: usize = 7_000;

/// Queue of committed pushes to announce (clones share one sending task).
#[derive(Clone)]
pub(crate) struct Announcer {
    sender: mpsc::UnboundedSender<(String, Vec<String>)>,
}

impl Announcer {
    /// Starts the sending task.
    pub(crate) fn start(db: Db) -> Announcer {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(run(db, receiver));
        Announcer { sender }
    }

    /// Queues the announcement of a committed push to `queue`.
    pub(crate) fn announce(&self, queue: &str, partitions: &[&str]) {
        let partitions = partitions.iter().map(|p| (*p).to_owned()).collect();
        // A closed channel means the broker is stopping: nobody needs the announcement.
        let _ = self.sender.send((queue.to_owned(), partitions));
    }
}

async fn run(db: Db, mut receiver: mpsc::UnboundedReceiver<(String, Vec<String>)>) {
    while let Some(first) = receiver.recv().await {
        let mut written: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut add = |(queue, partitions): (String, Vec<String>)| {
            written.entry(queue).or_default().extend(partitions);
        };
        add(first);
        while let Ok(next) = receiver.try_recv() {
            add(next);
        }
        if let Err(error) = db.notify_pushes(&notices(&written)).await {
            tracing::debug!(%error, "push announcement not sent");
        }
    }
}

/// `{"queue":…,"partitions":[…]}` payloads, one per queue, split where a queue's partitions
/// would not fit in one.
fn notices(written: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (queue, partitions) in written {
        let head = format!("{{\"queue\":{},\"partitions\":[", to_json(queue));
        let mut notice = head.clone();
        for partition in partitions {
            let item = to_json(partition);
            if notice.len() > head.len() && notice.len() + item.len() + 3 > NOTICE_BYTES_MAX {
                notice.push_str("]}");
                out.push(std::mem::replace(&mut notice, head.clone()));
            }
            if notice.len() > head.len() {
                notice.push(',');
            }
            notice.push_str(&item);
        }
        notice.push_str("]}");
        out.push(notice);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_notice_per_queue_with_its_partitions() {
        let mut written = BTreeMap::new();
        written.insert(
            "q\"1".to_owned(),
            BTreeSet::from(["a".to_owned(), "b".to_owned()]),
        );
        written.insert("q2".to_owned(), BTreeSet::from(["c".to_owned()]));
        assert_eq!(
            notices(&written),
            vec![
                r#"{"queue":"q\"1","partitions":["a","b"]}"#.to_owned(),
                r#"{"queue":"q2","partitions":["c"]}"#.to_owned(),
            ]
        );
    }

    #[test]
    fn many_partitions_split_into_notices_that_fit() {
        let partitions: BTreeSet<String> =
            (0..2_000).map(|i| format!("partition-{i:05}")).collect();
        let mut written = BTreeMap::new();
        written.insert("q".to_owned(), partitions.clone());
        let out = notices(&written);
        assert!(out.len() > 1);
        let mut seen = BTreeSet::new();
        for notice in &out {
            assert!(notice.len() < NOTICE_BYTES_MAX, "{} bytes", notice.len());
            let value: serde_json::Value = serde_json::from_str(notice).expect("valid JSON");
            assert_eq!(value["queue"], "q");
            for p in value["partitions"].as_array().expect("array") {
                seen.insert(p.as_str().expect("string").to_owned());
            }
        }
        assert_eq!(seen, partitions);
    }
}
