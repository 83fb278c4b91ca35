//! How an interval join's rows reach the state that matches them: through the repartition topic
//! (keyed by the join key, read back by whichever copy owns the key's partition), or — when this
//! copy owns every repartition partition, as a job running alone does — merged directly, which
//! saves writing every row to the topic, reading it back and decoding it again.
//!
//! Direct merging keeps what the topic guarantees: each input partition's rows and event times
//! reach the state in the order they were read. A row the topic still holds for an input
//! partition this copy now owns (written by the partition's previous owner, or by this copy
//! before a rebalance or an aborted checkpoint, committed but not yet read) must be merged before
//! any newer row of that partition. So when a reload chooses direct merging, it reads what the
//! owned repartition partitions hold between their committed offsets and their last stable
//! offset (read_committed): every previous owner's transaction is settled by then, as the
//! committed offsets of the inputs were just read with `require_stable` (KIP-447). Those records
//! are merged first, ahead of anything else; the job's consumer skips them when it reaches them,
//! and each checkpoint commits the repartition offsets past them. Rows other copies (owning
//! inputs but no repartition partition) write after that still arrive through the topic, in
//! their partitions' order, as before.
//!
//! Bounded: when more than `CATCH_UP_MAX_RECORDS` records wait unread, the job keeps using the
//! topic until the next rebalance rather than hold them all in memory at once.

use std::collections::BTreeMap;

use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};
use weir_client::CLUSTER_TIMEOUT;

use crate::error::{Result, StreamsError};
use crate::io::topic_reader::{self, Limit, Range};
use crate::job::consumer::JobConsumer;
use crate::job::transaction::Checkpoint;
use crate::job::JobConfig;
use crate::record::InputRecord;

/// The most unread repartition records a reload reads to merge directly (a few checkpoints'
/// worth of a busy job; each is one input row or an event time).
const CATCH_UP_MAX_RECORDS: usize = 100_000;

pub(super) enum Route {
    /// Every row and event time goes through the repartition topic.
    Topic,
    Direct(Direct),
}

pub(super) struct Direct {
    /// The repartition records that were unread at the reload, to merge before anything else.
    unread: Vec<InputRecord>,
    /// Per repartition partition, the offset the reload read up to (where it had unread records).
    read_to: BTreeMap<i32, i64>,
}

impl Route {
    /// After a reload: direct when this copy owns all `partitions` repartition partitions and
    /// what they hold unread fits the bound.
    pub(super) fn choose(
        config: &JobConfig,
        consumer: &JobConsumer,
        owned: &[i32],
        partitions: i32,
    ) -> Result<Route> {
        if owned.len() != partitions as usize {
            tracing::info!(job = %config.name, owned = owned.len(), partitions, "rows go through the repartition topic");
            return Ok(Route::Topic);
        }
        let topic = config.repartition_topic();
        let mut list = TopicPartitionList::new();
        for &partition in owned {
            list.add_partition(&topic, partition);
        }
        let committed = consumer
            .committed_offsets(list, CLUSTER_TIMEOUT)
            .map_err(StreamsError::kafka("reading committed offsets"))?;
        let ranges: Vec<Range> = committed
            .elements()
            .iter()
            .map(|element| Range {
                partition: element.partition(),
                start: match element.offset() {
                    Offset::Offset(offset) => Some(offset),
                    _ => None,
                },
                end: None,
            })
            .collect();
        let reader = topic_reader::consumer(&config.client)?;
        let limit = CATCH_UP_MAX_RECORDS;
        let read = topic_reader::read_ranges_to_end(
            &reader,
            &topic,
            &ranges,
            Limit::FailBeyond(limit),
            CLUSTER_TIMEOUT * 4,
        );
        let (unread, read_to) = match read {
            Ok(read) => read,
            Err(StreamsError::TooMuch(_)) => {
                tracing::info!(job = %config.name, limit, "more repartition records unread than merged directly at once: rows go through the repartition topic until the next rebalance");
                return Ok(Route::Topic);
            }
            Err(error) => return Err(error),
        };
        tracing::info!(job = %config.name, unread = unread.len(), "this copy owns every repartition partition: rows are merged directly");
        Ok(Route::Direct(Direct { unread, read_to }))
    }

    pub(super) fn is_direct(&self) -> bool {
        matches!(self, Route::Direct(_))
    }

    /// The records unread at the reload (once; empty after).
    pub(super) fn take_unread(&mut self) -> Vec<InputRecord> {
        match self {
            Route::Direct(direct) => std::mem::take(&mut direct.unread),
            Route::Topic => Vec::new(),
        }
    }

    /// Whether `record` of the repartition topic was read at the reload (and merged then).
    pub(super) fn read_before(&self, record: &InputRecord) -> bool {
        match self {
            Route::Direct(direct) => direct
                .read_to
                .get(&record.partition)
                .is_some_and(|&end| record.offset < end),
            Route::Topic => false,
        }
    }

    /// Moves the checkpoint's repartition offsets past what the reload read.
    pub(super) fn commit_read(&self, config: &JobConfig, checkpoint: &mut Checkpoint) {
        let Route::Direct(direct) = self else {
            return;
        };
        let topic = config.repartition_topic();
        for (&partition, &end) in &direct.read_to {
            let offset = checkpoint
                .offsets
                .entry((topic.clone(), partition))
                .or_insert((end, String::new()));
            offset.0 = offset.0.max(end);
        }
    }
}
