//! How the running copies of one pipeline (the replicas of a Kubernetes Deployment, say) share
//! its work: through Kafka's group protocol, as Kafka Connect's workers and Kafka Streams'
//! instances do.
//!
//! A [`Membership`] is a consumer in a group, subscribed to a topic, that never reads records
//! (its partitions are paused as they are assigned): the partitions the group gives it are the
//! work this copy owns.
//! - A sink that can share its input ([`weir_connectors::sink::Sink::shares_partitions`]) joins
//!   with the input topic: each copy writes the partitions it owns.
//! - The source stage and a sink with one writer join with the one-partition positions topic,
//!   as a lease: the copy that owns partition 0 does the work, the others stand by and take
//!   over when it goes.
//!
//! The group only spreads the work; it does not fence. A copy that lost partitions but has not
//! heard yet (a long pause, a cut network) is stopped by what the work commits to: the source's
//! transactional id (a newer owner's producer fences it) and a sink's per-partition offset check.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, TopicPartitionList};
use weir_client::ClientSettings;

use crate::error::{PipelineError, Result};

/// How long a copy may be silent before the group moves its work (Kafka's default is 45 s;
/// a pipeline's work moving within 10 s of a pod dying is worth the extra heartbeats).
const SESSION_TIMEOUT_MS: &str = "10000";

/// The partitions owned now, as rdkafka's rebalance callbacks add and remove them; read by
/// [`Membership::poll`].
type Assigned = Arc<Mutex<BTreeSet<i32>>>;

struct MembershipContext {
    assigned: Assigned,
    topic: String,
}

impl ClientContext for MembershipContext {}

impl ConsumerContext for MembershipContext {
    /// With the cooperative protocol the callbacks name the partitions added and removed
    /// (with the eager one, all of them each time): the owned set follows both.
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let partitions = |list: &TopicPartitionList| -> Vec<i32> {
            list.elements_for_topic(&self.topic)
                .iter()
                .map(|element| element.partition())
                .collect()
        };
        let Ok(mut owned) = self.assigned.lock() else {
            return;
        };
        match rebalance {
            Rebalance::Assign(added) => {
                // Owning is all this consumer is for: it never reads the records.
                if let Err(error) = consumer.pause(added) {
                    tracing::warn!(topic = %self.topic, %error, "pausing the membership's partitions");
                }
                owned.extend(partitions(added));
            }
            Rebalance::Revoke(removed) => {
                for partition in partitions(removed) {
                    owned.remove(&partition);
                }
            }
            Rebalance::Error(error) => {
                tracing::warn!(topic = %self.topic, %error, "group rebalance failed");
            }
        }
    }
}

/// This copy's membership in the group that shares one piece of a pipeline's work.
pub struct Membership {
    consumer: BaseConsumer<MembershipContext>,
    assigned: Assigned,
    owned: Vec<i32>,
}

impl Membership {
    /// Joins `group` on the pipeline's cluster with `topic`'s partitions to share.
    pub fn join(pipeline: &str, client: &ClientSettings, group: &str, topic: &str) -> Result<Self> {
        let mut client = client.config(&[
            ("group.id", group),
            ("session.timeout.ms", SESSION_TIMEOUT_MS),
            // Sticky and incremental: a copy joining or leaving moves only the work it must,
            // and the source's lease stays where it is while its holder lives.
            ("partition.assignment.strategy", "cooperative-sticky"),
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "latest"),
        ]);
        client.set_log_level(RDKafkaLogLevel::Warning);
        let assigned = Assigned::default();
        let context = MembershipContext {
            assigned: Arc::clone(&assigned),
            topic: topic.to_string(),
        };
        let consumer: BaseConsumer<MembershipContext> = client
            .create_with_context(context)
            .map_err(PipelineError::kafka(pipeline, "creating the group member"))?;
        consumer
            .subscribe(&[topic])
            .map_err(PipelineError::kafka(pipeline, "joining the group"))?;
        tracing::debug!(pipeline, group, topic, "joined the group sharing the work");
        Ok(Membership {
            consumer,
            assigned,
            owned: Vec::new(),
        })
    }

    /// Serves the group (rebalances happen in here; call it at least every few seconds) and
    /// answers whether the partitions this copy owns changed since the last call.
    pub fn poll(&mut self) -> bool {
        // Records of a partition fetched before it was paused are dropped unread.
        while let Some(polled) = self.consumer.poll(Duration::ZERO) {
            if let Err(error) = polled {
                tracing::debug!(%error, "group member");
                break;
            }
        }
        let Ok(assigned) = self.assigned.lock() else {
            return false;
        };
        if assigned.iter().eq(self.owned.iter()) {
            return false;
        }
        self.owned = assigned.iter().copied().collect();
        true
    }

    /// The partitions this copy owns, as of the last [`Membership::poll`].
    pub fn owned(&self) -> &[i32] {
        &self.owned
    }

    /// Whether this copy holds the lease: a group over a one-partition topic, whose owner of
    /// partition 0 does the work.
    pub fn holds_lease(&self) -> bool {
        self.owned.contains(&0)
    }
}
