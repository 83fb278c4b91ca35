//! Segments leaving the log (retention, DeleteRecords, truncation, a reset, compaction's
//! replacement) keep their files for `file.delete.delay.ms` (the broker's
//! `log.segment.delete.delay.ms`), renamed with Kafka's `.deleted` suffix, and are deleted once it
//! has passed; a delay of 0 deletes them at once. What a stop leaves is deleted at the next open,
//! as Kafka's log loader does. Readers holding a segment's file (a fetch in flight) read on either
//! way: the delay is for whatever looks at the directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::log::error::LogError;
use crate::log::segment::{segment_file_name, Segment};

/// Kafka's suffix for a segment file waiting to be deleted.
pub const DELETED_SUFFIX: &str = ".deleted";

/// The extensions of a segment's files.
const SEGMENT_EXTENSIONS: [&str; 3] = ["log", "index", "timeindex"];

/// Files renamed and waiting for their deletion.
#[derive(Debug, Default)]
pub(crate) struct RetiredFiles {
    /// Each retired segment's files with the time they are due (set at the first
    /// [`RetiredFiles::delete_due`] after the retirement, so that retiring needs no clock).
    waiting: Vec<Retired>,
}

#[derive(Debug)]
struct Retired {
    files: Vec<PathBuf>,
    delay_ms: u64,
    due_ms: Option<i64>,
}

impl RetiredFiles {
    /// Retires `segment`: its files are deleted now when `delay_ms` is 0, else renamed with
    /// [`DELETED_SUFFIX`] and deleted by [`RetiredFiles::delete_due`] once `delay_ms` has passed.
    pub(crate) fn retire(&mut self, segment: &Segment, delay_ms: u64) -> Result<(), LogError> {
        if delay_ms == 0 {
            return segment.delete_files();
        }
        let dir = segment.path().parent().unwrap_or(Path::new("."));
        let mut files = Vec::with_capacity(SEGMENT_EXTENSIONS.len());
        for extension in SEGMENT_EXTENSIONS {
            let path = dir.join(segment_file_name(segment.base_offset, extension));
            let retired = deleted_name(&path);
            match fs::rename(&path, &retired) {
                Ok(()) => files.push(retired),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&path, e)),
            }
        }
        self.waiting.push(Retired {
            files,
            delay_ms,
            due_ms: None,
        });
        Ok(())
    }

    /// Deletes the retired files whose delay has passed at `now_ms`; answers how many segments'
    /// files went.
    pub(crate) fn delete_due(&mut self, now_ms: i64) -> Result<usize, LogError> {
        for retired in &mut self.waiting {
            let delay_ms = i64::try_from(retired.delay_ms).unwrap_or(i64::MAX);
            retired
                .due_ms
                .get_or_insert_with(|| now_ms.saturating_add(delay_ms));
        }
        let (due, waiting): (Vec<Retired>, Vec<Retired>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|retired| retired.due_ms.is_some_and(|due_ms| due_ms <= now_ms));
        self.waiting = waiting;
        let mut deleted = 0;
        let mut first_error = None;
        for retired in due {
            // After a failure, what is left is tried again at the next call.
            if first_error.is_some() {
                self.waiting.push(retired);
                continue;
            }
            match delete_files(&retired.files) {
                Ok(()) => deleted += 1,
                Err(error) => {
                    first_error = Some(error);
                    self.waiting.push(retired);
                }
            }
        }
        first_error.map_or(Ok(deleted), Err)
    }

    /// How many segments' files are waiting.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

fn deleted_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(DELETED_SUFFIX);
    PathBuf::from(name)
}

fn delete_files(files: &[PathBuf]) -> Result<(), LogError> {
    for path in files {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(path, e)),
        }
    }
    Ok(())
}

/// Whether `name` is a file an earlier run retired and did not get to delete.
pub(crate) fn is_leftover(name: &str) -> bool {
    name.ends_with(DELETED_SUFFIX)
}
