//! What the stateful jobs (windows, interval joins) share: which partitions a copy owns after a
//! rebalance, the input partitions' event times kept in their committed offsets' metadata, the
//! changelog read back, and the records a checkpoint adds for the repartition topic, the
//! changelog and the output.

use std::collections::BTreeMap;

use rdkafka::consumer::Consumer;
use rdkafka::TopicPartitionList;
use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_client::CLUSTER_TIMEOUT;

use crate::aggregate::codec::{from_json, to_json};
use crate::error::{Result, StreamsError};
use crate::io::topic_reader::{self, Limit};
use crate::job::consumer::JobConsumer;
use crate::job::stats::JobStats;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::JobConfig;
use crate::record::OutputRecord;

/// What this copy owns: (input index, partition) of its inputs, and repartition partitions.
pub(super) struct Owned {
    pub inputs: Vec<(usize, i32)>,
    pub repartition: Vec<i32>,
}

pub(super) fn owned(config: &JobConfig, consumer: &JobConsumer) -> Result<Owned> {
    let assignment = consumer
        .assignment()
        .map_err(StreamsError::kafka("reading the assignment"))?;
    let repartition_topic = config.repartition_topic();
    let mut owned = Owned {
        inputs: Vec::new(),
        repartition: Vec::new(),
    };
    for element in assignment.elements() {
        if let Some(input) = config.inputs.iter().position(|i| i == element.topic()) {
            owned.inputs.push((input, element.partition()));
        } else if element.topic() == repartition_topic {
            owned.repartition.push(element.partition());
        }
    }
    Ok(owned)
}

/// Each owned input partition's largest event time, from its committed offset's metadata.
pub(super) fn committed_times(
    config: &JobConfig,
    consumer: &JobConsumer,
    inputs: &[(usize, i32)],
) -> Result<BTreeMap<(usize, i32), i64>> {
    let mut times = BTreeMap::new();
    if inputs.is_empty() {
        return Ok(times);
    }
    let mut partitions = TopicPartitionList::new();
    for (input, partition) in inputs {
        partitions.add_partition(&config.inputs[*input], *partition);
    }
    let committed = consumer
        .committed_offsets(partitions, CLUSTER_TIMEOUT)
        .map_err(StreamsError::kafka("reading committed offsets"))?;
    for element in committed.elements() {
        let input = config.inputs.iter().position(|i| i == element.topic());
        if let (Some(input), Ok(time)) = (input, element.metadata().parse::<i64>()) {
            times.insert((input, element.partition()), time);
        }
    }
    Ok(times)
}

/// The changelog records of the `owned` partitions, decoded, in each partition's order:
/// (partition, key, value; None a tombstone).
pub(super) fn changelog<K: DeserializeOwned, V: DeserializeOwned>(
    config: &JobConfig,
    owned: &[i32],
) -> Result<Vec<(i32, K, Option<V>)>> {
    if owned.is_empty() {
        return Ok(Vec::new());
    }
    let reader = topic_reader::consumer(&config.client)?;
    let records = topic_reader::read(
        &reader,
        &config.changelog_topic(),
        owned,
        Limit::FailBeyond(usize::MAX),
        CLUSTER_TIMEOUT * 4,
    )?;
    let mut changes = Vec::with_capacity(records.len());
    for record in &records {
        let key: K = from_json(record.key.as_deref().unwrap_or_default(), "changelog key")?;
        let value: Option<V> = match &record.value {
            Some(value) => Some(from_json(value, "changelog")?),
            None => None,
        };
        changes.push((record.partition, key, value));
    }
    Ok(changes)
}

/// `record` (unkeyed) to every repartition partition.
pub(super) fn to_every_partition(checkpoint: &mut Checkpoint, partitions: i32, record: &[u8]) {
    for partition in 0..partitions {
        checkpoint.records.push(Outgoing {
            destination: Destination::Repartition(partition),
            key: None,
            value: Some(record.to_vec()),
            timestamp_ms: None,
        });
    }
}

/// The state's changes of `partition` for its changelog partition.
pub(super) fn write_changes<K: Serialize, V: Serialize>(
    checkpoint: &mut Checkpoint,
    partition: i32,
    changes: Vec<(K, Option<V>)>,
) {
    for (key, value) in changes {
        checkpoint.records.push(Outgoing {
            destination: Destination::Changelog(partition),
            key: Some(to_json(&key)),
            value: value.as_ref().map(to_json),
            timestamp_ms: None,
        });
    }
}

/// Result records for the output topic.
pub(super) fn write_output(
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
    records: Vec<OutputRecord>,
) {
    write_timed_output(
        checkpoint,
        stats,
        records.into_iter().map(|record| (record, None)).collect(),
    );
}

/// The output records, each with its event time when it has one.
pub(super) fn write_timed_output(
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
    records: Vec<(OutputRecord, Option<i64>)>,
) {
    for (record, timestamp_ms) in records {
        stats.records_out += 1;
        checkpoint.records.push(Outgoing {
            destination: Destination::Output,
            key: record.key,
            value: Some(record.value),
            timestamp_ms,
        });
    }
}
