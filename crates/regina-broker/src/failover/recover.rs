//! Startup: takes the directory lock, verifies every segment left by an earlier run and rebuilds
//! the in-memory state from them. A segment whose valid part ends early (a torn write, a flipped
//! bit) is copied to `corrupt/` and cut back to its valid part, which is replayed as usual.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use super::batch::marker_read;
use super::record;
use super::segment::{self, Next};
use super::store::{Segment, State, StoreSettings};

/// Sub-directory of records set aside after a replay error.
pub(super) const FAILED_DIR: &str = "failed";
/// Sub-directory of copies of corrupt segments.
pub(super) const CORRUPT_DIR: &str = "corrupt";
/// The lock file that keeps a second instance out of the directory.
const LOCK_FILE: &str = "lock";

/// The recovered state and the held directory lock (`None` when the directory is unusable).
pub(super) fn recover(settings: &StoreSettings) -> (State, Option<File>) {
    let mut state = State {
        next_id: 1,
        ..State::default()
    };
    let lock = match prepare(&settings.dir) {
        Ok(lock) => lock,
        Err(problem) => {
            state.unusable = Some(problem);
            return (state, None);
        }
    };
    let ids = match segment_ids(&settings.dir) {
        Ok(ids) => ids,
        Err(error) => {
            state.unusable = Some(format!("cannot list {}: {error}", settings.dir.display()));
            return (state, Some(lock));
        }
    };
    for id in ids {
        state.next_id = state.next_id.max(id + 1);
        match scan(settings, id) {
            Ok(Some(segment)) => {
                state.bytes += segment.len;
                state.pending += segment.pending();
                for (key, count) in &segment.partitions {
                    *state.blocked.entry(key.clone()).or_default() += count;
                }
                state.segments.push_back(segment);
            }
            Ok(None) => {}
            Err(error) => {
                state.unusable = Some(format!("cannot read segment {id}: {error}"));
                return (state, Some(lock));
            }
        }
    }
    state.failed += count_failed(&settings.dir.join(FAILED_DIR));
    state.corrupt += fs::read_dir(settings.dir.join(CORRUPT_DIR))
        .map(|entries| entries.filter_map(Result::ok).count() as u64)
        .unwrap_or(0);
    (state, Some(lock))
}

/// Creates the directories and takes the lock.
fn prepare(dir: &Path) -> Result<File, String> {
    for sub in [FAILED_DIR, CORRUPT_DIR] {
        fs::create_dir_all(dir.join(sub))
            .map_err(|e| format!("cannot create {}: {e}", dir.join(sub).display()))?;
    }
    let path = dir.join(LOCK_FILE);
    let lock = File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    lock.try_lock().map_err(|e| {
        format!(
            "{} is in use by another instance ({e}); FILE_BUFFER_DIR must not be shared",
            dir.display()
        )
    })?;
    Ok(lock)
}

/// Ids of the segments, oldest first; leftovers of interrupted marker writes are removed, and
/// markers of segments that no longer exist.
fn segment_ids(dir: &Path) -> io::Result<Vec<u64>> {
    let mut ids = Vec::new();
    let mut markers = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".tmp") {
            let _ = fs::remove_file(&path);
        } else if let Some(id) = name.strip_suffix(".seg").and_then(|s| s.parse().ok()) {
            ids.push(id);
        } else if let Some(id) = name
            .strip_suffix(".pos")
            .and_then(|s| s.parse::<u64>().ok())
        {
            markers.push((id, path));
        }
    }
    for (id, path) in markers {
        if !ids.contains(&id) {
            let _ = fs::remove_file(path);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Verifies one segment from its replay marker on. `None` when nothing in it is left to replay
/// (it is deleted).
fn scan(settings: &StoreSettings, id: u64) -> io::Result<Option<Segment>> {
    let path = settings.dir.join(format!("{id:020}.seg"));
    let marker = settings.dir.join(format!("{id:020}.pos"));
    let file_len = fs::metadata(&path)?.len();
    let (offset, replayed) = marker_read(&marker)
        .filter(|(offset, _)| *offset >= segment::HEADER_BYTES && *offset <= file_len)
        .unwrap_or((segment::HEADER_BYTES, 0));
    let mut segment = Segment {
        id,
        replay_offset: offset,
        replayed,
        records: replayed,
        ..Segment::default()
    };
    let mut reader = segment::Reader::open(&path, offset, None)?;
    let mut valid_end = reader.offset();
    let damage = loop {
        match reader.next()? {
            Next::Record { body, end } => match record::decode(&body) {
                Ok(record) => {
                    segment.records += 1;
                    segment.next_at.get_or_insert(record.at_ms);
                    let key = (record.item.queue, record.item.partition);
                    *segment.partitions.entry(key).or_default() += 1;
                    valid_end = end;
                }
                Err(reason) => break Some((valid_end, reason)),
            },
            Next::End => break None,
            Next::Corrupt { offset, reason } => break Some((offset, reason)),
        }
    };
    if let Some((offset, reason)) = damage {
        // Counted with the other files of corrupt/ once every segment is scanned.
        set_aside_tail(settings, &path, id, offset, &reason)?;
        valid_end = offset;
    }
    segment.len = valid_end;
    if segment.pending() == 0 {
        fs::remove_file(&path)?;
        let _ = fs::remove_file(&marker);
        return Ok(None);
    }
    Ok(Some(segment))
}

/// Copies a damaged segment to `corrupt/` and cuts the original back to its valid part.
fn set_aside_tail(
    settings: &StoreSettings,
    path: &Path,
    id: u64,
    offset: u64,
    reason: &str,
) -> io::Result<()> {
    let copy = settings.dir.join(CORRUPT_DIR).join(format!("{id:020}.seg"));
    fs::copy(path, &copy)?;
    File::open(&copy)?.sync_all()?;
    let original = fs::OpenOptions::new().write(true).open(path)?;
    original.set_len(offset)?;
    original.sync_all()?;
    tracing::error!(
        segment = %path.display(),
        offset,
        reason,
        "failover buffer segment is corrupt; records from this offset on are kept in corrupt/ and never replayed"
    );
    Ok(())
}

/// Records set aside in `failed/` by earlier runs (one per line).
fn count_failed(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .map(|text| text.lines().filter(|l| !l.trim().is_empty()).count() as u64)
        .sum()
}
