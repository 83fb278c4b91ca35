//! A windowed job's checkpoint: the input rows are pre-aggregated into partial groups for the
//! repartition topic, the repartition records are merged into window state, and windows the
//! watermark has passed are emitted (see `crate::aggregate` for the whole design). A job over a
//! table's changes pre-aggregates each record as the replacement of its key's row
//! (`crate::aggregate::changes`). A copy that owns every repartition partition merges its own
//! partials into the window state directly instead (`route`).

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use datafusion::arrow::record_batch::RecordBatch;

use crate::aggregate::changes::{self, pre_aggregate_changes, TableRows};
use crate::aggregate::codec::{
    partition_of, to_json, ChangelogKey, ChangelogValue, RepartitionRecord,
};
use crate::aggregate::pre_aggregate::{pre_aggregate, PartialGroup, PartitionTimes};
use crate::aggregate::query::WindowedQuery;
use crate::aggregate::store::{Merged, WindowStore, WindowStoreConfig};
use crate::aggregate::updates::{record_key, updates};
use crate::error::{Result, StreamsError};
use crate::io::decode::RecordDecoder;
use crate::io::encode::encode;
use crate::job::consumer::JobConsumer;
use crate::job::idle::IdleInputs;
use crate::job::input::{decode_input, decode_input_rejecting};
use crate::job::poll::Polled;
use crate::job::processor::Processor;
use crate::job::repartition::{MergeInto, Repartition};
use crate::job::stats::JobStats;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::{stateful, JobConfig};
use crate::plan::window_spec::Windows;
use crate::record::InputRecord;
use crate::sql::SqlTransform;

pub(super) struct Windowed<'a> {
    config: &'a JobConfig,
    decoders: &'a [RecordDecoder],
    transform: &'a SqlTransform,
    query: &'a WindowedQuery,
    runtime: &'a tokio::runtime::Runtime,
    /// Per owned input partition, the largest event time seen (committed with its offset).
    times: PartitionTimes,
    store: WindowStore,
    /// Over a table's changes: each key's current row, for the owned input partitions.
    table_rows: TableRows,
    idle: IdleInputs,
    /// The repartition (and changelog) topic's partitions, and the route to them.
    repartition: Repartition,
}

/// The window state as the repartition step merges into it, noting what it merged.
struct MergeState<'s> {
    job: &'s str,
    store: &'s mut WindowStore,
    touched: &'s mut BTreeSet<i32>,
    stats: &'s mut JobStats,
}

impl MergeInto<RepartitionRecord> for MergeState<'_> {
    fn merge(&mut self, partition: i32, record: RepartitionRecord) -> Result<()> {
        if self.store.merge(partition, record)? == Merged::TooLate {
            self.stats.partials_too_late += 1;
            tracing::warn!(job = %self.job, partition, "a partial group arrived after its window was emitted");
        }
        self.touched.insert(partition);
        Ok(())
    }
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
            times: PartitionTimes::new(),
            table_rows: TableRows::default(),
            idle: IdleInputs::new(match query.window {
                Windows::Updating => None,
                Windows::Fixed(_) | Windows::Session { .. } => config.idle_timeout_ms,
            }),
            store: WindowStore::new(WindowStoreConfig {
                window: query.window,
                aggregates: match config.table_as_input {
                    true => changes::aggregates(query),
                    false => query.aggregates.clone(),
                },
                over_table_changes: config.table_as_input,
                allowed_lateness_ms: config.allowed_lateness_ms,
                input_partitions: partitions,
                max_state_entries: config.max_state_entries,
            }),
            repartition: Repartition::new(partitions),
        }
    }

    /// The pre-aggregate plan's rows for a checkpoint's decoded input.
    fn pre_aggregate_rows(&self, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let session = self.transform.session();
        self.runtime.block_on(async {
            session.set_input(0, batch).await;
            let rows = self.query.pre_aggregate(session).await;
            session.clear_inputs().await;
            rows
        })
    }

    /// Input rows → late records, records without time, partials and event times.
    fn pre_aggregate(
        &mut self,
        input: &[InputRecord],
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
        touched: &mut BTreeSet<i32>,
    ) -> Result<()> {
        let batch = decode_input(self.config, &self.decoders[0], input, checkpoint, stats)?;
        let rows = self.pre_aggregate_rows(batch)?;
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
                    timestamp_ms: None,
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
        self.send_partials(result.groups, checkpoint, touched, stats)?;
        self.send_times(input, checkpoint, touched, stats)
    }

    /// A table's records → partials replacing each key's row (records that do not decode,
    /// or have no key, are dead letters and change nothing).
    fn pre_aggregate_table_changes(
        &mut self,
        input: &[InputRecord],
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
        touched: &mut BTreeSet<i32>,
    ) -> Result<()> {
        let (keyed, unkeyed): (Vec<&InputRecord>, Vec<&InputRecord>) =
            input.iter().partition(|r| r.key.is_some());
        for record in &unkeyed {
            tracing::warn!(job = %self.config.name, partition = record.partition, offset = record.offset, "table record without a key");
            checkpoint.records.push(Outgoing {
                destination: Destination::DeadLetter,
                key: None,
                value: record.value.clone(),
                timestamp_ms: None,
            });
        }
        stats.records_rejected += unkeyed.len() as u64;
        let values: Vec<InputRecord> = keyed
            .iter()
            .filter(|r| r.value.is_some())
            .map(|r| (*r).clone())
            .collect();
        let (batch, undecodable) =
            decode_input_rejecting(self.config, &self.decoders[0], &values, checkpoint, stats)?;
        let undecodable: BTreeSet<(i32, i64)> = undecodable.into_iter().collect();
        let rows = self.pre_aggregate_rows(batch)?;
        let changed: Vec<&InputRecord> = keyed
            .into_iter()
            .filter(|r| !undecodable.contains(&(r.partition, r.offset)))
            .collect();
        let groups = pre_aggregate_changes(self.query, &rows, &changed, &mut self.table_rows)?;
        let held = self.table_rows.entries() + self.store.entries();
        if held > self.config.max_state_entries {
            return Err(StreamsError::StateFull {
                what: "the table's rows and the groups",
                held,
                limit: self.config.max_state_entries,
                hint: "raise it",
            });
        }
        for (partition, changes) in self.table_rows.take_changes() {
            stateful::write_changes(checkpoint, partition, changes);
        }
        self.send_partials(groups, checkpoint, touched, stats)?;
        self.send_times(input, checkpoint, touched, stats)
    }

    /// Partial groups to their repartition partitions.
    fn send_partials(
        &mut self,
        groups: Vec<PartialGroup>,
        checkpoint: &mut Checkpoint,
        touched: &mut BTreeSet<i32>,
        stats: &mut JobStats,
    ) -> Result<()> {
        for group in groups {
            // A key's sessions merge with each other: they all go to one partition.
            let key = match self.query.window {
                Windows::Fixed(_) | Windows::Updating => {
                    to_json(&(group.window_start_ms, &group.keys))
                }
                Windows::Session { .. } => to_json(&group.keys),
            };
            let partition = partition_of(&key, self.repartition.partitions);
            let partial = RepartitionRecord::partial(group);
            self.send(partition, Some(key), partial, checkpoint, touched, stats)?;
        }
        Ok(())
    }

    /// Each input partition's event time goes to every partition after the partials it covers.
    fn send_times(
        &mut self,
        input: &[InputRecord],
        checkpoint: &mut Checkpoint,
        touched: &mut BTreeSet<i32>,
        stats: &mut JobStats,
    ) -> Result<()> {
        let sources: BTreeSet<i32> = input.iter().map(|r| r.partition).collect();
        for source in sources {
            let Some(&max_time_ms) = self.times.get(&source) else {
                continue;
            };
            let time = RepartitionRecord::Time {
                source_partition: source,
                max_time_ms,
            };
            self.send_to_every_partition(time, checkpoint, touched, stats)?;
            if let Some(offset) = checkpoint
                .offsets
                .get_mut(&(self.config.input().to_string(), source))
            {
                offset.1 = max_time_ms.to_string();
            }
        }
        Ok(())
    }

    /// `record` for repartition partition `partition` (`Repartition::send`).
    fn send(
        &mut self,
        partition: i32,
        key: Option<Vec<u8>>,
        record: RepartitionRecord,
        checkpoint: &mut Checkpoint,
        touched: &mut BTreeSet<i32>,
        stats: &mut JobStats,
    ) -> Result<()> {
        let (repartition, mut state) = self.merging(touched, stats);
        repartition.send(partition, key, record, checkpoint, &mut state)
    }

    /// The repartition step, and the window state it merges into noting what it touched.
    fn merging<'s>(
        &'s mut self,
        touched: &'s mut BTreeSet<i32>,
        stats: &'s mut JobStats,
    ) -> (&'s mut Repartition, MergeState<'s>) {
        let state = MergeState {
            job: &self.config.name,
            store: &mut self.store,
            touched,
            stats,
        };
        (&mut self.repartition, state)
    }

    /// `record` (an event time, idleness, an end) for every repartition partition.
    fn send_to_every_partition(
        &mut self,
        record: RepartitionRecord,
        checkpoint: &mut Checkpoint,
        touched: &mut BTreeSet<i32>,
        stats: &mut JobStats,
    ) -> Result<()> {
        let (repartition, mut state) = self.merging(touched, stats);
        repartition.send_to_every_partition(record, checkpoint, &mut state)
    }

    /// Repartition records read from the topic → window state (`Repartition::merge_read`).
    fn merge_internal(
        &mut self,
        internal: &[InputRecord],
        touched: &mut BTreeSet<i32>,
        stats: &mut JobStats,
    ) -> Result<()> {
        let (repartition, mut state) = self.merging(touched, stats);
        repartition.merge_read(internal, &mut state)
    }

    /// Merging directly: the repartition records that were unread at the reload go first.
    fn merge_unread(&mut self, touched: &mut BTreeSet<i32>, stats: &mut JobStats) -> Result<()> {
        let (repartition, mut state) = self.merging(touched, stats);
        repartition.merge_unread(&mut state)
    }

    /// Windows past the watermark → output rows; the touched partitions' changes → the
    /// changelog.
    fn emit(
        &mut self,
        mut touched: BTreeSet<i32>,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        self.repartition.route.commit_read(self.config, checkpoint);
        if touched.is_empty() {
            return Ok(());
        }
        // Every partition's emitted windows go through the rest of the query at once; windows
        // are emitted by the smallest watermark of the owned partitions, so one partition's
        // records can let another's windows go.
        touched.extend(self.store.owned().iter().copied());
        let mut rows = Vec::new();
        for &partition in &touched {
            rows.extend(self.store.emit(partition));
        }
        stats.windows_emitted += rows.len() as u64;
        let session = self.transform.session();
        if self.query.window == Windows::Updating {
            let output = self
                .runtime
                .block_on(self.query.post_aggregate(session, &rows))?;
            let deleted = touched
                .iter()
                .flat_map(|partition| self.store.take_deleted(*partition))
                .map(|keys| (record_key(&keys), None));
            let upserts = updates(&rows, &output, self.config.output_format)?;
            for (key, value) in upserts.into_iter().chain(deleted) {
                stats.records_out += 1;
                checkpoint.records.push(Outgoing {
                    destination: Destination::Output,
                    key: Some(key),
                    value,
                    timestamp_ms: None,
                });
            }
        } else {
            // Each result record is stamped with its window's last millisecond (event time), so
            // a job reading the output can window it again; the checkpoint's results go out in
            // that order, every state partition's together, so a reader's watermark does not
            // pass a window before all of its results have arrived.
            let output = self
                .runtime
                .block_on(self.query.timed_output(session, &rows))?;
            let mut timed = Vec::new();
            for (batch, times) in output {
                let records = encode(&[batch], self.config.output_format)?;
                match times {
                    Some(times) => {
                        timed.extend(records.into_iter().zip(times.into_iter().map(Some)))
                    }
                    None => timed.extend(records.into_iter().map(|record| (record, None))),
                }
            }
            timed.sort_by_key(|(_, time)| *time);
            stateful::write_timed_output(checkpoint, stats, timed);
        }
        for partition in touched {
            stateful::write_changes(checkpoint, partition, self.store.take_changes(partition));
        }
        Ok(())
    }
}

impl Processor for Windowed<'_> {
    fn state_size(&self) -> (usize, usize) {
        (
            self.store.entries() + self.table_rows.entries(),
            self.store.open_windows(),
        )
    }

    /// Rebuilds the state of the partitions now owned: input partitions' event times from their
    /// committed offsets' metadata, window state from the changelog.
    fn reload(&mut self, consumer: &JobConsumer) -> Result<()> {
        let owned = stateful::owned(self.config, consumer)?;
        self.times = stateful::committed_times(self.config, consumer, &owned.inputs)?
            .into_iter()
            .map(|((_, partition), time)| (partition, time))
            .collect();
        self.store.clear();
        self.store.set_owned(owned.repartition.clone());
        self.idle.assigned(&owned.inputs, Instant::now());
        self.table_rows.clear();
        // A table's rows are in the changelog partition numbered like their input partition.
        let inputs: BTreeSet<i32> = owned.inputs.iter().map(|(_, p)| *p).collect();
        let mut read: BTreeSet<i32> = owned.repartition.iter().copied().collect();
        if self.config.table_as_input {
            read.extend(&inputs);
        }
        let read: Vec<i32> = read.into_iter().collect();
        let changes = stateful::changelog::<ChangelogKey, ChangelogValue>(self.config, &read)?;
        let records = changes.len();
        for (partition, key, value) in changes {
            match (key, value) {
                (
                    ChangelogKey::TableRow {
                        source_partition,
                        key,
                    },
                    value,
                ) => {
                    if !inputs.contains(&source_partition) {
                        continue;
                    }
                    let row = match value {
                        Some(ChangelogValue::TableRow(row)) => Some(row),
                        None => None,
                        Some(other) => {
                            return Err(StreamsError::Corrupt(format!(
                                "a changelog table row record holds {other:?}"
                            )))
                        }
                    };
                    self.table_rows.restore(source_partition, key, row);
                }
                (key, value) if owned.repartition.contains(&partition) => {
                    self.store.restore(partition, key, value)?
                }
                _ => {}
            }
        }
        if !read.is_empty() {
            tracing::info!(job = %self.config.name, partitions = ?read, changelog_records = records, groups = self.store.entries(), open_windows = self.store.open_windows(), table_rows = self.table_rows.entries(), "window state restored");
        }
        // After the inputs' committed offsets: reading them settled their previous owners'
        // transactions (`route`).
        self.repartition
            .reroute(self.config, consumer, &owned.repartition)
    }

    /// Announces the end of every owned input partition to every repartition partition.
    fn end_of_input(
        &mut self,
        consumer: &JobConsumer,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut touched = BTreeSet::new();
        self.merge_unread(&mut touched, stats)?;
        for (_, source_partition) in stateful::owned(self.config, consumer)?.inputs {
            let end = RepartitionRecord::EndOfInput { source_partition };
            self.send_to_every_partition(end, checkpoint, &mut touched, stats)?;
        }
        self.emit(touched, checkpoint, stats)
    }

    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut touched = BTreeSet::new();
        self.merge_unread(&mut touched, stats)?;
        let input = &polled.inputs[0].1;
        if !input.is_empty() && self.config.table_as_input {
            self.pre_aggregate_table_changes(input, checkpoint, stats, &mut touched)?;
        } else if !input.is_empty() {
            self.pre_aggregate(input, checkpoint, stats, &mut touched)?;
        }
        self.merge_internal(&polled.internal, &mut touched, stats)?;
        self.emit(touched, checkpoint, stats)
    }

    fn announce_idle(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut touched = BTreeSet::new();
        self.merge_unread(&mut touched, stats)?;
        for (_, source_partition) in self.idle.newly_idle(polled, Instant::now()) {
            tracing::info!(job = %self.config.name, partition = source_partition, "input partition idle");
            let idle = RepartitionRecord::Idle { source_partition };
            self.send_to_every_partition(idle, checkpoint, &mut touched, stats)?;
        }
        self.emit(touched, checkpoint, stats)
    }
}
