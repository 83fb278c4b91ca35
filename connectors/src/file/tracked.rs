//! One file being read: its lines, and the position just past the last one handed out.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use super::position::{fingerprint, FileKey, StoredPosition, FINGERPRINT_BYTES};
use crate::source::SourceRecord;

const READ_CHUNK_BYTES: usize = 64 * 1024;

pub(super) struct TrackedFile {
    pub key: FileKey,
    pub path: PathBuf,
    file: File,
    /// The next byte to read from the file.
    read_offset: u64,
    /// Just past the last line handed out (or skipped): the position to store.
    line_end: u64,
    /// Bytes read past `line_end` that do not end in a newline yet.
    pending: Vec<u8>,
    /// Inside a line over the length limit whose first part was handed out: skip to its end.
    in_long_line: bool,
    fingerprint: Option<(u64, u64)>,
    /// When the glob stopped pointing at this file (renamed away or deleted).
    pub detached_since: Option<Instant>,
    pub last_growth: Instant,
    /// The position moved since it was last taken.
    pub dirty: bool,
    chunk: Vec<u8>,
}

impl TrackedFile {
    pub(super) fn open(
        path: PathBuf,
        key: FileKey,
        file: File,
        start: u64,
        in_long_line: bool,
    ) -> Self {
        TrackedFile {
            key,
            path,
            file,
            read_offset: start,
            line_end: start,
            pending: Vec::new(),
            in_long_line,
            fingerprint: None,
            detached_since: None,
            last_growth: Instant::now(),
            dirty: start > 0,
            chunk: vec![0; READ_CHUNK_BYTES],
        }
    }

    /// Reads complete lines into `out` until `max_records` are there or the file has no more
    /// whole lines; returns how many bytes were read.
    pub(super) fn read_lines(
        &mut self,
        max_records: usize,
        max_line_bytes: usize,
        out: &mut Vec<SourceRecord>,
    ) -> std::io::Result<usize> {
        self.check_truncated()?;
        // Lines left over from the last call (it stopped at `max_records`) come first.
        self.split_lines(max_records, max_line_bytes, out);
        let mut bytes_read = 0;
        while out.len() < max_records {
            let read = self.file.read_at(&mut self.chunk, self.read_offset)?;
            if read == 0 {
                break;
            }
            self.read_offset += read as u64;
            bytes_read += read;
            self.pending.extend_from_slice(&self.chunk[..read]);
            self.split_lines(max_records, max_line_bytes, out);
        }
        if bytes_read > 0 {
            self.last_growth = Instant::now();
        }
        Ok(bytes_read)
    }

    fn split_lines(
        &mut self,
        max_records: usize,
        max_line_bytes: usize,
        out: &mut Vec<SourceRecord>,
    ) {
        let mut start = 0;
        while out.len() < max_records {
            let Some(newline) = self.pending[start..].iter().position(|b| *b == b'\n') else {
                break;
            };
            let end = start + newline;
            if self.in_long_line {
                self.in_long_line = false;
            } else {
                out.push(line_record(&self.pending[start..end], max_line_bytes));
            }
            self.line_end += (end + 1 - start) as u64;
            start = end + 1;
        }
        self.pending.drain(..start);
        if start > 0 {
            self.dirty = true;
        }
        if self.pending.len() > max_line_bytes && out.len() < max_records {
            // A line with no end in sight: hand out its first part, skip the rest.
            if !self.in_long_line {
                out.push(line_record(&self.pending, max_line_bytes));
            }
            self.line_end += self.pending.len() as u64;
            self.pending.clear();
            self.in_long_line = true;
            self.dirty = true;
        }
    }

    /// A file that ends without a newline and will not grow any more: its last line is
    /// handed out as it is.
    pub(super) fn finish(&mut self, max_line_bytes: usize, out: &mut Vec<SourceRecord>) {
        if !self.pending.is_empty() && !self.in_long_line {
            out.push(line_record(&self.pending, max_line_bytes));
        }
        self.line_end += self.pending.len() as u64;
        self.pending.clear();
        self.dirty = true;
    }

    /// copytruncate: the file is shorter than what was read, so it starts over.
    fn check_truncated(&mut self) -> std::io::Result<()> {
        let length = self.file.metadata()?.len();
        if length < self.read_offset {
            tracing::info!(path = %self.path.display(), length, position = self.line_end, "file truncated; reading it from the start");
            self.read_offset = 0;
            self.line_end = 0;
            self.pending.clear();
            self.in_long_line = false;
            self.fingerprint = None;
            self.dirty = true;
        }
        Ok(())
    }

    /// The position to store (its fingerprint covers as much of the file's head as was read).
    pub(super) fn stored_position(&mut self) -> std::io::Result<StoredPosition> {
        let length = self.read_offset.min(FINGERPRINT_BYTES);
        let current = match self.fingerprint {
            Some((hash, bytes)) if bytes == length => hash,
            _ => {
                let hash = fingerprint(&self.file, length)?.unwrap_or(0);
                self.fingerprint = Some((hash, length));
                hash
            }
        };
        Ok(StoredPosition {
            path: self.path.display().to_string(),
            position: self.line_end,
            fingerprint: current,
            fingerprint_bytes: length,
            in_long_line: self.in_long_line,
        })
    }

    pub(super) fn at_end(&self) -> std::io::Result<bool> {
        Ok(self.file.metadata()?.len() <= self.read_offset)
    }
}

fn line_record(line: &[u8], max_line_bytes: usize) -> SourceRecord {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > max_line_bytes {
        let mut record = SourceRecord::value(line[..max_line_bytes].to_vec());
        record.problem = Some(format!(
            "line longer than {max_line_bytes} bytes (cut there)"
        ));
        return record;
    }
    SourceRecord::value(line.to_vec())
}
