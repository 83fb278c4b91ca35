//! The repartition step the stateful jobs share (windowed aggregations, interval joins): a
//! record for state partition `p` is written to the job's repartition topic, to be merged by
//! the copy that owns `p` once it reads it back — or, when this copy owns every partition and
//! has read the topic to its end (`route`), merged into the state at once. The jobs differ only
//! in their records and their state, which each gives as a [`MergeInto`].

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::aggregate::codec::{from_json, to_json};
use crate::error::Result;
use crate::job::consumer::JobConsumer;
use crate::job::route::Route;
use crate::job::stateful;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::JobConfig;
use crate::record::InputRecord;

/// A job's state, as the repartition step merges records of type `R` into it.
pub(super) trait MergeInto<R> {
    /// `record` into the state of repartition partition `partition`.
    fn merge(&mut self, partition: i32, record: R) -> Result<()>;
}

/// Where a job's repartition records go: the topic, or (merging directly) the state.
pub(super) struct Repartition {
    /// Chosen at every reload (`Route::choose`).
    pub route: Route,
    /// The repartition topic's partition count.
    pub partitions: i32,
}

impl Repartition {
    pub(super) fn new(partitions: i32) -> Self {
        Repartition {
            route: Route::Topic,
            partitions,
        }
    }

    /// After a reload: the route for the repartition partitions now owned (`Route::choose`;
    /// call it after reading the inputs' committed offsets, which settled their previous
    /// owners' transactions).
    pub(super) fn reroute(
        &mut self,
        config: &JobConfig,
        consumer: &JobConsumer,
        owned: &[i32],
    ) -> Result<()> {
        self.route = Route::choose(config, consumer, owned, self.partitions)?;
        Ok(())
    }

    /// `record` for repartition partition `partition`.
    pub(super) fn send<R: Serialize>(
        &self,
        partition: i32,
        key: Option<Vec<u8>>,
        record: R,
        checkpoint: &mut Checkpoint,
        state: &mut impl MergeInto<R>,
    ) -> Result<()> {
        if self.route.is_direct() {
            return state.merge(partition, record);
        }
        checkpoint.records.push(Outgoing {
            destination: Destination::Repartition(partition),
            key,
            value: Some(to_json(&record)),
            timestamp_ms: None,
        });
        Ok(())
    }

    /// `record` (an event time, idleness, an end) for every repartition partition.
    pub(super) fn send_to_every_partition<R: Serialize + Clone>(
        &self,
        record: R,
        checkpoint: &mut Checkpoint,
        state: &mut impl MergeInto<R>,
    ) -> Result<()> {
        if !self.route.is_direct() {
            stateful::to_every_partition(checkpoint, self.partitions, &to_json(&record));
            return Ok(());
        }
        for partition in 0..self.partitions {
            state.merge(partition, record.clone())?;
        }
        Ok(())
    }

    /// Repartition records read from the topic → the state (the ones read at the reload were
    /// merged then).
    pub(super) fn merge_read<R: DeserializeOwned>(
        &self,
        internal: &[InputRecord],
        state: &mut impl MergeInto<R>,
    ) -> Result<()> {
        for record in internal {
            if !self.route.read_before(record) {
                merge_record(record, state)?;
            }
        }
        Ok(())
    }

    /// Merging directly: the repartition records that were unread at the reload go first.
    pub(super) fn merge_unread<R: DeserializeOwned>(
        &mut self,
        state: &mut impl MergeInto<R>,
    ) -> Result<()> {
        for record in self.route.take_unread() {
            merge_record(&record, state)?;
        }
        Ok(())
    }
}

/// One repartition record read from the topic → the state.
fn merge_record<R: DeserializeOwned>(
    record: &InputRecord,
    state: &mut impl MergeInto<R>,
) -> Result<()> {
    let value = record.value.as_deref().unwrap_or_default();
    state.merge(record.partition, from_json(value, "repartition")?)
}
