//! The job's input side: a read_committed consumer in the job's group, no auto-commit (offsets
//! are committed only inside checkpoint transactions), noticing rebalances.

use std::sync::atomic::{AtomicBool, Ordering};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, Offset};
use weir_client::CLUSTER_TIMEOUT;

use crate::error::{Result, StreamsError};
use crate::job::JobConfig;

pub(super) type JobConsumer = BaseConsumer<RebalanceTracker>;

/// Remembers that partitions were revoked or assigned since the loop last looked.
#[derive(Default)]
pub(super) struct RebalanceTracker {
    flag: AtomicBool,
}

impl RebalanceTracker {
    /// Whether a rebalance happened since `take_rebalanced` last looked.
    pub(super) fn rebalanced(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    pub(super) fn take_rebalanced(&self) -> bool {
        self.flag.swap(false, Ordering::SeqCst)
    }
}

impl ClientContext for RebalanceTracker {}

impl ConsumerContext for RebalanceTracker {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        tracing::debug!(?rebalance, "rebalance");
        self.flag.store(true, Ordering::SeqCst);
    }
}

/// The job's consumer, subscribed to the input and (windowed jobs) the repartition topic.
pub(super) fn create(config: &JobConfig, internal_topic: Option<&str>) -> Result<JobConsumer> {
    let client_id = format!("{}-{}", config.name, config.instance_id);
    let consumer: JobConsumer = config
        .client
        .config(&[
            ("group.id", &config.name),
            ("client.id", &client_id),
            ("isolation.level", "read_committed"),
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("auto.offset.reset", "earliest"),
            // Eager assignment: every rebalance revokes everything, and the new assignment
            // starts from the committed offsets — nothing buffered survives a rebalance.
            ("partition.assignment.strategy", "range"),
            // librdkafka pauses a partition's fetching for this long once its prefetch queue
            // is full (default 1 s): a job draining the queue a checkpoint at a time would then
            // wait for input. The queue stays bounded by queued.max.messages.kbytes either way.
            ("fetch.queue.backoff.ms", "20"),
            // A fetch waits at the broker for data this long (Kafka's default: 500 ms), and a
            // partition assigned or resumed while one is outstanding is fetched only in the
            // next: a job reading another job's output would start its work up to that late.
            // An idle job sends ten empty fetches a second instead of two.
            ("fetch.wait.max.ms", "100"),
        ])
        .create_with_context(RebalanceTracker::default())
        .map_err(StreamsError::kafka("creating the consumer"))?;
    let mut topics: Vec<&str> = config.inputs.iter().map(String::as_str).collect();
    topics.extend(internal_topic);
    consumer
        .subscribe(&topics)
        .map_err(StreamsError::kafka("subscribing"))?;
    Ok(consumer)
}

/// Moves every assigned partition back to its committed offset (the start of the uncommitted
/// checkpoint), or to the beginning when nothing is committed yet.
pub(super) fn rewind(consumer: &JobConsumer) -> Result<()> {
    let committed = consumer
        .committed(CLUSTER_TIMEOUT)
        .map_err(StreamsError::kafka("reading committed offsets"))?;
    for element in committed.elements() {
        let offset = match element.offset() {
            Offset::Offset(offset) => Offset::Offset(offset),
            _ => Offset::Beginning,
        };
        consumer
            .seek(
                element.topic(),
                element.partition(),
                offset,
                CLUSTER_TIMEOUT,
            )
            .map_err(StreamsError::kafka("rewinding"))?;
    }
    Ok(())
}
