//! The segment file format of the failover buffer.
//!
//! A segment is a magic header followed by records. A record is framed as
//!
//! ```text
//! length: u32 LE | crc: u32 LE | body: `length` bytes
//! ```
//!
//! where `crc` is the CRC32C of the four length bytes followed by the body, so a damaged length is
//! caught as surely as a damaged body. A reader stops at the first frame that is incomplete (a
//! torn write) or whose checksum does not match: everything before it is the segment's valid part,
//! nothing after it is ever trusted.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// First bytes of every segment: format name and version.
pub(super) const MAGIC: &[u8; 8] = b"RGNFBUF1";
/// Offset of the first record.
pub(super) const HEADER_BYTES: u64 = MAGIC.len() as u64;
/// Length and checksum in front of every body.
pub(super) const FRAME_BYTES: u64 = 8;

/// The framed form of `body`: length, checksum, body.
pub(super) fn frame(body: &[u8]) -> Vec<u8> {
    let length = u32::try_from(body.len()).unwrap_or(u32::MAX).to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&length), body);
    let mut out = Vec::with_capacity(body.len() + FRAME_BYTES as usize);
    out.extend_from_slice(&length);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Creates a segment holding only its header, durably: the file and its directory entry are
/// fsync'd before this returns, so a record later fsync'd into it cannot vanish with the file.
///
/// # Errors
/// Any I/O failure; a file that already exists is refused.
pub(super) fn create(path: &Path) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .open(path)?;
    file.write_all(MAGIC)?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(file)
}

/// What the next frame of a segment holds.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// A verified body, and the offset just past it.
    Record {
        /// The body, checksum verified.
        body: Vec<u8>,
        /// Offset of the following frame.
        end: u64,
    },
    /// The valid part ends exactly here.
    End,
    /// The frame at `offset` is torn or damaged: the valid part ends before it.
    Corrupt {
        /// Offset of the bad frame.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// Reads the frames of one segment from a given offset up to a limit (the length known to be
/// durable; bytes beyond it may still be in flight).
pub(super) struct Reader {
    file: BufReader<File>,
    offset: u64,
    limit: u64,
}

impl Reader {
    /// Opens `path` for reading from `offset` (the header is checked when `offset` is at or
    /// before it) up to `limit` bytes, or to the end of the file when `limit` is `None`.
    ///
    /// # Errors
    /// The file cannot be opened or read. A bad header is not an error: the first
    /// [`Reader::next`] reports it as [`Next::Corrupt`].
    pub(super) fn open(path: &Path, offset: u64, limit: Option<u64>) -> io::Result<Reader> {
        let file = File::open(path)?;
        let limit = match limit {
            Some(limit) => limit,
            None => file.metadata()?.len(),
        };
        let mut file = BufReader::new(file);
        let offset = offset.max(HEADER_BYTES);
        file.seek(SeekFrom::Start(offset))?;
        let mut reader = Reader {
            file,
            offset,
            limit,
        };
        if offset == HEADER_BYTES && !reader.header_ok()? {
            // The header is part of the valid part: without it nothing is.
            reader.offset = 0;
        }
        Ok(reader)
    }

    fn header_ok(&mut self) -> io::Result<bool> {
        if self.limit < HEADER_BYTES {
            return Ok(false);
        }
        let mut header = [0u8; HEADER_BYTES as usize];
        let file = self.file.get_mut();
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(&mut header)?;
        self.file.seek(SeekFrom::Start(HEADER_BYTES))?;
        Ok(&header == MAGIC)
    }

    /// Offset of the next frame (the end of the valid part so far).
    pub(super) fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads and verifies the next frame.
    ///
    /// # Errors
    /// Only a failing read; damage is a [`Next::Corrupt`] value.
    pub(super) fn next(&mut self) -> io::Result<Next> {
        let corrupt = |offset, reason: &str| {
            Ok(Next::Corrupt {
                offset,
                reason: reason.to_owned(),
            })
        };
        if self.offset == 0 {
            return corrupt(0, "bad segment header");
        }
        let left = self.limit.saturating_sub(self.offset);
        if left == 0 {
            return Ok(Next::End);
        }
        if left < FRAME_BYTES {
            return corrupt(self.offset, "torn frame header");
        }
        let mut head = [0u8; FRAME_BYTES as usize];
        self.file.read_exact(&mut head)?;
        let length: [u8; 4] = [head[0], head[1], head[2], head[3]];
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let size = u64::from(u32::from_le_bytes(length));
        // Checked before allocating: a damaged length must not ask for gigabytes.
        if size > left - FRAME_BYTES {
            return corrupt(self.offset, "torn record (length beyond the end)");
        }
        let mut body = vec![0u8; size as usize];
        self.file.read_exact(&mut body)?;
        if crc32c::crc32c_append(crc32c::crc32c(&length), &body) != crc {
            return corrupt(self.offset, "checksum mismatch");
        }
        self.offset += FRAME_BYTES + size;
        Ok(Next::Record {
            body,
            end: self.offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failover::test_dir::TestDir;

    fn write_segment(path: &Path, bodies: &[&[u8]]) -> u64 {
        let mut file = create(path).expect("create");
        for body in bodies {
            file.write_all(&frame(body)).expect("append");
        }
        file.sync_all().expect("sync");
        file.metadata().expect("metadata").len()
    }

    fn read_all(path: &Path) -> (Vec<Vec<u8>>, Next) {
        let mut reader = Reader::open(path, 0, None).expect("open");
        let mut bodies = Vec::new();
        loop {
            match reader.next().expect("read") {
                Next::Record { body, .. } => bodies.push(body),
                other => return (bodies, other),
            }
        }
    }

    #[test]
    fn records_round_trip_in_order() {
        let dir = TestDir::new();
        let path = dir.path().join("1.seg");
        let bodies: [&[u8]; 3] = [b"first", b"", &[0u8, 255, 7]];
        let len = write_segment(&path, &bodies);
        assert_eq!(
            len,
            HEADER_BYTES + 3 * FRAME_BYTES + 8,
            "header, three frames, 8 body bytes"
        );
        let (read, end) = read_all(&path);
        assert_eq!(read, bodies.map(<[u8]>::to_vec).to_vec());
        assert_eq!(end, Next::End);
    }

    #[test]
    fn a_torn_tail_ends_the_valid_part() {
        let dir = TestDir::new();
        let path = dir.path().join("1.seg");
        let len = write_segment(&path, &[b"kept", b"torn away"]);
        // Cut the last record in the middle of its body, as a crash during the write would.
        let file = OpenOptions::new().write(true).open(&path).expect("open");
        file.set_len(len - 3).expect("truncate");
        let (read, end) = read_all(&path);
        assert_eq!(read, vec![b"kept".to_vec()]);
        let valid = HEADER_BYTES + FRAME_BYTES + 4;
        assert!(
            matches!(end, Next::Corrupt { offset, .. } if offset == valid),
            "{end:?}"
        );
        // Cut inside a frame header too.
        file.set_len(valid + 3).expect("truncate");
        let (read, end) = read_all(&path);
        assert_eq!(read.len(), 1);
        assert!(matches!(end, Next::Corrupt { offset, .. } if offset == valid));
    }

    #[test]
    fn a_flipped_byte_anywhere_is_caught() {
        let dir = TestDir::new();
        let path = dir.path().join("1.seg");
        let len = write_segment(&path, &[b"one", b"two", b"three"]);
        let pristine = std::fs::read(&path).expect("read");
        let second = HEADER_BYTES + FRAME_BYTES + 3;
        let third = second + FRAME_BYTES + 3;
        for position in second..len {
            let mut damaged = pristine.clone();
            damaged[position as usize] ^= 0x10;
            std::fs::write(&path, &damaged).expect("write");
            let (read, end) = read_all(&path);
            // The damaged record and everything after it are refused; those before survive.
            let (kept, bad) = if position < third {
                (vec![b"one".to_vec()], second)
            } else {
                (vec![b"one".to_vec(), b"two".to_vec()], third)
            };
            assert_eq!(read, kept, "flip at {position}");
            assert!(
                matches!(end, Next::Corrupt { offset, .. } if offset == bad),
                "flip at {position}: {end:?}"
            );
        }
        let mut damaged = pristine;
        damaged[2] ^= 1;
        std::fs::write(&path, &damaged).expect("write");
        assert_eq!(
            read_all(&path),
            (
                vec![],
                Next::Corrupt {
                    offset: 0,
                    reason: "bad segment header".into()
                }
            )
        );
    }

    #[test]
    fn reading_stops_at_the_durable_limit_and_resumes_from_an_offset() {
        let dir = TestDir::new();
        let path = dir.path().join("1.seg");
        write_segment(&path, &[b"a", b"b", b"c"]);
        let after_first = HEADER_BYTES + FRAME_BYTES + 1;
        let mut reader = Reader::open(&path, 0, Some(after_first)).expect("open");
        assert!(
            matches!(reader.next().expect("read"), Next::Record { end, .. } if end == after_first)
        );
        assert_eq!(reader.next().expect("read"), Next::End);
        let mut reader = Reader::open(&path, after_first, None).expect("open");
        let Next::Record { body, .. } = reader.next().expect("read") else {
            panic!("expected a record");
        };
        assert_eq!(body, b"b");
    }

    #[test]
    fn an_existing_segment_is_never_overwritten() {
        let dir = TestDir::new();
        let path = dir.path().join("1.seg");
        write_segment(&path, &[b"x"]);
        assert!(create(&path).is_err());
    }
}
