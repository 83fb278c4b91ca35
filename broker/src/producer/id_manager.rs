//! Producer ids, unique across restarts: ids are handed out from blocks whose end is persisted
//! (fsynced) before any id of the block is used, so after a crash the next block starts past
//! every id that may have been given out.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::LogError;
use crate::log::index::write_file_synced;

/// Ids reserved per write of the block file (Kafka's controller hands out blocks of 1000 too).
const BLOCK_SIZE: i64 = 1000;
const FILE_NAME: &str = "producer-id-block";

pub struct ProducerIdManager {
    path: PathBuf,
    /// (next id to hand out, end of the reserved block, exclusive)
    next: Mutex<(i64, i64)>,
}

impl ProducerIdManager {
    /// Opens the manager whose block file lives in `meta_dir`.
    pub fn open(meta_dir: &Path) -> Result<Self, LogError> {
        let path = meta_dir.join(FILE_NAME);
        let reserved_end = match std::fs::read_to_string(&path) {
            Ok(text) => text.trim().parse::<i64>().map_err(|_| {
                LogError::io(
                    &path,
                    std::io::Error::other(format!("not a producer id: {text:?}")),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(LogError::io(&path, e)),
        };
        // Ids below the persisted end may have been handed out before a crash: start past it.
        Ok(ProducerIdManager {
            path,
            next: Mutex::new((reserved_end, reserved_end)),
        })
    }

    /// A producer id never handed out before.
    pub fn next_id(&self) -> Result<i64, LogError> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        if next.0 >= next.1 {
            let end = next.0 + BLOCK_SIZE;
            write_file_synced(&self.path, end.to_string().as_bytes())
                .map_err(|e| LogError::io(&self.path, e))?;
            next.1 = end;
        }
        let id = next.0;
        next.0 += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_restarts_and_crashes() {
        let dir = tempfile::tempdir().unwrap();
        let manager = ProducerIdManager::open(dir.path()).unwrap();
        let first: Vec<i64> = (0..3).map(|_| manager.next_id().unwrap()).collect();
        assert_eq!(first, vec![0, 1, 2]);
        drop(manager); // a crash: the rest of the block is never used
        let manager = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(manager.next_id().unwrap(), 1000);
        for _ in 0..1500 {
            manager.next_id().unwrap();
        }
        let manager = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(manager.next_id().unwrap(), 3000);
    }
}
