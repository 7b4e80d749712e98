use std::sync::Mutex;

use super::*;
use crate::db::AckEvents;
use crate::metrics::queues::OTHER as OTHER_LABEL;

/// Runs one write through a fake database that fails when `fail` says so; returns what was sent
/// and whether the write counted as done.
async fn write(
    state: &mut HistoryState,
    metrics: &Metrics,
    sample: Sample,
    fail: bool,
) -> (HistoryWrite, bool) {
    let sent = Mutex::new(None);
    let done = state
        .write_once(metrics, sample, Duration::from_secs(5), |request| {
            *sent.lock().expect("not poisoned") = Some(request);
            async move {
                if fail {
                    Err(DbError::Unavailable("database down".into()))
                } else {
                    Ok(OffsetDateTime::UNIX_EPOCH)
                }
            }
        })
        .await;
    (
        sent.into_inner()
            .expect("not poisoned")
            .expect("write called"),
        done,
    )
}

fn row<'a>(request: &'a HistoryWrite, queue: &str) -> Option<&'a QueueRow> {
    request.queues.iter().find(|r| r.queue == queue)
}

#[tokio::test]
async fn each_write_sends_what_was_counted_since_the_last_one() {
    let metrics = Metrics::new(Instant::now(), 10);
    let mut state = HistoryState::default();
    metrics.pushed("q", 5);
    metrics.queue("q").first_delivery(40.0);
    let (first, done) = write(&mut state, &metrics, Sample::default(), false).await;
    assert!(done);
    assert_eq!(first.worker.push_messages, 5);
    let q = row(&first, "q").expect("a row for q");
    assert_eq!((q.pushed, q.lag_samples, q.lag_ms_max), (5, 1, 40.0));
    assert!((q.lag_ms_sum - 40.0).abs() < 1e-9);
    assert_eq!(first.started_at, None, "the first write asks the database");

    metrics.pushed("q", 2);
    let (second, _) = write(&mut state, &metrics, Sample::default(), false).await;
    assert_eq!(row(&second, "q").map(|r| r.pushed), Some(2));
    assert_eq!(second.worker.push_messages, 2);
    assert_eq!(second.started_at, Some(OffsetDateTime::UNIX_EPOCH));

    let (idle, _) = write(&mut state, &metrics, Sample::default(), false).await;
    assert!(idle.queues.is_empty(), "nothing counted, no queue row");
    assert_eq!(idle.worker, WorkerRow::default());
}

#[tokio::test]
async fn a_failed_write_leaves_its_counts_to_the_next_one() {
    let metrics = Metrics::new(Instant::now(), 10);
    let mut state = HistoryState::default();
    metrics.pushed("q", 3);
    metrics.queue("q").first_delivery(70.0);
    metrics.ack_events(&AckEvents {
        queue: Some("q".into()),
        acked: Some("failed".into()),
        dead_lettered: 1,
        leases_expired: 0,
    });
    let (lost, done) = write(&mut state, &metrics, Sample::default(), true).await;
    assert!(!done);
    assert_eq!(row(&lost, "q").map(|r| r.pushed), Some(3));

    metrics.pushed("q", 4);
    metrics.queue("q").first_delivery(10.0);
    let (retried, done) = write(&mut state, &metrics, Sample::default(), false).await;
    assert!(done);
    let q = row(&retried, "q").expect("a row for q");
    assert_eq!(q.pushed, 7, "the failed write's 3 and the new 4");
    assert_eq!((q.ack_failed, q.dead_lettered, q.lag_samples), (1, 1, 2));
    assert_eq!(
        q.lag_ms_max, 70.0,
        "the largest latency survives the failure"
    );
    assert_eq!(retried.worker.push_messages, 7);
    assert_eq!(retried.worker.ack_messages, 1);

    let (after, _) = write(&mut state, &metrics, Sample::default(), false).await;
    assert!(row(&after, "q").is_none(), "nothing is sent twice");
}

#[tokio::test]
async fn waiters_are_sampled_until_they_are_gone() {
    let metrics = Metrics::new(Instant::now(), 1);
    let mut state = HistoryState::default();
    let sample = |pairs: &[(&str, usize)]| Sample {
        waiters: pairs.iter().map(|(q, n)| ((*q).to_owned(), *n)).collect(),
        ..Sample::default()
    };
    metrics.pushed("a", 1);
    let (first, _) = write(
        &mut state,
        &metrics,
        sample(&[("a", 2), ("b", 3), ("c", 1)]),
        false,
    )
    .await;
    assert_eq!(row(&first, "a").map(|r| r.waiters), Some(2));
    assert_eq!(
        row(&first, OTHER_LABEL).map(|r| r.waiters),
        Some(4),
        "queues past the cap add up"
    );
    let (second, _) = write(&mut state, &metrics, sample(&[]), false).await;
    assert_eq!(
        row(&second, "a").map(|r| r.waiters),
        Some(0),
        "the drop is written"
    );
    assert_eq!(row(&second, OTHER_LABEL).map(|r| r.waiters), Some(0));
    let (third, _) = write(&mut state, &metrics, sample(&[]), false).await;
    assert!(third.queues.is_empty());
}

#[tokio::test]
async fn retention_rows_tell_the_two_options_apart() {
    let metrics = Metrics::new(Instant::now(), 10);
    let mut state = HistoryState::default();
    metrics.retention_deleted("r", 10, 4);
    metrics.evicted("r", 2);
    let (request, _) = write(&mut state, &metrics, Sample::default(), false).await;
    let r = row(&request, "r").expect("a row for r");
    assert_eq!(
        (r.retention_deleted, r.completed_deleted, r.evicted),
        (6, 4, 2)
    );
    assert_eq!(
        metrics.queue("r").retention_deleted.get(),
        10,
        "Prometheus counts both"
    );
}
