//! Putting cleaned segments in place so that a crash at any moment loses nothing.
//!
//! For one group of old segments covering offsets `[base, end)`:
//! 1. the cleaner writes `<base>.cleaned` and fsyncs it (no lock held);
//! 2. `<base>.cleaned` is renamed to `<base>-<end>.swap` — the commit point;
//! 3. the old segments' files (`.log`, `.index`, `.timeindex`) are deleted;
//! 4. `<base>-<end>.swap` is renamed to `<base>.log`.
//!
//! The directory is fsynced after each step. On open, `recover` discards `.cleaned` files (the old
//! segments are intact) and finishes every `.swap`: the old segments in its range are deleted and
//! it becomes `<base>.log`. So after a crash the log holds either the old segments or the cleaned
//! one, never both and never neither.

use std::fs;
use std::path::{Path, PathBuf};

use crate::log::error::LogError;
pub use crate::log::segment::sync_dir;
use crate::log::segment::{delete_segment_files, segment_file_name};

const CLEANED_EXTENSION: &str = "cleaned";
const SWAP_EXTENSION: &str = "swap";

/// The steps of installing one cleaned segment, for tests that simulate a crash after each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapStep {
    /// `.cleaned` became `.swap`; the old segments are still there.
    Committed,
    /// The old segments are gone; the `.swap` file is not yet renamed.
    OldSegmentsDeleted,
}

pub fn cleaned_path(dir: &Path, base_offset: i64) -> PathBuf {
    dir.join(segment_file_name(base_offset, CLEANED_EXTENSION))
}

fn swap_path(dir: &Path, base_offset: i64, end_offset: i64) -> PathBuf {
    dir.join(format!(
        "{base_offset:020}-{end_offset:020}.{SWAP_EXTENSION}"
    ))
}

/// Step 2: makes the cleaned file the committed replacement of `[base, end)`.
pub fn commit(dir: &Path, base_offset: i64, end_offset: i64) -> Result<(), LogError> {
    let from = cleaned_path(dir, base_offset);
    let to = swap_path(dir, base_offset, end_offset);
    fs::rename(&from, &to).map_err(|e| LogError::io(&from, e))?;
    sync_dir(dir)
}

/// Step 4: the committed replacement becomes the segment `<base>.log`.
pub fn finish(dir: &Path, base_offset: i64, end_offset: i64) -> Result<(), LogError> {
    let from = swap_path(dir, base_offset, end_offset);
    let to = dir.join(segment_file_name(base_offset, "log"));
    fs::rename(&from, &to).map_err(|e| LogError::io(&from, e))?;
    sync_dir(dir)
}

/// Finishes swaps and discards cleaning output left by a crash. Call before listing segments.
pub fn recover(dir: &Path) -> Result<(), LogError> {
    let mut swaps = Vec::new();
    let mut segment_bases = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(&format!(".{CLEANED_EXTENSION}")) {
            tracing::info!(file = %entry.path().display(), "discarding unfinished cleaning output");
            fs::remove_file(entry.path()).map_err(|e| LogError::io(entry.path(), e))?;
        } else if let Some(range) = name.strip_suffix(&format!(".{SWAP_EXTENSION}")) {
            let parsed = range.split_once('-').and_then(|(base, end)| {
                Some((base.parse::<i64>().ok()?, end.parse::<i64>().ok()?))
            });
            match parsed {
                Some(range) => swaps.push(range),
                None => {
                    tracing::warn!(file = %entry.path().display(), "ignoring a malformed swap file name")
                }
            }
        } else if let Some(stem) = name.strip_suffix(".log") {
            if let Ok(base) = stem.parse::<i64>() {
                segment_bases.push(base);
            }
        }
    }
    for (base, end) in swaps {
        tracing::info!(dir = %dir.display(), base, end, "finishing an interrupted segment swap");
        for &old in segment_bases.iter().filter(|b| (base..end).contains(*b)) {
            delete_segment_files(dir, old)?;
        }
        // The replaced segment whose name the swap takes may have had its log deleted already
        // while its indexes remain.
        delete_segment_files(dir, base)?;
        finish(dir, base, end)?;
    }
    Ok(())
}
