//! Records as the engine sees them, owned and independent of the Kafka client.

/// One consumed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub partition: i32,
    pub offset: i64,
    pub timestamp_ms: i64,
}

/// One record to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputRecord {
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

/// How record values are read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueFormat {
    /// One JSON object per value; its fields are the columns.
    Json,
    /// The value as a UTF-8 string, in one column `value`.
    Raw,
}
