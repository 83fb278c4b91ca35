//! The job's output side: one transaction per checkpoint holding everything the checkpoint
//! produced (output, dead letters, late records, a windowed job's repartition and changelog
//! records) and the consumed offsets (sent with the group metadata, KIP-447).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use crate::error::{Result, StreamsError};
use crate::job::consumer::{JobConsumer, CLUSTER_TIMEOUT};
use crate::job::JobConfig;

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
}

/// What a checkpoint commits: its records, and per consumed partition the next offset and the
/// offset's metadata.
#[derive(Debug, Default)]
pub(super) struct Checkpoint {
    pub records: Vec<Outgoing>,
    pub offsets: BTreeMap<(String, i32), (i64, String)>,
}

/// Pause when the client's send queue is full (bounded: `queue.buffering.max.messages`).
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);
/// Pause between looks at the records still in flight before a commit.
const DELIVERY_PAUSE: Duration = Duration::from_millis(1);

pub(super) struct CheckpointWriter {
    // A threaded producer serves delivery reports itself, which a commit's flush waits for.
    producer: ThreadedProducer<DefaultProducerContext>,
    output: String,
    dead_letter_topic: Option<String>,
    late_topic: Option<String>,
    repartition_topic: String,
    changelog_topic: String,
}

impl CheckpointWriter {
    /// The transactional producer of this copy of the job; initialising it fences (and ends the
    /// open transaction of) the previous incarnation with the same transactional id.
    pub(super) fn create(config: &JobConfig) -> Result<Self> {
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", &config.bootstrap)
            .set("transactional.id", config.transactional_id())
            .set(
                "transaction.timeout.ms",
                config.transaction_timeout_ms.to_string(),
            )
            .set("linger.ms", "5");
        for (name, value) in &config.client_properties {
            client.set(name, value);
        }
        let producer: ThreadedProducer<DefaultProducerContext> = client
            .create()
            .map_err(StreamsError::kafka("creating the producer"))?;
        producer
            .init_transactions(CLUSTER_TIMEOUT)
            .map_err(StreamsError::kafka("initialising transactions"))?;
        Ok(CheckpointWriter {
            producer,
            output: config.output.clone(),
            dead_letter_topic: config.dead_letter_topic.clone(),
            late_topic: config.late_topic.clone(),
            repartition_topic: config.repartition_topic(),
            changelog_topic: config.changelog_topic(),
        })
    }

    /// Writes one checkpoint atomically. On an error the transaction is aborted (the caller
    /// rewinds); a fenced producer is `StreamsError::Fenced`.
    pub(super) fn commit(&self, consumer: &JobConsumer, checkpoint: &Checkpoint) -> Result<()> {
        self.producer
            .begin_transaction()
            .map_err(|e| self.classify("beginning a transaction", e))?;
        match self.fill(consumer, checkpoint) {
            Ok(()) => Ok(()),
            Err(error) => {
                if !matches!(error, StreamsError::Fenced(_)) {
                    if let Err(abort) = self.producer.abort_transaction(CLUSTER_TIMEOUT) {
                        return Err(self.classify("aborting", abort));
                    }
                }
                Err(error)
            }
        }
    }

    fn fill(&self, consumer: &JobConsumer, checkpoint: &Checkpoint) -> Result<()> {
        for record in &checkpoint.records {
            let (topic, partition) = match record.destination {
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
            let mut out = BaseRecord::<Vec<u8>, Vec<u8>>::to(topic);
            if let Some(partition) = partition {
                out = out.partition(partition);
            }
            if let Some(key) = &record.key {
                out = out.key(key);
            }
            if let Some(value) = &record.value {
                out = out.payload(value);
            }
            self.send(out)?;
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
        let group = consumer
            .group_metadata()
            .ok_or_else(|| StreamsError::Config("the consumer has no group metadata".into()))?;
        self.producer
            .send_offsets_to_transaction(&positions, &group, CLUSTER_TIMEOUT)
            .map_err(|e| self.classify("sending offsets", e))?;
        self.wait_for_deliveries()?;
        self.producer
            .commit_transaction(CLUSTER_TIMEOUT)
            .map_err(|e| self.classify("committing", e))
    }

    /// Waits until every record sent is acknowledged. rust-rdkafka's commit flushes by polling
    /// in 100 ms steps, which with a threaded producer (whose own thread takes the events) means
    /// 100 ms per checkpoint; the commit's flush then finds nothing left.
    fn wait_for_deliveries(&self) -> Result<()> {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        while self.producer.in_flight_count() > 0 {
            if Instant::now() > deadline {
                return Err(StreamsError::Kafka {
                    operation: "waiting for deliveries",
                    source: KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut),
                });
            }
            std::thread::sleep(DELIVERY_PAUSE);
        }
        Ok(())
    }

    fn send<K, V>(&self, mut record: BaseRecord<'_, K, V>) -> Result<()>
    where
        K: rdkafka::message::ToBytes + ?Sized,
        V: rdkafka::message::ToBytes + ?Sized,
    {
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    std::thread::sleep(QUEUE_FULL_PAUSE);
                }
                Err((error, _)) => return Err(self.classify("producing", error)),
            }
        }
    }

    /// A fatal transactional error means a newer incarnation took over: stop, do not retry.
    fn classify(&self, operation: &'static str, error: KafkaError) -> StreamsError {
        match &error {
            KafkaError::Transaction(e) if e.is_fatal() => StreamsError::Fenced(e.to_string()),
            _ => StreamsError::Kafka {
                operation,
                source: error,
            },
        }
    }
}
