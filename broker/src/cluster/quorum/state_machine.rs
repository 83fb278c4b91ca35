//! The quorum's state machine: committed metadata batches applied, in order, to a
//! [`MetadataImage`], which is published to the node's broker through a watch channel.
//!
//! Durability comes from the log plus snapshots: `apply` keeps the image in memory; a snapshot
//! (`snapshot.json`: its meta and the whole state) is written before openraft purges the
//! entries it covers. At start the state is the snapshot's, and openraft re-applies the
//! committed entries after it (the log store keeps the committed id).

use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    Entry, EntryPayload, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError,
    StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::log_store::{off_runtime, read_json};
use super::{AppliedBatch, MetadataTypes, NodeId};
use crate::cluster::image::MetadataImage;
use crate::durable_file;

type Result<T> = std::result::Result<T, StorageError<NodeId>>;
type Membership = StoredMembership<NodeId, openraft::BasicNode>;

const SNAPSHOT_FILE: &str = "snapshot.json";

/// The image as of a log index: what a broker acts on.
#[derive(Debug, Clone, Default)]
pub struct AppliedImage {
    /// The last applied entry's index (0 before anything was applied).
    pub applied_index: u64,
    pub image: Arc<MetadataImage>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct MachineState {
    last_applied: Option<LogId<NodeId>>,
    last_membership: Membership,
    image: MetadataImage,
}

#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    meta: SnapshotMeta<NodeId, openraft::BasicNode>,
    state: MachineState,
}

pub struct MetadataStateMachine {
    dir: PathBuf,
    state: MachineState,
    published: watch::Sender<AppliedImage>,
    snapshots_built: u64,
}

impl MetadataStateMachine {
    /// Opens the state at the last snapshot under `dir` (empty without one).
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let state = match read_snapshot_file(dir)? {
            Some(file) => file.state,
            None => MachineState::default(),
        };
        let (published, _) = watch::channel(published_of(&state));
        Ok(MetadataStateMachine {
            dir: dir.to_path_buf(),
            state,
            published,
            snapshots_built: 0,
        })
    }

    /// Changes whenever entries are applied or a snapshot is installed.
    pub fn subscribe(&self) -> watch::Receiver<AppliedImage> {
        self.published.subscribe()
    }

    fn publish(&self) {
        self.published.send_replace(published_of(&self.state));
    }
}

fn published_of(state: &MachineState) -> AppliedImage {
    AppliedImage {
        applied_index: state.last_applied.map_or(0, |id| id.index),
        image: Arc::new(state.image.clone()),
    }
}

fn read_snapshot_file(dir: &Path) -> io::Result<Option<SnapshotFile>> {
    read_json(&dir.join(SNAPSHOT_FILE))
}

async fn write_snapshot_file(dir: &Path, file: &SnapshotFile) -> io::Result<()> {
    let bytes = serde_json::to_vec(file).map_err(io::Error::other)?;
    let path = dir.join(SNAPSHOT_FILE);
    off_runtime(move || durable_file::replace(&path, &bytes)).await
}

fn snapshot_of(file: SnapshotFile) -> io::Result<Snapshot<MetadataTypes>> {
    let data = serde_json::to_vec(&file.state).map_err(io::Error::other)?;
    Ok(Snapshot {
        meta: file.meta,
        snapshot: Box::new(Cursor::new(data)),
    })
}

/// Builds snapshots from a copy of the state taken when asked.
pub struct MetadataSnapshotBuilder {
    dir: PathBuf,
    state: MachineState,
    snapshot_id: String,
}

impl RaftSnapshotBuilder<MetadataTypes> for MetadataSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<MetadataTypes>> {
        let meta = SnapshotMeta {
            last_log_id: self.state.last_applied,
            last_membership: self.state.last_membership.clone(),
            snapshot_id: self.snapshot_id.clone(),
        };
        let file = SnapshotFile {
            meta,
            state: self.state.clone(),
        };
        let signature = Some(file.meta.signature());
        write_snapshot_file(&self.dir, &file)
            .await
            .map_err(|e| StorageIOError::write_snapshot(signature.clone(), &e))?;
        snapshot_of(file).map_err(|e| StorageIOError::read_snapshot(signature, &e).into())
    }
}

impl RaftStateMachine<MetadataTypes> for MetadataStateMachine {
    type SnapshotBuilder = MetadataSnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId<NodeId>>, Membership)> {
        Ok((self.state.last_applied, self.state.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<AppliedBatch>>
    where
        I: IntoIterator<Item = Entry<MetadataTypes>> + Send,
        I::IntoIter: Send,
    {
        let mut responses = Vec::new();
        for entry in entries {
            self.state.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(batch) => {
                    for record in &batch.records {
                        self.state.image.apply(record);
                    }
                }
                EntryPayload::Membership(membership) => {
                    self.state.last_membership = Membership::new(Some(entry.log_id), membership);
                }
            }
            responses.push(AppliedBatch {
                index: entry.log_id.index,
            });
        }
        self.publish();
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.snapshots_built += 1;
        let last = self.state.last_applied;
        MetadataSnapshotBuilder {
            dir: self.dir.clone(),
            state: self.state.clone(),
            snapshot_id: format!(
                "{}-{}-{}",
                last.map_or(0, |id| id.leader_id.term),
                last.map_or(0, |id| id.index),
                self.snapshots_built
            ),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, openraft::BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<()> {
        let signature = Some(meta.signature());
        let state: MachineState = serde_json::from_slice(snapshot.get_ref())
            .map_err(|e| StorageIOError::read_snapshot(signature.clone(), &e))?;
        let file = SnapshotFile {
            meta: meta.clone(),
            state,
        };
        write_snapshot_file(&self.dir, &file)
            .await
            .map_err(|e| StorageIOError::write_snapshot(signature, &e))?;
        self.state = file.state;
        self.publish();
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<MetadataTypes>>> {
        let dir = self.dir.clone();
        let file = off_runtime(move || read_snapshot_file(&dir))
            .await
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        match file {
            Some(file) => snapshot_of(file)
                .map(Some)
                .map_err(|e| StorageIOError::read_snapshot(None, &e).into()),
            None => Ok(None),
        }
    }
}
