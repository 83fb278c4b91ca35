//! A simulated broker's side: its timers (registration, heartbeats, ISR checks, the fetcher's
//! next request, acks=all answers), the clients' appends, the metadata it applies, and its
//! answers and follow-ups as leader and follower.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use kafka_protocol::ResponseError;

use super::network::{Message, CONTROLLER};
use super::*;
use crate::cluster::controller::Registration;
use crate::partition::leader_replicas::IsrProposal;
use crate::replication::fetcher::truncation_step;
use crate::replication::{take_role, TakenRole};

impl Simulation {
    // ---- clients ----

    /// A client appends one record at a broker that believes it leads, with acks=all.
    pub(super) fn produce(&mut self) {
        let leaders: Vec<i32> = self
            .brokers
            .values()
            .filter(|b| b.alive && b.partition.as_ref().is_some_and(|p| p.is_leader()))
            .map(|b| b.id)
            .collect();
        if leaders.is_empty() {
            return;
        }
        let id = leaders[self.rng.below(leaders.len() as u64) as usize];
        self.produced += 1;
        let value = format!("value-{}", self.produced);
        let broker = self.brokers.get_mut(&id).expect("broker");
        let partition = broker.partition.as_ref().expect("alive");
        if partition.check_min_insync(MIN_INSYNC_REPLICAS).is_err() {
            return; // NOT_ENOUGH_REPLICAS
        }
        let batch = crate::log::test_support::encode_batch(&[value.as_bytes()], Compression::None);
        let Ok(info) = partition.append(batch) else {
            return;
        };
        let crc = checks::read_log(partition)
            .into_iter()
            .find(|(offset, _, _)| *offset == info.base_offset)
            .map(|(_, _, crc)| crc)
            .expect("the appended batch reads back");
        broker.pending_acks.push(PendingAck {
            leader_epoch: partition.leader_epoch(),
            offset: info.base_offset,
            crc,
        });
    }

    // ---- a broker's timers ----

    pub(super) fn broker_timers(&mut self, id: i32, now_ms: i64) {
        self.settle_acks(id);
        let broker = self.brokers.get_mut(&id).expect("broker");
        let mut outgoing = Vec::new();
        match broker.broker_epoch {
            None => {
                let stale = broker
                    .registering_since
                    .is_none_or(|since| now_ms - since > REQUEST_TIMEOUT_MS);
                if stale {
                    broker.registering_since = Some(now_ms);
                    let registration = Registration {
                        broker_id: id,
                        incarnation_id: uuid::Uuid::from_u128(
                            (id as u128) << 64 | broker.incarnation as u128,
                        ),
                        host: "sim".into(),
                        port: id as u16,
                        rack: None,
                        listeners: Vec::new(),
                    };
                    outgoing.push((CONTROLLER, Message::Register(registration)));
                }
            }
            Some(broker_epoch) if now_ms >= broker.next_heartbeat_ms => {
                broker.next_heartbeat_ms = now_ms + HEARTBEAT_INTERVAL_MS;
                outgoing.push((CONTROLLER, Message::Heartbeat { broker_epoch }));
            }
            Some(_) => {}
        }
        let partition = Arc::clone(broker.partition.as_ref().expect("alive"));
        if broker
            .alter_in_flight_since
            .is_some_and(|since| now_ms - since > ALTER_PARTITION_TIMEOUT_MS)
        {
            broker.alter_in_flight_since = None;
            partition.isr_proposal_failed();
        }
        // The periodic high watermark checkpoint (what a restart starts from).
        if self.rng.below(10) == 0 {
            partition.checkpoint_high_watermark().expect("checkpoint");
        }
        if let Some(shrink) = partition.check_lagging() {
            outgoing.push(self.alter_partition(id, shrink));
        }
        if let Some(request) = self.next_follower_request(id, now_ms) {
            outgoing.push(request);
        }
        for (to, message) in outgoing {
            self.send(id, to, message);
        }
    }

    fn alter_partition(&mut self, id: i32, proposal: IsrProposal) -> (i32, Message) {
        let broker = self.brokers.get_mut(&id).expect("broker");
        broker.alter_in_flight_since = Some(self.clock.now_ms());
        let message = Message::AlterPartition {
            broker_epoch: broker.broker_epoch.unwrap_or(-1),
            partition_epoch: proposal.partition_epoch,
            isr: proposal.isr,
        };
        (CONTROLLER, message)
    }

    /// acks=all: answered once the high watermark passed the record while this replica still
    /// leads at the epoch it was written in, with enough replicas in sync.
    fn settle_acks(&mut self, id: i32) {
        let broker = self.brokers.get_mut(&id).expect("broker");
        let Some(partition) = broker.partition.as_ref() else {
            return;
        };
        let leads = partition.is_leader();
        let (epoch, high_watermark) = (partition.leader_epoch(), partition.high_watermark());
        let in_sync = partition.isr().len() >= MIN_INSYNC_REPLICAS;
        let mut acked = Vec::new();
        broker.pending_acks.retain(|pending| {
            if !leads || pending.leader_epoch != epoch {
                return false; // NOT_LEADER_OR_FOLLOWER to the client
            }
            if high_watermark <= pending.offset {
                return true;
            }
            if in_sync {
                acked.push(*pending);
            }
            false
        });
        self.stats.acknowledged += acked.len() as u64;
        for pending in acked {
            self.checker
                .acknowledged(pending.offset, pending.leader_epoch, pending.crc);
        }
    }

    /// The fetcher's next request to its leader: truncation first, then a fetch.
    fn next_follower_request(&mut self, id: i32, now_ms: i64) -> Option<(i32, Message)> {
        let broker = self.brokers.get_mut(&id).expect("broker");
        let partition = Arc::clone(broker.partition.as_ref()?);
        let following = broker.following.as_mut()?;
        if following
            .in_flight_since
            .is_some_and(|since| now_ms - since <= REQUEST_TIMEOUT_MS)
            || now_ms < following.paused_until
        {
            return None;
        }
        following.in_flight_since = Some(now_ms);
        let leader_epoch = following.leader_epoch;
        if !following.truncated {
            match partition.latest_epoch() {
                Some(epoch) => {
                    return Some((
                        following.leader,
                        Message::EpochQuery {
                            leader_epoch,
                            epoch,
                        },
                    ))
                }
                None => following.truncated = true,
            }
        }
        let fetch_offset = partition.offsets().log_end_offset;
        Some((
            following.leader,
            Message::Fetch {
                leader_epoch,
                fetch_offset,
            },
        ))
    }

    /// A broker applies the metadata log up to `upto` and takes the role it names.
    pub(super) fn apply_metadata(&mut self, id: i32, upto: usize) {
        let broker = self.brokers.get_mut(&id).expect("broker");
        if upto <= broker.applied {
            return;
        }
        for record in &self.metadata[broker.applied..upto] {
            broker.image.apply(record);
        }
        broker.applied = upto;
        if broker.registered_at.is_none_or(|index| upto < index) {
            return; // Not registered and caught up yet: no role taken.
        }
        let Some(state) = broker
            .image
            .topic_by_name(TOPIC)
            .map(|t| t.partitions[0].clone())
        else {
            return;
        };
        let partition = broker.partition.as_ref().expect("alive");
        let taken = take_role(partition, &state, id, LAG_TIME_MAX_MS).expect("the role is taken");
        match taken {
            TakenRole::Leader => broker.following = None,
            TakenRole::Follower { leader: None } => broker.following = None,
            TakenRole::Follower {
                leader: Some(leader),
            } => {
                let same = broker
                    .following
                    .as_ref()
                    .is_some_and(|f| f.leader == leader && f.leader_epoch == state.leader_epoch);
                if !same {
                    broker.following = Some(Following {
                        leader,
                        leader_epoch: state.leader_epoch,
                        truncated: false,
                        in_flight_since: None,
                        paused_until: 0,
                    });
                }
            }
        }
        if taken == TakenRole::Leader && !self.checker.is_leading(id, state.leader_epoch) {
            self.stats.leaderships += 1;
        }
        if taken == TakenRole::Leader {
            let log = checks::read_log(partition);
            let epoch = partition.leader_epoch();
            if let Err(violation) = self.checker.new_leader(id, epoch, &log) {
                panic!(
                    "seed {}: {violation}\n{}\nreplay with WEIR_SIM_SEED={}",
                    self.seed,
                    self.describe(),
                    self.seed
                );
            }
        }
    }

    /// OffsetForLeaderEpoch at a broker: as `handler::offset_for_leader_epoch` answers.
    pub(super) fn leader_answers_epoch(
        &self,
        id: i32,
        current_leader_epoch: i32,
        epoch: i32,
    ) -> Result<(i32, i64), ResponseError> {
        let partition = self.led_partition(id)?;
        partition.check_leader_epoch(current_leader_epoch)?;
        Ok(partition.end_offset_for_epoch(epoch))
    }

    /// A follower's Fetch at a broker: as `handler::fetch` answers a replica.
    pub(super) fn leader_answers_fetch(
        &mut self,
        id: i32,
        follower: i32,
        current_leader_epoch: i32,
        fetch_offset: i64,
    ) -> Result<(Bytes, i64), ResponseError> {
        let partition = Arc::clone(self.led_partition(id)?);
        partition.check_leader_epoch(current_leader_epoch)?;
        if let Some(expansion) = partition.follower_fetched(follower, fetch_offset)? {
            let (to, message) = self.alter_partition(id, expansion);
            self.send(id, to, message);
        }
        let high_watermark = partition.high_watermark();
        let read = partition
            .read_for_follower(fetch_offset, FETCH_MAX_BYTES)
            .map_err(|_| ResponseError::OffsetOutOfRange)?;
        Ok((read.records, high_watermark))
    }

    fn led_partition(&self, id: i32) -> Result<&Arc<Partition>, ResponseError> {
        let broker = &self.brokers[&id];
        match broker.partition.as_ref() {
            Some(partition) if broker.alive && partition.is_leader() => Ok(partition),
            _ => Err(ResponseError::NotLeaderOrFollower),
        }
    }

    /// The follower state an answer at `leader_epoch` is for, the request now answered (none
    /// when the follower has moved on to another leadership, or its process is gone).
    fn answered(&mut self, id: i32, leader_epoch: i32) -> Option<(Arc<Partition>, &mut Following)> {
        let broker = self.brokers.get_mut(&id).expect("broker");
        let partition = Arc::clone(broker.partition.as_ref()?);
        let following = broker
            .following
            .as_mut()
            .filter(|following| following.leader_epoch == leader_epoch)?;
        following.in_flight_since = None;
        Some((partition, following))
    }

    /// The follower takes the leader's epoch end: one round of KIP-279 truncation.
    pub(super) fn follower_truncates(
        &mut self,
        id: i32,
        leader_epoch: i32,
        answer: Result<(i32, i64), ResponseError>,
    ) {
        let now_ms = self.now_ms();
        let Some((partition, following)) = self.answered(id, leader_epoch) else {
            return;
        };
        let Ok(leader_answer) = answer else {
            following.paused_until = now_ms + FETCH_BACKOFF_MS;
            return;
        };
        let latest = partition.latest_epoch();
        let log_end = partition.offsets().log_end_offset;
        let step = truncation_step(
            leader_answer,
            |epoch| partition.end_offset_for_epoch(epoch),
            partition.high_watermark(),
        );
        if partition
            .truncate_as_follower(leader_epoch, step.cut_at)
            .is_err()
        {
            following.paused_until = now_ms + FETCH_BACKOFF_MS;
            return;
        }
        let progressed = partition.latest_epoch() != latest;
        if step.done || !progressed {
            following.truncated = true;
        }
        if step.cut_at < log_end {
            self.stats.truncations += 1;
        }
    }

    /// The follower appends what the leader sent, or deals with the error.
    pub(super) fn follower_appends(
        &mut self,
        id: i32,
        leader_epoch: i32,
        answer: Result<(Bytes, i64), ResponseError>,
    ) {
        let now_ms = self.now_ms();
        let Some((partition, following)) = self.answered(id, leader_epoch) else {
            return;
        };
        match answer {
            Ok((records, high_watermark)) => {
                if partition
                    .append_as_follower(leader_epoch, &records, high_watermark)
                    .is_err()
                {
                    following.paused_until = now_ms + FETCH_BACKOFF_MS;
                }
            }
            Err(ResponseError::OffsetOutOfRange) => following.truncated = false,
            Err(_) => following.paused_until = now_ms + FETCH_BACKOFF_MS,
        }
    }
}
