//! The source stage's producer: with exactly-once, one Kafka transaction per checkpoint holding
//! the records, the dead letters and the source's position records; with at-least-once, an
//! idempotent producer whose checkpoint waits for every acknowledgement before positions are
//! written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use weir_connectors::kafka::produce::{send_when_room, wait_for_deliveries};

use crate::error::{PipelineError, Result};

/// How long cluster operations (init, commit) may take.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// Counts failed deliveries (a non-transactional checkpoint must not write positions past them).
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

pub struct CheckpointProducer {
    producer: ThreadedProducer<DeliveryReports>,
    transactional: bool,
    pipeline: String,
    in_transaction: bool,
}

/// One record to send.
pub struct Outgoing<'a> {
    pub topic: &'a str,
    pub key: Option<&'a [u8]>,
    /// None: a tombstone.
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, &'a [u8])],
}

impl CheckpointProducer {
    /// With `transactional_id`, initialising fences the previous incarnation.
    pub fn create(
        pipeline: &str,
        bootstrap: &str,
        transactional_id: Option<&str>,
        properties: &[(String, String)],
    ) -> Result<Self> {
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", bootstrap)
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            .set("batch.size", "1000000")
            .set("compression.type", "lz4");
        if let Some(id) = transactional_id {
            client
                .set("transactional.id", id)
                .set("transaction.timeout.ms", "60000");
        }
        for (name, value) in properties {
            client.set(name, value);
        }
        let producer: ThreadedProducer<DeliveryReports> = client
            .create_with_context(DeliveryReports::default())
            .map_err(PipelineError::kafka(pipeline, "creating the producer"))?;
        if transactional_id.is_some() {
            producer
                .init_transactions(CLUSTER_TIMEOUT)
                .map_err(|e| classify(pipeline, "initialising transactions", e))?;
        }
        Ok(CheckpointProducer {
            producer,
            transactional: transactional_id.is_some(),
            pipeline: pipeline.to_string(),
            in_transaction: false,
        })
    }

    pub fn begin(&mut self) -> Result<()> {
        if self.transactional && !self.in_transaction {
            self.producer
                .begin_transaction()
                .map_err(|e| classify(&self.pipeline, "beginning a transaction", e))?;
        }
        self.in_transaction = true;
        Ok(())
    }

    pub fn send(&self, record: &Outgoing<'_>) -> Result<()> {
        let mut out = BaseRecord::<[u8], [u8]>::to(record.topic);
        if let Some(key) = record.key {
            out = out.key(key);
        }
        if let Some(value) = record.value {
            out = out.payload(value);
        }
        if !record.headers.is_empty() {
            let headers =
                record
                    .headers
                    .iter()
                    .fold(OwnedHeaders::new(), |headers, (key, value)| {
                        headers.insert(Header {
                            key,
                            value: Some(*value),
                        })
                    });
            out = out.headers(headers);
        }
        send_when_room(&self.producer, out).map_err(|e| classify(&self.pipeline, "producing", e))
    }

    /// Makes the checkpoint's records durable (and, transactional, visible) together.
    pub fn commit(&mut self) -> Result<()> {
        self.wait_for_deliveries()?;
        if self.transactional {
            self.producer
                .commit_transaction(CLUSTER_TIMEOUT)
                .map_err(|e| classify(&self.pipeline, "committing", e))?;
        } else {
            let failed = self.producer.context().failed.swap(0, Ordering::Relaxed);
            if failed > 0 {
                let last = self
                    .producer
                    .context()
                    .last_error
                    .lock()
                    .ok()
                    .and_then(|l| l.clone());
                return Err(PipelineError::Stage {
                    pipeline: self.pipeline.clone(),
                    message: format!(
                        "{failed} records were not delivered (last error: {})",
                        last.unwrap_or_default()
                    ),
                });
            }
        }
        self.in_transaction = false;
        Ok(())
    }

    /// Drops the checkpoint (transactional: aborted, nothing of it becomes visible).
    pub fn abort(&mut self) -> Result<()> {
        self.in_transaction = false;
        if self.transactional {
            self.producer
                .abort_transaction(CLUSTER_TIMEOUT)
                .map_err(|e| classify(&self.pipeline, "aborting", e))?;
        }
        Ok(())
    }

    fn wait_for_deliveries(&self) -> Result<()> {
        wait_for_deliveries(&self.producer, CLUSTER_TIMEOUT).map_err(|source| {
            PipelineError::Kafka {
                pipeline: self.pipeline.clone(),
                operation: "waiting for deliveries",
                source,
            }
        })
    }
}

/// A fatal transactional error means a newer incarnation took over.
fn classify(pipeline: &str, operation: &'static str, error: KafkaError) -> PipelineError {
    match &error {
        KafkaError::Transaction(e) if e.is_fatal() => PipelineError::Fenced {
            pipeline: pipeline.to_string(),
            reason: e.to_string(),
        },
        _ => PipelineError::Kafka {
            pipeline: pipeline.to_string(),
            operation,
            source: error,
        },
    }
}
