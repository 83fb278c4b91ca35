//! The `kafka` sink: rows as JSON records, and the input offsets they cover, in one transaction
//! on the far cluster.

use std::time::{Duration, Instant};

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::json::LineDelimitedWriter;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use weir_client::{
    create_topics, CheckpointProducer, ClientError, ClientSettings, Outgoing, Remedy,
    CLUSTER_TIMEOUT,
};

use super::config::KafkaSinkConfig;
use crate::error::ConnectorError;
use crate::sink::{Changes, Sink, SinkOffsets, SinkStats};

/// How long the far cluster may take to end a transaction the sink left open.
const TRANSACTION_TIMEOUT_MS: u64 = 60_000;

pub struct KafkaSink {
    config: KafkaSinkConfig,
    /// Names the transactional id and the offsets topic.
    pipeline: String,
    /// The topic the rows were read from (the offsets' topic).
    input_topic: String,
    client: ClientSettings,
    producer: Option<CheckpointProducer>,
    key_index: Option<usize>,
    /// Rows are an updating aggregate's changes: keyed records and tombstones, to a compacted
    /// topic.
    changes: bool,
    pending_rows: u64,
    committed: SinkOffsets,
    stats: SinkStats,
}

/// The producer's error: fenced (a newer copy of the pipeline writes the sink now), or a
/// failure of the far cluster.
fn far_cluster(error: ClientError) -> ConnectorError {
    ConnectorError::far_cluster("producing")(error)
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
            client: config.client(),
            config,
            pipeline: pipeline.into(),
            input_topic: input_topic.into(),
            producer: None,
            key_index: None,
            changes: false,
            pending_rows: 0,
            committed: SinkOffsets::new(),
            stats: SinkStats::default(),
        })
    }

    /// The far cluster's compacted topic of this sink's input offsets.
    pub fn offsets_topic(&self) -> String {
        format!("weir-{}-sink-offsets", self.pipeline)
    }

    async fn create_topics(&self) -> Result<(), ConnectorError> {
        let admin: AdminClient<DefaultClientContext> = self
            .client
            .config(&[])
            .create()
            .map_err(ConnectorError::far_kafka("creating the admin client"))?;
        let offsets_topic = self.offsets_topic();
        let output = NewTopic::new(
            &self.config.topic,
            self.config.partitions,
            TopicReplication::Fixed(-1),
        );
        let topics = [
            if self.changes {
                output.set("cleanup.policy", "compact")
            } else {
                output
            },
            NewTopic::new(&offsets_topic, 1, TopicReplication::Fixed(-1))
                .set("cleanup.policy", "compact"),
        ];
        create_topics(&admin, &topics, CLUSTER_TIMEOUT)
            .await
            .map_err(ConnectorError::far_cluster("creating topics"))?;
        Ok(())
    }

    /// The committed offsets: the offsets topic read (read_committed) to its end.
    fn read_offsets(&self) -> Result<SinkOffsets, ConnectorError> {
        let topic = self.offsets_topic();
        let consumer: BaseConsumer = self
            .client
            .config(&[
                ("group.id", "weir-bridge"),
                ("enable.auto.commit", "false"),
                ("isolation.level", "read_committed"),
            ])
            .create()
            .map_err(ConnectorError::far_kafka("creating a consumer"))?;
        let (low, high) = consumer
            .fetch_watermarks(&topic, 0, CLUSTER_TIMEOUT)
            .map_err(ConnectorError::far_kafka("reading offsets"))?;
        let mut offsets = SinkOffsets::new();
        if high <= low {
            return Ok(offsets);
        }
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset(&topic, 0, Offset::Offset(low))
            .map_err(ConnectorError::far_kafka("assigning"))?;
        consumer
            .assign(&assignment)
            .map_err(ConnectorError::far_kafka("assigning"))?;
        let prefix = format!("{}:", self.input_topic);
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        loop {
            let position = consumer
                .position()
                .map_err(ConnectorError::far_kafka("reading offsets"))?;
            let at = position.elements().first().map(|e| e.offset());
            if matches!(at, Some(Offset::Offset(at)) if at >= high) {
                return Ok(offsets);
            }
            if Instant::now() > deadline {
                return Err(ConnectorError::target(
                    "far cluster",
                    format!("reading {topic}"),
                    Remedy::Retry,
                    "not read to its end in time",
                ));
            }
            let Some(message) = consumer.poll(Duration::from_millis(100)) else {
                continue;
            };
            let message = message.map_err(ConnectorError::far_kafka("reading offsets"))?;
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

    fn producer(&mut self) -> Result<&mut CheckpointProducer, ConnectorError> {
        self.producer
            .as_mut()
            .ok_or_else(|| ConnectorError::Internal("the sink is not open".into()))
    }

    fn in_transaction(&self) -> bool {
        self.producer
            .as_ref()
            .is_some_and(CheckpointProducer::in_transaction)
    }

    fn send(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        value: &[u8],
    ) -> Result<(), ConnectorError> {
        self.producer()?
            .send(&Outgoing::new(topic, key, Some(value)))
            .map_err(far_cluster)
    }

    fn finish_transaction(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        self.producer()?.begin().map_err(far_cluster)?;
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
        self.producer()?.commit().map_err(far_cluster)
    }
}

#[async_trait::async_trait]
impl Sink for KafkaSink {
    async fn open(&mut self, schema: SchemaRef) -> Result<SinkOffsets, ConnectorError> {
        if let Some(problem) = self.config.key_column_problem(&schema, self.changes) {
            return Err(ConnectorError::Config(problem));
        }
        self.key_index = match &self.config.key_column {
            Some(column) => schema.index_of(column).ok(),
            None => None,
        };
        self.create_topics().await?;
        let transactional_id =
            format!("weir-pipeline-{}-sink-{}", self.pipeline, self.config.topic);
        // Initialising fences the previous incarnation and ends its open transaction.
        let producer = tokio::task::block_in_place(|| {
            CheckpointProducer::transactional(
                &self.client,
                &transactional_id,
                TRANSACTION_TIMEOUT_MS,
                &[],
            )
        })
        .map_err(far_cluster)?;
        self.producer = Some(producer);
        self.committed = tokio::task::block_in_place(|| self.read_offsets())?;
        Ok(self.committed.clone())
    }

    fn expect_changes(&mut self) -> Result<(), ConnectorError> {
        let no_columns = arrow::datatypes::Schema::empty();
        if let Some(problem) = self.config.key_column_problem(&no_columns, true) {
            return Err(ConnectorError::Config(problem));
        }
        self.changes = true;
        Ok(())
    }

    /// Each change as a record keyed by its group: its row, or a tombstone.
    async fn apply(&mut self, changes: &Changes) -> Result<(), ConnectorError> {
        if changes.is_empty() {
            return Ok(());
        }
        self.producer()?.begin().map_err(far_cluster)?;
        let encoded = json_lines(&changes.rows)?;
        let lines = encoded.split(|b| *b == b'\n').filter(|l| !l.is_empty());
        let topic = self.config.topic.clone();
        for ((key, deleted), value) in changes.keys.iter().zip(&changes.deleted).zip(lines) {
            let value = (!deleted).then_some(value);
            self.producer()?
                .send(&Outgoing::new(&topic, Some(key.as_bytes()), value))
                .map_err(far_cluster)?;
        }
        self.pending_rows += changes.len() as u64;
        Ok(())
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.producer()?.begin().map_err(far_cluster)?;
        let encoded = json_lines(batch)?;
        let keys = match self.key_index {
            Some(index) => Some(
                ArrayFormatter::try_new(batch.column(index).as_ref(), &FormatOptions::default())
                    .map_err(ConnectorError::rows("key_column"))?,
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
        if !self.in_transaction() && *offsets == self.committed {
            return Ok(());
        }
        if let Err(error) = tokio::task::block_in_place(|| self.finish_transaction(offsets)) {
            if let Some(producer) = &mut self.producer {
                // The error to report is the commit's; a failed abort leaves the transaction
                // to the far cluster's timeout (or the next incarnation's fencing).
                let _ = tokio::task::block_in_place(|| producer.abort());
            }
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

/// `batch` as JSON lines, one per row (a row of nulls is `{}`).
fn json_lines(batch: &RecordBatch) -> Result<Vec<u8>, ConnectorError> {
    let mut encoded = Vec::new();
    let mut writer = LineDelimitedWriter::new(&mut encoded);
    writer
        .write(batch)
        .and_then(|_| writer.finish())
        .map_err(ConnectorError::rows("encoding rows"))?;
    drop(writer);
    Ok(encoded)
}
