//! Errors of record batches and of a partition's log, carrying the facts needed to act on them.
//! Kafka error codes for them are chosen in `handler::errors`.

use std::path::PathBuf;

/// A record batch that cannot be accepted or read.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum BatchError {
    #[error("record batch truncated: needs {needed} bytes, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("record batch magic {0} is not supported (only v2)")]
    UnsupportedMagic(i8),
    #[error("record batch length {0} is invalid")]
    InvalidLength(i32),
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("produce requests must carry exactly one record batch per partition")]
    MoreThanOneBatch,
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    TooLarge { size: usize, max: usize },
    #[error("invalid records: {0}")]
    InvalidRecords(String),
    #[error("compacted topics cannot accept records without a key (records {record_indexes:?} of the batch have none)")]
    MissingKey { record_indexes: Vec<i32> },
    #[error("unknown compression codec {0}")]
    UnknownCompression(i16),
    #[error("{codec} decompression failed: {reason}")]
    Decompression { codec: &'static str, reason: String },
    #[error("{codec} compression failed: {reason}")]
    Compression { codec: &'static str, reason: String },
    #[error("decompressed batch exceeds the bound of {max_bytes} bytes")]
    DecompressedTooLarge { max_bytes: usize },
    /// CreateTime records outside `message.timestamp.before.max.ms`/`after.max.ms` of now:
    /// (index in the batch, Kafka's message for it).
    #[error("{} records have timestamps out of range: {}", record_errors.len(), record_errors[0].1)]
    TimestampsOutOfRange { record_errors: Vec<(i32, String)> },
}

/// Errors of a partition's log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error("offset {requested} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        requested: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("the log is closed")]
    Closed,
    #[error("the partition is offline after a storage failure ({reason}); restart the broker once the disk is fixed")]
    Offline { reason: String },
    #[error("this replica does not lead (leader epoch {leader_epoch})")]
    NotLeader { leader_epoch: i32 },
    #[error("this replica does not follow at that leader epoch: it takes no copied batches")]
    NotFollower,
    #[error("checkpoint file {path} is corrupt")]
    CorruptCheckpoint { path: PathBuf },
    #[error(transparent)]
    Producer(#[from] crate::producer::ProducerError),
}

impl LogError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LogError::Io {
            path: path.into(),
            source,
        }
    }
}
