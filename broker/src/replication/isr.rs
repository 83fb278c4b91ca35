//! A leader's ISR changes on their way to the active controller (AlterPartition, KIP-497).
//!
//! Leaders decide (in [`super::leader`]) when a follower joins or leaves the ISR; the change is
//! queued here and sent by one task, one at a time. An accepted change comes back through the
//! metadata image (the partition's new ISR and partition epoch); a refused one clears the
//! leader's pending proposal so it can propose again. Lagging members are looked for every
//! half `replica.lag.time.max.ms`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::partition::Partition;
use crate::replication::leader::IsrProposal;
use crate::server::BrokerContext;
use crate::topic::Topic;

/// ISR changes waiting to be sent; more are refused (and proposed again later).
pub const MAX_QUEUED_ISR_CHANGES: usize = 4096;

pub struct IsrChange {
    pub topic_id: uuid::Uuid,
    pub partition: Arc<Partition>,
    pub proposal: IsrProposal,
}

/// Queues `proposal` for `partition` of `topic`.
pub fn propose_isr(
    context: &BrokerContext,
    topic: &Topic,
    partition: &Arc<Partition>,
    proposal: IsrProposal,
) {
    let queued = context.replication.as_ref().is_some_and(|replication| {
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
    context: Arc<BrokerContext>,
    cluster: Arc<ClusterMember>,
    mut changes: mpsc::Receiver<IsrChange>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let change = tokio::select! {
            change = changes.recv() => match change {
                Some(change) => change,
                None => return,
            },
            _ = crate::server::stopped(&mut shutdown) => return,
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
                    true => &context.metrics.isr_shrinks_total,
                    false => &context.metrics.isr_expands_total,
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

/// Proposes removing lagging followers from the ISRs this broker leads, until shutdown.
pub async fn check_lagging_followers(
    context: Arc<BrokerContext>,
    lag_time_max_ms: i64,
    mut shutdown: watch::Receiver<bool>,
) {
    let period = Duration::from_millis((lag_time_max_ms / 2).max(10) as u64);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = crate::server::stopped(&mut shutdown) => return,
        }
        for topic in context.topics.all() {
            for partition in topic.hosted() {
                if let Some(shrink) = partition.check_lagging() {
                    tracing::info!(topic = %topic.name, partition = partition.index, isr = ?shrink.isr, "followers fell behind: shrinking the ISR");
                    propose_isr(&context, &topic, partition, shrink);
                }
            }
        }
    }
}
