//! A leader's ISR changes on their way to the active controller (AlterPartition, KIP-497).
//!
//! Leaders decide (in [`crate::partition::leader_replicas`]) when a follower joins or leaves
//! the ISR; the change is queued here and sent by one task, one at a time. An accepted change
//! comes back through the metadata image (the partition's new ISR and partition epoch); a
//! refused one clears the leader's pending proposal so it can propose again. Lagging members
//! are looked for every half `replica.lag.time.max.ms` ([`propose_lagging_shrinks`], run by
//! the server's background tasks).

use std::sync::Arc;
use std::time::Duration;

use prometheus::IntCounter;
use tokio::sync::{mpsc, watch};

use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::partition::leader_replicas::IsrProposal;
use crate::partition::Partition;
use crate::replication::Replication;
use crate::topic::{Topic, TopicRegistry};

/// ISR changes waiting to be sent; more are refused (and proposed again later).
pub const MAX_QUEUED_ISR_CHANGES: usize = 4096;

pub struct IsrChange {
    pub topic_id: uuid::Uuid,
    pub partition: Arc<Partition>,
    pub proposal: IsrProposal,
}

/// Counted as accepted ISR changes go through.
#[derive(Clone)]
pub struct IsrChangeCounters {
    pub shrinks: IntCounter,
    pub expands: IntCounter,
}

/// Queues `proposal` for `partition` of `topic` (refused without replication machinery, or
/// when the queue is full: the partition may propose again).
pub fn propose_isr(
    replication: Option<&Replication>,
    topic: &Topic,
    partition: &Arc<Partition>,
    proposal: IsrProposal,
) {
    let queued = replication.is_some_and(|replication| {
        let change = IsrChange {
            topic_id: topic.id,
            partition: Arc::clone(partition),
            proposal,
        };
        replication.isr_changes.try_send(change).is_ok()
    });
    if !queued {
        partition.isr_proposal_failed();
    }
}

/// Sends queued ISR changes to the controller until shutdown.
pub async fn send_isr_changes(
    cluster: Arc<ClusterMember>,
    counters: IsrChangeCounters,
    mut changes: mpsc::Receiver<IsrChange>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let change = tokio::select! {
            change = changes.recv() => match change {
                Some(change) => change,
                None => return,
            },
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        let partition = &change.partition;
        let Some(broker_epoch) = cluster.membership().borrow().broker_epoch else {
            partition.isr_proposal_failed();
            continue;
        };
        let request = ControllerRequest::AlterPartition {
            leader_id: cluster.node_id(),
            leader_broker_epoch: broker_epoch,
            topic_id: change.topic_id,
            partition: partition.index,
            partition_epoch: change.proposal.partition_epoch,
            isr: change.proposal.isr.clone(),
        };
        let shrinks = change.proposal.isr.len() < partition.isr().len();
        match cluster.request(request).await {
            Ok(_) => {
                tracing::info!(topic = %partition.topic, partition = partition.index, isr = ?change.proposal.isr, "ISR changed");
                let counter = match shrinks {
                    true => &counters.shrinks,
                    false => &counters.expands,
                };
                counter.inc();
            }
            Err(error) => {
                tracing::warn!(%error, topic = %partition.topic, partition = partition.index, isr = ?change.proposal.isr, "ISR change refused");
                partition.isr_proposal_failed();
            }
        }
    }
}

/// How often [`propose_lagging_shrinks`] runs: every half `replica.lag.time.max.ms`.
pub fn lagging_check_period(lag_time_max_ms: i64) -> Duration {
    Duration::from_millis((lag_time_max_ms / 2).max(10) as u64)
}

/// Proposes removing lagging followers from the ISRs this broker leads.
pub fn propose_lagging_shrinks(topics: &TopicRegistry, replication: Option<&Replication>) {
    for topic in topics.all() {
        for partition in topic.hosted() {
            if let Some(shrink) = partition.check_lagging() {
                tracing::info!(topic = %topic.name, partition = partition.index, isr = ?shrink.isr, "followers fell behind: shrinking the ISR");
                propose_isr(replication, &topic, partition, shrink);
            }
        }
    }
}
