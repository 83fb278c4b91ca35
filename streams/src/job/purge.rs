//! Deleting what a job's own internal topics hold once every reader has committed past it, as
//! Kafka Streams purges its repartition topics (`repartition.purge.interval.ms`, 30 s). A
//! repartition topic is read by its job's group alone; a stage's results topic read as a stream
//! (chunks, `job::stages`) by the group of every stage naming that CTE.
//!
//! Those topics are created without time retention (`retention.ms=-1`, [`NO_TIME_RETENTION`]):
//! retention goes by the records' timestamps, which are event times here, so a backfill of
//! events older than the broker's retention, or a job stopped longer than it, would lose rows
//! nobody had read yet. Purging is what keeps them from growing instead.
//!
//! Invariant: a partition is cut only below the committed offset of every group reading it;
//! one some reader has no committed offset for is left alone. Committed offsets only grow
//! (a fenced zombie cannot commit), so an offset read here stays safe to cut below.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use weir_client::{ClientSettings, CLUSTER_TIMEOUT};

use crate::error::{Result, StreamsError};
use crate::io::topic_reader;

/// The topic setting internal topics are created with (see the module's tour).
pub(crate) const NO_TIME_RETENTION: (&str, &str) = ("retention.ms", "-1");

/// Kafka Streams' default purge interval.
pub const DEFAULT_PURGE_INTERVAL_MS: u64 = 30_000;

/// One internal topic and the groups that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Purge {
    pub topic: String,
    pub readers: Vec<String>,
}

/// Purges its topics at most once an interval.
pub(crate) struct Purger {
    purges: Vec<Purge>,
    interval: Duration,
    last: Instant,
    client: ClientSettings,
    /// Per reader group, a consumer that never joins it: it only reads the committed offsets.
    groups: BTreeMap<String, BaseConsumer>,
    admin: Option<AdminClient<DefaultClientContext>>,
    reader: Option<topic_reader::Reader>,
    /// Where each partition was cut last (it is not asked again until its readers move on).
    cut_at: BTreeMap<(String, i32), i64>,
}

impl Purger {
    /// A purger of `purges` every `interval` (the first an interval from now).
    pub(crate) fn new(client: &ClientSettings, purges: Vec<Purge>, interval: Duration) -> Self {
        Purger {
            purges,
            interval,
            last: Instant::now(),
            client: client.clone(),
            groups: BTreeMap::new(),
            admin: None,
            reader: None,
            cut_at: BTreeMap::new(),
        }
    }

    /// Purges once the interval has passed since the last time. A failure is logged, not
    /// returned: purging is housekeeping, and the next try comes an interval later.
    pub(crate) fn purge_if_due(&mut self) {
        if self.purges.is_empty() || self.last.elapsed() < self.interval {
            return;
        }
        self.last = Instant::now();
        for at in 0..self.purges.len() {
            let purge = self.purges[at].clone();
            match self.purge(&purge) {
                Ok(cut) if !cut.is_empty() => {
                    tracing::debug!(topic = %purge.topic, ?cut, "consumed records purged")
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(topic = %purge.topic, %error, "purging consumed records failed; trying again later")
                }
            }
        }
    }

    /// Deletes each partition's records below the lowest offset its readers committed; the
    /// (partition, offset) pairs it cut at.
    fn purge(&mut self, purge: &Purge) -> Result<Vec<(i32, i64)>> {
        let partitions = {
            let reader = match &mut self.reader {
                Some(reader) => reader,
                none => none.insert(topic_reader::consumer(&self.client)?),
            };
            topic_reader::partitions(reader, &purge.topic, CLUSTER_TIMEOUT)?
        };
        let mut committed = Vec::with_capacity(purge.readers.len());
        for group in &purge.readers {
            committed.push(self.committed(group, &purge.topic, &partitions)?);
        }
        let cut: Vec<(i32, i64)> = partitions
            .iter()
            .filter_map(|partition| {
                // Every reader's offset, or none if one of them has not committed.
                let offsets: Option<Vec<i64>> = committed
                    .iter()
                    .map(|c| c.get(partition).copied())
                    .collect();
                let lowest = offsets?.into_iter().min()?;
                let before = self.cut_at.get(&(purge.topic.clone(), *partition));
                (lowest > before.copied().unwrap_or(0)).then_some((*partition, lowest))
            })
            .collect();
        if cut.is_empty() {
            return Ok(cut);
        }
        let mut before = TopicPartitionList::new();
        for &(partition, offset) in &cut {
            before
                .add_partition_offset(&purge.topic, partition, Offset::Offset(offset))
                .map_err(StreamsError::kafka("listing offsets"))?;
        }
        let admin = match &mut self.admin {
            Some(admin) => admin,
            none => none.insert(
                self.client
                    .config(&[])
                    .create()
                    .map_err(StreamsError::kafka("creating the admin client"))?,
            ),
        };
        let options = AdminOptions::new().operation_timeout(Some(CLUSTER_TIMEOUT));
        let deleted = futures::executor::block_on(admin.delete_records(&before, &options))
            .map_err(StreamsError::kafka("deleting consumed records"))?;
        for element in deleted.elements() {
            if let Err(error) = element.error() {
                return Err(StreamsError::Internal(format!(
                    "deleting {}-{}'s consumed records: {error}",
                    element.topic(),
                    element.partition()
                )));
            }
        }
        for &(partition, offset) in &cut {
            self.cut_at.insert((purge.topic.clone(), partition), offset);
        }
        Ok(cut)
    }

    /// What `group` committed for `topic`'s `partitions` (those with a commit only).
    fn committed(
        &mut self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, i64>> {
        let consumer = match self.groups.get(group) {
            Some(consumer) => consumer,
            None => {
                // read_uncommitted: the offsets committed last, without waiting for a
                // transaction that is committing more (what it commits is not cut yet).
                let consumer: BaseConsumer = self
                    .client
                    .config(&[
                        ("group.id", group),
                        ("enable.auto.commit", "false"),
                        ("isolation.level", "read_uncommitted"),
                    ])
                    .create()
                    .map_err(StreamsError::kafka("creating a consumer"))?;
                self.groups.entry(group.to_string()).or_insert(consumer)
            }
        };
        let mut wanted = TopicPartitionList::new();
        for &partition in partitions {
            wanted.add_partition(topic, partition);
        }
        let committed = consumer
            .committed_offsets(wanted, CLUSTER_TIMEOUT)
            .map_err(StreamsError::kafka("reading committed offsets"))?;
        Ok(committed
            .elements()
            .iter()
            .filter_map(|element| match element.offset() {
                Offset::Offset(offset) => Some((element.partition(), offset)),
                _ => None,
            })
            .collect())
    }
}
