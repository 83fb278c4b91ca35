//! A deterministic simulation of one partition replicated on three brokers, driven by one
//! seeded schedule: the real [`Controller`] (registration, fencing by heartbeats, elections from
//! the ISR, AlterPartition, preferred-leader restoration), real [`Partition`]s over real logs in
//! a temporary directory (leadership and its ISR/high-watermark state machine, follower appends
//! and truncation, recovery on restart), the follower protocol of [`super::fetcher`] (truncate
//! by leader epoch with [`truncation_step`], then fetch from the log end) and the leader's
//! answers as `handler::fetch` and `handler::offset_for_leader_epoch` give them (the same
//! [`check_leader_epoch`]). A fake clock; a network that delays, reorders, drops and partitions
//! messages; brokers that crash (losing everything but their logs) and restart.
//!
//! What is abstracted: the metadata quorum is one controller that does not fail (openraft's
//! consensus has its own tests), each broker learns the metadata log's prefix at its own pace
//! over its link to the controller, and clients append directly at a broker that believes it
//! leads (including a deposed one that has not heard yet).
//!
//! Invariants (`checks`): no write acknowledged with acks=all (min.insync.replicas=2, unclean
//! election off) is ever missing from a leader; every replica's log below its high watermark
//! agrees with the committed log; a leader's high watermark never moves back within its epoch;
//! and once faults stop, all replicas converge. A failure names its seed; `WEIR_SIM_SEED=N`
//! replays it exactly.

mod checks;
mod network;
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use kafka_protocol::ResponseError;

use super::fetcher::truncation_step;
use super::{take_role, TakenRole};
use crate::clock::{Clock, ManualClock};
use crate::cluster::controller::{Controller, ControllerConfig, ControllerError, Registration};
use crate::cluster::record::MetadataRecord;
use crate::cluster::MetadataImage;
use crate::config::LogConfig;
use crate::handler::fetch::check_leader_epoch;
use crate::log::PartitionLog;
use crate::partition::Partition;
use crate::seeded_rng::SeededRng;
use checks::Checker;
use network::{Envelope, Message, Network, CONTROLLER};

const TOPIC: &str = "simulated";
const BROKERS: i32 = 3;
const MIN_INSYNC_REPLICAS: usize = 2;
const SESSION_TIMEOUT_MS: i64 = 3_000;
const HEARTBEAT_INTERVAL_MS: i64 = 300;
const LAG_TIME_MAX_MS: i64 = 2_000;
/// A request without an answer for this long is given up (the connection timed out).
const REQUEST_TIMEOUT_MS: i64 = 1_000;
/// A fetcher pauses this long after an error (`replica.fetch.backoff.ms`).
const FETCH_BACKOFF_MS: i64 = 100;
/// How long an ISR change waits for the controller before the leader may propose again.
const ALTER_PARTITION_TIMEOUT_MS: i64 = 5_000;
const FETCH_MAX_BYTES: usize = 4_096;

/// What a run went through, so a test can tell that the faults and elections happened.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub acknowledged: u64,
    pub crashes: u64,
    pub leaderships: u64,
    pub truncations: u64,
}

/// A follower's progress with its leader (the fetcher's per-partition state).
#[derive(Debug, Clone)]
struct Following {
    leader: i32,
    leader_epoch: i32,
    truncated: bool,
    in_flight_since: Option<i64>,
    paused_until: i64,
}

/// A produce waiting for the ISR (acks=all).
#[derive(Debug, Clone, Copy)]
struct PendingAck {
    leader_epoch: i32,
    offset: i64,
    crc: u32,
}

struct SimBroker {
    id: i32,
    dir: PathBuf,
    alive: bool,
    /// Bumped at each start: answers meant for an earlier process are dropped.
    incarnation: u64,
    partition: Option<Arc<Partition>>,
    image: MetadataImage,
    applied: usize,
    broker_epoch: Option<i64>,
    /// The metadata index this process's first registration was answered at: as
    /// `follow_metadata`, replicas take roles only once registered and caught up to it.
    registered_at: Option<usize>,
    registering_since: Option<i64>,
    next_heartbeat_ms: i64,
    following: Option<Following>,
    alter_in_flight_since: Option<i64>,
    pending_acks: Vec<PendingAck>,
}

pub struct Simulation {
    seed: u64,
    rng: SeededRng,
    clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
    controller: Controller,
    metadata: Vec<MetadataRecord>,
    brokers: BTreeMap<i32, SimBroker>,
    network: Network,
    checker: Checker,
    produced: u64,
    pub stats: Stats,
    /// Faults stop after this many steps; the rest must converge.
    faulty_steps: usize,
}

impl Simulation {
    pub fn new(seed: u64, faulty_steps: usize) -> Simulation {
        let dir = tempfile::tempdir().expect("temporary directory");
        let clock = Arc::new(ManualClock::new(1_000));
        let config = ControllerConfig {
            broker_session_timeout_ms: SESSION_TIMEOUT_MS,
            unclean_leader_election: false,
            default_replication_factor: BROKERS,
            cluster_id: Some("simulated".into()),
            leader_rebalance_interval_ms: Some(5_000),
        };
        let controller = Controller::new(config, MetadataImage::default(), clock.now_ms());
        let brokers = (1..=BROKERS)
            .map(|id| {
                let broker = SimBroker {
                    id,
                    dir: dir.path().join(format!("broker-{id}")),
                    alive: false,
                    incarnation: 0,
                    partition: None,
                    image: MetadataImage::default(),
                    applied: 0,
                    broker_epoch: None,
                    registered_at: None,
                    registering_since: None,
                    next_heartbeat_ms: 0,
                    following: None,
                    alter_in_flight_since: None,
                    pending_acks: Vec::new(),
                };
                (id, broker)
            })
            .collect();
        let mut simulation = Simulation {
            seed,
            rng: SeededRng::new(seed),
            clock,
            _dir: dir,
            controller,
            metadata: Vec::new(),
            brokers,
            network: Network::default(),
            checker: Checker::default(),
            produced: 0,
            stats: Stats::default(),
            faulty_steps,
        };
        for id in 1..=BROKERS {
            simulation.start_broker(id);
        }
        // The brokers register before the topic is placed on them.
        for _ in 0..1_000 {
            if simulation.controller.image().live_brokers().count() == BROKERS as usize {
                break;
            }
            simulation.deliver_one();
        }
        let assignment = vec![(1..=BROKERS).collect::<Vec<i32>>()];
        let created = simulation.controller.create_topic(
            TOPIC,
            1,
            None,
            Some(assignment),
            BTreeMap::from([(
                "min.insync.replicas".into(),
                MIN_INSYNC_REPLICAS.to_string(),
            )]),
        );
        simulation.commit(created.expect("the topic is created"));
        simulation
    }

    /// Runs the faulty phase, then a quiet one that must converge; panics with the seed on a
    /// broken invariant.
    pub fn run(&mut self) {
        for step in 0..self.faulty_steps {
            self.faulty_step();
            self.check(step);
        }
        self.heal_everything();
        for step in 0..20_000 {
            self.quiet_step();
            self.check(self.faulty_steps + step);
            if step % 50 == 0 && self.converged() {
                return;
            }
        }
        panic!(
            "seed {}: the replicas did not converge once faults stopped: {}",
            self.seed,
            self.describe()
        );
    }

    fn check(&mut self, step: usize) {
        let seed = self.seed;
        let leader = self
            .controller
            .image()
            .topic_by_name(TOPIC)
            .map(|t| t.partitions[0].leader);
        let replicas: Vec<(i32, &Partition)> = self
            .brokers
            .values()
            .filter_map(|b| Some((b.id, b.partition.as_deref()?)))
            .collect();
        if let Err(violation) = self.checker.check(&replicas, leader) {
            panic!(
                "seed {seed}, step {step}: {violation}\n{}\nreplay with WEIR_SIM_SEED={seed}",
                self.describe()
            );
        }
    }

    fn faulty_step(&mut self) {
        match self.rng.below(100) {
            0..=44 => self.deliver_one(),
            45..=64 => {
                let delta_ms = 1 + self.rng.below(100) as i64;
                self.advance(delta_ms)
            }
            65..=79 => self.produce(),
            80..=83 => self.network.drop_random(&mut self.rng),
            84..=85 => self.crash_random(),
            86..=90 => self.restart_random(),
            91..=93 => self.cut_random_link(),
            _ => self.network.heal(),
        }
    }

    fn quiet_step(&mut self) {
        match self.rng.below(10) {
            0..=5 => self.deliver_one(),
            6..=8 => {
                let delta_ms = 1 + self.rng.below(50) as i64;
                self.advance(delta_ms)
            }
            _ => self.produce(),
        }
    }

    fn heal_everything(&mut self) {
        self.network.heal();
        for id in 1..=BROKERS {
            if !self.brokers[&id].alive {
                self.start_broker(id);
            }
        }
    }

    /// All replicas hold the same log, the leader's high watermark is its log end, and the
    /// ISR holds every replica.
    fn converged(&self) -> bool {
        let Some(state) = self
            .controller
            .image()
            .topic_by_name(TOPIC)
            .map(|t| &t.partitions[0])
        else {
            return false;
        };
        let Some(leader) = self.brokers.get(&state.leader) else {
            return false;
        };
        let Some(leading) = leader.partition.as_ref().filter(|p| p.is_leader()) else {
            return false;
        };
        let offsets = leading.offsets();
        let logs: Vec<_> = self
            .brokers
            .values()
            .filter_map(|b| b.partition.as_ref())
            .map(|p| checks::read_log(p))
            .collect();
        state.isr.len() == BROKERS as usize
            && offsets.high_watermark == offsets.log_end_offset
            && logs.len() == BROKERS as usize
            && logs.windows(2).all(|pair| pair[0] == pair[1])
    }

    fn describe(&self) -> String {
        let mut lines = vec![format!(
            "controller: {:?}",
            self.controller
                .image()
                .topic_by_name(TOPIC)
                .map(|t| &t.partitions[0])
        )];
        for broker in self.brokers.values() {
            let state = broker.partition.as_ref().map(|p| {
                let offsets = p.offsets();
                format!(
                    "leader={} epoch={} hw={} end={} log={:?}",
                    p.is_leader(),
                    p.leader_epoch(),
                    offsets.high_watermark,
                    offsets.log_end_offset,
                    checks::read_log(p)
                        .iter()
                        .map(|(offset, epoch, _)| (*offset, *epoch))
                        .collect::<Vec<_>>()
                )
            });
            lines.push(format!(
                "broker {}: alive={} applied={} following={:?} {}",
                broker.id,
                broker.alive,
                broker.applied,
                broker.following,
                state.unwrap_or_default()
            ));
        }
        lines.join("\n")
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Appends controller records to the metadata log (the quorum commits them).
    fn commit(&mut self, records: Vec<MetadataRecord>) {
        self.controller.apply(&records);
        self.metadata.extend(records);
    }

    fn send(&mut self, from: i32, to: i32, message: Message) {
        let delay_ms = self.rng.below(40) as i64;
        let to_incarnation = self.brokers.get(&to).map_or(0, |b| b.incarnation);
        self.network.send(Envelope {
            from,
            to,
            to_incarnation,
            deliver_at_ms: self.now_ms() + delay_ms,
            message,
        });
    }

    fn deliver_one(&mut self) {
        let now_ms = self.now_ms();
        match self.network.take_due(now_ms, &mut self.rng) {
            Some(envelope) => self.deliver(envelope),
            None => self.advance(10),
        }
    }

    /// Time passes: every live broker and the controller run their timers.
    fn advance(&mut self, delta_ms: i64) {
        self.clock.advance_ms(delta_ms);
        let now_ms = self.now_ms();
        let records = self.controller.tick(now_ms);
        if !records.is_empty() {
            self.commit(records);
        }
        for id in 1..=BROKERS {
            if self.brokers[&id].alive {
                self.broker_timers(id, now_ms);
            }
        }
    }

    // ---- faults ----

    fn crash_random(&mut self) {
        let id = 1 + self.rng.below(BROKERS as u64) as i32;
        let broker = self.brokers.get_mut(&id).expect("broker");
        if !broker.alive {
            return;
        }
        self.stats.crashes += 1;
        broker.alive = false;
        broker.partition = None; // The process is gone; its log stays on disk.
        broker.following = None;
        broker.pending_acks.clear();
    }

    fn restart_random(&mut self) {
        let id = 1 + self.rng.below(BROKERS as u64) as i32;
        if !self.brokers[&id].alive {
            self.start_broker(id);
        }
    }

    fn cut_random_link(&mut self) {
        let a = 1 + self.rng.below(BROKERS as u64) as i32;
        let b = self.rng.below(BROKERS as u64 + 1) as i32; // 0: the controller
        if a != b {
            self.network.cut(a, b);
        }
    }

    /// Starts broker `id` from its log on disk, as a fresh process.
    fn start_broker(&mut self, id: i32) {
        let clock: Arc<dyn Clock> = self.clock.clone();
        let now_ms = self.now_ms();
        let broker = self.brokers.get_mut(&id).expect("broker");
        let log = PartitionLog::open(&broker.dir, LogConfig::default(), false, now_ms)
            .expect("the log opens");
        broker.partition = Some(Arc::new(Partition::new_replica(
            TOPIC.into(),
            0,
            log,
            clock,
        )));
        broker.alive = true;
        broker.incarnation += 1;
        broker.image = MetadataImage::default();
        broker.applied = 0;
        broker.broker_epoch = None;
        broker.registered_at = None;
        broker.registering_since = None;
        broker.next_heartbeat_ms = now_ms;
        broker.following = None;
        broker.alter_in_flight_since = None;
        broker.pending_acks.clear();
    }

    // ---- clients ----

    /// A client appends one record at a broker that believes it leads, with acks=all.
    fn produce(&mut self) {
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

    fn broker_timers(&mut self, id: i32, now_ms: i64) {
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

    fn alter_partition(&mut self, id: i32, proposal: super::leader::IsrProposal) -> (i32, Message) {
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

    // ---- deliveries ----

    fn deliver(&mut self, envelope: Envelope) {
        let Envelope {
            from,
            to,
            to_incarnation: envelope_incarnation,
            message,
            ..
        } = envelope;
        if to == CONTROLLER {
            return self.controller_receives(from, message);
        }
        let receiver = &self.brokers[&to];
        if !receiver.alive || receiver.incarnation != envelope_incarnation {
            return; // Sent to a process that is gone.
        }
        let now_ms = self.now_ms();
        match message {
            Message::Metadata { upto } => self.apply_metadata(to, upto),
            Message::Registered(result) => {
                let broker = self.brokers.get_mut(&to).expect("broker");
                broker.registering_since = None;
                if let Ok((broker_epoch, index)) = result {
                    broker.broker_epoch = Some(broker_epoch);
                    broker.registered_at.get_or_insert(index);
                    broker.next_heartbeat_ms = now_ms;
                }
            }
            Message::HeartbeatAnswer(result) => {
                if let Err(
                    ControllerError::StaleBrokerEpoch { .. }
                    | ControllerError::UnknownBroker { .. },
                ) = result
                {
                    self.brokers.get_mut(&to).expect("broker").broker_epoch = None;
                }
            }
            Message::AlterAnswer(result) => {
                let broker = self.brokers.get_mut(&to).expect("broker");
                broker.alter_in_flight_since = None;
                if result.is_err() {
                    broker
                        .partition
                        .as_ref()
                        .expect("alive")
                        .isr_proposal_failed();
                }
            }
            Message::EpochQuery {
                leader_epoch,
                epoch,
            } => {
                let answer = self.leader_answers_epoch(to, leader_epoch, epoch);
                self.send(
                    to,
                    from,
                    Message::EpochAnswer {
                        leader_epoch,
                        answer,
                    },
                );
            }
            Message::EpochAnswer {
                leader_epoch,
                answer,
            } => self.follower_truncates(to, leader_epoch, answer),
            Message::Fetch {
                leader_epoch,
                fetch_offset,
            } => {
                let answer = self.leader_answers_fetch(to, from, leader_epoch, fetch_offset);
                self.send(
                    to,
                    from,
                    Message::FetchAnswer {
                        leader_epoch,
                        answer,
                    },
                );
            }
            Message::FetchAnswer {
                leader_epoch,
                answer,
            } => self.follower_appends(to, leader_epoch, answer),
            Message::Register(_) | Message::Heartbeat { .. } | Message::AlterPartition { .. } => {}
        }
    }

    fn controller_receives(&mut self, from: i32, message: Message) {
        let now_ms = self.now_ms();
        let (decided, answer): (Result<Vec<MetadataRecord>, ControllerError>, _) = match message {
            Message::Register(registration) => {
                let decided = self.controller.register_broker(registration, now_ms);
                let epoch = decided.as_ref().map_err(Clone::clone).map(|records| {
                    records
                        .iter()
                        .find_map(|r| match r {
                            MetadataRecord::RegisterBroker { broker_epoch, .. } => {
                                Some(*broker_epoch)
                            }
                            _ => None,
                        })
                        .expect("a registration record")
                });
                let index = self.metadata.len() + decided.as_ref().map_or(0, Vec::len);
                (
                    decided,
                    Message::Registered(epoch.map(|epoch| (epoch, index))),
                )
            }
            Message::Heartbeat { broker_epoch } => {
                let decided = self.controller.heartbeat(from, broker_epoch, now_ms);
                let answer = decided.as_ref().map(|_| ()).map_err(Clone::clone);
                (decided, Message::HeartbeatAnswer(answer))
            }
            Message::AlterPartition {
                broker_epoch,
                partition_epoch,
                isr,
            } => {
                let topic_id = self
                    .controller
                    .image()
                    .topic_by_name(TOPIC)
                    .expect("topic")
                    .topic_id;
                let decided = self.controller.alter_partition(
                    from,
                    broker_epoch,
                    topic_id,
                    0,
                    partition_epoch,
                    isr,
                );
                let answer = decided.as_ref().map(|_| ()).map_err(Clone::clone);
                (decided, Message::AlterAnswer(answer))
            }
            _ => return,
        };
        if let Ok(records) = decided {
            self.commit(records);
        }
        self.send(CONTROLLER, from, answer);
        // Metadata follows the answer on the same link (the broker then catches up to it).
        let upto = self.metadata.len();
        self.send(CONTROLLER, from, Message::Metadata { upto });
    }

    /// A broker applies the metadata log up to `upto` and takes the role it names.
    fn apply_metadata(&mut self, id: i32, upto: usize) {
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
    fn leader_answers_epoch(
        &self,
        id: i32,
        current_leader_epoch: i32,
        epoch: i32,
    ) -> Result<(i32, i64), ResponseError> {
        let partition = self.led_partition(id)?;
        check_leader_epoch(partition, current_leader_epoch)?;
        Ok(partition.end_offset_for_epoch(epoch))
    }

    /// A follower's Fetch at a broker: as `handler::fetch` answers a replica.
    fn leader_answers_fetch(
        &mut self,
        id: i32,
        follower: i32,
        current_leader_epoch: i32,
        fetch_offset: i64,
    ) -> Result<(Bytes, i64), ResponseError> {
        let partition = Arc::clone(self.led_partition(id)?);
        check_leader_epoch(&partition, current_leader_epoch)?;
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

    /// The follower takes the leader's epoch end: one round of KIP-279 truncation.
    fn follower_truncates(
        &mut self,
        id: i32,
        leader_epoch: i32,
        answer: Result<(i32, i64), ResponseError>,
    ) {
        let now_ms = self.now_ms();
        let broker = self.brokers.get_mut(&id).expect("broker");
        let (Some(partition), Some(following)) =
            (broker.partition.as_ref(), broker.following.as_mut())
        else {
            return;
        };
        if following.leader_epoch != leader_epoch {
            return; // An answer for an earlier leadership.
        }
        following.in_flight_since = None;
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
        if step.cut_at < log_end {
            self.stats.truncations += 1;
        }
        let progressed = partition.latest_epoch() != latest;
        if step.done || !progressed {
            following.truncated = true;
        }
    }

    /// The follower appends what the leader sent, or deals with the error.
    fn follower_appends(
        &mut self,
        id: i32,
        leader_epoch: i32,
        answer: Result<(Bytes, i64), ResponseError>,
    ) {
        let now_ms = self.now_ms();
        let broker = self.brokers.get_mut(&id).expect("broker");
        let (Some(partition), Some(following)) =
            (broker.partition.as_ref(), broker.following.as_mut())
        else {
            return;
        };
        if following.leader_epoch != leader_epoch {
            return;
        }
        following.in_flight_since = None;
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
