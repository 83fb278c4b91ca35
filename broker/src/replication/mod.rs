//! Replicas on this broker, as the cluster's metadata places them (cluster mode).
//!
//! `follow_metadata` waits until this broker's image has caught up with the metadata log (to
//! the index its registration was answered at), then, on every image change, opens the
//! replicas assigned here, makes each leader (with the ISR and partition epoch the image holds)
//! or follower, and hands the followed partitions to one fetcher task per leader broker.
//!
//! - [`leader`]: the leader's view of its followers as a deterministic state machine — log end
//!   offsets, the high watermark over the maximal ISR, ISR shrink/expand proposals. Fed by
//!   followers' Fetch requests (`handler::fetch`) through `Partition::follower_fetched`.
//! - [`isr`]: ISR changes sent to the active controller (AlterPartition); the periodic check
//!   for lagging followers.
//! - [`fetcher`]: followers copying their leaders — truncation by leader epoch, then Fetch.
//! - `simulation` (tests): the controller, leaders and followers of one partition on three
//!   brokers under a seeded faulty schedule, with the replication invariants checked.

pub mod fetcher;
pub mod isr;
pub mod leader;
#[cfg(test)]
mod simulation;

pub use isr::propose_isr;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::cluster::image::PartitionState;
use crate::cluster::member::ClusterMember;
use crate::cluster::{MetadataImage, NO_LEADER};
use crate::error::BrokerError;
use crate::group::offsets::OFFSETS_TOPIC;
use crate::partition::replication::Leadership;
use crate::partition::Partition;
use crate::server::BrokerContext;
use crate::transaction::records::TRANSACTION_STATE_TOPIC;
use fetcher::{FetcherSetup, Followed};
use isr::IsrChange;

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

/// Opens the replicas `image` assigns to broker `node_id`, sets each one's role, and gives the
/// followed ones to the fetchers.
pub fn apply_image(
    context: &BrokerContext,
    image: &MetadataImage,
    node_id: i32,
) -> Result<(), BrokerError> {
    let lag_time_max_ms = context.config.replica_settings().lag_time_max_ms;
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

/// What a replica became as the metadata said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakenRole {
    Leader,
    /// Following `leader` (`None`: the partition has no leader now).
    Follower {
        leader: Option<i32>,
    },
}

/// Makes the replica on broker `node_id` the leader or a follower as `state` (the partition in
/// this broker's image) says: a new leader epoch starts leadership afresh, the same epoch only
/// brings the new ISR; a follower follows the named leader at its epoch.
pub fn take_role(
    partition: &Partition,
    state: &PartitionState,
    node_id: i32,
    lag_time_max_ms: i64,
) -> Result<TakenRole, crate::error::LogError> {
    if state.leader != node_id {
        follow(partition, state);
        let leader = (state.leader != NO_LEADER).then_some(state.leader);
        return Ok(TakenRole::Follower { leader });
    }
    if !partition.is_leader() || partition.leader_epoch() != state.leader_epoch {
        tracing::info!(topic = %partition.topic, partition = partition.index, leader_epoch = state.leader_epoch, isr = ?state.isr, "leading");
    }
    let leadership = Leadership {
        local_id: node_id,
        leader_epoch: state.leader_epoch,
        partition_epoch: state.partition_epoch,
        replicas: state.replicas.clone(),
        isr: state.isr.clone(),
        replica_lag_time_max_ms: lag_time_max_ms,
    };
    partition.become_leader(&leadership)?;
    Ok(TakenRole::Leader)
}

fn follow(partition: &Partition, state: &PartitionState) {
    let changed = partition.is_leader()
        || partition.leader_epoch() != state.leader_epoch
        || partition.leader_id() != Some(state.leader).filter(|id| *id >= 0);
    if changed {
        tracing::info!(topic = %partition.topic, partition = partition.index, leader = state.leader, leader_epoch = state.leader_epoch, "following");
        partition.become_follower(state.leader, state.leader_epoch);
    }
}

/// This broker's replication machinery: the queue of ISR changes for the controller and one
/// fetcher task per leader this broker follows.
pub struct Replication {
    pub isr_changes: mpsc::Sender<IsrChange>,
    setup: FetcherSetup,
    shutdown: watch::Receiver<bool>,
    fetchers: Mutex<BTreeMap<i32, FetcherHandle>>,
}

struct FetcherHandle {
    assigned: watch::Sender<Vec<Followed>>,
    task: tokio::task::JoinHandle<()>,
}

impl Replication {
    /// The machinery, and the receiving end of the ISR changes (for [`isr::send_isr_changes`]).
    pub fn new(
        setup: FetcherSetup,
        shutdown: watch::Receiver<bool>,
    ) -> (Self, mpsc::Receiver<IsrChange>) {
        let (isr_changes, receiver) = mpsc::channel(isr::MAX_QUEUED_ISR_CHANGES);
        let replication = Replication {
            isr_changes,
            setup,
            shutdown,
            fetchers: Mutex::new(BTreeMap::new()),
        };
        (replication, receiver)
    }

    fn fetchers(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, FetcherHandle>> {
        self.fetchers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fetch these partitions from these leaders (and nothing else).
    pub fn assign_fetchers(&self, by_leader: BTreeMap<i32, Vec<Followed>>) {
        let mut fetchers = self.fetchers();
        fetchers.retain(|leader, handle| {
            let keep = by_leader.contains_key(leader);
            if !keep {
                handle.task.abort();
            }
            keep
        });
        for (leader, followed) in by_leader {
            if let Some(handle) = fetchers.get(&leader) {
                handle.assigned.send_if_modified(|current| {
                    let same = same_assignment(current, &followed);
                    if !same {
                        *current = followed;
                    }
                    !same
                });
                continue;
            }
            let (assigned, receiver) = watch::channel(followed);
            let setup = self.setup.clone();
            let task = tokio::spawn(fetcher::run(leader, setup, receiver, self.shutdown.clone()));
            fetchers.insert(leader, FetcherHandle { assigned, task });
        }
    }

    /// Stops every fetcher (before the logs close).
    pub async fn stop(&self) {
        let handles: Vec<FetcherHandle> = std::mem::take(&mut *self.fetchers())
            .into_values()
            .collect();
        for handle in handles {
            handle.task.abort();
            let _ = handle.task.await;
        }
    }
}

fn same_assignment(current: &[Followed], next: &[Followed]) -> bool {
    current.len() == next.len()
        && current.iter().zip(next).all(|(a, b)| {
            Arc::ptr_eq(&a.partition, &b.partition) && a.leader_epoch == b.leader_epoch
        })
}
