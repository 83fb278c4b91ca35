//! Producer ids, unique across restarts and, in a cluster, across brokers.
//!
//! Alone, ids are handed out from blocks whose end is persisted (fsynced) before any id of the
//! block is used, so after a crash the next block starts past every id that may have been given
//! out. In a cluster the active controller hands each broker its blocks through the metadata log
//! (`ProducerIdBlock` records, as KRaft's AllocateProducerIds): a task
//! (`cluster::producer_id_blocks`) keeps one spare block ready, so `next_id` never waits; with
//! none at hand it fails retriably.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::durable_file;
use crate::log::error::LogError;

/// Ids reserved per write of the block file (Kafka's controller hands out blocks of 1000 too).
const BLOCK_SIZE: i64 = 1000;
const FILE_NAME: &str = "producer-id-block";

#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    #[error(transparent)]
    Io(#[from] LogError),
    #[error("no producer id block from the controller yet")]
    Unavailable,
}

enum Source {
    /// Blocks reserved in a file of this broker.
    File(PathBuf),
    /// Blocks from the controller: the next one, when it came.
    Controller { spare: Option<(i64, i64)> },
}

pub struct ProducerIdManager {
    /// (next id to hand out, end of the current block, exclusive), and where blocks come from.
    state: Mutex<((i64, i64), Source)>,
    /// Wakes the task that asks the controller for a block (cluster mode).
    block_wanted: Notify,
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
            state: Mutex::new(((reserved_end, reserved_end), Source::File(path))),
            block_wanted: Notify::new(),
        })
    }

    /// A manager whose blocks come from the cluster's controller ([`Self::add_block`]).
    pub fn from_controller() -> Self {
        ProducerIdManager {
            state: Mutex::new(((0, 0), Source::Controller { spare: None })),
            block_wanted: Notify::new(),
        }
    }

    /// A producer id never handed out before.
    pub fn next_id(&self) -> Result<i64, ProducerIdError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (next, source) = &mut *state;
        if next.0 >= next.1 {
            match source {
                Source::File(path) => {
                    let end = next.0 + BLOCK_SIZE;
                    durable_file::replace(path, end.to_string().as_bytes())
                        .map_err(|e| LogError::io(&*path, e))?;
                    next.1 = end;
                }
                Source::Controller { spare } => {
                    let block = spare.take();
                    self.block_wanted.notify_one();
                    *next = block.ok_or(ProducerIdError::Unavailable)?;
                }
            }
        }
        let id = next.0;
        next.0 += 1;
        Ok(id)
    }

    /// Cluster mode: whether a block should be asked for (none spare).
    pub fn wants_block(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        matches!(state.1, Source::Controller { spare: None })
    }

    /// Waits until a block may be wanted.
    pub async fn block_wanted(&self) {
        self.block_wanted.notified().await
    }

    /// Cluster mode: ids `first..end` now belong to this broker.
    pub fn add_block(&self, first: i64, end: i64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (next, source) = &mut *state;
        if let Source::Controller { spare } = source {
            if next.0 >= next.1 {
                *next = (first, end);
            } else {
                *spare = Some((first, end));
            }
        }
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

    #[test]
    fn controller_blocks_are_used_in_turn_and_running_out_is_retriable() {
        let manager = ProducerIdManager::from_controller();
        assert!(manager.wants_block());
        assert!(matches!(
            manager.next_id(),
            Err(ProducerIdError::Unavailable)
        ));
        manager.add_block(5000, 5002);
        assert!(
            manager.wants_block(),
            "the first block is in use: a spare is wanted"
        );
        manager.add_block(9000, 9001);
        assert!(!manager.wants_block());
        let ids: Vec<i64> = (0..3).map(|_| manager.next_id().unwrap()).collect();
        assert_eq!(ids, vec![5000, 5001, 9000]);
        assert!(manager.wants_block());
        assert!(matches!(
            manager.next_id(),
            Err(ProducerIdError::Unavailable)
        ));
    }
}
