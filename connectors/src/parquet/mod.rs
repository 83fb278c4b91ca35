//! The `parquet` sink: Parquet files in a local directory or an S3-compatible object store,
//! Hive-style partitioned (`date=2026-11-29/hour=13/part-….parquet`), rolled by size and age,
//! published exactly once.
//!
//! Files are written under `_weir/staging/` (named `*.parquet.inprogress`, so readers that
//! glob `*.parquet` or skip `_` directories never see them). A commit closes them durably, then
//! writes `_weir/manifests/<sequence>.json` (the files, their final names, and the input offsets
//! they cover) atomically — that is the commit point — then moves the files into place. On
//! open, the newest manifest's files still in staging are moved into place (a crash between
//! manifest and moves), every other staged file is deleted (never published), and reading
//! resumes from the manifest's offsets.
//!
//! Module map: `config` (YAML settings), `sink` (open files, commits), `manifest` (the commit
//! record), `store` (local directory or object store behind one trait), `partitioning` (Hive
//! directories of rows), `read` (reading published files back).

mod config;
#[cfg(feature = "runtime")]
mod manifest;
#[cfg(feature = "runtime")]
mod partitioning;
#[cfg(feature = "runtime")]
mod read;
#[cfg(feature = "runtime")]
mod sink;
#[cfg(feature = "runtime")]
mod store;

pub use config::{ParquetCompression, ParquetSinkConfig};
#[cfg(feature = "runtime")]
pub use manifest::Manifest;
#[cfg(feature = "runtime")]
pub use read::{read_published, read_published_at, Published};
#[cfg(feature = "runtime")]
pub use sink::ParquetSink;
#[cfg(feature = "runtime")]
pub use store::published_files;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_s3;
