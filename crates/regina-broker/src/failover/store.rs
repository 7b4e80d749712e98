//! The buffer directory of this instance and what is known about it in memory.
//!
//! ```text
//! FILE_BUFFER_DIR/
//!   lock                 held (flock) while an instance uses the directory
//!   00000000000000000001.seg   segments, oldest first (format: `segment`)
//!   00000000000000000001.pos   replay progress of a segment: "<offset> <records>"
//!   failed/<segment>.jsonl     records set aside after a replay error, one per line with the
//! reason corrupt/<segment>.seg      copies of segments whose valid part ended early
//! ```
//!
//! Three parties share the state: request handlers *admit* records (counting them at once, so a
//! partition is blocked from the moment a record for it is on its way), the writer thread (see
//! `writer`) appends, fsyncs, rotates and deletes segments, and the drainer reads records back and
//! *advances* past those replayed. Only the writer creates or removes segment files.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::{self, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};

use super::batch::marker_write;
pub(crate) use super::batch::Batch;
use super::record::{self, Record};
use super::segment::{self, Next};
use super::writer::{self, Command, Framed};
use crate::engine::PushItem;

/// A partition, by queue and partition name.
pub(crate) type PartitionKey = (Arc<str>, Arc<str>);

/// Sizes of the buffer (`FILE_BUFFER_*`).
#[derive(Clone, Debug)]
pub(crate) struct StoreSettings {
    /// The directory of this instance.
    pub(crate) dir: PathBuf,
    /// Records per segment before rotating.
    pub(crate) events_per_file: u64,
    /// Bytes on disk at most.
    pub(crate) bytes_max: u64,
}

/// The buffer cannot take a push: directory unusable, full, or a failed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BufferUnavailable(pub(crate) String);

/// One segment as the state knows it.
#[derive(Debug, Default)]
pub(super) struct Segment {
    pub(super) id: u64,
    /// Bytes known durable (fsync'd); the file may be longer while a write is in flight.
    pub(super) len: u64,
    /// Records in the durable part.
    pub(super) records: u64,
    /// Offset of the next record to replay.
    pub(super) replay_offset: u64,
    /// Records replayed or set aside.
    pub(super) replayed: u64,
    /// Records not yet replayed, per partition.
    pub(super) partitions: HashMap<PartitionKey, u64>,
    /// When the next record to replay was buffered (ms since the epoch), when known.
    pub(super) next_at: Option<i64>,
    /// The writer appends to this segment.
    pub(super) active: bool,
}

impl Segment {
    pub(super) fn pending(&self) -> u64 {
        self.records - self.replayed
    }
}

/// Everything the three parties share.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) segments: VecDeque<Segment>,
    /// Records admitted and not yet replayed (or given back), per partition: the blocked set.
    pub(super) blocked: HashMap<PartitionKey, u64>,
    pub(super) pending: u64,
    /// Segment files on disk plus admitted records not yet written.
    pub(super) bytes: u64,
    pub(super) next_id: u64,
    pub(super) failed: u64,
    pub(super) corrupt: u64,
    /// Why the directory cannot be used, when it cannot.
    pub(super) unusable: Option<String>,
}

impl State {
    /// Forgets `count` pending records of `key` (replayed, set aside or discarded).
    pub(super) fn unblock(&mut self, key: &PartitionKey, count: u64) {
        if let Some(left) = self.blocked.get_mut(key) {
            *left = left.saturating_sub(count);
            if *left == 0 {
                self.blocked.remove(key);
            }
        }
        self.pending = self.pending.saturating_sub(count);
    }
}

/// What `/api/v1/status/buffers` reports (http-api.md §3.12).
#[derive(Debug, Clone)]
pub(crate) struct BufferStats {
    pub(crate) pending: u64,
    pub(crate) failed: u64,
    pub(crate) corrupt: u64,
    pub(crate) segments: usize,
    pub(crate) bytes: u64,
    pub(crate) oldest_at: Option<OffsetDateTime>,
    pub(crate) partitions_blocked: usize,
    /// The buffer can take pushes now.
    pub(crate) healthy: bool,
    /// Why it cannot, when it cannot.
    pub(crate) problem: Option<String>,
}

/// The shared part of the store.
pub(super) struct Shared {
    pub(super) settings: StoreSettings,
    pub(super) state: Mutex<State>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn segment_path(&self, id: u64) -> PathBuf {
        self.settings.dir.join(format!("{id:020}.seg"))
    }

    pub(super) fn marker_path(&self, id: u64) -> PathBuf {
        self.settings.dir.join(format!("{id:020}.pos"))
    }
}

/// The failover buffer's files and state.
pub(crate) struct Store {
    shared: Arc<Shared>,
    commands: Mutex<Option<mpsc::UnboundedSender<Command>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Records counted as pending and on their way to disk. Dropped before [`Store::write`] sent
/// them to the writer, it gives its records back.
pub(crate) struct Admission {
    shared: Arc<Shared>,
    records: Vec<Framed>,
    keys: Vec<PartitionKey>,
    bytes: u64,
    written: bool,
}

impl Store {
    /// Opens (and recovers) the directory and starts the writer. An unusable directory is not an
    /// error: the store reports it and refuses admissions.
    pub(crate) fn open(settings: StoreSettings) -> Store {
        let (state, lock) = super::recover::recover(&settings);
        if let Some(problem) = &state.unusable {
            tracing::warn!(dir = %settings.dir.display(), %problem, "failover buffer disabled");
        } else if state.pending > 0 {
            tracing::warn!(
                pending = state.pending,
                segments = state.segments.len(),
                "failover buffer holds records from an earlier run; they will be replayed"
            );
        }
        let shared = Arc::new(Shared {
            settings,
            state: Mutex::new(state),
        });
        let (commands, receiver) = mpsc::unbounded_channel();
        let writer = writer::start(shared.clone(), receiver, lock);
        Store {
            shared,
            commands: Mutex::new(Some(commands)),
            writer: Mutex::new(writer),
        }
    }

    fn send(&self, command: Command) -> bool {
        let commands = self.commands.lock().unwrap_or_else(PoisonError::into_inner);
        commands.as_ref().is_some_and(|c| c.send(command).is_ok())
    }

    /// Records pending now (admitted and not yet replayed).
    pub(crate) fn pending(&self) -> u64 {
        self.shared.lock().pending
    }

    /// For each item, whether its partition has records in the buffer (http-api.md §4.14 "Order").
    pub(crate) fn blocked(&self, items: &[PushItem]) -> Vec<bool> {
        let state = self.shared.lock();
        if state.blocked.is_empty() {
            return vec![false; items.len()];
        }
        items
            .iter()
            .map(|item| {
                let key = (item.queue.clone(), item.partition.clone());
                state.blocked.contains_key(&key)
            })
            .collect()
    }

    /// Counts `items` as pending (their partitions are blocked from now on) and reserves their
    /// bytes.
    ///
    /// # Errors
    /// [`BufferUnavailable`] when the directory is unusable or the records would exceed
    /// `FILE_BUFFER_BYTES_MAX`.
    pub(crate) fn admit<'a>(
        &self,
        items: impl Iterator<Item = &'a PushItem>,
    ) -> Result<Admission, BufferUnavailable> {
        let at_ms = (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
        let records: Vec<Framed> = items
            .map(|item| Framed {
                key: (item.queue.clone(), item.partition.clone()),
                bytes: segment::frame(&record::encode(item, at_ms)),
                at_ms,
            })
            .collect();
        let bytes: u64 = records.iter().map(|r| r.bytes.len() as u64).sum();
        let mut state = self.shared.lock();
        if let Some(problem) = &state.unusable {
            return Err(BufferUnavailable(problem.clone()));
        }
        let max = self.shared.settings.bytes_max;
        if state.bytes.saturating_add(bytes) > max {
            return Err(BufferUnavailable(format!(
                "failover buffer full ({} of {max} bytes used)",
                state.bytes
            )));
        }
        state.bytes += bytes;
        state.pending += records.len() as u64;
        for record in &records {
            *state.blocked.entry(record.key.clone()).or_default() += 1;
        }
        drop(state);
        let keys = records.iter().map(|r| r.key.clone()).collect();
        Ok(Admission {
            shared: self.shared.clone(),
            records,
            keys,
            bytes,
            written: false,
        })
    }

    /// Appends the admitted records and returns once they are fsync'd (sharing the fsync with
    /// every admission that reached the writer meanwhile).
    ///
    /// Once sent, the records belong to the writer: if this future is dropped (the client left)
    /// they are written all the same and stay counted, and if the write fails the writer gives
    /// them back, so the counts always match the files.
    ///
    /// # Errors
    /// [`BufferUnavailable`] when the write or the fsync failed; the records are given back.
    pub(crate) async fn write(&self, mut admission: Admission) -> Result<(), BufferUnavailable> {
        let (reply, written) = oneshot::channel();
        let records = std::mem::take(&mut admission.records);
        if !self.send(Command::Append { records, reply }) {
            return Err(BufferUnavailable("failover buffer closed".to_owned()));
        }
        admission.written = true;
        match written.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(BufferUnavailable(format!(
                "failover buffer write failed: {error}"
            ))),
            Err(_) => Err(BufferUnavailable("failover buffer closed".to_owned())),
        }
    }

    /// The next records to replay, in buffer order: up to `records_max` records and about
    /// `bytes_max` bytes (at least one record) from the oldest segment with pending records.
    ///
    /// # Errors
    /// A failing read of a segment.
    pub(crate) fn next_batch(
        &self,
        records_max: usize,
        bytes_max: usize,
    ) -> io::Result<Option<Batch>> {
        let (id, offset, len) = {
            let state = self.shared.lock();
            match state.segments.iter().find(|s| s.pending() > 0) {
                Some(s) => (s.id, s.replay_offset, s.len),
                None => return Ok(None),
            }
        };
        let mut reader = segment::Reader::open(&self.shared.segment_path(id), offset, Some(len))?;
        let mut batch = Batch {
            segment: id,
            records: Vec::new(),
            start: reader.offset(),
            ends: Vec::new(),
            end: reader.offset(),
            next_at: None,
            corrupt: None,
        };
        let mut bytes = 0;
        while batch.records.len() < records_max.max(1) && (bytes < bytes_max || bytes == 0) {
            match reader.next()? {
                Next::Record { body, end } => match record::decode(&body) {
                    Ok(record) => {
                        bytes += body.len();
                        batch.records.push(record);
                        batch.ends.push(end);
                        batch.end = end;
                    }
                    Err(reason) => {
                        batch.corrupt = Some((batch.end, reason));
                        break;
                    }
                },
                Next::End => break,
                Next::Corrupt { offset, reason } => {
                    batch.corrupt = Some((offset, reason));
                    break;
                }
            }
        }
        if batch.corrupt.is_none() {
            if let Next::Record { body, .. } = reader.next()? {
                batch.next_at = record::decode(&body).ok().map(|r| r.at_ms);
            }
        }
        Ok(Some(batch))
    }

    /// Moves past a replayed batch: records its progress on disk, unblocks its partitions, and
    /// has the writer delete segments that are fully replayed. Then deals with the corruption
    /// the batch met, if any.
    pub(crate) fn advance(&self, batch: &Batch) {
        let progress = {
            let mut state = self.shared.lock();
            let Some(segment) = state.segments.iter_mut().find(|s| s.id == batch.segment) else {
                return;
            };
            segment.replay_offset = batch.end;
            segment.replayed += batch.records.len() as u64;
            segment.next_at = batch.next_at;
            for record in &batch.records {
                let key = (record.item.queue.clone(), record.item.partition.clone());
                if let Some(left) = segment.partitions.get_mut(&key) {
                    *left -= 1;
                    if *left == 0 {
                        segment.partitions.remove(&key);
                    }
                }
            }
            // Past a corrupt record nothing of the segment is replayed: its remaining records
            // stop blocking their partitions now (the writer deletes the file).
            let dropped = match batch.corrupt {
                Some(_) => {
                    segment.replayed = segment.records;
                    std::mem::take(&mut segment.partitions)
                }
                None => HashMap::new(),
            };
            let progress = (segment.replay_offset, segment.replayed, segment.pending());
            for record in &batch.records {
                let key = (record.item.queue.clone(), record.item.partition.clone());
                state.unblock(&key, 1);
            }
            for (key, count) in dropped {
                state.unblock(&key, count);
            }
            if batch.corrupt.is_some() {
                state.corrupt += 1;
            }
            progress
        };
        let (offset, replayed, pending) = progress;
        if pending > 0 {
            // A lost marker only means records replayed again, which dedup absorbs.
            if let Err(error) =
                marker_write(&self.shared.marker_path(batch.segment), offset, replayed)
            {
                tracing::warn!(%error, "failover replay progress not recorded");
            }
        }
        if let Some((offset, reason)) = &batch.corrupt {
            self.send(Command::Discard {
                id: batch.segment,
                offset: *offset,
                reason: reason.clone(),
            });
        } else if pending == 0 {
            self.send(Command::Tidy);
        }
    }

    /// Sets a record aside in `failed/` with the reason its replay failed.
    pub(crate) fn set_aside(&self, segment: u64, record: &Record, reason: &str) {
        let line = serde_json::json!({
            "reason": reason,
            "failedAt": OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000,
            "bufferedAt": record.at_ms,
            "item": record.item.element(),
            "payload": serde_json::from_str::<&serde_json::value::RawValue>(&record.item.payload).ok(),
        });
        let path = self
            .shared
            .settings
            .dir
            .join(super::recover::FAILED_DIR)
            .join(format!("{segment:020}.jsonl"));
        let written = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| {
                writeln!(f, "{line}")?;
                f.sync_all()
            });
        if let Err(error) = written {
            tracing::error!(%error, path = %path.display(), "failed record not saved");
        }
        self.shared.lock().failed += 1;
    }

    /// Counters and sizes for the status routes.
    pub(crate) fn stats(&self) -> BufferStats {
        let state = self.shared.lock();
        let oldest_at = state
            .segments
            .iter()
            .find(|s| s.pending() > 0)
            .and_then(|s| s.next_at)
            .and_then(|ms| {
                OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
            });
        let full = state.bytes >= self.shared.settings.bytes_max;
        BufferStats {
            pending: state.pending,
            failed: state.failed,
            corrupt: state.corrupt,
            segments: state.segments.len(),
            bytes: state.bytes,
            oldest_at,
            partitions_blocked: state.blocked.len(),
            healthy: state.unusable.is_none() && !full,
            problem: state
                .unusable
                .clone()
                .or_else(|| full.then(|| "failover buffer full".to_owned())),
        }
    }

    /// Stops the writer once everything sent to it is written and fsync'd.
    pub(crate) async fn close(&self) {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(writer) = writer {
            if tokio::task::spawn_blocking(move || writer.join())
                .await
                .is_err()
            {
                tracing::warn!("failover writer ended abnormally");
            }
        }
    }
}

impl Admission {
    /// Takes over the records of `other`, to be written after these ones.
    pub(crate) fn absorb(&mut self, mut other: Admission) {
        self.records.append(&mut other.records);
        self.keys.append(&mut other.keys);
        self.bytes += other.bytes;
        // Its records are counted here now: nothing for it to give back.
        other.written = true;
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if self.written {
            return;
        }
        let mut state = self.shared.lock();
        state.bytes = state.bytes.saturating_sub(self.bytes);
        for key in &self.keys {
            state.unblock(key, 1);
        }
    }
}
