//! A batch of records read back for replay, and the per-segment replay progress markers.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::Path;

use super::record::Record;

/// Records read back for one replay call, all from one segment.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) segment: u64,
    pub(crate) records: Vec<Record>,
    /// Offset of the first record.
    pub(super) start: u64,
    /// Offset just past each record.
    pub(super) ends: Vec<u64>,
    /// Offset just past the last record.
    pub(crate) end: u64,
    /// When the record after the batch was buffered, if there is one.
    pub(crate) next_at: Option<i64>,
    /// Where the segment's valid part ended, and why, if the batch reached that point.
    pub(crate) corrupt: Option<(u64, String)>,
}

/// Writes a segment's replay progress (`<offset> <records>`) through a rename.
pub(super) fn marker_write(path: &Path, offset: u64, replayed: u64) -> io::Result<()> {
    let temporary = path.with_extension("pos.tmp");
    let mut file = File::create(&temporary)?;
    writeln!(file, "{offset} {replayed}")?;
    file.sync_all()?;
    fs::rename(&temporary, path)
}

/// Reads a progress marker; `None` when absent or unreadable (replay restarts at the beginning).
pub(super) fn marker_read(path: &Path) -> Option<(u64, u64)> {
    let text = fs::read_to_string(path).ok()?;
    let mut parts = text.split_whitespace();
    let offset = parts.next()?.parse().ok()?;
    let replayed = parts.next()?.parse().ok()?;
    Some((offset, replayed))
}

impl Batch {
    /// Keeps only the first `count` records (the rest is read again by the next batch).
    pub(crate) fn truncate(&mut self, count: usize) {
        if count >= self.records.len() {
            return;
        }
        self.next_at = Some(self.records[count].at_ms);
        self.records.truncate(count);
        self.ends.truncate(count);
        self.end = self.ends.last().copied().unwrap_or(self.start);
        self.corrupt = None;
    }
}
