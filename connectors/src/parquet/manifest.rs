//! Manifests: the commit record of the Parquet sink. The newest one is the truth about which
//! files are published and which input offsets they cover. They live under
//! `_weir/manifests/<sequence>.json` in the sink's directory or object-store prefix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ConnectorError;

/// Where staged (not yet published) files are written, relative to the sink's root.
pub(super) const STAGING_DIR: &str = "_weir/staging";
/// Where manifests are written, relative to the sink's root.
pub(super) const MANIFESTS_DIR: &str = "_weir/manifests";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Increases by one with every commit.
    pub sequence: u64,
    /// The next offset to read of every input partition: everything before is in the files
    /// of this manifest or of earlier ones.
    pub offsets: BTreeMap<i32, i64>,
    /// The files this commit published.
    pub files: Vec<PublishedFile>,
    pub committed_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedFile {
    /// Where the file was written, relative to the sink's root.
    pub staging: String,
    /// Where it is published, relative to the sink's root.
    pub path: String,
    pub rows: u64,
    pub bytes: u64,
}

/// The file name of a manifest.
pub(super) fn file_name(sequence: u64) -> String {
    format!("{sequence:010}.json")
}

/// The sequence a manifest's file name stands for; `None` for anything else (a half-written
/// `.json.tmp`, say).
pub(super) fn sequence_of(file_name: &str) -> Option<u64> {
    file_name.strip_suffix(".json")?.parse().ok()
}

pub(super) fn encode(manifest: &Manifest) -> Result<Vec<u8>, ConnectorError> {
    serde_json::to_vec_pretty(manifest).map_err(ConnectorError::internal("encoding the manifest"))
}

pub(super) fn decode(bytes: &[u8], location: &str) -> Result<Manifest, ConnectorError> {
    serde_json::from_slice(bytes).map_err(|e| ConnectorError::Corrupt {
        location: format!("manifest {location}"),
        reason: format!(
            "{e}; it was written atomically, so the sink's directory was changed by something \
             else"
        ),
    })
}
