//! One segment of a partition log: `<base offset>.log` with its offset and time indexes.
//!
//! Invariants: the file holds whole, CRC-valid batches back to back from position 0 to `size`;
//! batch offsets strictly increase and are ≥ `base_offset`; `next_offset` is one past the last
//! batch's last offset (or `base_offset` when empty).

use std::fs::{self, File, OpenOptions};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::log::batch::{self, BatchHeader, BATCH_HEADER_BYTES};
use crate::log::error::{BatchError, LogError};
use crate::log::index::{OffsetIndex, TimeIndex};

/// Bytes read at a time while walking batches.
const SCAN_CHUNK_BYTES: usize = 256 * 1024;

pub fn segment_file_name(base_offset: i64, extension: &str) -> String {
    format!("{base_offset:020}.{extension}")
}

pub struct Segment {
    pub base_offset: i64,
    path: PathBuf,
    file: Arc<File>,
    size: u64,
    next_offset: i64,
    max_timestamp: i64,
    /// Base offset of the batch holding `max_timestamp`.
    offset_of_max_timestamp: i64,
    /// Wall-clock time (ms) used for `segment.ms` rolling and retention of an empty segment.
    created_ms: i64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_index_entry: u64,
}

/// Why a scan stopped before the end of the segment.
#[derive(Debug)]
pub struct ScanStop {
    pub position: u64,
    pub error: BatchError,
}

impl Segment {
    /// In-memory state for `file`, before its batches are known.
    fn with_file(base_offset: i64, path: PathBuf, file: File, size: u64, created_ms: i64) -> Self {
        Segment {
            base_offset,
            path,
            file: Arc::new(file),
            size,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            created_ms,
            offset_index: OffsetIndex::default(),
            time_index: TimeIndex::default(),
            bytes_since_index_entry: 0,
        }
    }

    /// Creates a new, empty segment file.
    pub fn create(dir: &Path, base_offset: i64, now_ms: i64) -> Result<Self, LogError> {
        let path = dir.join(segment_file_name(base_offset, "log"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        Ok(Self::with_file(base_offset, path, file, 0, now_ms))
    }

    fn open_file(dir: &Path, base_offset: i64) -> Result<(PathBuf, File, u64), LogError> {
        let path = dir.join(segment_file_name(base_offset, "log"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        let size = file.metadata().map_err(|e| LogError::io(&path, e))?.len();
        Ok((path, file, size))
    }

    /// Opens a sealed segment that was flushed before: indexes come from their files (rebuilt
    /// when missing or inconsistent); the log is not scanned. `next_offset` is the base offset of
    /// the following segment.
    pub fn open_sealed(
        dir: &Path,
        base_offset: i64,
        next_offset: i64,
        index_interval_bytes: u64,
    ) -> Result<Self, LogError> {
        let (path, file, size) = Self::open_file(dir, base_offset)?;
        let offset_index = OffsetIndex::load(&path.with_extension("index"), size.max(1));
        let time_index = TimeIndex::load(&path.with_extension("timeindex"));
        let mut segment = Self::with_file(base_offset, path, file, size, 0);
        segment.next_offset = next_offset;
        match (offset_index, time_index) {
            (Some(offset_index), Some(time_index)) if size == 0 || !offset_index.is_empty() => {
                if let Some(last) = time_index.last() {
                    segment.max_timestamp = last.timestamp;
                    segment.offset_of_max_timestamp = base_offset + last.relative_offset as i64;
                }
                segment.offset_index = offset_index;
                segment.time_index = time_index;
            }
            _ => {
                tracing::info!(segment = %segment.path.display(), "rebuilding segment indexes");
                segment.rebuild(index_interval_bytes, false)?;
            }
        }
        segment.created_ms = segment.max_timestamp.max(0);
        Ok(segment)
    }

    /// Opens a segment that may have a torn or corrupt tail: every batch is read and its CRC
    /// checked; the file is cut at the first bad batch and the indexes are rebuilt.
    /// Returns the segment and the number of bytes cut.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        now_ms: i64,
    ) -> Result<(Self, u64), LogError> {
        let (path, file, size) = Self::open_file(dir, base_offset)?;
        let mut segment = Self::with_file(base_offset, path, file, size, now_ms);
        let valid_bytes = segment.rebuild(index_interval_bytes, true)?;
        let cut = size - valid_bytes;
        if cut > 0 {
            segment
                .file
                .set_len(valid_bytes)
                .map_err(|e| LogError::io(&segment.path, e))?;
            segment
                .file
                .sync_data()
                .map_err(|e| LogError::io(&segment.path, e))?;
            segment.size = valid_bytes;
        }
        if segment.max_timestamp >= 0 {
            segment.created_ms = segment.max_timestamp.min(now_ms);
        }
        Ok((segment, cut))
    }

    /// Rebuilds indexes and offsets by walking the log; with `verify`, also checks each CRC and
    /// stops at the first bad batch. Returns the number of valid bytes.
    fn rebuild(&mut self, index_interval_bytes: u64, verify: bool) -> Result<u64, LogError> {
        self.offset_index = OffsetIndex::default();
        self.time_index = TimeIndex::default();
        self.bytes_since_index_entry = 0;
        self.max_timestamp = -1;
        let file_size = self.size;
        let mut previous_next_offset = self.base_offset;
        let mut tracked: Vec<(u64, BatchHeader)> = Vec::new();
        let stop = self.scan(0, file_size, verify, |position, header, _| {
            if header.base_offset < previous_next_offset {
                return ControlFlow::Break(BatchError::InvalidRecords(format!(
                    "batch offset {} goes backwards (expected ≥ {previous_next_offset})",
                    header.base_offset
                )));
            }
            previous_next_offset = header.next_offset();
            tracked.push((position, *header));
            ControlFlow::Continue(())
        })?;
        let mut valid_bytes = 0;
        self.size = 0;
        for (position, header) in tracked {
            self.note_appended(position, &header, index_interval_bytes);
            valid_bytes = position + header.total_bytes() as u64;
        }
        self.size = valid_bytes;
        if let Some(stop) = stop {
            tracing::warn!(
                segment = %self.path.display(),
                position = stop.position,
                error = %stop.error,
                "invalid data in segment; it will be cut here"
            );
        }
        Ok(valid_bytes)
    }

    /// Walks batches from `start` to `end`; see [`scan_file`].
    pub fn scan(
        &self,
        start: u64,
        end: u64,
        with_bytes: bool,
        visit: impl FnMut(u64, &BatchHeader, Option<&[u8]>) -> ControlFlow<BatchError>,
    ) -> Result<Option<ScanStop>, LogError> {
        scan_file(&self.file, &self.path, start, end, with_bytes, visit)
    }

    /// Updates offsets, timestamps and indexes for a batch written at `position`.
    fn note_appended(&mut self, position: u64, header: &BatchHeader, index_interval_bytes: u64) {
        let relative_offset = (header.base_offset - self.base_offset) as u32;
        if self.offset_index.is_empty() || self.bytes_since_index_entry >= index_interval_bytes {
            self.offset_index.append(relative_offset, position as u32);
            if header.max_timestamp > self.max_timestamp {
                self.time_index
                    .append(header.max_timestamp, relative_offset);
            }
            self.bytes_since_index_entry = 0;
        }
        self.bytes_since_index_entry += header.total_bytes() as u64;
        if header.max_timestamp > self.max_timestamp {
            self.max_timestamp = header.max_timestamp;
            self.offset_of_max_timestamp = header.base_offset;
        }
        self.next_offset = header.next_offset();
        self.size = position + header.total_bytes() as u64;
    }

    /// Appends one batch whose offsets are already assigned. With `eager_writeback` the kernel
    /// is asked to start writing it to disk at once (for logs that fsync before acknowledging).
    pub fn append(
        &mut self,
        bytes: &[u8],
        header: &BatchHeader,
        index_interval_bytes: u64,
        eager_writeback: bool,
    ) -> Result<(), LogError> {
        let position = self.size;
        if let Err(error) = self.file.write_all_at(bytes, position) {
            // A write cut short (a full disk) leaves a torn batch: cut it off, so that the file
            // ends at the last whole batch whether or not the next append succeeds.
            if let Err(cut) = self.file.set_len(position) {
                tracing::warn!(path = %self.path.display(), %cut, "cannot cut a torn write");
            }
            return Err(LogError::io(&self.path, error));
        }
        if eager_writeback {
            start_writeback(&self.file, position, bytes.len());
        }
        self.note_appended(position, header, index_interval_bytes);
        Ok(())
    }

    pub fn read_at(&self, position: u64, length: usize) -> Result<Vec<u8>, LogError> {
        read_file_at(&self.file, &self.path, position, length)
    }

    /// As `read_at`, into a buffer of the fetch read pool (`read_buffers`), shared.
    pub fn read_shared(&self, position: u64, length: usize) -> Result<Bytes, LogError> {
        let pool = &super::read_buffers::FETCH_READ_BUFFERS;
        let mut buffer = pool.take(length);
        read_file_into(&self.file, &self.path, position, length, &mut buffer)?;
        Ok(pool.share(buffer))
    }

    /// Position of the first batch whose last offset is ≥ `offset`, with its header.
    pub fn find_batch(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        let relative = (offset - self.base_offset).clamp(0, u32::MAX as i64) as u32;
        let start = self
            .offset_index
            .lookup(relative)
            .map_or(0, |entry| entry.position as u64);
        let matches = |header: &BatchHeader| header.last_offset() >= offset;
        match self.search_from(start, matches)? {
            Ok(found) => Ok(found),
            // An index entry that does not point at a batch (a damaged or hostile index file,
            // trusted after a clean shutdown): search from the segment's start instead.
            Err(stop) if start > 0 => {
                tracing::warn!(
                    path = %self.path.display(),
                    position = start,
                    error = %stop.error,
                    "an offset index entry does not point at a batch; searching from the start"
                );
                Ok(self.search_from(0, matches)?.unwrap_or(None))
            }
            Err(_) => Ok(None),
        }
    }

    /// The first batch at or after `start` for which `matches` holds (`None`: none up to the
    /// end), or where the scan met bytes that are not a batch.
    fn search_from(
        &self,
        start: u64,
        mut matches: impl FnMut(&BatchHeader) -> bool,
    ) -> Result<Result<Option<(u64, BatchHeader)>, ScanStop>, LogError> {
        let mut found = None;
        let stop = self.scan(start, self.size, false, |position, header, _| {
            if matches(header) {
                found = Some((position, *header));
                ControlFlow::Break(BatchError::InvalidLength(0))
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(match (found, stop) {
            (Some(found), _) => Ok(Some(found)),
            (None, Some(stop)) => Err(stop),
            (None, None) => Ok(None),
        })
    }

    /// The first batch at or after `start` for which `matches` holds.
    pub fn find_batch_from(
        &self,
        start: u64,
        matches: impl FnMut(&BatchHeader) -> bool,
    ) -> Result<Option<(u64, BatchHeader)>, LogError> {
        Ok(self.search_from(start, matches)?.unwrap_or(None))
    }

    /// Position to start a search for the first batch with a timestamp ≥ `timestamp`.
    pub fn time_search_start(&self, timestamp: i64) -> u64 {
        match self.time_index.last_below(timestamp) {
            None => 0,
            Some(entry) => self
                .offset_index
                .lookup(entry.relative_offset)
                .map_or(0, |e| e.position as u64),
        }
    }

    /// Cuts the segment so that it ends before the first batch holding an offset ≥ `offset`.
    pub fn truncate_to(&mut self, offset: i64, index_interval_bytes: u64) -> Result<(), LogError> {
        let Some((position, _)) = self.find_batch_from(0, |h| h.last_offset() >= offset)? else {
            return Ok(());
        };
        self.file
            .set_len(position)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.size = position;
        self.rebuild(index_interval_bytes, false)?;
        if self.size == 0 {
            self.next_offset = self.base_offset;
        }
        Ok(())
    }

    /// Writes the index files; called when the segment stops being the active one.
    pub fn write_indexes(&mut self) -> Result<(), LogError> {
        if self.max_timestamp >= 0 {
            let relative = (self.offset_of_max_timestamp - self.base_offset) as u32;
            self.time_index.append(self.max_timestamp, relative);
        }
        let offset_path = self.path.with_extension("index");
        self.offset_index
            .write_to(&offset_path)
            .map_err(|e| LogError::io(&offset_path, e))?;
        let time_path = self.path.with_extension("timeindex");
        self.time_index
            .write_to(&time_path)
            .map_err(|e| LogError::io(&time_path, e))?;
        Ok(())
    }

    /// Removes the segment's files. Open readers keep their handle until they finish.
    pub fn delete_files(&self) -> Result<(), LogError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        delete_segment_files(dir, self.base_offset)
    }

    pub fn file(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    pub fn offset_of_max_timestamp(&self) -> i64 {
        self.offset_of_max_timestamp
    }

    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }

    /// When the file was last written (ms since the epoch); compaction keeps tombstones for
    /// `delete.retention.ms` after this.
    pub fn modified_ms(&self) -> Result<i64, LogError> {
        let modified = self
            .file
            .metadata()
            .and_then(|metadata| metadata.modified())
            .map_err(|e| LogError::io(&self.path, e))?;
        Ok(modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as i64))
    }

    /// A sealed segment covers offsets up to the next segment's base, even when compaction
    /// removed the records at its end.
    pub fn extend_next_offset(&mut self, next_offset: i64) {
        self.next_offset = self.next_offset.max(next_offset);
    }
}

/// Walks the batches of a segment file from `start` to `end`, calling `visit(position, header, bytes)` where
/// `bytes` is the whole batch when `with_bytes` is set. A batch that does not parse (or, with
/// `with_bytes`, fails its CRC) or runs past `end` stops the walk and is reported.
pub fn scan_file(
    file: &File,
    path: &Path,
    start: u64,
    end: u64,
    with_bytes: bool,
    mut visit: impl FnMut(u64, &BatchHeader, Option<&[u8]>) -> ControlFlow<BatchError>,
) -> Result<Option<ScanStop>, LogError> {
    let mut position = start;
    let mut chunk: Vec<u8> = Vec::new();
    let mut chunk_start = start;
    while position < end {
        let in_chunk = (position - chunk_start) as usize;
        if in_chunk + BATCH_HEADER_BYTES > chunk.len() {
            let length = SCAN_CHUNK_BYTES.min((end - position) as usize);
            chunk = read_file_at(file, path, position, length)?;
            chunk_start = position;
            if chunk.len() < BATCH_HEADER_BYTES {
                let error = BatchError::Truncated {
                    needed: BATCH_HEADER_BYTES,
                    available: chunk.len(),
                };
                return Ok(Some(ScanStop { position, error }));
            }
            continue;
        }
        let header = match BatchHeader::parse(&chunk[in_chunk..]) {
            Ok(header) => header,
            Err(error) => return Ok(Some(ScanStop { position, error })),
        };
        let total = header.total_bytes() as u64;
        if position + total > end {
            let error = BatchError::Truncated {
                needed: total as usize,
                available: (end - position) as usize,
            };
            return Ok(Some(ScanStop { position, error }));
        }
        let flow = if with_bytes {
            let owned;
            let bytes = if in_chunk + total as usize <= chunk.len() {
                &chunk[in_chunk..in_chunk + total as usize]
            } else {
                owned = read_file_at(file, path, position, total as usize)?;
                &owned[..]
            };
            if let Err(error) = batch::verify_crc(bytes, &header) {
                return Ok(Some(ScanStop { position, error }));
            }
            visit(position, &header, Some(bytes))
        } else {
            visit(position, &header, None)
        };
        if let ControlFlow::Break(error) = flow {
            return Ok(Some(ScanStop { position, error }));
        }
        position += total;
    }
    Ok(None)
}

/// Deletes the files of the segment at `base_offset` in `dir` (log and indexes), ignoring those
/// already gone.
pub fn delete_segment_files(dir: &Path, base_offset: i64) -> Result<(), LogError> {
    for extension in ["log", "index", "timeindex"] {
        let path = dir.join(segment_file_name(base_offset, extension));
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&path, e)),
        }
    }
    Ok(())
}

/// Fsyncs a directory, so that files created, renamed or deleted in it stay so after a crash.
pub fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(dir, e))
}

/// Reads up to `length` bytes at `position` (fewer at the end of the file). Reads straight into
/// uninitialised capacity: zero-filling a fetch-sized buffer first cost ~10 % of broker CPU in
/// consume benchmarks.
pub fn read_file_at(
    file: &File,
    path: &Path,
    position: u64,
    length: usize,
) -> Result<Vec<u8>, LogError> {
    let mut buffer = Vec::with_capacity(length);
    read_file_into(file, path, position, length, &mut buffer)?;
    Ok(buffer)
}

/// As `read_file_at`, into an empty `buffer` (which grows if it has less room than `length`).
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub fn read_file_into(
    file: &File,
    path: &Path,
    position: u64,
    length: usize,
    buffer: &mut Vec<u8>,
) -> Result<(), LogError> {
    use std::os::fd::AsRawFd;
    buffer.clear();
    buffer.reserve(length);
    while buffer.len() < length {
        let filled = buffer.len();
        let spare = &mut buffer.spare_capacity_mut()[..length - filled];
        // SAFETY: pread writes at most `spare.len()` bytes into the spare capacity it is given.
        let read = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                (position + filled as u64) as libc::off_t,
            )
        };
        match read {
            0 => break,
            n if n > 0 => {
                // SAFETY: pread initialised exactly `n` more bytes after `filled`.
                unsafe { buffer.set_len(filled + n as usize) };
            }
            _ => {
                let error = std::io::Error::last_os_error();
                if error.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(LogError::io(path, error));
            }
        }
    }
    Ok(())
}

/// Asks the kernel to start writing a just-appended range now (without waiting for it), so that
/// the fsync that follows has little left to do. Measured in BENCHMARKS.md: a modest gain for
/// fsync-on-ack logs, a small loss for logs left to the OS, so only the former use it.
#[allow(unsafe_code)] // system calls; each block says why it is sound
fn start_writeback(file: &File, position: u64, length: usize) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range only reads its integer arguments; the fd is open for the call.
    let result = unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            position as libc::off64_t,
            length as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
    if result != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "sync_file_range failed");
    }
}
