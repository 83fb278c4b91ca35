//! The checkpoint producer: what a stream job, a pipeline's source stage and the Kafka sink
//! write, made durable (transactional: and visible) one checkpoint at a time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::consumer::ConsumerGroupMetadata;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, TopicPartitionList};

use crate::error::ClientError;
use crate::settings::{ClientSettings, CLUSTER_TIMEOUT};

/// Pause when the client's send queue is full (bounded: `queue.buffering.max.messages`).
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(2);
/// Pause between looks at the records still in flight before a commit.
const DELIVERY_PAUSE: Duration = Duration::from_millis(1);

/// Defaults of every checkpoint producer, before the caller's and the user's.
const PRODUCER_DEFAULTS: &[(&str, &str)] = &[("enable.idempotence", "true"), ("linger.ms", "5")];

/// One record to send.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub topic: &'a str,
    /// `None`: the client's partitioner picks (by key).
    pub partition: Option<i32>,
    pub key: Option<&'a [u8]>,
    /// `None`: a tombstone.
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, &'a [u8])],
    /// The record's timestamp (ms since the epoch); `None`: the producer's clock.
    pub timestamp_ms: Option<i64>,
}

impl<'a> Outgoing<'a> {
    /// A record of `topic` with `key` and `value`, no partition chosen, no headers.
    pub fn new(topic: &'a str, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        Outgoing {
            topic,
            partition: None,
            key,
            value,
            headers: &[],
            timestamp_ms: None,
        }
    }

    fn record(&self) -> BaseRecord<'a, [u8], [u8]> {
        let mut record = BaseRecord::<[u8], [u8]>::to(self.topic);
        if let Some(partition) = self.partition {
            record = record.partition(partition);
        }
        if let Some(key) = self.key {
            record = record.key(key);
        }
        if let Some(value) = self.value {
            record = record.payload(value);
        }
        if let Some(timestamp_ms) = self.timestamp_ms {
            record = record.timestamp(timestamp_ms);
        }
        if !self.headers.is_empty() {
            let headers = self
                .headers
                .iter()
                .fold(OwnedHeaders::new(), |headers, (key, value)| {
                    headers.insert(Header {
                        key,
                        value: Some(*value),
                    })
                });
            record = record.headers(headers);
        }
        record
    }
}

/// Counts failed deliveries: an idempotent checkpoint must not commit positions past them.
#[derive(Default)]
pub struct DeliveryReports {
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl ClientContext for DeliveryReports {}

impl ProducerContext for DeliveryReports {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, _)) = result {
            self.failed.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut last) = self.last_error.lock() {
                *last = Some(error.to_string());
            }
        }
    }
}

impl DeliveryReports {
    /// The failures since the last call, and the last one's error.
    fn take_failures(&self) -> Option<(u64, String)> {
        let failed = self.failed.swap(0, Ordering::Relaxed);
        let last = self.last_error.lock().ok().and_then(|mut l| l.take());
        (failed > 0).then(|| (failed, last.unwrap_or_default()))
    }
}

/// The producer of one writer. Transactional: each checkpoint is one Kafka transaction (its
/// records and, for a consumer in a group, its consumed offsets), and creating the producer
/// fences the previous incarnation with the same transactional id. Idempotent: records are
/// durable once `commit` returns, without transactions. All calls block (at most
/// [`CLUSTER_TIMEOUT`] each); async callers run them with `block_in_place`.
pub struct CheckpointProducer {
    // A threaded producer serves delivery reports on its own thread, which commits wait for.
    producer: ThreadedProducer<DeliveryReports>,
    transactional: bool,
    in_transaction: bool,
}

impl CheckpointProducer {
    /// A transactional producer with `transactional_id`, its transactions timing out after
    /// `transaction_timeout_ms`; initialising it fences (and ends the open transaction of) the
    /// previous incarnation. `defaults` are the caller's producer settings (the user's
    /// properties win over them).
    pub fn transactional(
        client: &ClientSettings,
        transactional_id: &str,
        transaction_timeout_ms: u64,
        defaults: &[(&str, &str)],
    ) -> Result<Self, ClientError> {
        let timeout = transaction_timeout_ms.to_string();
        let transactional = [
            ("transactional.id", transactional_id),
            ("transaction.timeout.ms", timeout.as_str()),
        ];
        let producer = Self::create(client, &[defaults, &transactional[..]].concat(), true)?;
        producer
            .producer
            .init_transactions(CLUSTER_TIMEOUT)
            .map_err(ClientError::classify("initialising transactions"))?;
        Ok(producer)
    }

    /// An idempotent producer without transactions (at-least-once checkpoints).
    pub fn idempotent(
        client: &ClientSettings,
        defaults: &[(&str, &str)],
    ) -> Result<Self, ClientError> {
        Self::create(client, defaults, false)
    }

    fn create(
        client: &ClientSettings,
        defaults: &[(&str, &str)],
        transactional: bool,
    ) -> Result<Self, ClientError> {
        let producer = client
            .config(&[PRODUCER_DEFAULTS, defaults].concat())
            .create_with_context(DeliveryReports::default())
            .map_err(ClientError::kafka("creating the producer"))?;
        Ok(CheckpointProducer {
            producer,
            transactional,
            in_transaction: false,
        })
    }

    pub fn is_transactional(&self) -> bool {
        self.transactional
    }

    /// Whether a checkpoint is begun and neither committed nor aborted.
    pub fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    /// Begins a checkpoint (transactional: a transaction); nothing when one is begun.
    pub fn begin(&mut self) -> Result<(), ClientError> {
        if self.transactional && !self.in_transaction {
            self.producer
                .begin_transaction()
                .map_err(ClientError::classify("beginning a transaction"))?;
        }
        self.in_transaction = true;
        Ok(())
    }

    /// Sends a record of the checkpoint, waiting while the client's queue is full.
    pub fn send(&self, outgoing: &Outgoing<'_>) -> Result<(), ClientError> {
        let mut record = outgoing.record();
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    std::thread::sleep(QUEUE_FULL_PAUSE);
                }
                Err((error, _)) => return Err(ClientError::classify("producing")(error)),
            }
        }
    }

    /// Adds a group's consumed offsets to the transaction (KIP-447: committed with it).
    pub fn send_offsets(
        &self,
        offsets: &TopicPartitionList,
        group: &ConsumerGroupMetadata,
    ) -> Result<(), ClientError> {
        self.producer
            .send_offsets_to_transaction(offsets, group, CLUSTER_TIMEOUT)
            .map_err(ClientError::classify("sending offsets"))
    }

    /// Makes the checkpoint's records durable (transactional: and visible) together: every
    /// record is acknowledged first, then the transaction committed. Idempotent, a record that
    /// was not delivered is [`ClientError::Undelivered`].
    pub fn commit(&mut self) -> Result<(), ClientError> {
        self.wait_for_deliveries()?;
        if self.transactional {
            self.producer
                .commit_transaction(CLUSTER_TIMEOUT)
                .map_err(ClientError::classify("committing"))?;
        } else if let Some((failed, last_error)) = self.producer.context().take_failures() {
            return Err(ClientError::Undelivered { failed, last_error });
        }
        self.in_transaction = false;
        Ok(())
    }

    /// Drops the checkpoint: transactional, nothing of it becomes visible.
    pub fn abort(&mut self) -> Result<(), ClientError> {
        self.in_transaction = false;
        if self.transactional {
            self.producer
                .abort_transaction(CLUSTER_TIMEOUT)
                .map_err(ClientError::classify("aborting"))?;
        } else {
            self.producer.context().take_failures();
        }
        Ok(())
    }

    /// Waits until every record sent is acknowledged. rust-rdkafka's commit flushes by polling
    /// in 100 ms steps, which with a threaded producer (whose own thread takes the events) would
    /// cost 100 ms per checkpoint; the commit's flush then finds nothing left.
    fn wait_for_deliveries(&self) -> Result<(), ClientError> {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        while self.producer.in_flight_count() > 0 {
            if Instant::now() > deadline {
                return Err(ClientError::Kafka {
                    operation: "waiting for deliveries",
                    source: KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut),
                });
            }
            std::thread::sleep(DELIVERY_PAUSE);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
