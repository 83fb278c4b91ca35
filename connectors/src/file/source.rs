//! The file source: which files to read (globs matched again every scan interval), where each
//! starts, rotation, and the positions handed to the pipeline.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::config::{FileSourceConfig, StartAt};
use super::position::{fingerprint, FileKey, StoredPosition};
use super::tracked::TrackedFile;
use crate::error::ConnectorError;
use crate::source::{PositionUpdate, Source, SourceRecord};

/// How long an idle poll sleeps between looks at the files.
const IDLE_SLEEP: Duration = Duration::from_millis(20);

pub struct FileSource {
    config: FileSourceConfig,
    exclude: Vec<glob::Pattern>,
    files: Vec<TrackedFile>,
    /// Committed positions not yet matched to an open file.
    restored: HashMap<FileKey, StoredPosition>,
    /// Files closed since positions were last taken (their positions are forgotten).
    closed: Vec<FileKey>,
    last_scan: Option<Instant>,
    /// Round-robin start, so one busy file does not starve the others.
    next_file: usize,
    /// The last poll found no new line.
    idle: bool,
}

impl FileSource {
    pub fn new(config: FileSourceConfig) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        let exclude = config
            .exclude
            .iter()
            .filter_map(|p| glob::Pattern::new(p).ok())
            .collect();
        Ok(FileSource {
            config,
            exclude,
            files: Vec::new(),
            restored: HashMap::new(),
            closed: Vec::new(),
            last_scan: None,
            next_file: 0,
            idle: false,
        })
    }

    fn is_excluded(&self, path: &Path) -> bool {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        self.exclude.iter().any(|pattern| pattern.matches(name))
    }

    /// The regular files the globs match now, one path per file.
    fn matched(&self) -> Vec<(PathBuf, FileKey, File)> {
        let mut seen = HashSet::new();
        let mut matched = Vec::new();
        for pattern in &self.config.paths {
            let Ok(paths) = glob::glob(pattern) else {
                continue;
            };
            for path in paths.flatten() {
                if self.is_excluded(&path) {
                    continue;
                }
                let Ok(file) = File::open(&path) else {
                    continue;
                };
                let Ok(metadata) = file.metadata() else {
                    continue;
                };
                let key = FileKey::of(&metadata);
                if metadata.is_file() && seen.insert(key) {
                    matched.push((path, key, file));
                }
            }
        }
        matched
    }

    fn scan(&mut self) -> Result<(), ConnectorError> {
        let first_scan = self.last_scan.is_none();
        self.last_scan = Some(Instant::now());
        let matched = self.matched();
        let matched_keys: HashSet<FileKey> = matched.iter().map(|(_, key, _)| *key).collect();
        for tracked in &mut self.files {
            if !matched_keys.contains(&tracked.key) && tracked.detached_since.is_none() {
                tracing::info!(path = %tracked.path.display(), "file rotated away or deleted; reading it to its end");
                tracked.detached_since = Some(Instant::now());
            }
        }
        for (path, key, file) in matched {
            if let Some(tracked) = self.files.iter_mut().find(|t| t.key == key) {
                tracked.path = path;
                tracked.detached_since = None;
                continue;
            }
            let (start, in_long_line) = self.start_of(&path, key, &file, first_scan)?;
            self.track(path, key, file, start, in_long_line);
        }
        if first_scan {
            self.follow_renamed_while_down()?;
        }
        Ok(())
    }

    /// Where a newly seen file starts: its committed position if it is the same file, else
    /// its beginning (or its end, for files already there at the first start with `start_at:
    /// end`).
    fn start_of(
        &mut self,
        path: &Path,
        key: FileKey,
        file: &File,
        first_scan: bool,
    ) -> Result<(u64, bool), ConnectorError> {
        let length = file
            .metadata()
            .map_err(ConnectorError::io("reading metadata of", path))?
            .len();
        if let Some(stored) = self.restored.remove(&key) {
            if is_same_file(file, &stored, length).map_err(ConnectorError::io("reading", path))? {
                return Ok((stored.position, stored.in_long_line));
            }
            tracing::info!(path = %path.display(), "file differs from the one stored under its inode (replaced or truncated); reading it from the start");
            return Ok((0, false));
        }
        if first_scan && self.config.start_at == StartAt::End {
            return Ok((length, false));
        }
        Ok((0, false))
    }

    fn track(&mut self, path: PathBuf, key: FileKey, file: File, start: u64, in_long_line: bool) {
        if self.files.len() >= self.config.max_open_files {
            tracing::warn!(path = %path.display(), limit = self.config.max_open_files, "too many open files; this one waits for a later scan");
            return;
        }
        tracing::info!(path = %path.display(), start, "reading file");
        self.files
            .push(TrackedFile::open(path, key, file, start, in_long_line));
    }

    /// A file renamed out of the globs while the pipeline was down may still hold unread
    /// lines: look for its inode beside its stored path and read it to its end.
    fn follow_renamed_while_down(&mut self) -> Result<(), ConnectorError> {
        let restored: Vec<(FileKey, StoredPosition)> = self.restored.drain().collect();
        for (key, stored) in restored {
            let directory = Path::new(&stored.path)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let Some((path, file)) = find_by_key(directory, key) else {
                continue;
            };
            let length = file
                .metadata()
                .map_err(ConnectorError::io("reading metadata of", &path))?
                .len();
            if is_same_file(&file, &stored, length).map_err(ConnectorError::io("reading", &path))?
                && length > stored.position
            {
                self.track(path, key, file, stored.position, stored.in_long_line);
                if let Some(tracked) = self.files.last_mut() {
                    tracked.detached_since = Some(Instant::now());
                }
            }
        }
        Ok(())
    }

    /// Reads from the files in turn; closes rotated-away files that stopped growing.
    fn read(
        &mut self,
        max_records: usize,
        out: &mut Vec<SourceRecord>,
    ) -> Result<(), ConnectorError> {
        let count = self.files.len();
        for step in 0..count {
            if out.len() >= max_records {
                break;
            }
            let index = (self.next_file + step) % count;
            let tracked = &mut self.files[index];
            tracked
                .read_lines(max_records, self.config.max_line_bytes, out)
                .map_err(ConnectorError::io("reading", tracked.path.clone()))?;
        }
        self.next_file = (self.next_file + 1) % count.max(1);
        if out.len() < max_records {
            self.close_finished(out)?;
        }
        Ok(())
    }

    fn close_finished(&mut self, out: &mut Vec<SourceRecord>) -> Result<(), ConnectorError> {
        let rotate_wait = Duration::from_millis(self.config.rotate_wait_ms);
        let mut index = 0;
        while index < self.files.len() {
            let tracked = &mut self.files[index];
            let done = tracked.detached_since.is_some()
                && tracked.last_growth.elapsed() >= rotate_wait
                && tracked.at_end().map_err(ConnectorError::io(
                    "reading metadata of",
                    tracked.path.clone(),
                ))?;
            if done {
                tracked.finish(self.config.max_line_bytes, out);
                tracing::info!(path = %tracked.path.display(), "finished a rotated file");
                let tracked = self.files.remove(index);
                self.closed.push(tracked.key);
            } else {
                index += 1;
            }
        }
        Ok(())
    }
}

/// Whether `file` is the one `stored` describes: its head has the stored fingerprint and it
/// is not shorter than the stored position (else it was truncated).
fn is_same_file(file: &File, stored: &StoredPosition, length: u64) -> std::io::Result<bool> {
    if length < stored.position {
        return Ok(false);
    }
    Ok(stored.fingerprint_bytes == 0
        || fingerprint(file, stored.fingerprint_bytes)? == Some(stored.fingerprint))
}

fn find_by_key(directory: &Path, key: FileKey) -> Option<(PathBuf, File)> {
    for entry in std::fs::read_dir(directory).ok()?.flatten() {
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if metadata.is_file() && FileKey::of(&metadata) == key {
            let file = File::open(entry.path()).ok()?;
            return Some((entry.path(), file));
        }
    }
    None
}

impl Source for FileSource {
    fn restore(&mut self, positions: &HashMap<String, Vec<u8>>) -> Result<(), ConnectorError> {
        for (key, value) in positions {
            let Some(file_key) = FileKey::from_position_key(key) else {
                continue;
            };
            let stored: StoredPosition =
                serde_json::from_slice(value).map_err(|e| ConnectorError::Position {
                    key: key.clone(),
                    reason: e.to_string(),
                })?;
            self.restored.insert(file_key, stored);
        }
        Ok(())
    }

    fn poll(
        &mut self,
        max_records: usize,
        wait: Duration,
        out: &mut Vec<SourceRecord>,
    ) -> Result<(), ConnectorError> {
        let started = Instant::now();
        let initial = out.len();
        let target = initial + max_records;
        loop {
            let scan_due = self.last_scan.is_none_or(|at| {
                at.elapsed() >= Duration::from_millis(self.config.scan_interval_ms)
            });
            if scan_due {
                self.scan()?;
            }
            self.read(target, out)?;
            let produced = out.len() > initial || !self.closed.is_empty();
            if produced || started.elapsed() >= wait {
                self.idle = !produced;
                return Ok(());
            }
            std::thread::sleep(IDLE_SLEEP.min(wait.saturating_sub(started.elapsed())));
        }
    }

    fn caught_up(&self) -> bool {
        self.idle
    }

    fn take_positions(&mut self) -> Result<Vec<PositionUpdate>, ConnectorError> {
        let mut updates = Vec::new();
        for tracked in self.files.iter_mut().filter(|t| t.dirty) {
            let stored = tracked
                .stored_position()
                .map_err(ConnectorError::io("fingerprinting", tracked.path.clone()))?;
            let value = serde_json::to_vec(&stored).map_err(|e| ConnectorError::Position {
                key: tracked.key.to_position_key(),
                reason: e.to_string(),
            })?;
            tracked.dirty = false;
            updates.push(PositionUpdate {
                key: tracked.key.to_position_key(),
                value: Some(value),
            });
        }
        for key in self.closed.drain(..) {
            updates.push(PositionUpdate {
                key: key.to_position_key(),
                value: None,
            });
        }
        Ok(updates)
    }
}
