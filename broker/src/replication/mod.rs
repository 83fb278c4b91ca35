//! Replicas on this broker, as the cluster's metadata places them (cluster mode).
//!
//! `follow_metadata` waits until this broker's image has caught up with the metadata log (to
//! the index its registration was answered at), then, on every image change, opens the
//! replicas assigned here and tells each whether it leads and at which leader epoch.
//!
//! [`leader`]: the leader's view of its followers as a deterministic state machine — log end
//! offsets, the high watermark over the maximal ISR, ISR shrink/expand proposals (tested on
//! its own; not yet wired to Fetch).
//!
//! Still to come here: wiring [`leader`] into follower Fetch requests and acks=all waiters, the
//! followers' fetchers with truncation by leader epoch, AlterPartition to the controller. Until
//! then a partition's high watermark is its leader's log end, whatever its replication factor.

pub mod leader;

use std::sync::Arc;

use tokio::sync::watch;

use crate::cluster::member::ClusterMember;
use crate::cluster::MetadataImage;
use crate::error::BrokerError;
use crate::server::BrokerContext;

/// Follows `cluster`'s image until shutdown.
pub async fn follow_metadata(
    context: Arc<BrokerContext>,
    cluster: Arc<ClusterMember>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut membership = cluster.membership();
    let mut images = cluster.watch_images();
    // Caught up: registered, and the image holds everything up to the registration's answer.
    let caught_up = async {
        let index = match membership.wait_for(|m| m.broker_epoch.is_some()).await {
            Ok(registered) => registered.applied_index,
            Err(_) => return false,
        };
        images
            .wait_for(|image| image.applied_index >= index)
            .await
            .is_ok()
    };
    tokio::select! {
        ready = caught_up => if !ready { return },
        _ = crate::server::stopped(&mut shutdown) => return,
    }
    tracing::info!(
        applied_index = cluster.image().applied_index,
        "metadata caught up"
    );
    loop {
        let applied = images.borrow_and_update().clone();
        if let Err(error) = apply_image(&context, &applied.image, cluster.node_id()) {
            tracing::error!(%error, applied_index = applied.applied_index, "applying metadata failed");
        }
        tokio::select! {
            changed = images.changed() => if changed.is_err() { return },
            _ = crate::server::stopped(&mut shutdown) => return,
        }
    }
}

/// Opens the replicas `image` assigns to broker `node_id` and sets each one's role.
pub fn apply_image(
    context: &BrokerContext,
    image: &MetadataImage,
    node_id: i32,
) -> Result<(), BrokerError> {
    for topic in image.topics.values() {
        let hosted: Vec<i32> = topic
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, state)| state.replicas.contains(&node_id))
            .map(|(index, _)| index as i32)
            .collect();
        if hosted.is_empty() {
            continue;
        }
        let local = context.topics.adopt(
            &topic.name,
            topic.topic_id,
            topic.partitions.len() as i32,
            &hosted,
            &topic.configs,
        )?;
        for index in hosted {
            let (Some(state), Some(partition)) =
                (topic.partitions.get(index as usize), local.partition(index))
            else {
                continue;
            };
            if state.leader == node_id {
                if !partition.is_leader() || partition.leader_epoch() != state.leader_epoch {
                    tracing::info!(topic = %topic.name, partition = index, leader_epoch = state.leader_epoch, "leading");
                }
                partition.become_leader(state.leader_epoch);
            } else {
                partition.become_follower(state.leader, state.leader_epoch);
            }
        }
    }
    Ok(())
}
