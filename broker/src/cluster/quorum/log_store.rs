//! The controller quorum's Raft log and vote, on local disk.
//!
//! Files under the quorum directory:
//! - `log`: entries as frames `[u32 length][u32 crc32c][JSON entry]`, appended and fsynced
//!   before openraft is told they are durable. A torn or corrupt tail (a crash mid-append) is
//!   cut at open: such entries were never acknowledged as durable.
//! - `vote.json`, `committed.json`, `purged.json`: written whole, fsynced, renamed into place.
//!
//! Every entry since the last purge is also kept in memory (the metadata log is small and
//! snapshots purge it); truncation and purging rewrite the file. Writes run off the async
//! threads and one at a time (openraft's `&mut self` calls serialise them).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    Entry, LogId, LogState, RaftLogId, RaftLogReader, StorageError, StorageIOError, Vote,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{MetadataTypes, NodeId};
use crate::durable_file;

/// A frame longer than this is corruption, not an entry (metadata batches are small).
const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;
const FRAME_HEADER_BYTES: usize = 8;

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

#[derive(Default)]
struct LogMemory {
    entries: BTreeMap<u64, Entry<MetadataTypes>>,
    last_purged: Option<LogId<NodeId>>,
}

/// The durable log and vote of one quorum member.
pub struct QuorumLogStore {
    dir: PathBuf,
    file: Arc<File>,
    memory: Arc<Mutex<LogMemory>>,
}

/// Reads entries for replication while the store appends.
#[derive(Clone)]
pub struct QuorumLogReader {
    memory: Arc<Mutex<LogMemory>>,
}

fn lock(memory: &Mutex<LogMemory>) -> MutexGuard<'_, LogMemory> {
    memory
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl QuorumLogStore {
    /// Opens (or creates) the log under `dir`, cutting a torn tail.
    pub fn open(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let last_purged: Option<LogId<NodeId>> = read_json(&dir.join("purged.json"))?.flatten();
        let path = dir.join("log");
        let (entries, mut valid_bytes) = read_frames(&path)?;
        let mut memory = LogMemory {
            entries: BTreeMap::new(),
            last_purged,
        };
        let mut expected = last_purged.map(|id| id.index + 1);
        for (entry, frame_start) in entries {
            if last_purged.is_some_and(|purged| entry.log_id.index <= purged.index) {
                continue;
            }
            let index = entry.log_id.index;
            if expected.is_some_and(|expected| index != expected) {
                // A hole or a repeat: keep the contiguous prefix; the leader resends the rest.
                tracing::warn!(
                    path = %path.display(),
                    index,
                    expected = expected.unwrap_or_default(),
                    "quorum log: entries stop following each other here; cutting the log"
                );
                valid_bytes = frame_start;
                break;
            }
            expected = Some(index + 1);
            memory.entries.insert(index, entry);
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        if file.metadata()?.len() > valid_bytes {
            tracing::warn!(path = %path.display(), valid_bytes, "quorum log: cutting a torn tail");
            file.set_len(valid_bytes)?;
            file.sync_data()?;
        }
        Ok(QuorumLogStore {
            dir: dir.to_path_buf(),
            file: Arc::new(file),
            memory: Arc::new(Mutex::new(memory)),
        })
    }

    /// Replaces the log file by the entries in memory (after truncating or purging).
    async fn rewrite(&mut self) -> io::Result<()> {
        let frames = {
            let memory = lock(&self.memory);
            let mut frames = Vec::new();
            for entry in memory.entries.values() {
                encode_frame(entry, &mut frames)?;
            }
            frames
        };
        let dir = self.dir.clone();
        let file = off_runtime(move || {
            let path = dir.join("log");
            durable_file::replace(&path, &frames)?;
            OpenOptions::new().append(true).read(true).open(&path)
        })
        .await?;
        self.file = Arc::new(file);
        Ok(())
    }

    async fn save_json<T: Serialize>(&self, name: &str, value: &T) -> io::Result<()> {
        let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
        let path = self.dir.join(name);
        off_runtime(move || durable_file::replace(&path, &bytes)).await
    }
}

fn encode_frame(entry: &Entry<MetadataTypes>, out: &mut Vec<u8>) -> io::Result<()> {
    let payload = serde_json::to_vec(entry).map_err(io::Error::other)?;
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(())
}

/// An entry read back, with the position its frame starts at.
type FramedEntry = (Entry<MetadataTypes>, u64);

/// The entries of a log file up to its first torn or corrupt frame, and that first bad frame's
/// position (logged with the reason).
fn read_frames(path: &Path) -> io::Result<(Vec<FramedEntry>, u64)> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    }
    let mut entries = Vec::new();
    let mut position = 0usize;
    while bytes.len() - position >= FRAME_HEADER_BYTES {
        let header = &bytes[position..position + FRAME_HEADER_BYTES];
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        let start = position + FRAME_HEADER_BYTES;
        let stop = |reason: &str| {
            tracing::warn!(path = %path.display(), position, reason, "quorum log: the log ends here");
        };
        if length > MAX_ENTRY_BYTES || bytes.len() - start < length {
            stop("a frame longer than an entry can be or than the file");
            break;
        }
        let payload = &bytes[start..start + length];
        if crc32c::crc32c(payload) != crc {
            stop("a frame whose CRC does not match");
            break;
        }
        let entry = match serde_json::from_slice(payload) {
            Ok(entry) => entry,
            Err(error) => {
                stop(&format!("an entry that does not decode: {error}"));
                break;
            }
        };
        entries.push((entry, position as u64));
        position = start + length;
    }
    Ok((entries, position as u64))
}

/// A whole JSON file, or `None` when it does not exist.
pub(super) fn read_json<T: DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Runs blocking file work on tokio's blocking pool.
pub(super) async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| io::Error::other(format!("storage task failed: {e}")))?
}

impl RaftLogReader<MetadataTypes> for QuorumLogReader {
    async fn try_get_log_entries<R: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: R,
    ) -> Result<Vec<Entry<MetadataTypes>>> {
        let memory = lock(&self.memory);
        Ok(memory
            .entries
            .range(range)
            .map(|(_, entry)| entry.clone())
            .collect())
    }
}

impl RaftLogReader<MetadataTypes> for QuorumLogStore {
    async fn try_get_log_entries<R: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: R,
    ) -> Result<Vec<Entry<MetadataTypes>>> {
        QuorumLogReader {
            memory: Arc::clone(&self.memory),
        }
        .try_get_log_entries(range)
        .await
    }
}

impl RaftLogStorage<MetadataTypes> for QuorumLogStore {
    type LogReader = QuorumLogReader;

    async fn get_log_state(&mut self) -> Result<LogState<MetadataTypes>> {
        let memory = lock(&self.memory);
        let last_log_id = memory
            .entries
            .values()
            .next_back()
            .map(|entry| *entry.get_log_id())
            .or(memory.last_purged);
        Ok(LogState {
            last_purged_log_id: memory.last_purged,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        QuorumLogReader {
            memory: Arc::clone(&self.memory),
        }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<()> {
        self.save_json("vote.json", vote)
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>> {
        read_json(&self.dir.join("vote.json")).map_err(|e| StorageIOError::read_vote(&e).into())
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<()> {
        self.save_json("committed.json", &committed)
            .await
            .map_err(|e| StorageIOError::write(&e).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>> {
        read_json(&self.dir.join("committed.json"))
            .map(Option::flatten)
            .map_err(|e| StorageIOError::read(&e).into())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<MetadataTypes>) -> Result<()>
    where
        I: IntoIterator<Item = Entry<MetadataTypes>> + Send,
        I::IntoIter: Send,
    {
        let mut frames = Vec::new();
        {
            let mut memory = lock(&self.memory);
            for entry in entries {
                encode_frame(&entry, &mut frames).map_err(|e| StorageIOError::write_logs(&e))?;
                memory.entries.insert(entry.log_id.index, entry);
            }
        }
        let file = Arc::clone(&self.file);
        let written = off_runtime(move || {
            (&*file).write_all(&frames)?;
            file.sync_data()
        })
        .await;
        let failed = written.as_ref().err().map(StorageIOError::write_logs);
        callback.log_io_completed(written);
        match failed {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        lock(&self.memory).entries.split_off(&log_id.index);
        self.rewrite()
            .await
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        {
            let mut memory = lock(&self.memory);
            memory.last_purged = Some(log_id);
            let kept = memory.entries.split_off(&(log_id.index + 1));
            memory.entries = kept;
        }
        let last_purged = Some(log_id);
        self.save_json("purged.json", &last_purged)
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?;
        self.rewrite()
            .await
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
