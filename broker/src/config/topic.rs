//! The effective, typed configuration of one topic's logs.

/// The effective, typed configuration of one topic's logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub max_message_bytes: usize,
    pub log_append_time: bool,
    /// CreateTime records older than now less this are refused (INVALID_TIMESTAMP).
    pub timestamp_before_max_ms: i64,
    /// CreateTime records newer than now plus this are refused (INVALID_TIMESTAMP).
    pub timestamp_after_max_ms: i64,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub flush_on_ack: bool,
    pub index_interval_bytes: u64,
    pub file_delete_delay_ms: u64,
    /// `cleanup.policy` has `compact`: the cleaner keeps the latest record per key.
    pub compact: bool,
    /// `cleanup.policy` has `delete`: `retention.ms`/`retention.bytes` remove old segments.
    pub delete: bool,
    pub delete_retention_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    /// `acks=all` needs at least this many in-sync replicas.
    pub min_insync_replicas: usize,
    /// `compression.type` with the codec's level.
    pub compression: TopicCompression,
}

/// A topic's `compression.type`: how its batches are stored (KIP-390 for the levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicCompression {
    /// As the producer compressed them.
    Producer,
    Uncompressed,
    /// Level 1–9, or -1 for zlib's default.
    Gzip {
        level: i32,
    },
    Snappy,
    /// Level 1–17.
    Lz4 {
        level: i32,
    },
    /// Level -131072–22.
    Zstd {
        level: i32,
    },
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            retention_ms: 604_800_000,
            retention_bytes: -1,
            segment_bytes: 1 << 30,
            segment_ms: 604_800_000,
            max_message_bytes: 1_048_588,
            log_append_time: false,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            flush_on_ack: false,
            index_interval_bytes: 4096,
            file_delete_delay_ms: 60_000,
            compact: false,
            delete: true,
            delete_retention_ms: 86_400_000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_insync_replicas: 1,
            compression: TopicCompression::Producer,
        }
    }
}
