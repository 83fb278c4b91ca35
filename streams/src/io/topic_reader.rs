//! Reading partitions from the beginning up to their end as it is when reading starts
//! (read_committed): what `weir sql` queries, what a job samples its schema from, and how a
//! windowed job restores its state from the changelog.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use weir_client::ClientSettings;

use crate::error::{Result, StreamsError};
use crate::record::InputRecord;

/// What to do when a topic holds more records than asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Fail: the caller must not work on part of the data without saying so.
    FailBeyond(usize),
    /// Stop there (a sample).
    StopAt(usize),
}

/// A reader's client context: reaching a partition's end is how a read ends, not an error
/// worth logging (librdkafka reports it as a "global error" when no one polls the partition).
pub struct ReaderContext;

impl ClientContext for ReaderContext {
    fn error(&self, error: KafkaError, reason: &str) {
        let end_of_partition = matches!(
            error,
            KafkaError::PartitionEOF(_) | KafkaError::Global(RDKafkaErrorCode::PartitionEOF)
        );
        if !end_of_partition {
            tracing::error!(%error, reason, "librdkafka error");
        }
    }
}

impl ConsumerContext for ReaderContext {}

/// A consumer that reads partitions to their end.
pub type Reader = BaseConsumer<ReaderContext>;

/// A read_committed consumer outside any group.
pub fn consumer(client: &ClientSettings) -> Result<Reader> {
    client
        .config(&[
            ("group.id", "weir-reader"),
            ("enable.auto.commit", "false"),
            ("enable.partition.eof", "true"),
            ("isolation.level", "read_committed"),
            // A read ends at the partitions' ends: a fetch past the last record should come
            // back at once (the end), not wait at the broker for records (default 500 ms).
            ("fetch.wait.max.ms", "10"),
        ])
        .create_with_context(ReaderContext)
        .map_err(StreamsError::kafka("creating the consumer"))
}

/// The partitions of `topic`.
pub fn partitions(consumer: &Reader, topic: &str, timeout: Duration) -> Result<Vec<i32>> {
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(StreamsError::kafka("reading metadata"))?;
    metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty())
        .map(|t| t.partitions().iter().map(|p| p.id()).collect())
        .ok_or_else(|| StreamsError::Config(format!("no topic named {topic}")))
}

/// Every committed record of `partitions` of `topic`, from the beginning up to the end each had
/// when reading began (an open transaction is waited for), within `limit`.
pub fn read(
    consumer: &Reader,
    topic: &str,
    partitions: &[i32],
    limit: Limit,
    timeout: Duration,
) -> Result<Vec<InputRecord>> {
    let ranges: Vec<Range> = partitions.iter().map(|&p| Range::whole(p)).collect();
    read_ranges(consumer, topic, &ranges, limit, timeout)
}

/// Offsets of one partition to read: `[start, end)`, each bound optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub partition: i32,
    pub start: Option<i64>,
    pub end: Option<i64>,
}

impl Range {
    pub fn whole(partition: i32) -> Self {
        Range {
            partition,
            start: None,
            end: None,
        }
    }
}

/// The committed records of `ranges` of `topic` (each end capped at the partition's end when
/// reading began), within `limit`.
pub fn read_ranges(
    consumer: &Reader,
    topic: &str,
    ranges: &[Range],
    limit: Limit,
    timeout: Duration,
) -> Result<Vec<InputRecord>> {
    Ok(read_ranges_to_end(consumer, topic, ranges, limit, timeout)?.0)
}

/// [`read_ranges`], also answering where each partition with records to read was read up to
/// (its range's end, capped at the partition's end when reading began).
pub fn read_ranges_to_end(
    consumer: &Reader,
    topic: &str,
    ranges: &[Range],
    limit: Limit,
    timeout: Duration,
) -> Result<(Vec<InputRecord>, BTreeMap<i32, i64>)> {
    let mut assignment = TopicPartitionList::new();
    let mut ends = Vec::new();
    for range in ranges {
        let (low, high) = consumer
            .fetch_watermarks(topic, range.partition, timeout)
            .map_err(StreamsError::kafka("reading the end offsets"))?;
        let start = range.start.unwrap_or(low).max(low);
        let end = range.end.unwrap_or(high).min(high);
        if end > start {
            assignment
                .add_partition_offset(topic, range.partition, Offset::Offset(start))
                .map_err(StreamsError::kafka("assigning"))?;
            ends.push((range.partition, end));
        }
    }
    let read_to = ends.iter().copied().collect();
    consumer
        .assign(&assignment)
        .map_err(StreamsError::kafka("assigning"))?;
    let mut records = Vec::new();
    let deadline = Instant::now() + timeout;
    while !ends.is_empty() {
        if Instant::now() > deadline {
            return Err(StreamsError::Timeout {
                what: format!("reading {topic} (partitions left: {ends:?})"),
                timeout,
            });
        }
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let (partition, next) = match message {
            Ok(message) => {
                let (partition, next) = (message.partition(), message.offset() + 1);
                // A partition already done, or past its range's end: not part of the answer.
                let Some(&(_, end)) = ends.iter().find(|(p, _)| *p == partition) else {
                    continue;
                };
                if message.offset() >= end {
                    ends.retain(|&(p, _)| p != partition);
                    continue;
                }
                match limit {
                    Limit::FailBeyond(max) if records.len() == max => {
                        return Err(StreamsError::TooMuch(format!(
                            "{topic} holds more than {max} records to read; raise the limit \
                             (weir sql: --max-records) or narrow the query by _partition, \
                             _offset or _timestamp"
                        )))
                    }
                    Limit::StopAt(max) if records.len() == max => break,
                    _ => {}
                }
                records.push(InputRecord::from_message(&message));
                (partition, next)
            }
            Err(KafkaError::PartitionEOF(partition)) => {
                let position = consumer.position().ok().and_then(|positions| {
                    positions
                        .find_partition(topic, partition)?
                        .offset()
                        .to_raw()
                });
                (partition, position.unwrap_or(-1))
            }
            Err(error) => return Err(StreamsError::kafka("reading")(error)),
        };
        ends.retain(|&(p, end)| !(p == partition && next >= end));
    }
    consumer
        .unassign()
        .map_err(StreamsError::kafka("unassigning"))?;
    Ok((records, read_to))
}
