//! A partition leader's view of its followers (Kafka's `Partition` leader side), as a state
//! machine with time passed in: each follower's log end offset and when it was last caught up,
//! the high watermark, and the ISR changes to ask the controller for.
//!
//! Rules (Kafka's, KIP-497 for the ISR in flight):
//! - A follower's fetch at offset `o` says it holds everything below `o`.
//! - A follower is caught up at a fetch that reaches the leader's log end, or one that reaches
//!   the log end the leader had at the follower's previous fetch (it caught up then).
//! - The high watermark is the smallest log end offset over the *maximal* ISR — the committed
//!   ISR plus a pending expansion, never minus a pending shrink — so a record counts as
//!   committed only when every replica that may be elected holds it. It never moves back.
//! - A member not caught up for `replica.lag.time.max.ms` is proposed for removal; a replica
//!   outside the ISR that holds everything up to the high watermark (and at least the start of
//!   this leader's epoch) is proposed for addition. One proposal is in flight at a time; the
//!   controller's answer arrives through the metadata ([`LeaderReplicas::isr_committed`]).

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FollowerState {
    log_end_offset: i64,
    last_caught_up_ms: i64,
    last_fetch_ms: i64,
    /// The leader's log end offset when this follower last fetched.
    leader_log_end_at_last_fetch: i64,
}

/// An ISR change to send to the controller (AlterPartition), at `partition_epoch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub isr: Vec<i32>,
    pub partition_epoch: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{isr_size} in-sync replicas, {min_insync_replicas} required")]
pub struct NotEnoughReplicas {
    pub isr_size: usize,
    pub min_insync_replicas: usize,
}

#[derive(Debug, Clone)]
pub struct LeaderReplicas {
    local_id: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    partition_epoch: i32,
    /// The log end offset when this leadership began: a follower must reach it to join.
    leader_epoch_start_offset: i64,
    followers: BTreeMap<i32, FollowerState>,
    pending: Option<IsrProposal>,
    high_watermark: i64,
    replica_lag_time_max_ms: i64,
}

impl LeaderReplicas {
    /// Leadership begins (at `now_ms`) with the log ending at `log_end_offset`; the high
    /// watermark carries over from the previous leader. Followers start caught up (Kafka gives
    /// them the lag time to show up).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        local_id: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        partition_epoch: i32,
        log_end_offset: i64,
        high_watermark: i64,
        replica_lag_time_max_ms: i64,
        now_ms: i64,
    ) -> Self {
        let followers = replicas
            .iter()
            .filter(|id| **id != local_id)
            .map(|id| {
                let state = FollowerState {
                    log_end_offset: -1,
                    last_caught_up_ms: now_ms,
                    last_fetch_ms: now_ms,
                    leader_log_end_at_last_fetch: -1,
                };
                (*id, state)
            })
            .collect();
        LeaderReplicas {
            local_id,
            replicas,
            isr,
            partition_epoch,
            leader_epoch_start_offset: log_end_offset,
            followers,
            pending: None,
            high_watermark: high_watermark.min(log_end_offset),
            replica_lag_time_max_ms,
        }
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Whether `broker_id` holds a replica (leader or follower).
    pub fn is_replica(&self, broker_id: i32) -> bool {
        self.replicas.contains(&broker_id)
    }

    /// Each follower's log end offset as its last fetch showed it (-1 before one).
    pub fn follower_log_ends(&self) -> impl Iterator<Item = (i32, i64)> + '_ {
        self.followers
            .iter()
            .map(|(id, state)| (*id, state.log_end_offset))
    }

    pub fn isr(&self) -> &[i32] {
        &self.isr
    }

    pub fn pending(&self) -> Option<&IsrProposal> {
        self.pending.as_ref()
    }

    /// The committed ISR plus a pending expansion (a pending shrink still counts its leavers).
    fn maximal_isr(&self) -> Vec<i32> {
        let mut members = self.isr.clone();
        if let Some(pending) = &self.pending {
            for member in &pending.isr {
                if !members.contains(member) {
                    members.push(*member);
                }
            }
        }
        members
    }

    /// `acks=all` may be accepted only while the ISR has `min_insync_replicas` members.
    pub fn check_min_insync(&self, min_insync_replicas: usize) -> Result<(), NotEnoughReplicas> {
        if self.isr.len() < min_insync_replicas {
            return Err(NotEnoughReplicas {
                isr_size: self.isr.len(),
                min_insync_replicas,
            });
        }
        Ok(())
    }

    /// A follower fetched at `fetch_offset` while the leader's log ended at `leader_log_end`.
    /// Returns an ISR expansion to propose, if the follower has earned one.
    pub fn follower_fetched(
        &mut self,
        follower: i32,
        fetch_offset: i64,
        leader_log_end: i64,
        now_ms: i64,
    ) -> Option<IsrProposal> {
        let state = self.followers.get_mut(&follower)?;
        let fetch_offset = fetch_offset.min(leader_log_end);
        if fetch_offset >= leader_log_end {
            state.last_caught_up_ms = now_ms;
        } else if fetch_offset >= state.leader_log_end_at_last_fetch {
            state.last_caught_up_ms = state.last_caught_up_ms.max(state.last_fetch_ms);
        }
        state.log_end_offset = fetch_offset;
        state.last_fetch_ms = now_ms;
        state.leader_log_end_at_last_fetch = leader_log_end;
        self.advance_high_watermark(leader_log_end);
        self.expansion_for(follower)
    }

    /// The leader appended; its log now ends at `leader_log_end`.
    pub fn leader_appended(&mut self, leader_log_end: i64) {
        self.advance_high_watermark(leader_log_end);
    }

    fn advance_high_watermark(&mut self, leader_log_end: i64) {
        let smallest = self
            .maximal_isr()
            .iter()
            .map(|id| match self.followers.get(id) {
                Some(state) => state.log_end_offset,
                None => leader_log_end,
            })
            .min()
            .unwrap_or(leader_log_end);
        if smallest > self.high_watermark {
            self.high_watermark = smallest;
        }
    }

    fn expansion_for(&mut self, follower: i32) -> Option<IsrProposal> {
        if self.pending.is_some() || self.isr.contains(&follower) {
            return None;
        }
        let state = self.followers.get(&follower)?;
        let caught_up = state.log_end_offset >= self.high_watermark
            && state.log_end_offset >= self.leader_epoch_start_offset;
        if !caught_up {
            return None;
        }
        let mut isr = self.isr.clone();
        isr.push(follower);
        Some(self.propose(isr))
    }

    /// ISR members not caught up for the lag time, as a shrink to propose.
    pub fn check_lagging(&mut self, now_ms: i64) -> Option<IsrProposal> {
        if self.pending.is_some() {
            return None;
        }
        let lagging: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|id| {
                self.followers.get(id).is_some_and(|state| {
                    now_ms - state.last_caught_up_ms > self.replica_lag_time_max_ms
                })
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let isr = self
            .isr
            .iter()
            .copied()
            .filter(|id| !lagging.contains(id))
            .collect();
        Some(self.propose(isr))
    }

    fn propose(&mut self, isr: Vec<i32>) -> IsrProposal {
        let ordered: Vec<i32> = self
            .replicas
            .iter()
            .copied()
            .filter(|id| isr.contains(id) || *id == self.local_id)
            .collect();
        let proposal = IsrProposal {
            isr: ordered,
            partition_epoch: self.partition_epoch,
        };
        self.pending = Some(proposal.clone());
        proposal
    }

    /// The metadata now says the ISR is `isr` at `partition_epoch` (this leader's proposal
    /// accepted, or a change of the controller's own); a proposal still pending is dropped if
    /// the epoch moved past it (it was refused or superseded).
    pub fn isr_committed(&mut self, isr: Vec<i32>, partition_epoch: i32, leader_log_end: i64) {
        if partition_epoch > self.partition_epoch {
            self.pending = None;
        }
        self.isr = isr;
        self.partition_epoch = partition_epoch;
        self.advance_high_watermark(leader_log_end);
    }

    /// The controller refused the pending proposal (stale epoch and the like): try again later.
    pub fn proposal_failed(&mut self) {
        self.pending = None;
    }
}

#[cfg(test)]
mod tests;
