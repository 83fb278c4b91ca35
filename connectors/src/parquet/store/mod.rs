//! Where the Parquet sink's files live: a local directory ([`LocalStore`], durable by fsync and
//! atomic by rename) or an S3-compatible object store ([`ObjectStoreTarget`], through the
//! `object_store` crate: objects appear whole, a manifest is created only if absent).
//!
//! Both keep the same layout under their root: staged files in `_weir/staging/`, manifests in
//! `_weir/manifests/`, published files in Hive-style directories.

mod local;
mod object;

use std::collections::BTreeMap;

use async_trait::async_trait;
use bytes::Bytes;
use parquet::arrow::async_writer::AsyncFileWriter;

pub use local::published_files;
pub(super) use local::LocalStore;
pub(super) use object::{problems as object_store_problems, ObjectStoreTarget};

use super::manifest::{Manifest, PublishedFile};
use crate::error::ConnectorError;

/// The storage operations of the Parquet sink's commit protocol. Paths are relative to the
/// store's root, `/`-separated.
#[async_trait]
pub(super) trait FileStore: Send + Sync {
    /// Creates what must exist before files are written (local directories).
    async fn prepare(&self) -> Result<(), ConnectorError>;
    /// A writer for a new staged file.
    async fn create_staged(
        &self,
        staging: &str,
    ) -> Result<Box<dyn AsyncFileWriter>, ConnectorError>;
    /// Makes a completely written staged file durable; returns its size in bytes.
    async fn seal_staged(&self, staging: &str) -> Result<u64, ConnectorError>;
    /// Moves each file still staged to its published path and makes that durable. Idempotent:
    /// files already published are left alone (recovery repeats an interrupted publication).
    async fn publish(&self, files: &[PublishedFile]) -> Result<(), ConnectorError>;
    /// Deletes every staged file (none is in a manifest when this is called).
    async fn discard_staged(&self) -> Result<(), ConnectorError>;
    /// The sequences of the committed manifests, oldest first.
    async fn manifest_sequences(&self) -> Result<Vec<u64>, ConnectorError>;
    async fn read_manifest(&self, sequence: u64) -> Result<Manifest, ConnectorError>;
    /// Writes a manifest atomically and durably: the commit point. Refuses to replace a
    /// different manifest of the same sequence where the store can tell (a second writer).
    async fn write_manifest(&self, manifest: &Manifest) -> Result<(), ConnectorError>;
    async fn delete_manifest(&self, sequence: u64) -> Result<(), ConnectorError>;
    /// The newest manifest, if any commit happened.
    async fn latest_manifest(&self) -> Result<Option<Manifest>, ConnectorError> {
        match self.manifest_sequences().await?.pop() {
            Some(sequence) => Ok(Some(self.read_manifest(sequence).await?)),
            None => Ok(None),
        }
    }
    /// Deletes all but the newest `keep` manifests.
    async fn prune_manifests(&self, keep: usize) -> Result<(), ConnectorError> {
        let sequences = self.manifest_sequences().await?;
        let excess = sequences.len().saturating_sub(keep);
        for sequence in &sequences[..excess] {
            self.delete_manifest(*sequence).await?;
        }
        Ok(())
    }
    /// The published Parquet files (outside `_weir/`), sorted.
    async fn list_published(&self) -> Result<Vec<String>, ConnectorError>;
    /// A whole file.
    async fn read(&self, relative: &str) -> Result<Bytes, ConnectorError>;
    /// `relative` as a user would find it (a path or a URL), for messages.
    fn locate(&self, relative: &str) -> String;
}

/// Whether `path` names an object store rather than a local directory.
pub(super) fn is_object_store(path: &str) -> bool {
    object::scheme_of(path).is_some()
}

/// The store `path` names: `s3://bucket/prefix` (or `s3a://`) is an object store, anything
/// else a local directory.
pub(super) fn open_location(
    path: &str,
    storage_options: &BTreeMap<String, String>,
) -> Result<Box<dyn FileStore>, ConnectorError> {
    match is_object_store(path) {
        true => Ok(Box::new(ObjectStoreTarget::new(path, storage_options)?)),
        false => Ok(Box::new(LocalStore::new(path))),
    }
}

/// Checks that an object-store location answers with the given settings (a local directory
/// needs no check: it is created on open).
pub(super) async fn reach(
    path: &str,
    storage_options: &BTreeMap<String, String>,
) -> Result<(), ConnectorError> {
    match is_object_store(path) {
        true => open_location(path, storage_options)?.prepare().await,
        false => Ok(()),
    }
}
