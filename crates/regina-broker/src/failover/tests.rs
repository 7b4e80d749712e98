//! The buffer directory as a whole: rotation, restart recovery, corruption at startup and at
//! replay, deletion of replayed segments, the byte cap and the directory lock.

use std::fs;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::recover::CORRUPT_DIR;
use super::store::{Store, StoreSettings};
use super::test_dir::TestDir;
use crate::engine::PushItem;

fn item(partition: &str, n: usize) -> PushItem {
    PushItem {
        queue: "q".into(),
        partition: partition.into(),
        transaction_id: format!("t-{n}").into(),
        message_id: Uuid::now_v7(),
        trace_id: None,
        producer_sub: None,
        payload_key_id: None,
        payload: format!("{{\"n\":{n}}}"),
    }
}

fn open(dir: &Path, events_per_file: u64) -> Store {
    Store::open(StoreSettings {
        dir: dir.to_path_buf(),
        events_per_file,
        bytes_max: 1 << 30,
    })
}

async fn buffer(store: &Store, items: &[PushItem]) {
    let admission = store.admit(items.iter()).expect("admitted");
    store.write(admission).await.expect("written");
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    paths.sort();
    paths
}

/// Every pending record, read batch by batch (and advanced past), as transaction ids.
fn drain(store: &Store, batch: usize) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(batch) = store.next_batch(batch, usize::MAX).expect("read") {
        if batch.records.is_empty() && batch.corrupt.is_none() {
            break;
        }
        out.extend(
            batch
                .records
                .iter()
                .map(|r| r.item.transaction_id.to_string()),
        );
        store.advance(&batch);
    }
    out
}

fn ids(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("t-{n}")).collect()
}

#[tokio::test]
async fn segments_rotate_every_n_records_and_replay_in_order() {
    let dir = TestDir::new();
    let store = open(dir.path(), 3);
    let items: Vec<PushItem> = (0..7).map(|n| item("p", n)).collect();
    buffer(&store, &items[..5]).await;
    buffer(&store, &items[5..]).await;
    assert_eq!(segments(dir.path()).len(), 3, "3 + 3 + 1 records");
    let stats = store.stats();
    assert_eq!((stats.pending, stats.segments), (7, 3));
    assert!(stats.oldest_at.is_some());
    assert_eq!(drain(&store, 2), ids(0..7));
    store.close().await;
    assert!(
        segments(dir.path()).is_empty(),
        "replayed segments are deleted"
    );
    assert_eq!(store.stats().pending, 0);
}

#[tokio::test]
async fn partitions_are_blocked_while_they_have_pending_records() {
    let dir = TestDir::new();
    let store = open(dir.path(), 100);
    buffer(&store, &[item("a", 0), item("a", 1), item("b", 2)]).await;
    let probe = [item("a", 9), item("b", 9), item("c", 9)];
    assert_eq!(store.blocked(&probe), [true, true, false]);
    let batch = store
        .next_batch(2, usize::MAX)
        .expect("read")
        .expect("batch");
    store.advance(&batch);
    assert_eq!(
        store.blocked(&probe),
        [false, true, false],
        "a is free once both of its records are replayed"
    );
    assert_eq!(store.stats().partitions_blocked, 1);
}

#[tokio::test]
async fn a_restart_recovers_pending_records_after_the_replayed_ones() {
    let dir = TestDir::new();
    let store = open(dir.path(), 4);
    let items: Vec<PushItem> = (0..6)
        .map(|n| item(if n % 2 == 0 { "a" } else { "b" }, n))
        .collect();
    buffer(&store, &items).await;
    let batch = store
        .next_batch(3, usize::MAX)
        .expect("read")
        .expect("batch");
    store.advance(&batch);
    store.close().await;
    drop(store);

    let store = open(dir.path(), 4);
    let stats = store.stats();
    assert_eq!(stats.pending, 3, "{stats:?}");
    assert_eq!(stats.corrupt, 0);
    assert_eq!(store.blocked(&[item("a", 9), item("b", 9)]), [true, true]);
    assert_eq!(drain(&store, 10), ids(3..6));
    // New records after a restart go to a new segment, behind the old ones.
    buffer(&store, &[item("a", 6)]).await;
    assert_eq!(drain(&store, 10), ids(6..7));
}

#[tokio::test]
async fn a_torn_tail_found_at_startup_is_set_aside_and_the_valid_part_kept() {
    let dir = TestDir::new();
    let store = open(dir.path(), 100);
    buffer(&store, &(0..3).map(|n| item("p", n)).collect::<Vec<_>>()).await;
    store.close().await;
    drop(store);
    let segment = segments(dir.path()).remove(0);
    let len = fs::metadata(&segment).expect("metadata").len();
    fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open")
        .set_len(len - 5)
        .expect("tear");

    let store = open(dir.path(), 100);
    let stats = store.stats();
    assert_eq!((stats.pending, stats.corrupt), (2, 1), "{stats:?}");
    assert_eq!(
        fs::read_dir(dir.path().join(CORRUPT_DIR))
            .expect("list")
            .count(),
        1,
        "a copy is kept in corrupt/"
    );
    assert_eq!(drain(&store, 10), ids(0..2));
}

#[tokio::test]
async fn a_flipped_byte_found_at_startup_ends_the_valid_part() {
    let dir = TestDir::new();
    let store = open(dir.path(), 100);
    buffer(&store, &(0..3).map(|n| item("p", n)).collect::<Vec<_>>()).await;
    store.close().await;
    drop(store);
    let segment = segments(dir.path()).remove(0);
    let mut bytes = fs::read(&segment).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    fs::write(&segment, bytes).expect("write");

    let store = open(dir.path(), 100);
    let stats = store.stats();
    assert_eq!(stats.corrupt, 1);
    let replayed = drain(&store, 10);
    assert_eq!(replayed, ids(0..1), "only the record before the damage");
    assert!(
        store.blocked(&[item("p", 9)]) == [false],
        "nothing left blocks p"
    );
}

#[tokio::test]
async fn corruption_met_during_replay_is_never_replayed_and_unblocks() {
    let dir = TestDir::new();
    let store = open(dir.path(), 100);
    buffer(&store, &(0..3).map(|n| item("p", n)).collect::<Vec<_>>()).await;
    let segment = segments(dir.path()).remove(0);
    let mut bytes = fs::read(&segment).expect("read");
    let last = bytes.len() - 2;
    bytes[last] ^= 0x40;
    fs::write(&segment, bytes).expect("write");

    assert_eq!(drain(&store, 10), ids(0..2));
    store.close().await;
    let stats = store.stats();
    assert_eq!((stats.pending, stats.corrupt), (0, 1), "{stats:?}");
    assert_eq!(store.blocked(&[item("p", 9)]), [false]);
    assert!(segments(dir.path()).is_empty());
    assert_eq!(
        fs::read_dir(dir.path().join(CORRUPT_DIR))
            .expect("list")
            .count(),
        1
    );
}

#[tokio::test]
async fn over_the_byte_cap_nothing_is_admitted() {
    let dir = TestDir::new();
    let store = Store::open(StoreSettings {
        dir: dir.path().to_path_buf(),
        events_per_file: 100,
        bytes_max: 600,
    });
    buffer(&store, &[item("p", 0)]).await;
    let before = store.stats();
    let refused = store.admit([item("p", 1), item("p", 2), item("p", 3)].iter());
    assert!(refused.is_err());
    let after = store.stats();
    assert_eq!((after.pending, after.bytes), (before.pending, before.bytes));
    assert_eq!(store.blocked(&[item("q", 0)]), [false]);
}

#[tokio::test]
async fn an_admission_given_back_unblocks_its_partitions() {
    let dir = TestDir::new();
    let store = open(dir.path(), 100);
    let admission = store.admit([item("p", 0)].iter()).expect("admitted");
    assert_eq!(
        store.blocked(&[item("p", 1)]),
        [true],
        "blocked from admission on"
    );
    drop(admission);
    assert_eq!(store.blocked(&[item("p", 1)]), [false]);
    assert_eq!(store.stats().pending, 0);
    assert_eq!(store.stats().bytes, 0);
}

#[tokio::test]
async fn a_directory_is_used_by_one_instance_only() {
    let dir = TestDir::new();
    let first = open(dir.path(), 100);
    let second = open(dir.path(), 100);
    assert!(first.stats().healthy);
    let stats = second.stats();
    assert!(!stats.healthy);
    assert!(
        stats.problem.as_deref().unwrap_or("").contains("in use"),
        "{stats:?}"
    );
    assert!(second.admit([item("p", 0)].iter()).is_err());
}

#[tokio::test]
async fn an_unusable_directory_disables_the_buffer() {
    let dir = TestDir::new();
    let file = dir.path().join("not-a-directory");
    fs::write(&file, b"x").expect("write");
    let store = open(&file, 100);
    assert!(!store.stats().healthy);
    assert!(store.admit([item("p", 0)].iter()).is_err());
}
