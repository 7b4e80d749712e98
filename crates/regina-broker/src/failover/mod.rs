//! The failover buffer (http-api.md §4.14): pushes that cannot reach PostgreSQL — or that must
//! queue behind records already buffered for their partition, or arrive during push maintenance —
//! are appended to fsync'd, checksummed segment files of this instance and answered `buffered`. A
//! drainer replays them in buffer order once PostgreSQL is reachable (and push maintenance is
//! off), keeping their ids so replays deduplicate.
//!
//! - `segment`: the file format (framing, checksums, verified reads);
//! - `record`: one record's content (a push item with its ids);
//! - `store`, `writer`, `recover`: the directory, group fsync and rotation, startup verification;
//! - `batch`, `drainer`: records read back and replayed, progress markers.
//!
//! Which items of a push come here is the push path's to decide (`crate::push`).

mod batch;
mod drainer;
mod record;
mod recover;
mod segment;
mod store;
#[cfg(test)]
mod test_dir;
#[cfg(test)]
mod tests;
mod writer;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub(crate) use store::{Admission, BufferStats, BufferUnavailable};
use store::{Store, StoreSettings};

use crate::config::Config;
use crate::db::Db;
use crate::engine::announce::Announcer;
use crate::engine::PushItem;
use crate::maintenance::Maintenance;
use crate::metrics::{DbCallMetrics, Metrics};
use crate::waiters::Waiters;

/// How the drainer replays (`FILE_BUFFER_*`).
#[derive(Clone, Copy, Debug)]
struct ReplaySettings {
    /// Check period.
    flush: Duration,
    /// Records per replay call.
    records_max: usize,
    /// Bytes of records per replay call (at least one record): `BATCH_BYTES_MAX`, as for a fused
    /// push, so replaying keeps the connections' buffers as small as pushing does.
    bytes_max: usize,
}

/// The failover buffer of this instance.
pub(crate) struct Failover {
    store: Store,
    /// Push maintenance diverts every push and pauses replay.
    maintenance: Arc<Maintenance>,
    replay: ReplaySettings,
    db: Db,
    waiters: Arc<Waiters>,
    announcer: Announcer,
    metrics: Arc<Metrics>,
    /// `op="failover_replay"`.
    replay_calls: DbCallMetrics,
    /// Whether the last database attempt reached PostgreSQL (for logging transitions).
    db_reachable: AtomicBool,
    drainer: Mutex<Option<(watch::Sender<bool>, JoinHandle<()>)>>,
}

impl Failover {
    /// Opens the buffer directory (verifying what an earlier run left) and starts the writer and
    /// the drainer, which replays anything pending at once (unless push maintenance is on).
    pub(crate) fn start(
        config: &Config,
        db: &Db,
        waiters: &Arc<Waiters>,
        metrics: &Arc<Metrics>,
        maintenance: &Arc<Maintenance>,
    ) -> Arc<Failover> {
        let store = Store::open(StoreSettings {
            dir: PathBuf::from(&config.file_buffer_dir),
            events_per_file: config.file_buffer_events_per_file,
            bytes_max: config.file_buffer_bytes_max,
        });
        let failover = Arc::new(Failover {
            store,
            maintenance: maintenance.clone(),
            replay: ReplaySettings {
                flush: Duration::from_millis(config.file_buffer_flush_ms.max(1)),
                records_max: config.file_buffer_max_batch,
                bytes_max: config.batch_bytes_max,
            },
            db: db.clone(),
            waiters: waiters.clone(),
            announcer: Announcer::start(db.clone()),
            metrics: metrics.clone(),
            replay_calls: metrics.db_calls("failover_replay"),
            db_reachable: AtomicBool::new(true),
            drainer: Mutex::new(None),
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(drainer::run(failover.clone(), stopped));
        *failover
            .drainer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((stop, task));
        failover
    }

    /// Counters and sizes of the buffer.
    pub(crate) fn stats(&self) -> BufferStats {
        self.store.stats()
    }

    /// For each item, whether its partition has records in this buffer: such items must be
    /// buffered behind them (http-api.md §4.14).
    pub(crate) fn blocked(&self, items: &[PushItem]) -> Vec<bool> {
        self.store.blocked(items)
    }

    /// Takes room for `items` in the buffer, or refuses them all; the room is given back unless
    /// the admission is written.
    ///
    /// # Errors
    /// [`BufferUnavailable`]: the buffer is full or unusable.
    pub(crate) fn admit<'a>(
        &self,
        items: impl Iterator<Item = &'a PushItem>,
    ) -> Result<Admission, BufferUnavailable> {
        self.store.admit(items)
    }

    /// Appends admitted records; returns once they are fsync'd.
    ///
    /// # Errors
    /// [`BufferUnavailable`]: the write failed or the writer is closed.
    pub(crate) async fn write(&self, admission: Admission) -> Result<(), BufferUnavailable> {
        self.store.write(admission).await
    }

    /// Notes whether a database attempt reached PostgreSQL, logging the transitions.
    pub(crate) fn db_reached(&self, reached: bool) {
        if self.db_reachable.swap(reached, Ordering::Relaxed) != reached {
            if reached {
                tracing::info!("PostgreSQL reachable again");
            } else {
                tracing::warn!("PostgreSQL unreachable: pushes go to the failover buffer");
            }
        }
    }

    /// Stops the drainer (letting its current replay call finish) and the writer (once every
    /// record sent to it is fsync'd).
    pub(crate) async fn close(&self) {
        let drainer = self
            .drainer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((stop, task)) = drainer {
            let _ = stop.send(true);
            if let Err(error) = task.await {
                tracing::warn!(%error, "failover drainer ended abnormally");
            }
        }
        self.store.close().await;
    }
}
