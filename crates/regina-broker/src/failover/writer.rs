//! The writer thread: the only code that creates, appends to or removes segment files.
//!
//! It takes every command that is waiting, appends all waiting records, fsyncs once and then
//! answers each request: concurrent pushes share one fsync (group commit). A record counts as
//! written — and the drainer may read it — only once that fsync returned.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::recover::CORRUPT_DIR;
use super::segment;
use super::store::{PartitionKey, Segment, Shared};

/// One framed record on its way to disk.
pub(super) struct Framed {
    pub(super) key: PartitionKey,
    pub(super) bytes: Vec<u8>,
    pub(super) at_ms: i64,
}

/// What the writer is asked to do.
pub(super) enum Command {
    /// Append records durably, then reply.
    Append {
        records: Vec<Framed>,
        reply: oneshot::Sender<io::Result<()>>,
    },
    /// Delete every segment whose records are all replayed.
    Tidy,
    /// The valid part of segment `id` ends at `offset`: keep a copy in `corrupt/`, drop the rest
    /// of the segment and its records.
    Discard {
        id: u64,
        offset: u64,
        reason: String,
    },
}

/// The segment being appended to.
struct Active {
    id: u64,
    file: File,
    records: u64,
}

/// What one group of appends added to one segment.
#[derive(Default)]
struct Delta {
    len: u64,
    records: u64,
    partitions: HashMap<PartitionKey, u64>,
    first_at: Option<i64>,
}

/// Starts the writer thread; `lock` (the directory lock) is held until it ends.
pub(super) fn start(
    shared: Arc<Shared>,
    receiver: mpsc::UnboundedReceiver<Command>,
    lock: Option<File>,
) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("regina-failover-writer".to_owned())
        .spawn(move || run(&shared, receiver, lock));
    match spawned {
        Ok(handle) => Some(handle),
        Err(error) => {
            tracing::error!(%error, "failover writer not started");
            None
        }
    }
}

fn run(shared: &Shared, mut receiver: mpsc::UnboundedReceiver<Command>, _lock: Option<File>) {
    let mut active: Option<Active> = None;
    while let Some(first) = receiver.blocking_recv() {
        let mut appends = Vec::new();
        let mut commands = vec![first];
        while let Ok(next) = receiver.try_recv() {
            commands.push(next);
        }
        for command in commands {
            match command {
                Command::Append { records, reply } => appends.push((records, reply)),
                Command::Tidy => tidy(shared, &mut active),
                Command::Discard { id, offset, reason } => {
                    discard(shared, &mut active, id, offset, &reason);
                }
            }
        }
        if !appends.is_empty() {
            append_group(shared, &mut active, appends);
        }
    }
}

type Reply = oneshot::Sender<io::Result<()>>;

fn append_group(shared: &Shared, active: &mut Option<Active>, appends: Vec<(Vec<Framed>, Reply)>) {
    let before = active.as_ref().map(|a| (a.id, a.records));
    let durable_before = before.and_then(|(id, _)| {
        let state = shared.lock();
        state.segments.iter().find(|s| s.id == id).map(|s| s.len)
    });
    let mut created = Vec::new();
    let mut deltas: Vec<(u64, Delta)> = Vec::new();
    let records = appends.iter().flat_map(|(records, _)| records.iter());
    let outcome = write_records(shared, active, records, &mut created, &mut deltas);
    match outcome {
        Ok(()) => apply(shared, &created, deltas),
        Err(_) => {
            rollback(shared, active, before, durable_before, &created);
            give_back(
                shared,
                appends.iter().flat_map(|(records, _)| records.iter()),
            );
        }
    }
    for (_, reply) in appends {
        let answer = match &outcome {
            Ok(()) => Ok(()),
            Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
        };
        // A requester that left needs no answer; its records are written all the same.
        let _ = reply.send(answer);
    }
}

fn write_records<'a>(
    shared: &Shared,
    active: &mut Option<Active>,
    records: impl Iterator<Item = &'a Framed>,
    created: &mut Vec<u64>,
    deltas: &mut Vec<(u64, Delta)>,
) -> io::Result<()> {
    for record in records {
        let full = active
            .as_ref()
            .is_some_and(|a| a.records >= shared.settings.events_per_file);
        if full {
            if let Some(old) = active.take() {
                old.file.sync_all()?;
            }
        }
        if active.is_none() {
            let id = {
                let mut state = shared.lock();
                let id = state.next_id;
                state.next_id += 1;
                id
            };
            let file = segment::create(&shared.segment_path(id))?;
            created.push(id);
            *active = Some(Active {
                id,
                file,
                records: 0,
            });
        }
        let Some(current) = active.as_mut() else {
            continue;
        };
        current.file.write_all(&record.bytes)?;
        current.records += 1;
        if deltas.last().is_none_or(|(id, _)| *id != current.id) {
            deltas.push((current.id, Delta::default()));
        }
        if let Some((_, delta)) = deltas.last_mut() {
            delta.len += record.bytes.len() as u64;
            delta.records += 1;
            *delta.partitions.entry(record.key.clone()).or_default() += 1;
            delta.first_at.get_or_insert(record.at_ms);
        }
    }
    if let Some(current) = active.as_ref() {
        current.file.sync_all()?;
    }
    Ok(())
}

/// Publishes a durable group: new segments appear, lengths and counts grow.
fn apply(shared: &Shared, created: &[u64], deltas: Vec<(u64, Delta)>) {
    let mut state = shared.lock();
    for id in created {
        for segment in state.segments.iter_mut() {
            segment.active = false;
        }
        state.segments.push_back(Segment {
            id: *id,
            len: segment::HEADER_BYTES,
            replay_offset: segment::HEADER_BYTES,
            active: true,
            ..Segment::default()
        });
        state.bytes += segment::HEADER_BYTES;
    }
    for (id, delta) in deltas {
        let Some(segment) = state.segments.iter_mut().find(|s| s.id == id) else {
            continue;
        };
        if segment.pending() == 0 {
            segment.next_at = delta.first_at;
        }
        segment.len += delta.len;
        segment.records += delta.records;
        for (key, count) in delta.partitions {
            *segment.partitions.entry(key).or_default() += count;
        }
    }
}

/// Undoes a failed group: segments it created are removed, the segment it appended to is cut
/// back to its durable length (or abandoned, if even that fails; its tail is then found corrupt
/// at the next start and never replayed).
fn rollback(
    shared: &Shared,
    active: &mut Option<Active>,
    before: Option<(u64, u64)>,
    durable_before: Option<u64>,
    created: &[u64],
) {
    tracing::error!("failover buffer write failed; the group's records are refused");
    for id in created {
        let _ = fs::remove_file(shared.segment_path(*id));
    }
    if active.as_ref().is_some_and(|a| created.contains(&a.id)) {
        *active = None;
    }
    let (Some((id, records)), Some(len)) = (before, durable_before) else {
        return;
    };
    let restored = fs::OpenOptions::new()
        .write(true)
        .open(shared.segment_path(id))
        .and_then(|file| {
            file.set_len(len)?;
            file.sync_all()?;
            Ok(file)
        });
    match restored {
        Ok(file) if created.is_empty() => {
            *active = Some(Active { id, file, records });
        }
        _ => {
            if active.as_ref().is_some_and(|a| a.id == id) {
                *active = None;
            }
            let mut state = shared.lock();
            if let Some(segment) = state.segments.iter_mut().find(|s| s.id == id) {
                segment.active = false;
            }
        }
    }
}

/// Un-counts records that were admitted but could not be written.
fn give_back<'a>(shared: &Shared, records: impl Iterator<Item = &'a Framed>) {
    let mut state = shared.lock();
    for record in records {
        state.bytes = state.bytes.saturating_sub(record.bytes.len() as u64);
        state.unblock(&record.key, 1);
    }
}

/// Deletes every fully replayed segment (closing the active one first if it is among them).
fn tidy(shared: &Shared, active: &mut Option<Active>) {
    let done: Vec<(u64, u64)> = {
        let state = shared.lock();
        state
            .segments
            .iter()
            .filter(|s| s.pending() == 0)
            .map(|s| (s.id, s.len))
            .collect()
    };
    for (id, len) in done {
        if active.as_ref().is_some_and(|a| a.id == id) {
            *active = None;
        }
        remove_segment(shared, id, len);
    }
}

fn remove_segment(shared: &Shared, id: u64, len: u64) {
    if let Err(error) = fs::remove_file(shared.segment_path(id)) {
        if error.kind() != io::ErrorKind::NotFound {
            tracing::warn!(%error, id, "replayed segment not deleted");
            return;
        }
    }
    let _ = fs::remove_file(shared.marker_path(id));
    let mut state = shared.lock();
    state.segments.retain(|s| s.id != id);
    state.bytes = state.bytes.saturating_sub(len);
}

/// Sets a damaged segment aside once its valid part (up to `offset`) is replayed: a copy goes to
/// `corrupt/` and the segment is deleted. Its remaining records were given up by the drainer
/// already; records appended since (it may have been the active segment) are given up here.
fn discard(shared: &Shared, active: &mut Option<Active>, id: u64, offset: u64, reason: &str) {
    let known = shared.lock().segments.iter().any(|s| s.id == id);
    if !known {
        return;
    }
    if active.as_ref().is_some_and(|a| a.id == id) {
        *active = None;
    }
    let path = shared.segment_path(id);
    let copy = shared
        .settings
        .dir
        .join(CORRUPT_DIR)
        .join(format!("{id:020}.seg"));
    if let Err(error) = fs::copy(&path, &copy) {
        tracing::warn!(%error, "corrupt segment not copied to corrupt/");
    }
    let len = {
        let mut state = shared.lock();
        let Some(segment) = state.segments.iter_mut().find(|s| s.id == id) else {
            return;
        };
        segment.active = false;
        let late = std::mem::take(&mut segment.partitions);
        segment.replayed = segment.records;
        let len = segment.len;
        for (key, count) in late {
            state.unblock(&key, count);
        }
        len
    };
    tracing::error!(
        segment = %path.display(),
        offset,
        reason,
        "failover buffer segment is corrupt; its valid part was replayed, the rest is kept in corrupt/ and never replayed"
    );
    remove_segment(shared, id, len);
}
