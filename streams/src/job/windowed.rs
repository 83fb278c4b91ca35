//! A windowed job's checkpoint: the input rows are pre-aggregated into partial groups for the
//! repartition topic, the repartition records are merged into window state, and windows the
//! watermark has passed are emitted (see `crate::window` for the whole design).

use std::collections::{BTreeSet, HashMap};

use rdkafka::consumer::Consumer;
use rdkafka::TopicPartitionList;
use weir_client::CLUSTER_TIMEOUT;

use crate::decode::RecordDecoder;
use crate::encode::encode;
use crate::error::{Result, StreamsError};
use crate::job::consumer::JobConsumer;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::{decode_input, JobConfig, JobStats, Polled, Processor};
use crate::record::InputRecord;
use crate::sql::SqlTransform;
use crate::topic_reader::{self, Limit};
use crate::window::codec::{
    from_json, partition_of, to_json, ChangelogKey, ChangelogValue, RepartitionRecord,
};
use crate::window::pre_aggregate::{pre_aggregate, PartitionTimes};
use crate::window::query::WindowedQuery;
use crate::window::spec::Windows;
use crate::window::store::{Merged, WindowStore, WindowStoreConfig};
use crate::window::updates::updates;

pub(super) struct Windowed<'a> {
    config: &'a JobConfig,
    decoders: &'a [RecordDecoder],
    transform: &'a SqlTransform,
    query: &'a WindowedQuery,
    runtime: &'a tokio::runtime::Runtime,
    partitions: i32,
    /// Per owned input partition, the largest event time seen (committed with its offset).
    times: PartitionTimes,
    store: WindowStore,
    repartition_topic: String,
    changelog_topic: String,
}

impl<'a> Windowed<'a> {
    pub(super) fn new(
        config: &'a JobConfig,
        decoders: &'a [RecordDecoder],
        transform: &'a SqlTransform,
        runtime: &'a tokio::runtime::Runtime,
        partitions: i32,
    ) -> Self {
        let query = transform.windowed().expect("a windowed query");
        Windowed {
            config,
            decoders,
            transform,
            query,
            runtime,
            partitions,
            times: PartitionTimes::new(),
            store: WindowStore::new(WindowStoreConfig {
                window: query.window,
                aggregates: query.aggregates.clone(),
                allowed_lateness_ms: config.allowed_lateness_ms,
                input_partitions: partitions,
                max_state_entries: config.max_state_entries,
            }),
            repartition_topic: config.repartition_topic(),
            changelog_topic: config.changelog_topic(),
        }
    }

    /// Input rows → late records, records without time, partials and event times.
    fn pre_aggregate(
        &mut self,
        input: &[InputRecord],
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let batch = decode_input(self.config, &self.decoders[0], input, checkpoint, stats)?;
        let session = self.transform.session();
        let rows = self.runtime.block_on(async {
            session.set_input(0, batch).await;
            let rows = self.query.pre_aggregate(session).await;
            session.clear_inputs().await;
            rows
        })?;
        let result = pre_aggregate(
            self.query,
            &rows,
            &mut self.times,
            self.config.allowed_lateness_ms,
        )?;
        // Late and timeless records are rare: their positions are looked up only when there are
        // some (not a map of every record of every checkpoint).
        let mut position: HashMap<(i32, i64), usize> = HashMap::new();
        if !result.late.is_empty() || !result.without_time.is_empty() {
            position = input
                .iter()
                .enumerate()
                .map(|(i, r)| ((r.partition, r.offset), i))
                .collect();
        }
        for (destination, found) in [
            (Destination::Late, &result.late),
            (Destination::DeadLetter, &result.without_time),
        ] {
            for at in found {
                let record = &input[position[at]];
                checkpoint.records.push(Outgoing {
                    destination,
                    key: record.key.clone(),
                    value: record.value.clone(),
                });
            }
        }
        if !result.late.is_empty() {
            tracing::warn!(job = %self.config.name, late = result.late.len(), first = ?result.late[0], "records too late for their windows");
        }
        if !result.without_time.is_empty() {
            tracing::warn!(job = %self.config.name, records = result.without_time.len(), first = ?result.without_time[0], "records without an event time");
        }
        stats.records_late += result.late.len() as u64;
        stats.records_rejected += result.without_time.len() as u64;
        for group in result.groups {
            // A key's sessions merge with each other: they all go to one partition.
            let key = match self.query.window {
                Windows::Fixed(_) | Windows::Updating => {
                    to_json(&(group.window_start_ms, &group.keys))
                }
                Windows::Session { .. } => to_json(&group.keys),
            };
            checkpoint.records.push(Outgoing {
                destination: Destination::Repartition(partition_of(&key, self.partitions)),
                key: Some(key),
                value: Some(to_json(&RepartitionRecord::partial(group))),
            });
        }
        // Each input partition's event time goes to every partition after the partials it covers.
        let sources: BTreeSet<i32> = input.iter().map(|r| r.partition).collect();
        for source in sources {
            let Some(&max_time_ms) = self.times.get(&source) else {
                continue;
            };
            let time = to_json(&RepartitionRecord::Time {
                source_partition: source,
                max_time_ms,
            });
            for partition in 0..self.partitions {
                checkpoint.records.push(Outgoing {
                    destination: Destination::Repartition(partition),
                    key: None,
                    value: Some(time.clone()),
                });
            }
            if let Some(offset) = checkpoint
                .offsets
                .get_mut(&(self.config.input().to_string(), source))
            {
                offset.1 = max_time_ms.to_string();
            }
        }
        Ok(())
    }

    /// Repartition records → window state; windows past the watermark → output rows.
    fn merge_and_emit(
        &mut self,
        internal: &[InputRecord],
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut touched = BTreeSet::new();
        for record in internal {
            let value = record.value.as_deref().unwrap_or_default();
            let merged = self
                .store
                .merge(record.partition, from_json(value, "repartition")?)?;
            if merged == Merged::TooLate {
                stats.partials_too_late += 1;
                tracing::warn!(job = %self.config.name, partition = record.partition, offset = record.offset, "a partial group arrived after its window was emitted");
            }
            touched.insert(record.partition);
        }
        // Every partition's emitted windows go through the rest of the query at once.
        let mut rows = Vec::new();
        for &partition in &touched {
            rows.extend(self.store.emit(partition));
        }
        stats.windows_emitted += rows.len() as u64;
        let output = self
            .runtime
            .block_on(self.query.post_aggregate(self.transform.session(), &rows))?;
        if self.query.window == Windows::Updating {
            for (key, value) in updates(&rows, &output, self.config.output_format)? {
                stats.records_out += 1;
                checkpoint.records.push(Outgoing {
                    destination: Destination::Output,
                    key: Some(key),
                    value,
                });
            }
        } else {
            for record in encode(&output, self.config.output_format)? {
                stats.records_out += 1;
                checkpoint.records.push(Outgoing {
                    destination: Destination::Output,
                    key: record.key,
                    value: Some(record.value),
                });
            }
        }
        for partition in touched {
            for (key, value) in self.store.take_changes(partition) {
                checkpoint.records.push(Outgoing {
                    destination: Destination::Changelog(partition),
                    key: Some(to_json(&key)),
                    value: value.as_ref().map(to_json),
                });
            }
        }
        Ok(())
    }
}

impl Processor for Windowed<'_> {
    fn state_size(&self) -> (usize, usize) {
        (self.store.entries(), self.store.open_windows())
    }

    /// Rebuilds the state of the partitions now owned: input partitions' event times from their
    /// committed offsets' metadata, window state from the changelog.
    fn reload(&mut self, consumer: &JobConsumer) -> Result<()> {
        let assignment = consumer
            .assignment()
            .map_err(StreamsError::kafka("reading the assignment"))?;
        let mut inputs = TopicPartitionList::new();
        let mut owned = Vec::new();
        for element in assignment.elements() {
            if element.topic() == self.config.input() {
                inputs.add_partition(element.topic(), element.partition());
            } else if element.topic() == self.repartition_topic {
                owned.push(element.partition());
            }
        }
        self.times.clear();
        if inputs.count() > 0 {
            let committed = consumer
                .committed_offsets(inputs, CLUSTER_TIMEOUT)
                .map_err(StreamsError::kafka("reading committed offsets"))?;
            for element in committed.elements() {
                if let Ok(time) = element.metadata().parse::<i64>() {
                    self.times.insert(element.partition(), time);
                }
            }
        }
        self.store.clear();
        if !owned.is_empty() {
            let reader = topic_reader::consumer(&self.config.client)?;
            let records = topic_reader::read(
                &reader,
                &self.changelog_topic,
                &owned,
                Limit::FailBeyond(usize::MAX),
                CLUSTER_TIMEOUT * 4,
            )?;
            for record in &records {
                let key: ChangelogKey =
                    from_json(record.key.as_deref().unwrap_or_default(), "changelog key")?;
                let value: Option<ChangelogValue> = match &record.value {
                    Some(value) => Some(from_json(value, "changelog")?),
                    None => None,
                };
                self.store.restore(record.partition, key, value)?;
            }
            tracing::info!(job = %self.config.name, partitions = ?owned, changelog_records = records.len(), groups = self.store.entries(), open_windows = self.store.open_windows(), "window state restored");
        }
        Ok(())
    }

    /// Announces the end of every owned input partition to every repartition partition.
    fn end_of_input(&mut self, consumer: &JobConsumer, checkpoint: &mut Checkpoint) -> Result<()> {
        let assignment = consumer
            .assignment()
            .map_err(StreamsError::kafka("reading the assignment"))?;
        for element in assignment.elements() {
            if element.topic() != self.config.input() {
                continue;
            }
            let end = to_json(&RepartitionRecord::EndOfInput {
                source_partition: element.partition(),
            });
            for partition in 0..self.partitions {
                checkpoint.records.push(Outgoing {
                    destination: Destination::Repartition(partition),
                    key: None,
                    value: Some(end.clone()),
                });
            }
        }
        Ok(())
    }

    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let input = &polled.inputs[0].1;
        if !input.is_empty() {
            self.pre_aggregate(input, checkpoint, stats)?;
        }
        self.merge_and_emit(&polled.internal, checkpoint, stats)
    }
}
