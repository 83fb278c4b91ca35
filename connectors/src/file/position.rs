//! A file's stored position and the fingerprint that identifies the file across restarts.

use std::fs::File;

use serde::{Deserialize, Serialize};

/// How many leading bytes identify a file.
pub(super) const FINGERPRINT_BYTES: u64 = 1024;

/// `dev:inode`: stable across renames, which is what rotation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct FileKey {
    pub device: u64,
    pub inode: u64,
}

impl FileKey {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileKey {
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }

    pub(super) fn to_position_key(self) -> String {
        format!("file:{}:{}", self.device, self.inode)
    }

    pub(super) fn from_position_key(key: &str) -> Option<Self> {
        let (device, inode) = key.strip_prefix("file:")?.split_once(':')?;
        Some(FileKey {
            device: device.parse().ok()?,
            inode: inode.parse().ok()?,
        })
    }
}

/// What is committed for a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct StoredPosition {
    /// Where the file was when the position was stored (it may have been renamed since).
    pub path: String,
    /// The byte after the last line handed out.
    pub position: u64,
    /// FNV-1a of the first `fingerprint_bytes` bytes.
    pub fingerprint: u64,
    pub fingerprint_bytes: u64,
    /// The position is inside a line over the length limit whose first part was handed out.
    #[serde(default)]
    pub in_long_line: bool,
}

/// FNV-1a (64-bit) of `file`'s first `length` bytes, or None when it holds fewer.
pub(super) fn fingerprint(file: &File, length: u64) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; length as usize];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64)? {
            0 => return Ok(None),
            read => filled += read,
        }
    }
    Ok(Some(fnv1a(&head)))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
