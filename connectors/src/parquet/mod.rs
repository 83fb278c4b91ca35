//! The `parquet` sink: Parquet files in a local directory, Hive-style partitioned
//! (`date=2026-11-29/hour=13/part-….parquet`), rolled by size and age, published exactly once.
//!
//! Files are written under `_weir/staging/` (named `*.parquet.inprogress`, so readers that
//! glob `*.parquet` never see them). A commit closes them, then writes
//! `_weir/manifests/<sequence>.json` (the files, their final names, and the input offsets
//! they cover) atomically (write, fsync, rename) — that is the commit point — then renames the
//! files into place. On open, the newest manifest's files still in staging are moved into
//! place (a crash between manifest and renames), every other staged file is deleted (never
//! published), and reading resumes from the manifest's offsets.

mod config;
mod manifest;
mod partitioning;
mod sink;

pub use config::{ParquetCompression, ParquetSinkConfig};
pub use manifest::Manifest;
pub use sink::{published_files, read_published, ParquetSink};

#[cfg(test)]
mod tests;
