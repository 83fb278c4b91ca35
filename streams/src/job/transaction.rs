//! The job's output side: one transaction per checkpoint holding everything the checkpoint
//! produced (output, dead letters, late records, a windowed job's repartition and changelog
//! records) and the consumed offsets (sent with the group metadata, KIP-447).

use std::collections::BTreeMap;

use rdkafka::consumer::ConsumerGroupMetadata;
use rdkafka::{Offset, TopicPartitionList};
use weir_client::{CheckpointProducer, Outgoing as ProducedRecord, CLUSTER_TIMEOUT};

use crate::error::{Result, StreamsError};
use crate::io::topic_reader;
use crate::job::chunks::{self, Row};
use crate::job::JobConfig;

/// Records without a key (windows' results, most often) each go to a partition of their own
/// choosing rather than stick to one partition for a while (librdkafka's default, 10 ms):
/// a window's results come out once a checkpoint, so a sticky partition would take a whole
/// checkpoint's, leaving the others quiet — and a job reading the output by event time holds
/// its watermark at its quietest partition's last record. (`-X` overrides it.)
const OUTPUT_SPREAD: (&str, &str) = ("sticky.partitioning.linger.ms", "0");

/// Where a record of a checkpoint goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Destination {
    Output,
    DeadLetter,
    Late,
    Repartition(i32),
    Changelog(i32),
}

/// One record a checkpoint produces.
#[derive(Debug, Clone)]
pub(super) struct Outgoing {
    pub destination: Destination,
    pub key: Option<Vec<u8>>,
    /// `None`: a tombstone.
    pub value: Option<Vec<u8>>,
    /// The record's event time (a window's result: its window's last millisecond); `None`: the
    /// producer's clock.
    pub timestamp_ms: Option<i64>,
}

/// What a checkpoint commits: its records, and per consumed partition the next offset and the
/// offset's metadata.
#[derive(Debug, Default)]
pub(super) struct Checkpoint {
    pub records: Vec<Outgoing>,
    pub offsets: BTreeMap<(String, i32), (i64, String)>,
}

pub(super) struct CheckpointWriter {
    producer: CheckpointProducer,
    output: String,
    dead_letter_topic: Option<String>,
    late_topic: Option<String>,
    repartition_topic: String,
    changelog_topic: String,
    /// A stage writing its results as chunks of rows: the output topic's partitions.
    chunk_partitions: Option<i32>,
}

impl CheckpointWriter {
    /// The transactional producer of this copy of the job; initialising it fences (and ends the
    /// open transaction of) the previous incarnation with the same transactional id.
    pub(super) fn create(config: &JobConfig) -> Result<Self> {
        let producer = CheckpointProducer::transactional(
            &config.client,
            &config.transactional_id(),
            u64::from(config.transaction_timeout_ms),
            &[OUTPUT_SPREAD],
        )?;
        let chunk_partitions = match config.output_in_chunks {
            true if config.output_partitions.is_some() => config.output_partitions,
            true => {
                let reader = topic_reader::consumer(&config.client)?;
                let partitions =
                    topic_reader::partitions(&reader, &config.output, CLUSTER_TIMEOUT)?;
                Some(partitions.len() as i32)
            }
            false => None,
        };
        Ok(CheckpointWriter {
            chunk_partitions,
            producer,
            output: config.output.clone(),
            dead_letter_topic: config.dead_letter_topic.clone(),
            late_topic: config.late_topic.clone(),
            repartition_topic: config.repartition_topic(),
            changelog_topic: config.changelog_topic(),
        })
    }

    /// Writes one checkpoint atomically, its offsets under `group` (the consumer's group
    /// metadata when its records were polled). On an error the transaction is aborted (the
    /// caller rewinds); a fenced producer is [`StreamsError::fenced`] and is not aborted.
    pub(super) fn commit(
        &mut self,
        group: Option<&ConsumerGroupMetadata>,
        checkpoint: &Checkpoint,
    ) -> Result<()> {
        self.producer.begin()?;
        match self.fill(group, checkpoint) {
            Ok(()) => Ok(()),
            Err(error) => {
                if error.fenced().is_none() {
                    self.producer.abort()?;
                }
                Err(error)
            }
        }
    }

    fn fill(
        &mut self,
        group: Option<&ConsumerGroupMetadata>,
        checkpoint: &Checkpoint,
    ) -> Result<()> {
        let mut rows = Vec::new();
        for record in &checkpoint.records {
            let (topic, partition) = match record.destination {
                Destination::Output if self.chunk_partitions.is_some() => {
                    rows.push(Row {
                        key: record.key.as_deref(),
                        value: record.value.as_deref(),
                        timestamp_ms: record.timestamp_ms,
                    });
                    continue;
                }
                Destination::Output => (self.output.as_str(), None),
                Destination::DeadLetter => match &self.dead_letter_topic {
                    Some(topic) => (topic.as_str(), None),
                    None => continue,
                },
                Destination::Late => match &self.late_topic {
                    Some(topic) => (topic.as_str(), None),
                    None => continue,
                },
                Destination::Repartition(p) => (self.repartition_topic.as_str(), Some(p)),
                Destination::Changelog(p) => (self.changelog_topic.as_str(), Some(p)),
            };
            self.producer.send(&ProducedRecord {
                partition,
                timestamp_ms: record.timestamp_ms,
                ..ProducedRecord::new(topic, record.key.as_deref(), record.value.as_deref())
            })?;
        }
        if let Some(partitions) = self.chunk_partitions {
            for (partition, chunk) in chunks::chunk(rows, partitions) {
                self.producer.send(&ProducedRecord {
                    partition: Some(partition),
                    ..ProducedRecord::new(&self.output, None, Some(&chunk))
                })?;
            }
        }
        let mut positions = TopicPartitionList::new();
        for ((topic, partition), (next, metadata)) in &checkpoint.offsets {
            positions
                .add_partition_offset(topic, *partition, Offset::Offset(*next))
                .map_err(StreamsError::kafka("listing offsets"))?;
            if !metadata.is_empty() {
                positions
                    .find_partition(topic, *partition)
                    .expect("added above")
                    .set_metadata(metadata.as_str());
            }
        }
        let group = group
            .ok_or_else(|| StreamsError::Internal("the consumer has no group metadata".into()))?;
        self.producer.send_offsets(&positions, group)?;
        self.producer.commit()?;
        Ok(())
    }
}
