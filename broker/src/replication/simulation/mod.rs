//! A deterministic simulation of one partition replicated on three brokers, driven by one
//! seeded schedule: the real [`Controller`] (registration, fencing by heartbeats, elections from
//! the ISR, AlterPartition, preferred-leader restoration), real [`Partition`]s over real logs in
//! a temporary directory (leadership and its ISR/high-watermark state machine, follower appends
//! and truncation, recovery on restart), the follower protocol of [`super::fetcher`] (truncate
//! by leader epoch with [`truncation_step`], then fetch from the log end) and the leader's
//! answers as `handler::fetch` and `handler::offset_for_leader_epoch` give them (the same
//! `Partition::check_leader_epoch`). A fake clock; a network that delays, reorders, drops and
//! partitions messages; brokers that crash (losing everything but their logs) and restart.
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

mod broker;
mod checks;
mod network;
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::clock::{Clock, ManualClock};
use crate::cluster::controller::{Controller, ControllerConfig, ControllerError};
use crate::cluster::record::MetadataRecord;
use crate::cluster::MetadataImage;
use crate::config::LogConfig;
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
pub(super) struct Stats {
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

pub(super) struct Simulation {
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
    pub(super) fn new(seed: u64, faulty_steps: usize) -> Simulation {
        let dir = tempfile::tempdir().expect("temporary directory");
        let clock = Arc::new(ManualClock::new(1_000));
        let config = ControllerConfig {
            broker_session_timeout_ms: SESSION_TIMEOUT_MS,
            unclean_leader_election: false,
            node_id: 1,
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
    pub(super) fn run(&mut self) {
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
        let replicas: Vec<(i32, &Partition)> = self
            .brokers
            .values()
            .filter_map(|b| Some((b.id, b.partition.as_deref()?)))
            .collect();
        if let Err(violation) = self.checker.check(&replicas) {
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
}
