//! Small files replaced whole, durably: ACLs, SCRAM credentials, dynamic broker configs and
//! producer-id blocks on a single node, topic metadata, a partition's checkpoints and indexes,
//! the metadata quorum's state. A crash — a power loss included — leaves the old content or the
//! new one, never a mix, an empty file or an old file brought back:
//!
//! 1. write the new content to `<name>.tmp` and fsync it (else a power loss after the rename can
//!    leave the name pointing at an empty file);
//! 2. rename it over the file (atomic: readers see the old file or the new one);
//! 3. fsync the directory: the rename is itself only durable once the directory is — without it
//!    a power loss can bring the old file back (a deleted ACL or user returns, a producer-id block
//!    is handed out twice). Kafka's `Utils.atomicMoveWithFallback` flushes the parent directory
//!    the same way.
//!
//! The steps go through [`FileSystem`], so a test can cut the power between any two of them
//! (this module's tests: a simulated disk that keeps only what was synced).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The operations a durable replacement is made of.
pub trait FileSystem {
    /// Creates (or truncates) `path`, writes `bytes` and fsyncs the file's data.
    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Renames `from` over `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Fsyncs a directory, making the entries created, renamed or removed in it durable.
    fn sync_directory(&self, directory: &Path) -> io::Result<()>;
}

/// The machine's own file system.
pub struct LocalFileSystem;

impl FileSystem for LocalFileSystem {
    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = fs::File::create(path)?;
        file.write_all(bytes)?;
        file.sync_data()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_directory(&self, directory: &Path) -> io::Result<()> {
        fs::File::open(directory)?.sync_all()
    }
}

/// Replaces `path` by `bytes` durably on the local file system (see the module's steps).
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_on(&LocalFileSystem, path, bytes)
}

/// Replaces `path` by `bytes` durably on `file_system`.
pub fn replace_on(file_system: &dyn FileSystem, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let temporary = path.with_extension("tmp");
    file_system.write_synced(&temporary, bytes)?;
    file_system.rename(&temporary, path)?;
    file_system.sync_directory(&directory_of(path))
}

/// Creates `directory` and its missing parents durably: each new directory's entry is synced
/// in its parent, top down, so a power loss cannot take away a directory whose files were
/// fsynced (a partition's first segment, say).
pub fn create_directory(directory: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut current = Some(directory);
    while let Some(dir) = current.filter(|dir| !dir.as_os_str().is_empty() && !dir.exists()) {
        missing.push(dir);
        current = dir.parent();
    }
    fs::create_dir_all(directory)?;
    for dir in missing.iter().rev() {
        LocalFileSystem.sync_directory(&directory_of(dir))?;
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare file name).
fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What [`read_small_file`] found.
pub enum SmallFile {
    Missing,
    TooLarge(u64),
    Bytes(Vec<u8>),
}

/// Reads a small metadata file whole, unless it is larger than `max_bytes` (its size is
/// checked before anything is read).
pub fn read_small_file(path: &Path, max_bytes: u64) -> io::Result<SmallFile> {
    let size = match fs::metadata(path) {
        Ok(metadata) => metadata.len(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(SmallFile::Missing),
        Err(error) => return Err(error),
    };
    if size > max_bytes {
        return Ok(SmallFile::TooLarge(size));
    }
    fs::read(path).map(SmallFile::Bytes)
}

/// Why a small JSON metadata file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JsonFileError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("{size} bytes is more than the {max_bytes} {what} can take")]
    TooLarge {
        size: u64,
        max_bytes: u64,
        what: &'static str,
    },
    #[error("{what} do not decode: {reason}")]
    Undecodable { what: &'static str, reason: String },
}

/// Reads a small JSON metadata file holding `what` (`None` when it does not exist), its size
/// checked against `max_bytes` before anything is read.
pub fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    max_bytes: u64,
    what: &'static str,
) -> Result<Option<T>, JsonFileError> {
    match read_small_file(path, max_bytes)? {
        SmallFile::Missing => Ok(None),
        SmallFile::TooLarge(size) => Err(JsonFileError::TooLarge {
            size,
            max_bytes,
            what,
        }),
        SmallFile::Bytes(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| JsonFileError::Undecodable {
                    what,
                    reason: e.to_string(),
                })
        }
    }
}

#[cfg(test)]
mod tests;
