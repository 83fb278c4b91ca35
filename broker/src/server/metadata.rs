//! This broker following the cluster's metadata (cluster mode).
//!
//! [`follow_metadata`] waits until this broker's image has caught up with the metadata log (to
//! the index its registration was answered at), then, on every image change, applies the
//! dynamic broker configs (`crate::broker_configs::apply`), opens the replicas
//! assigned here, makes each leader or follower ([`take_role`]), hands the followed
//! partitions to the fetchers, removes replicas the cluster moved away and topics it deleted,
//! and tells the group and transaction coordinators which of their internal partitions
//! (`__consumer_offsets`, `__transaction_state`) this broker now leads.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cluster::member::ClusterMember;
use crate::cluster::{MetadataImage, NO_LEADER};
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::group::offsets::OFFSETS_TOPIC;
use crate::replication::fetcher::{Followed, ReplicaSettings};
use crate::replication::{take_role, TakenRole};
use crate::transaction::records::TRANSACTION_STATE_TOPIC;

/// Follows `cluster`'s image until shutdown.
pub(super) async fn follow_metadata(
    context: Arc<BrokerContext>,
    cluster: Arc<ClusterMember>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut images = cluster.watch_images();
    let caught_up = cluster.caught_up();
    tokio::select! {
        ready = caught_up => if !ready { return },
        _ = crate::shutdown::stopped(&mut shutdown) => return,
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
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
    }
}

/// Opens the replicas `image` assigns to broker `node_id`, sets each one's role, and gives the
/// followed ones to the fetchers.
pub(super) fn apply_image(
    context: &BrokerContext,
    image: &MetadataImage,
    node_id: i32,
) -> Result<(), BrokerError> {
    // Dynamic broker configs first, so that replicas opened below take their defaults.
    if let Err(error) = context.broker_configs.remember(&image.broker_configs) {
        tracing::warn!(%error, "the local copy of the dynamic broker configs was not written");
    }
    crate::broker_configs::apply(
        &context.live_config,
        &context.topics,
        &image.broker_configs,
        node_id,
    );
    let lag_time_max_ms = ReplicaSettings::from_config(&context.config()).lag_time_max_ms;
    let mut followed: BTreeMap<i32, Vec<Followed>> = BTreeMap::new();
    let mut first_error = None;
    for topic in image.topics.values() {
        let hosted: Vec<i32> = topic
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, state)| state.replicas.contains(&node_id))
            .map(|(index, _)| index as i32)
            .collect();
        drop_moved_replicas(context, &topic.name, &hosted);
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
            match take_role(partition, state, node_id, lag_time_max_ms) {
                Ok(TakenRole::Leader) => {
                    coordinate(context, &topic.name, index, Some(state.leader_epoch))
                }
                Ok(TakenRole::Follower { leader }) => {
                    coordinate(context, &topic.name, index, None);
                    if let Some(leader) = leader {
                        followed.entry(leader).or_default().push(Followed {
                            partition: Arc::clone(partition),
                            leader_epoch: state.leader_epoch,
                        });
                    }
                }
                Err(error) => {
                    tracing::error!(%error, topic = %topic.name, partition = index, "cannot lead");
                    first_error.get_or_insert(error);
                }
            }
        }
    }
    drop_deleted_topics(context, image);
    if let Some(replication) = &context.replication {
        replication.assign_fetchers(followed);
    }
    match first_error {
        Some(error) => Err(error.into()),
        None => Ok(()),
    }
}

/// Replicas held here of partitions the cluster placed elsewhere (a completed reassignment)
/// stop being followed and go, with their data.
fn drop_moved_replicas(context: &BrokerContext, topic: &str, hosted: &[i32]) {
    let Some(local) = context.topics.get(topic) else {
        return;
    };
    let moved: Vec<i32> = local
        .hosted()
        .map(|partition| partition.index)
        .filter(|index| !hosted.contains(index))
        .collect();
    if moved.is_empty() {
        return;
    }
    for &index in &moved {
        if let Some(partition) = local.partition(index) {
            partition.become_follower(NO_LEADER, partition.leader_epoch());
        }
        coordinate(context, topic, index, None);
    }
    if let Err(error) = context.topics.drop_replicas(topic, &moved) {
        tracing::warn!(topic, partitions = ?moved, %error, "cannot remove moved replicas");
    }
}

/// Topics held here that the cluster no longer has (deleted through the controller, also
/// while this broker was down) go, with their data.
fn drop_deleted_topics(context: &BrokerContext, image: &MetadataImage) {
    for topic in context.topics.all() {
        if image.topic_by_name(&topic.name).is_some() {
            continue;
        }
        for partition in topic.hosted() {
            coordinate(context, &topic.name, partition.index, None);
        }
        match context.topics.delete(&topic.name) {
            Ok(_) => tracing::info!(topic = %topic.name, "replicas of a deleted topic removed"),
            Err(error) => {
                tracing::warn!(topic = %topic.name, %error, "cannot remove a deleted topic's replicas")
            }
        }
    }
}

/// Coordinators follow the leadership of their internal topic's partitions: the group
/// coordinator serves the groups of the `__consumer_offsets` partitions led here, the
/// transaction coordinator the transactional ids of the `__transaction_state` ones.
fn coordinate(context: &BrokerContext, topic: &str, index: i32, leader_epoch: Option<i32>) {
    let changed = match topic {
        OFFSETS_TOPIC => context
            .groups
            .leadership_changed(&context.topics, index, leader_epoch),
        TRANSACTION_STATE_TOPIC => {
            context
                .transactions
                .leadership_changed(&context.topics, index, leader_epoch)
        }
        _ => return,
    };
    if let Err(error) = changed {
        tracing::error!(%error, topic, partition = index, "cannot load a coordinator's state partition");
    }
}
