//! Records as the engine sees them, owned (copied out of the Kafka client's buffers).

use rdkafka::message::{Headers, Message};

/// One consumed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub partition: i32,
    pub offset: i64,
    pub timestamp_ms: i64,
    /// The record's headers as a JSON object of strings (values read as UTF-8, lossily; a null
    /// value is null), or `None` when it has none.
    pub headers: Option<String>,
}

impl InputRecord {
    /// A copy of a consumed message (timestamp -1 when it has none).
    pub fn from_message(message: &impl Message) -> Self {
        InputRecord {
            key: message.key().map(<[u8]>::to_vec),
            value: message.payload().map(<[u8]>::to_vec),
            partition: message.partition(),
            offset: message.offset(),
            timestamp_ms: message.timestamp().to_millis().unwrap_or(-1),
            headers: message.headers().map(|headers| {
                let object: serde_json::Map<String, serde_json::Value> = headers
                    .iter()
                    .map(|h| {
                        let value = h.value.map(|v| String::from_utf8_lossy(v).into_owned());
                        (h.key.to_string(), value.into())
                    })
                    .collect();
                serde_json::Value::Object(object).to_string()
            }),
        }
    }
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
