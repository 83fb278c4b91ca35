//! The source's committed positions: the pipeline's compacted positions topic read to its end
//! (read_committed, so only positions of committed checkpoints count), last value per key.

use std::collections::HashMap;

use weir_client::{ClientSettings, CLUSTER_TIMEOUT};
use weir_streams::io::topic_reader::{self, Limit};

use crate::error::{PipelineError, Result};

/// The most position records read at start (a compacted topic holds about one per file).
const MAX_POSITION_RECORDS: usize = 1_000_000;

pub fn read(
    pipeline: &str,
    client: &ClientSettings,
    topic: &str,
) -> Result<HashMap<String, Vec<u8>>> {
    let consumer = topic_reader::consumer(client).map_err(PipelineError::streams(pipeline))?;
    let partitions = topic_reader::partitions(&consumer, topic, CLUSTER_TIMEOUT)
        .map_err(PipelineError::streams(pipeline))?;
    let records = topic_reader::read(
        &consumer,
        topic,
        &partitions,
        Limit::FailBeyond(MAX_POSITION_RECORDS),
        CLUSTER_TIMEOUT,
    )
    .map_err(PipelineError::streams(pipeline))?;
    let mut positions = HashMap::new();
    for record in records {
        let Some(key) = record.key.and_then(|k| String::from_utf8(k).ok()) else {
            continue;
        };
        match record.value {
            Some(value) => positions.insert(key, value),
            None => positions.remove(&key),
        };
    }
    Ok(positions)
}
