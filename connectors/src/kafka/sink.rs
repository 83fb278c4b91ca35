//! The `kafka` sink: rows as JSON records, and the input offsets they cover, in one transaction
//! on the far cluster.

use std::time::{Duration, Instant};

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::json::LineDelimitedWriter;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use super::config::KafkaSinkConfig;
use super::produce::{send_when_room, wait_for_deliveries};
use crate::error::ConnectorError;
use crate::sink::{Sink, SinkOffsets, SinkStats};

const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

pub struct KafkaSink {
    config: KafkaSinkConfig,
    /// Names the transactional id and the offsets topic.
    pipeline: String,
    /// The topic the rows were read from (the offsets' topic).
    input_topic: String,
    producer: Option<ThreadedProducer<DefaultProducerContext>>,
    in_transaction: bool,
    key_index: Option<usize>,
    pending_rows: u64,
    committed: SinkOffsets,
    stats: SinkStats,
}

fn failure(what: &str) -> impl FnOnce(KafkaError) -> ConnectorError + '_ {
    move |error| ConnectorError::Sink(format!("far cluster, {what}: {error}"))
}

impl KafkaSink {
    pub fn new(
        config: KafkaSinkConfig,
        pipeline: &str,
        input_topic: &str,
    ) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        Ok(KafkaSink {
            config,
            pipeline: pipeline.into(),
            input_topic: input_topic.into(),
            producer: None,
            in_transaction: false,
            key_index: None,
            pending_rows: 0,
            committed: SinkOffsets::new(),
            stats: SinkStats::default(),
        })
    }

    /// The far cluster's compacted topic of this sink's input offsets.
    pub fn offsets_topic(&self) -> String {
        format!("weir-{}-sink-offsets", self.pipeline)
    }

    fn client(&self) -> ClientConfig {
        let mut client = ClientConfig::new();
        client.set("bootstrap.servers", &self.config.bootstrap);
        for (key, value) in &self.config.client_properties {
            client.set(key, value);
        }
        client
    }

    async fn create_topics(&self) -> Result<(), ConnectorError> {
        let admin: AdminClient<DefaultClientContext> = self
            .client()
            .create()
            .map_err(failure("creating the admin client"))?;
        let offsets_topic = self.offsets_topic();
        let topics = [
            NewTopic::new(
                &self.config.topic,
                self.config.partitions,
                TopicReplication::Fixed(-1),
            ),
            NewTopic::new(&offsets_topic, 1, TopicReplication::Fixed(-1))
                .set("cleanup.policy", "compact"),
        ];
        let options = AdminOptions::new().operation_timeout(Some(CLUSTER_TIMEOUT));
        for result in admin
            .create_topics(&topics, &options)
            .await
            .map_err(failure("creating topics"))?
        {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((topic, code)) => {
                    return Err(ConnectorError::Sink(format!(
                        "far cluster: cannot create {topic}: {code}"
                    )))
                }
            }
        }
        Ok(())
    }

    /// The committed offsets: the offsets topic read (read_committed) to its end.
    fn read_offsets(&self) -> Result<SinkOffsets, ConnectorError> {
        let topic = self.offsets_topic();
        let consumer: BaseConsumer = self
            .client()
            .set("group.id", "weir-bridge")
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .map_err(failure("creating a consumer"))?;
        let (low, high) = consumer
            .fetch_watermarks(&topic, 0, CLUSTER_TIMEOUT)
            .map_err(failure("reading offsets"))?;
        let mut offsets = SinkOffsets::new();
        if high <= low {
            return Ok(offsets);
        }
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset(&topic, 0, Offset::Offset(low))
            .map_err(failure("assigning"))?;
        consumer.assign(&assignment).map_err(failure("assigning"))?;
        let prefix = format!("{}:", self.input_topic);
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        loop {
            let position = consumer.position().map_err(failure("reading offsets"))?;
            let at = position.elements().first().map(|e| e.offset());
            if matches!(at, Some(Offset::Offset(at)) if at >= high) {
                return Ok(offsets);
            }
            if Instant::now() > deadline {
                return Err(ConnectorError::Sink(format!(
                    "far cluster: {topic} could not be read to its end"
                )));
            }
            let Some(message) = consumer.poll(Duration::from_millis(100)) else {
                continue;
            };
            let message = message.map_err(failure("reading offsets"))?;
            let key = message
                .key()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let Some(partition) = key
                .strip_prefix(&prefix)
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let value = message
                .payload()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            if let Ok(next) = value.parse::<i64>() {
                offsets.insert(partition, next);
            }
        }
    }

    fn producer(&self) -> Result<&ThreadedProducer<DefaultProducerContext>, ConnectorError> {
        self.producer
            .as_ref()
            .ok_or_else(|| ConnectorError::Sink("the sink is not open".into()))
    }

    fn begin(&mut self) -> Result<(), ConnectorError> {
        if !self.in_transaction {
            self.producer()?
                .begin_transaction()
                .map_err(failure("beginning a transaction"))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    fn send(&self, topic: &str, key: Option<&[u8]>, value: &[u8]) -> Result<(), ConnectorError> {
        let mut record = BaseRecord::<[u8], [u8]>::to(topic).payload(value);
        if let Some(key) = key {
            record = record.key(key);
        }
        send_when_room(self.producer()?, record).map_err(failure("producing"))
    }

    fn finish_transaction(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        self.begin()?;
        let offsets_topic = self.offsets_topic();
        for (partition, next) in offsets {
            if self.committed.get(partition) != Some(next) {
                let key = format!("{}:{partition}", self.input_topic);
                self.send(
                    &offsets_topic,
                    Some(key.as_bytes()),
                    next.to_string().as_bytes(),
                )?;
            }
        }
        let producer = self.producer()?;
        // Records still unacknowledged after the wait are flushed (or failed) by the commit.
        let _ = wait_for_deliveries(producer, CLUSTER_TIMEOUT);
        producer
            .commit_transaction(CLUSTER_TIMEOUT)
            .map_err(failure("committing"))?;
        self.in_transaction = false;
        Ok(())
    }
}

#[async_trait::async_trait]
impl Sink for KafkaSink {
    async fn open(&mut self, schema: SchemaRef) -> Result<SinkOffsets, ConnectorError> {
        if let Some(column) = &self.config.key_column {
            let index = schema.index_of(column).map_err(|_| {
                ConnectorError::Config(format!("key_column: no column '{column}' in the rows"))
            })?;
            self.key_index = Some(index);
        }
        self.create_topics().await?;
        let transactional_id =
            format!("weir-pipeline-{}-sink-{}", self.pipeline, self.config.topic);
        let producer: ThreadedProducer<DefaultProducerContext> = self
            .client()
            .set("transactional.id", &transactional_id)
            .set("transaction.timeout.ms", "60000")
            .set("linger.ms", "5")
            .create()
            .map_err(failure("creating the producer"))?;
        // Initialising fences the previous incarnation and ends its open transaction.
        tokio::task::block_in_place(|| producer.init_transactions(CLUSTER_TIMEOUT))
            .map_err(failure("initialising transactions"))?;
        self.producer = Some(producer);
        self.committed = tokio::task::block_in_place(|| self.read_offsets())?;
        Ok(self.committed.clone())
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.begin()?;
        let mut encoded = Vec::new();
        let mut writer = LineDelimitedWriter::new(&mut encoded);
        writer
            .write(batch)
            .and_then(|_| writer.finish())
            .map_err(|e| ConnectorError::Sink(format!("encoding rows: {e}")))?;
        drop(writer);
        let keys = match self.key_index {
            Some(index) => Some(
                ArrayFormatter::try_new(batch.column(index).as_ref(), &FormatOptions::default())
                    .map_err(|e| ConnectorError::Sink(format!("key_column: {e}")))?,
            ),
            None => None,
        };
        let topic = self.config.topic.clone();
        for (row, value) in encoded
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let key = keys
                .as_ref()
                .filter(|_| batch.column(self.key_index.unwrap_or(0)).is_valid(row))
                .map(|formatter| formatter.value(row).to_string());
            self.send(&topic, key.as_deref().map(str::as_bytes), value)?;
        }
        self.pending_rows += batch.num_rows() as u64;
        Ok(())
    }

    fn should_commit(&self, since_commit: Duration) -> bool {
        self.pending_rows >= self.config.batch_rows as u64
            || since_commit >= Duration::from_millis(self.config.commit_interval_ms)
    }

    async fn commit(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        if !self.in_transaction && *offsets == self.committed {
            return Ok(());
        }
        if let Err(error) = tokio::task::block_in_place(|| self.finish_transaction(offsets)) {
            if let Some(producer) = &self.producer {
                let _ = tokio::task::block_in_place(|| producer.abort_transaction(CLUSTER_TIMEOUT));
            }
            self.in_transaction = false;
            return Err(error);
        }
        self.stats.rows_committed += std::mem::take(&mut self.pending_rows);
        self.stats.commits += 1;
        self.committed = offsets.clone();
        Ok(())
    }

    fn stats(&self) -> SinkStats {
        self.stats
    }
}
