//! An interval join's checkpoint (see `crate::join::interval`): each input's rows are evaluated
//! by their side's plan, rows behind their partition's watermark go to the late topic, the
//! others travel through the repartition topic keyed by the join key (so both sides of a key
//! meet on one partition), followed by each input partition's largest event time; the owner of
//! a repartition partition matches them in its state, drops what the watermark passed, and the
//! joined rows go through the rest of the query to the output — all in the checkpoint's
//! transaction, with the state's changes in the changelog. A copy that owns every repartition
//! partition merges its own rows into the state directly instead (`route`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, ArrayRef, Int32Array, Int64Array};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use weir_client::CLUSTER_TIMEOUT;

use crate::aggregate::codec::{partition_of, to_json};
use crate::aggregate::datum::{to_array, Datum};
use crate::error::{Result, StreamsError};
use crate::io::decode::RecordDecoder;
use crate::io::encode::encode;
use crate::io::record_time;
use crate::io::topic_reader;
use crate::job::consumer::JobConsumer;
use crate::job::idle::IdleInputs;
use crate::job::input::decode_input;
use crate::job::poll::Polled;
use crate::job::processor::Processor;
use crate::job::repartition::{MergeInto, Repartition};
use crate::job::stats::JobStats;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::{stateful, JobConfig};
use crate::join::interval::plan::{IntervalJoinPlan, SidePlan};
use crate::join::interval::state::{
    IntervalJoinConfig, IntervalJoinState, JoinChange, JoinChangeKey, JoinRecord, JoinRow, Joined,
    RowId, Side,
};
use crate::record::InputRecord;
use crate::sql::SqlTransform;

pub(super) struct IntervalJoin<'a> {
    config: &'a JobConfig,
    decoders: &'a [RecordDecoder],
    transform: &'a SqlTransform,
    join: &'a IntervalJoinPlan,
    runtime: &'a tokio::runtime::Runtime,
    /// Per owned input partition (input, partition), the largest event time seen.
    times: BTreeMap<(u8, i32), i64>,
    state: IntervalJoinState,
    idle: IdleInputs,
    /// The repartition (and changelog) topic's partitions, and the route to them.
    repartition: Repartition,
}

/// What was merged into the state since the last emit: the joined rows, and the repartition
/// partitions touched (whose expired rows and changes are due).
#[derive(Default)]
struct Merged {
    joined: Vec<Joined>,
    touched: BTreeSet<i32>,
}

/// The join state as the repartition step merges into it, noting what it merged.
struct MergeState<'s> {
    state: &'s mut IntervalJoinState,
    merged: &'s mut Merged,
}

impl MergeInto<JoinRecord> for MergeState<'_> {
    fn merge(&mut self, partition: i32, record: JoinRecord) -> Result<()> {
        self.merged
            .joined
            .extend(self.state.merge(partition, record)?);
        self.merged.touched.insert(partition);
        Ok(())
    }
}

impl<'a> IntervalJoin<'a> {
    pub(super) fn new(
        config: &'a JobConfig,
        decoders: &'a [RecordDecoder],
        transform: &'a SqlTransform,
        runtime: &'a tokio::runtime::Runtime,
        partitions: i32,
    ) -> Result<Self> {
        let join = transform.interval_join().expect("an interval join");
        let reader = topic_reader::consumer(&config.client)?;
        let mut input_partitions = Vec::new();
        for input in &config.inputs {
            input_partitions
                .push(topic_reader::partitions(&reader, input, CLUSTER_TIMEOUT)?.len() as i32);
        }
        let state = IntervalJoinState::new(IntervalJoinConfig {
            lower_ms: join.lower_ms,
            upper_ms: join.upper_ms,
            left_outer: join.left_outer,
            input_partitions,
            allowed_lateness_ms: config.allowed_lateness_ms,
            max_state_entries: config.max_state_entries,
        });
        Ok(IntervalJoin {
            config,
            decoders,
            transform,
            join,
            runtime,
            times: BTreeMap::new(),
            state,
            idle: IdleInputs::new(config.idle_timeout_ms),
            repartition: Repartition::new(partitions),
        })
    }

    /// One input's rows as the join needs them, with their positions.
    fn side_rows(
        &self,
        side: &SidePlan,
        records: &[InputRecord],
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<Vec<RecordBatch>> {
        let decoder = &self.decoders[side.input];
        let batch = decode_input(self.config, decoder, records, checkpoint, stats)?;
        let session = self.transform.session();
        self.runtime.block_on(async {
            session.set_input(side.input, batch).await;
            let rows = session.run(&side.plan).await;
            session.clear_inputs().await;
            rows
        })
    }

    /// Input rows → late records, and rows and event times for the repartition partitions.
    fn repartition(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
        merged: &mut Merged,
    ) -> Result<()> {
        for (side_name, side) in [
            (Side::Left, &self.join.left),
            (Side::Right, &self.join.right),
        ] {
            let records = &polled.inputs[side.input].1;
            if records.is_empty() {
                continue;
            }
            let batches = self.side_rows(side, records, checkpoint, stats)?;
            let mut rows = Vec::new();
            for batch in &batches {
                rows.extend(join_rows(batch, side, side_name)?);
            }
            rows.sort_by_key(|(row, _)| row.id);
            // Late and timeless rows are rare: their records are looked up only when there are
            // some (not a map of every record of every checkpoint).
            let mut set_aside = Vec::new();
            for (row, time) in rows {
                let source = (row.id.input, row.id.partition);
                let at = (row.id.partition, row.id.offset);
                let Some(time) = time else {
                    stats.records_rejected += 1;
                    tracing::warn!(job = %self.config.name, partition = at.0, offset = at.1, "record without an event time");
                    set_aside.push((Destination::DeadLetter, at));
                    continue;
                };
                let watermark = self
                    .times
                    .get(&source)
                    .map(|max| max - self.config.allowed_lateness_ms);
                if watermark.is_some_and(|w| time < w) {
                    stats.records_late += 1;
                    set_aside.push((Destination::Late, at));
                } else {
                    let key = to_json(&row.keys);
                    let partition = partition_of(&key, self.repartition.partitions);
                    let row = JoinRecord::Row(JoinRow {
                        time_ms: time,
                        ..row
                    });
                    self.send(partition, Some(key), row, checkpoint, merged)?;
                }
                let max = self.times.entry(source).or_insert(time);
                *max = (*max).max(time);
            }
            if !set_aside.is_empty() {
                let position: HashMap<(i32, i64), &InputRecord> = records
                    .iter()
                    .map(|r| ((r.partition, r.offset), r))
                    .collect();
                for (destination, at) in set_aside {
                    if let Some(record) = position.get(&at) {
                        checkpoint.records.push(outgoing(destination, record));
                    }
                }
            }
            self.send_times(side.input, records, checkpoint, merged)?;
        }
        Ok(())
    }

    /// The repartition step, and the state it merges into noting in `merged` what it merged.
    fn merging<'s>(&'s mut self, merged: &'s mut Merged) -> (&'s mut Repartition, MergeState<'s>) {
        let state = MergeState {
            state: &mut self.state,
            merged,
        };
        (&mut self.repartition, state)
    }

    /// `record` for repartition partition `partition` (`Repartition::send`).
    fn send(
        &mut self,
        partition: i32,
        key: Option<Vec<u8>>,
        record: JoinRecord,
        checkpoint: &mut Checkpoint,
        merged: &mut Merged,
    ) -> Result<()> {
        let (repartition, mut state) = self.merging(merged);
        repartition.send(partition, key, record, checkpoint, &mut state)
    }

    /// `record` (an event time, idleness, an end) for every repartition partition.
    fn send_to_every_partition(
        &mut self,
        record: JoinRecord,
        checkpoint: &mut Checkpoint,
        merged: &mut Merged,
    ) -> Result<()> {
        let (repartition, mut state) = self.merging(merged);
        repartition.send_to_every_partition(record, checkpoint, &mut state)
    }

    /// Each input partition's event time, to every partition after the rows it covers, and
    /// into the metadata of its committed offset.
    fn send_times(
        &mut self,
        input: usize,
        records: &[InputRecord],
        checkpoint: &mut Checkpoint,
        merged: &mut Merged,
    ) -> Result<()> {
        let sources: BTreeSet<i32> = records.iter().map(|r| r.partition).collect();
        for source in sources {
            let Some(&max_time_ms) = self.times.get(&(input as u8, source)) else {
                continue;
            };
            let time = JoinRecord::Time {
                input: input as u8,
                partition: source,
                max_time_ms,
            };
            self.send_to_every_partition(time, checkpoint, merged)?;
            let topic = self.config.inputs[input].clone();
            if let Some(offset) = checkpoint.offsets.get_mut(&(topic, source)) {
                offset.1 = max_time_ms.to_string();
            }
        }
        Ok(())
    }

    /// Repartition records read from the topic → the state (`Repartition::merge_read`).
    fn merge_internal(&mut self, internal: &[InputRecord], merged: &mut Merged) -> Result<()> {
        let (repartition, mut state) = self.merging(merged);
        repartition.merge_read(internal, &mut state)
    }

    /// Merging directly: the repartition records that were unread at the reload go first.
    fn merge_unread(&mut self, merged: &mut Merged) -> Result<()> {
        let (repartition, mut state) = self.merging(merged);
        repartition.merge_unread(&mut state)
    }

    /// Matches and expired rows → the rest of the query → output; the touched partitions'
    /// changes → the changelog.
    fn emit(
        &mut self,
        merged: Merged,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        self.repartition.route.commit_read(self.config, checkpoint);
        let Merged {
            mut joined,
            touched,
        } = merged;
        for &partition in &touched {
            joined.extend(self.state.expire(partition));
        }
        if !joined.is_empty() {
            let batch = self.joined_batch(&joined)?;
            let session = self.transform.session();
            let output = self.runtime.block_on(async {
                *self.join.joined.batches[0].write().await = vec![batch];
                let output = session.run(&self.join.post_join).await;
                self.join.joined.batches[0].write().await.clear();
                output
            })?;
            let (output, times) = record_time::split(output)?;
            let records = encode(&output, self.config.output_format)?;
            match times {
                Some(times) => stateful::write_timed_output(
                    checkpoint,
                    stats,
                    records.into_iter().zip(times).collect(),
                ),
                None => stateful::write_output(checkpoint, stats, records),
            }
        }
        for partition in touched {
            stateful::write_changes(checkpoint, partition, self.state.take_changes(partition));
        }
        Ok(())
    }

    /// The joined rows as the join's output holds them (left columns, then right ones).
    fn joined_batch(&self, joined: &[Joined]) -> Result<RecordBatch> {
        let schema = self.join.joined.schema();
        let left_width = self.join.left.columns;
        let width = left_width + self.join.right.columns;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for (index, field) in schema.fields().iter().enumerate() {
            let data_type = field.data_type();
            let column = match index.checked_sub(left_width) {
                // The last column: the joined row's time (`crate::io::record_time`).
                _ if index == width => {
                    let times: Vec<Datum> = joined.iter().map(|r| Datum::Int(r.time_ms)).collect();
                    to_array(&times, data_type)?
                }
                None => to_array(joined.iter().map(|row| &row.left[index]), data_type)?,
                Some(right) => {
                    let values = joined.iter().map(|row| {
                        row.right
                            .as_ref()
                            .map_or(&NULL_DATUM, |values| &values[right])
                    });
                    to_array(values, data_type)?
                }
            };
            columns.push(column);
        }
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// A right column's value when the left row has no match.
static NULL_DATUM: Datum = Datum::Null;

fn outgoing(destination: Destination, record: &InputRecord) -> Outgoing {
    Outgoing {
        destination,
        key: record.key.clone(),
        value: record.value.clone(),
        timestamp_ms: None,
    }
}

/// A side plan's rows `[keys…, time, _partition, _offset, columns…]` → join rows (their time
/// filled in later) and their times (None: no event time).
fn join_rows(
    batch: &RecordBatch,
    side: &SidePlan,
    side_name: Side,
) -> Result<Vec<(JoinRow, Option<i64>)>> {
    let column = |index: usize| -> Result<&ArrayRef> {
        batch.columns().get(index).ok_or_else(|| {
            StreamsError::Internal(format!("a join side's rows have no column {index}"))
        })
    };
    let times = column(side.keys)?
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or_else(|| StreamsError::Internal("a join side's time is not Int64".into()))?;
    let partitions = column(side.keys + 1)?
        .as_any()
        .downcast_ref::<Int32Array>()
        .ok_or_else(|| StreamsError::Internal("a join side's _partition is not Int32".into()))?;
    let offsets = column(side.keys + 2)?
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or_else(|| StreamsError::Internal("a join side's _offset is not Int64".into()))?;
    let first_value = side.keys + 3;
    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let keys = (0..side.keys)
            .map(|k| Datum::from_array(column(k)?.as_ref(), row))
            .collect::<Result<Vec<_>>>()?;
        let values = (first_value..first_value + side.columns)
            .map(|c| Datum::from_array(column(c)?.as_ref(), row))
            .collect::<Result<Arc<[Datum]>>>()?;
        let time = times.is_valid(row).then(|| times.value(row));
        rows.push((
            JoinRow {
                side: side_name,
                id: RowId {
                    input: side.input as u8,
                    partition: partitions.value(row),
                    offset: offsets.value(row),
                },
                keys,
                time_ms: 0,
                values,
            },
            time,
        ));
    }
    Ok(rows)
}

impl Processor for IntervalJoin<'_> {
    fn state_size(&self) -> (usize, usize) {
        (self.state.entries(), 0)
    }

    /// Rebuilds the state of the partitions now owned: input partitions' event times from their
    /// committed offsets' metadata, buffered rows from the changelog.
    fn reload(&mut self, consumer: &JobConsumer) -> Result<()> {
        let owned = stateful::owned(self.config, consumer)?;
        self.times = stateful::committed_times(self.config, consumer, &owned.inputs)?
            .into_iter()
            .map(|((input, partition), time)| ((input as u8, partition), time))
            .collect();
        self.state.clear();
        self.idle.assigned(&owned.inputs, Instant::now());
        let changes =
            stateful::changelog::<JoinChangeKey, JoinChange>(self.config, &owned.repartition)?;
        if !owned.repartition.is_empty() {
            let records = changes.len();
            for (partition, key, value) in changes {
                self.state.restore(partition, key, value)?;
            }
            tracing::info!(job = %self.config.name, partitions = ?owned.repartition, changelog_records = records, rows = self.state.entries(), "join state restored");
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
        let mut merged = Merged::default();
        self.merge_unread(&mut merged)?;
        for (input, partition) in stateful::owned(self.config, consumer)?.inputs {
            let end = JoinRecord::EndOfInput {
                input: input as u8,
                partition,
            };
            self.send_to_every_partition(end, checkpoint, &mut merged)?;
        }
        self.emit(merged, checkpoint, stats)
    }

    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut merged = Merged::default();
        self.merge_unread(&mut merged)?;
        self.repartition(polled, checkpoint, stats, &mut merged)?;
        self.merge_internal(&polled.internal, &mut merged)?;
        self.emit(merged, checkpoint, stats)
    }

    fn announce_idle(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut merged = Merged::default();
        self.merge_unread(&mut merged)?;
        for (input, partition) in self.idle.newly_idle(polled, Instant::now()) {
            tracing::info!(job = %self.config.name, input = %self.config.inputs[input], partition, "input partition idle");
            let idle = JoinRecord::Idle {
                input: input as u8,
                partition,
            };
            self.send_to_every_partition(idle, checkpoint, &mut merged)?;
        }
        self.emit(merged, checkpoint, stats)
    }
}
