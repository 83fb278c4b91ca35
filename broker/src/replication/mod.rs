//! Replicas on this broker, as the cluster's metadata places them (cluster mode).
//!
//! The server's metadata follower (`server::metadata`) calls [`take_role`] for every replica the
//! image assigns here — leader (with the ISR and partition epoch the image holds) or follower —
//! and hands the followed partitions to [`Replication`], which runs one fetcher task per leader
//! broker.
//!
//! - [`isr`]: ISR changes sent to the active controller (AlterPartition); the sweep for
//!   lagging followers. The leader's decisions are `partition::leader_replicas`.
//! - [`fetcher`]: followers copying their leaders — truncation by leader epoch, then Fetch.
//! - `simulation` (tests): the controller, leaders and followers of one partition on three
//!   brokers under a seeded faulty schedule, with the replication invariants checked.

pub mod fetcher;
pub mod isr;
#[cfg(test)]
mod simulation;

pub use isr::propose_isr;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::cluster::image::PartitionState;
use crate::cluster::NO_LEADER;
use crate::partition::role::Leadership;
use crate::partition::Partition;
use fetcher::{FetcherSetup, Followed};
use isr::IsrChange;

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
) -> Result<TakenRole, crate::log::error::LogError> {
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
