//! The `kafka` source: a far topic's partitions, assigned (no group) from the stored positions.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use weir_client::CLUSTER_TIMEOUT;

use super::config::{KafkaSourceConfig, StartAt};
use crate::error::ConnectorError;
use crate::source::{PositionUpdate, Source, SourceRecord};

pub struct KafkaSource {
    config: KafkaSourceConfig,
    consumer: BaseConsumer,
    assigned: bool,
    restored: HashMap<i32, i64>,
    /// The next offset of every partition read from.
    next: BTreeMap<i32, i64>,
    moved: BTreeSet<i32>,
    /// How many partitions are assigned (0 before the assignment).
    partitions: usize,
    /// The partitions whose end (the last stable offset: read_committed) was reached and that
    /// have had no record since. librdkafka says so once per arrival (`enable.partition.eof`).
    at_end: BTreeSet<i32>,
    /// The last poll found nothing.
    idle: bool,
}

fn kafka_error(
    what: &str,
    topic: &str,
) -> impl FnOnce(rdkafka::error::KafkaError) -> ConnectorError {
    ConnectorError::far_kafka(format!("{what} (far topic {topic})"))
}

impl KafkaSource {
    pub fn new(config: KafkaSourceConfig) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        let group_id = config.group_id.as_deref().unwrap_or("weir-bridge");
        let start_at = match config.start_at {
            StartAt::Earliest => "earliest",
            StartAt::Latest => "latest",
        };
        let consumer: BaseConsumer = config
            .client()
            .config(&[
                ("group.id", group_id),
                ("enable.auto.commit", "false"),
                ("auto.offset.reset", start_at),
                ("isolation.level", "read_committed"),
                ("fetch.queue.backoff.ms", "20"),
                ("enable.partition.eof", "true"),
            ])
            .create()
            .map_err(kafka_error("creating the consumer", &config.topic))?;
        Ok(KafkaSource {
            config,
            consumer,
            assigned: false,
            restored: HashMap::new(),
            next: BTreeMap::new(),
            moved: BTreeSet::new(),
            partitions: 0,
            at_end: BTreeSet::new(),
            idle: false,
        })
    }

    fn assign(&mut self) -> Result<(), ConnectorError> {
        let topic = self.config.topic.clone();
        let metadata = self
            .consumer
            .fetch_metadata(Some(&topic), CLUSTER_TIMEOUT)
            .map_err(kafka_error("reading metadata", &topic))?;
        let partitions: Vec<i32> = metadata
            .topics()
            .iter()
            .filter(|t| t.name() == topic && t.error().is_none())
            .flat_map(|t| t.partitions().iter().map(|p| p.id()))
            .collect();
        if partitions.is_empty() {
            return Err(ConnectorError::Config(format!(
                "far topic {topic} does not exist or has no partitions"
            )));
        }
        let mut assignment = TopicPartitionList::new();
        self.partitions = partitions.len();
        self.at_end.clear();
        for partition in partitions {
            let offset = match (self.restored.get(&partition), self.config.start_at) {
                (Some(next), _) => Offset::Offset(*next),
                // The group's committed offset; `auto.offset.reset` when it has none.
                (None, _) if self.config.group_id.is_some() => Offset::Stored,
                (None, StartAt::Earliest) => Offset::Beginning,
                (None, StartAt::Latest) => Offset::End,
            };
            assignment
                .add_partition_offset(&topic, partition, offset)
                .map_err(kafka_error("assigning", &topic))?;
        }
        self.consumer
            .assign(&assignment)
            .map_err(kafka_error("assigning", &topic))?;
        tracing::info!(topic = %topic, restored = self.restored.len(), "reading far topic");
        self.assigned = true;
        Ok(())
    }
}

impl Source for KafkaSource {
    fn restore(&mut self, positions: &HashMap<String, Vec<u8>>) -> Result<(), ConnectorError> {
        let prefix = format!("kafka:{}:", self.config.topic);
        for (key, value) in positions {
            let Some(partition) = key
                .strip_prefix(&prefix)
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let text = String::from_utf8_lossy(value);
            let next = text
                .trim()
                .parse::<i64>()
                .map_err(|_| ConnectorError::Position {
                    key: key.clone(),
                    reason: format!("'{text}' is not an offset"),
                })?;
            self.restored.insert(partition, next);
        }
        Ok(())
    }

    fn poll(
        &mut self,
        max_records: usize,
        wait: Duration,
        out: &mut Vec<SourceRecord>,
    ) -> Result<(), ConnectorError> {
        if !self.assigned {
            self.assign()?;
        }
        let deadline = Instant::now() + wait;
        let mut taken = 0;
        while taken < max_records {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let Some(result) = self.consumer.poll(if taken == 0 {
                remaining
            } else {
                Duration::ZERO
            }) else {
                break;
            };
            let message = match result {
                Ok(message) => message,
                Err(rdkafka::error::KafkaError::PartitionEOF(partition)) => {
                    self.at_end.insert(partition);
                    continue;
                }
                Err(error) => return Err(kafka_error("consuming", &self.config.topic)(error)),
            };
            self.at_end.remove(&message.partition());
            let headers = message
                .headers()
                .map(|headers| {
                    headers
                        .iter()
                        .map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec()))
                        .collect()
                })
                .unwrap_or_default();
            let mut record = SourceRecord::value(message.payload().unwrap_or_default().to_vec());
            record.key = message.key().map(<[u8]>::to_vec);
            record.timestamp_ms = message.timestamp().to_millis();
            record.headers = headers;
            if message.payload().is_none() {
                record.problem = Some("a tombstone (no value)".into());
            }
            out.push(record);
            self.next.insert(message.partition(), message.offset() + 1);
            self.moved.insert(message.partition());
            taken += 1;
        }
        self.idle = taken == 0;
        Ok(())
    }

    /// Every partition's end was reached and the last poll found nothing: an idle poll alone
    /// is not enough, since the first polls come before the connection and the first fetch.
    fn caught_up(&self) -> bool {
        self.idle && self.partitions > 0 && self.at_end.len() >= self.partitions
    }

    fn committed(&mut self) {
        if self.config.group_id.is_none() || self.next.is_empty() {
            return;
        }
        let mut offsets = TopicPartitionList::new();
        for (partition, next) in &self.next {
            let _ =
                offsets.add_partition_offset(&self.config.topic, *partition, Offset::Offset(*next));
        }
        // Informational: a failure here loses nothing (the positions topic is the truth).
        if let Err(error) = self.consumer.commit(&offsets, CommitMode::Async) {
            tracing::debug!(%error, topic = %self.config.topic, "committing to the far group failed");
        }
    }

    fn take_positions(&mut self) -> Result<Vec<PositionUpdate>, ConnectorError> {
        let moved = std::mem::take(&mut self.moved);
        Ok(moved
            .into_iter()
            .map(|partition| PositionUpdate {
                key: self.config.position_key(partition),
                value: Some(self.next[&partition].to_string().into_bytes()),
            })
            .collect())
    }
}
