//! The job's output side: one transaction per checkpoint holding the output records, the
//! dead letters and the consumed offsets (sent with the group metadata, KIP-447).

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use crate::error::{Result, StreamsError};
use crate::job::consumer::{JobConsumer, CLUSTER_TIMEOUT};
use crate::job::JobConfig;
use crate::record::{InputRecord, OutputRecord};

/// Pause when the client's send queue is full (bounded: `queue.buffering.max.messages`).
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);

pub struct CheckpointWriter {
    // A threaded producer serves delivery reports itself, which a commit's flush waits for.
    producer: ThreadedProducer<DefaultProducerContext>,
    input: String,
    output: String,
    dead_letter_topic: Option<String>,
}

impl CheckpointWriter {
    /// The transactional producer of this copy of the job; initialising it fences (and ends the
    /// open transaction of) the previous incarnation with the same transactional id.
    pub fn create(config: &JobConfig) -> Result<Self> {
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
            input: config.input.clone(),
            output: config.output.clone(),
            dead_letter_topic: config.dead_letter_topic.clone(),
        })
    }

    /// Writes one checkpoint atomically. On an error the transaction is aborted (the caller
    /// rewinds); a fenced producer is `StreamsError::Fenced`.
    pub fn commit(
        &self,
        consumer: &JobConsumer,
        records: &[OutputRecord],
        dead_letters: &[&InputRecord],
        offsets: &BTreeMap<i32, i64>,
    ) -> Result<()> {
        self.producer
            .begin_transaction()
            .map_err(|e| self.classify("beginning a transaction", e))?;
        match self.fill(consumer, records, dead_letters, offsets) {
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

    fn fill(
        &self,
        consumer: &JobConsumer,
        records: &[OutputRecord],
        dead_letters: &[&InputRecord],
        offsets: &BTreeMap<i32, i64>,
    ) -> Result<()> {
        for record in records {
            let mut out = BaseRecord::to(&self.output).payload(&record.value);
            if let Some(key) = &record.key {
                out = out.key(key);
            }
            self.send(out)?;
        }
        if let Some(topic) = &self.dead_letter_topic {
            for record in dead_letters {
                let mut out = BaseRecord::<Vec<u8>, Vec<u8>>::to(topic);
                if let Some(key) = &record.key {
                    out = out.key(key);
                }
                if let Some(value) = &record.value {
                    out = out.payload(value);
                }
                self.send(out)?;
            }
        }
        let mut positions = TopicPartitionList::new();
        for (partition, next) in offsets {
            positions
                .add_partition_offset(&self.input, *partition, Offset::Offset(*next))
                .map_err(StreamsError::kafka("listing offsets"))?;
        }
        let group = consumer
            .group_metadata()
            .ok_or_else(|| StreamsError::Config("the consumer has no group metadata".into()))?;
        self.producer
            .send_offsets_to_transaction(&positions, &group, CLUSTER_TIMEOUT)
            .map_err(|e| self.classify("sending offsets", e))?;
        self.producer
            .commit_transaction(CLUSTER_TIMEOUT)
            .map_err(|e| self.classify("committing", e))
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
