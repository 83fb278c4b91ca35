//! Manifests: the commit record of the Parquet sink. The newest one is the truth about which
//! files are published and which input offsets they cover.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ConnectorError;

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
    /// Where the file was written, relative to the sink's directory.
    pub staging: String,
    /// Where it is published, relative to the sink's directory.
    pub path: String,
    pub rows: u64,
    pub bytes: u64,
}

pub fn weir_dir(root: &Path) -> PathBuf {
    root.join("_weir")
}

pub fn staging_dir(root: &Path) -> PathBuf {
    weir_dir(root).join("staging")
}

pub fn manifests_dir(root: &Path) -> PathBuf {
    weir_dir(root).join("manifests")
}

fn manifest_path(root: &Path, sequence: u64) -> PathBuf {
    manifests_dir(root).join(format!("{sequence:010}.json"))
}

/// The sequences of the committed manifests, oldest first (half-written `.tmp` files are not
/// manifests).
fn sequences(root: &Path) -> Result<Vec<u64>, ConnectorError> {
    let dir = manifests_dir(root);
    let mut sequences = Vec::new();
    for entry in fs::read_dir(&dir).map_err(ConnectorError::io("listing", &dir))? {
        let entry = entry.map_err(ConnectorError::io("listing", &dir))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if let Ok(sequence) = stem.parse() {
            sequences.push(sequence);
        }
    }
    sequences.sort_unstable();
    Ok(sequences)
}

/// The newest manifest, if any commit happened.
pub fn latest(root: &Path) -> Result<Option<Manifest>, ConnectorError> {
    let Some(sequence) = sequences(root)?.pop() else {
        return Ok(None);
    };
    let path = manifest_path(root, sequence);
    let text = fs::read(&path).map_err(ConnectorError::io("reading", &path))?;
    let manifest = serde_json::from_slice(&text).map_err(|e| {
        ConnectorError::Sink(format!(
            "manifest {} is corrupt ({e}); it was written atomically, so the directory was changed by something else",
            path.display()
        ))
    })?;
    Ok(Some(manifest))
}

/// Writes `manifest` atomically and durably: the commit point.
pub fn write(root: &Path, manifest: &Manifest) -> Result<(), ConnectorError> {
    let path = manifest_path(root, manifest.sequence);
    let temporary = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(manifest)
        .map_err(|e| ConnectorError::Sink(format!("cannot encode the manifest: {e}")))?;
    let mut file = File::create(&temporary).map_err(ConnectorError::io("creating", &temporary))?;
    file.write_all(&text)
        .and_then(|_| file.sync_all())
        .map_err(ConnectorError::io("writing", &temporary))?;
    fs::rename(&temporary, &path).map_err(ConnectorError::io("renaming", &temporary))?;
    sync_dir(&manifests_dir(root))
}

/// Deletes all but the newest `keep` manifests.
pub fn prune(root: &Path, keep: usize) -> Result<(), ConnectorError> {
    let sequences = sequences(root)?;
    let excess = sequences.len().saturating_sub(keep);
    for sequence in &sequences[..excess] {
        let path = manifest_path(root, *sequence);
        fs::remove_file(&path).map_err(ConnectorError::io("deleting", &path))?;
    }
    Ok(())
}

pub fn sync_dir(dir: &Path) -> Result<(), ConnectorError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(ConnectorError::io("syncing", dir))
}
