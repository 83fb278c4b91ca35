//! A local directory: files written with tokio, fsynced when sealed, published by rename;
//! manifests written to a temporary file, fsynced and renamed into place, then the directory
//! fsynced.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use parquet::arrow::async_writer::AsyncFileWriter;
use tokio::fs;
use tokio::io::AsyncWriteExt;

use super::FileStore;
use crate::error::ConnectorError;
use crate::parquet::manifest::{self, Manifest, PublishedFile, MANIFESTS_DIR, STAGING_DIR};

pub(crate) struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        LocalStore { root: root.into() }
    }

    fn manifest_path(&self, sequence: u64) -> PathBuf {
        self.root
            .join(MANIFESTS_DIR)
            .join(manifest::file_name(sequence))
    }
}

async fn sync_dir(dir: &Path) -> Result<(), ConnectorError> {
    let handle = fs::File::open(dir)
        .await
        .map_err(ConnectorError::io("opening", dir))?;
    handle
        .sync_all()
        .await
        .map_err(ConnectorError::io("syncing", dir))
}

#[async_trait]
impl FileStore for LocalStore {
    async fn prepare(&self) -> Result<(), ConnectorError> {
        for dir in [STAGING_DIR, MANIFESTS_DIR] {
            let dir = self.root.join(dir);
            fs::create_dir_all(&dir)
                .await
                .map_err(ConnectorError::io("creating", &dir))?;
        }
        Ok(())
    }

    async fn create_staged(
        &self,
        staging: &str,
    ) -> Result<Box<dyn AsyncFileWriter>, ConnectorError> {
        let path = self.root.join(staging);
        let file = fs::File::create(&path)
            .await
            .map_err(ConnectorError::io("creating", &path))?;
        Ok(Box::new(file))
    }

    async fn seal_staged(&self, staging: &str) -> Result<u64, ConnectorError> {
        // fsync through a new descriptor: it flushes the file's data, whoever wrote it.
        let path = self.root.join(staging);
        let file = fs::File::open(&path)
            .await
            .map_err(ConnectorError::io("opening", &path))?;
        file.sync_all()
            .await
            .map_err(ConnectorError::io("syncing", &path))?;
        let metadata = file
            .metadata()
            .await
            .map_err(ConnectorError::io("reading", &path))?;
        Ok(metadata.len())
    }

    async fn publish(&self, files: &[PublishedFile]) -> Result<(), ConnectorError> {
        let mut directories = BTreeSet::new();
        for file in files {
            let staged = self.root.join(&file.staging);
            let published = self.root.join(&file.path);
            if !fs::try_exists(&staged).await.unwrap_or(false) {
                continue;
            }
            let directory = published.parent().unwrap_or(&self.root).to_path_buf();
            fs::create_dir_all(&directory)
                .await
                .map_err(ConnectorError::io("creating", &directory))?;
            fs::rename(&staged, &published)
                .await
                .map_err(ConnectorError::io("publishing", &staged))?;
            directories.insert(directory);
        }
        directories.insert(self.root.join(STAGING_DIR));
        for directory in directories {
            sync_dir(&directory).await?;
        }
        Ok(())
    }

    async fn discard_staged(&self) -> Result<(), ConnectorError> {
        let staging = self.root.join(STAGING_DIR);
        let mut entries = fs::read_dir(&staging)
            .await
            .map_err(ConnectorError::io("listing", &staging))?;
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(ConnectorError::io("listing", &staging))?
        {
            let path = entry.path();
            tracing::info!(path = %path.display(), "deleting a file written after the last commit");
            fs::remove_file(&path)
                .await
                .map_err(ConnectorError::io("deleting", &path))?;
        }
        Ok(())
    }

    async fn manifest_sequences(&self) -> Result<Vec<u64>, ConnectorError> {
        let dir = self.root.join(MANIFESTS_DIR);
        let mut entries = fs::read_dir(&dir)
            .await
            .map_err(ConnectorError::io("listing", &dir))?;
        let mut sequences = Vec::new();
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(ConnectorError::io("listing", &dir))?
        {
            if let Some(sequence) = entry.file_name().to_str().and_then(manifest::sequence_of) {
                sequences.push(sequence);
            }
        }
        sequences.sort_unstable();
        Ok(sequences)
    }

    async fn read_manifest(&self, sequence: u64) -> Result<Manifest, ConnectorError> {
        let path = self.manifest_path(sequence);
        let bytes = fs::read(&path)
            .await
            .map_err(ConnectorError::io("reading", &path))?;
        manifest::decode(&bytes, &path.display().to_string())
    }

    async fn write_manifest(&self, manifest: &Manifest) -> Result<(), ConnectorError> {
        let path = self.manifest_path(manifest.sequence);
        let temporary = path.with_extension("json.tmp");
        let bytes = manifest::encode(manifest)?;
        let mut file = fs::File::create(&temporary)
            .await
            .map_err(ConnectorError::io("creating", &temporary))?;
        file.write_all(&bytes)
            .await
            .map_err(ConnectorError::io("writing", &temporary))?;
        file.sync_all()
            .await
            .map_err(ConnectorError::io("syncing", &temporary))?;
        fs::rename(&temporary, &path)
            .await
            .map_err(ConnectorError::io("renaming", &temporary))?;
        sync_dir(&self.root.join(MANIFESTS_DIR)).await
    }

    async fn delete_manifest(&self, sequence: u64) -> Result<(), ConnectorError> {
        let path = self.manifest_path(sequence);
        fs::remove_file(&path)
            .await
            .map_err(ConnectorError::io("deleting", &path))
    }

    async fn list_published(&self) -> Result<Vec<String>, ConnectorError> {
        let root = self.root.clone();
        let files = tokio::task::spawn_blocking(move || published_files(&root))
            .await
            .map_err(ConnectorError::internal("listing published files"))?;
        Ok(files
            .iter()
            .filter_map(|path| Some(path.strip_prefix(&self.root).ok()?.display().to_string()))
            .collect())
    }

    async fn read(&self, relative: &str) -> Result<Bytes, ConnectorError> {
        let path = self.root.join(relative);
        let bytes = fs::read(&path)
            .await
            .map_err(ConnectorError::io("reading", &path))?;
        Ok(Bytes::from(bytes))
    }

    fn locate(&self, relative: &str) -> String {
        self.root.join(relative).display().to_string()
    }
}

/// The published Parquet files under `root` (for tests and summaries).
pub fn published_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "_weir" {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
