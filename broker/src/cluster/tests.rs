//! The controller's decisions driven by hand and by a seeded random schedule of broker deaths,
//! returns and ISR changes, with the metadata invariants checked after every step and the
//! image rebuilt from the records alone.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::seeded_rng::SeededRng;

use super::controller::Registration;
use super::*;

const SESSION_MS: i64 = 9_000;

struct Cluster {
    controller: Controller,
    log: Vec<MetadataRecord>,
    now_ms: i64,
    epochs: BTreeMap<i32, i64>,
}

impl Cluster {
    fn new(brokers: i32, unclean: bool) -> Cluster {
        let config = ControllerConfig {
            broker_session_timeout_ms: SESSION_MS,
            unclean_leader_election: unclean,
            node_id: 1,
            default_replication_factor: 3,
            cluster_id: None,
            leader_rebalance_interval_ms: None,
        };
        let mut cluster = Cluster {
            controller: Controller::new(config, MetadataImage::default(), 0),
            log: Vec::new(),
            now_ms: 1_000_000,
            epochs: BTreeMap::new(),
        };
        for broker in 1..=brokers {
            cluster.start(broker);
        }
        cluster
    }

    /// Another voter becomes the active controller: it knows only the image, not heartbeats.
    fn fail_over(&mut self) {
        let config = self.controller.config().clone();
        let image = self.controller.image().clone();
        self.controller = Controller::new(config, image, self.now_ms);
    }

    fn commit(&mut self, records: Vec<MetadataRecord>) {
        self.controller.apply(&records);
        self.log.extend(records);
        check_invariants(self.controller.image());
    }

    fn start(&mut self, broker_id: i32) {
        let registration = Registration {
            broker_id,
            incarnation_id: Uuid::new_v4(),
            host: "127.0.0.1".into(),
            port: 9000 + broker_id as u16,
            rack: None,
            listeners: Vec::new(),
        };
        let records = self
            .controller
            .register_broker(registration, self.now_ms)
            .unwrap();
        self.commit(records);
        let epoch = self.controller.image().brokers[&broker_id].broker_epoch;
        self.epochs.insert(broker_id, epoch);
        self.beat(broker_id);
    }

    fn beat(&mut self, broker_id: i32) {
        let epoch = self.epochs[&broker_id];
        let records = self
            .controller
            .heartbeat(broker_id, epoch, self.now_ms)
            .unwrap();
        self.commit(records);
    }

    /// Time passes; the brokers in `alive` heartbeat every second, the others do not.
    fn pass_ms(&mut self, ms: i64, alive: &[i32]) {
        for _ in 0..ms / 1000 {
            self.now_ms += 1000;
            for &broker in alive {
                self.beat(broker);
            }
            let records = self.controller.tick(self.now_ms);
            self.commit(records);
        }
    }

    fn topic(&mut self, name: &str, partitions: i32) -> Uuid {
        let records = self
            .controller
            .create_topic(name, partitions, None, None, BTreeMap::new())
            .unwrap();
        self.commit(records);
        self.controller
            .image()
            .topic_by_name(name)
            .unwrap()
            .topic_id
    }

    /// A one-partition topic whose followers fall out of the ISR (the leader says so), then
    /// whose leader dies; returns the topic, the dead leader and the brokers still up.
    fn lone_isr_leader_dies(&mut self) -> (Uuid, i32, Vec<i32>) {
        let topic = self.topic("events", 1);
        let state = self.partition(topic, 0);
        let leader = state.leader;
        let records = self
            .controller
            .alter_partition(
                leader,
                self.epochs[&leader],
                topic,
                0,
                state.partition_epoch,
                vec![leader],
            )
            .unwrap();
        self.commit(records);
        let others: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != leader).collect();
        self.pass_ms(SESSION_MS + 1000, &others);
        (topic, leader, others)
    }

    fn partition(&self, topic_id: Uuid, partition: i32) -> PartitionState {
        self.controller
            .image()
            .partition(topic_id, partition)
            .unwrap()
            .clone()
    }
}

/// What must hold of every image the controller leaves.
fn check_invariants(image: &MetadataImage) {
    for topic in image.topics.values() {
        for (index, state) in topic.partitions.iter().enumerate() {
            let at = format!("{}-{index}: {state:?}", topic.name);
            assert!(!state.isr.is_empty(), "empty ISR {at}");
            assert!(
                state.isr.iter().all(|b| state.replicas.contains(b)),
                "ISR outside the replicas {at}"
            );
            if state.leader != NO_LEADER {
                assert!(
                    state.isr.contains(&state.leader),
                    "leader outside the ISR {at}"
                );
                assert!(image.is_live(state.leader), "fenced leader {at}");
            }
        }
    }
}

#[test]
fn replicas_and_leaders_spread_over_the_brokers() {
    let mut cluster = Cluster::new(3, false);
    let topic = cluster.topic("events", 6);
    let mut leaders = BTreeMap::new();
    let mut followers = BTreeMap::new();
    for partition in 0..6 {
        let state = cluster.partition(topic, partition);
        let mut distinct = state.replicas.clone();
        distinct.sort();
        assert_eq!(distinct, [1, 2, 3], "{state:?}");
        assert_eq!(state.leader, state.replicas[0]);
        assert_eq!(state.isr, state.replicas);
        *leaders.entry(state.leader).or_insert(0) += 1;
        *followers.entry(state.replicas[1]).or_insert(0) += 1;
    }
    assert_eq!(leaders.values().collect::<Vec<_>>(), [&2, &2, &2]);
    assert_eq!(
        followers.len(),
        3,
        "second replicas spread too: {followers:?}"
    );
    let error = cluster
        .controller
        .create_topic("wide", 1, Some(4), None, BTreeMap::new())
        .unwrap_err();
    assert_eq!(
        error,
        ControllerError::InvalidReplicationFactor {
            replication_factor: 4,
            live_brokers: 3
        }
    );
}

#[test]
fn a_dead_leader_is_replaced_from_the_isr_with_a_new_epoch() {
    let mut cluster = Cluster::new(3, false);
    let topic = cluster.topic("events", 3);
    let before: Vec<_> = (0..3).map(|p| cluster.partition(topic, p)).collect();
    let dead = before[0].leader;
    let alive: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != dead).collect();
    cluster.pass_ms(SESSION_MS - 1000, &alive);
    assert!(
        cluster.controller.image().is_live(dead),
        "within its session"
    );
    cluster.pass_ms(2000, &alive);
    assert!(
        !cluster.controller.image().is_live(dead),
        "fenced after the session"
    );
    for (partition, old) in before.iter().enumerate() {
        let now = cluster.partition(topic, partition as i32);
        assert!(!now.isr.contains(&dead), "{now:?}");
        if old.leader == dead {
            let expected = old.replicas.iter().find(|r| **r != dead).unwrap();
            assert_eq!(now.leader, *expected, "next in replica order");
            assert_eq!(now.leader_epoch, old.leader_epoch + 1);
        } else {
            assert_eq!(now.leader, old.leader);
            assert_eq!(
                now.leader_epoch, old.leader_epoch,
                "an ISR shrink keeps the epoch"
            );
        }
        assert!(now.partition_epoch > old.partition_epoch);
    }
}

#[test]
fn without_unclean_election_the_last_isr_member_alone_may_lead_again() {
    let mut cluster = Cluster::new(3, false);
    let (topic, leader, _) = cluster.lone_isr_leader_dies();
    let offline = cluster.partition(topic, 0);
    assert_eq!(offline.leader, NO_LEADER);
    assert_eq!(offline.isr, [leader], "the last ISR member is kept");
    // It comes back: it leads again, with a new epoch.
    cluster.start(leader);
    let back = cluster.partition(topic, 0);
    assert_eq!(back.leader, leader);
    assert!(back.leader_epoch > offline.leader_epoch);
    assert_eq!(cluster.controller.image().unclean_elections, 0);
}

#[test]
fn unclean_election_picks_a_live_replica_outside_the_isr_and_counts_it() {
    let mut cluster = Cluster::new(3, true);
    let (topic, _, others) = cluster.lone_isr_leader_dies();
    let now = cluster.partition(topic, 0);
    assert!(others.contains(&now.leader), "{now:?}");
    assert_eq!(now.isr, [now.leader]);
    assert_eq!(cluster.controller.image().unclean_elections, 1);
}

#[test]
fn unclean_election_follows_the_dynamic_configs_in_the_image() {
    let mut cluster = Cluster::new(3, false);
    let (topic, leader, others) = cluster.lone_isr_leader_dies();
    assert_eq!(cluster.partition(topic, 0).leader, NO_LEADER);
    // This controller's own node (1) says no over a cluster default of yes: still offline.
    let node_says_no = BTreeMap::from([(
        "unclean.leader.election.enable".to_string(),
        "false".to_string(),
    )]);
    let records = cluster
        .controller
        .alter_broker_configs("1".into(), node_says_no);
    cluster.commit(records);
    let default_says_yes = BTreeMap::from([(
        "unclean.leader.election.enable".to_string(),
        "true".to_string(),
    )]);
    let records = cluster
        .controller
        .alter_broker_configs(String::new(), default_says_yes);
    cluster.commit(records);
    assert_eq!(cluster.partition(topic, 0).leader, NO_LEADER);
    assert_eq!(cluster.controller.image().unclean_elections, 0);
    // The node's value deleted: the default enables it, and the offline partition is elected.
    let records = cluster
        .controller
        .alter_broker_configs("1".into(), BTreeMap::new());
    cluster.commit(records);
    let now = cluster.partition(topic, 0);
    assert!(
        others.contains(&now.leader),
        "{now:?} (old leader {leader})"
    );
    assert_eq!(now.isr, [now.leader]);
    assert_eq!(cluster.controller.image().unclean_elections, 1);
}

#[test]
fn alter_partition_is_checked() {
    let mut cluster = Cluster::new(3, false);
    let topic = cluster.topic("events", 1);
    let state = cluster.partition(topic, 0);
    let (leader, follower) = (state.leader, state.replicas[1]);
    let epoch = cluster.epochs[&leader];
    let alter = |cluster: &Cluster, by: i32, by_epoch: i64, partition_epoch: i32, isr: Vec<i32>| {
        cluster
            .controller
            .alter_partition(by, by_epoch, topic, 0, partition_epoch, isr)
    };
    assert_eq!(
        alter(
            &cluster,
            follower,
            cluster.epochs[&follower],
            0,
            vec![follower]
        )
        .unwrap_err(),
        ControllerError::NotLeader {
            broker_id: follower,
            leader
        }
    );
    assert!(matches!(
        alter(&cluster, leader, epoch - 1, 0, vec![leader]).unwrap_err(),
        ControllerError::StaleBrokerEpoch { .. }
    ));
    assert_eq!(
        alter(&cluster, leader, epoch, 7, vec![leader]).unwrap_err(),
        ControllerError::InvalidUpdateVersion {
            sent: 7,
            current: 0
        }
    );
    assert!(matches!(
        alter(&cluster, leader, epoch, 0, vec![follower]).unwrap_err(),
        ControllerError::IneligibleReplica { .. }
    ));
    let records = alter(&cluster, leader, epoch, 0, vec![follower, leader]).unwrap();
    cluster.commit(records);
    let now = cluster.partition(topic, 0);
    assert_eq!(now.isr, in_order(&state.replicas, &[leader, follower]));
    assert_eq!((now.leader_epoch, now.partition_epoch), (0, 1));
    // A fenced broker cannot be added back.
    let third = state.replicas[2];
    let alive: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != third).collect();
    cluster.pass_ms(SESSION_MS + 1000, &alive);
    let now = cluster.partition(topic, 0);
    assert!(matches!(
        alter(&cluster, leader, epoch, now.partition_epoch, state.replicas.clone()).unwrap_err(),
        ControllerError::IneligibleReplica { broker_id, .. } if broker_id == third
    ));
}

fn in_order(replicas: &[i32], members: &[i32]) -> Vec<i32> {
    replicas
        .iter()
        .copied()
        .filter(|r| members.contains(r))
        .collect()
}

#[test]
fn a_live_broker_id_cannot_be_registered_twice_but_a_restarted_one_can() {
    let mut cluster = Cluster::new(3, false);
    let duplicate = Registration {
        broker_id: 2,
        incarnation_id: Uuid::new_v4(),
        host: "127.0.0.1".into(),
        port: 9999,
        rack: None,
        listeners: Vec::new(),
    };
    assert_eq!(
        cluster
            .controller
            .register_broker(duplicate.clone(), cluster.now_ms)
            .unwrap_err(),
        ControllerError::DuplicateBrokerRegistration { broker_id: 2 }
    );
    let old_epoch = cluster.epochs[&2];
    cluster.pass_ms(SESSION_MS + 1000, &[1, 3]);
    cluster.start(2);
    assert!(cluster.epochs[&2] > old_epoch);
    assert!(cluster.controller.image().is_live(2));
    assert!(matches!(
        cluster.controller.heartbeat(2, old_epoch, cluster.now_ms),
        Err(ControllerError::StaleBrokerEpoch { .. })
    ));
}

#[test]
fn a_preferred_leader_back_in_sync_leads_again_at_the_next_check() {
    let mut cluster = Cluster::new(3, false);
    let config = ControllerConfig {
        leader_rebalance_interval_ms: Some(10_000),
        ..cluster.controller.config().clone()
    };
    cluster.controller =
        Controller::new(config, cluster.controller.image().clone(), cluster.now_ms);
    let topic = cluster.topic("events", 1);
    let preferred = cluster.partition(topic, 0).replicas[0];
    let others: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != preferred).collect();
    cluster.pass_ms(SESSION_MS + 1000, &others);
    let moved = cluster.partition(topic, 0);
    assert_ne!(moved.leader, preferred);
    assert!(!moved.isr.contains(&preferred));
    // Back, but not in sync: it does not lead yet.
    cluster.start(preferred);
    cluster.pass_ms(20_000, &[1, 2, 3]);
    assert_eq!(cluster.partition(topic, 0).leader, moved.leader);
    // The current leader adds it back to the ISR; the next check hands leadership back.
    let state = cluster.partition(topic, 0);
    let records = cluster
        .controller
        .alter_partition(
            state.leader,
            cluster.epochs[&state.leader],
            topic,
            0,
            state.partition_epoch,
            vec![1, 2, 3],
        )
        .unwrap();
    cluster.commit(records);
    cluster.pass_ms(10_000, &[1, 2, 3]);
    let restored = cluster.partition(topic, 0);
    assert_eq!(restored.leader, preferred);
    assert!(restored.leader_epoch > moved.leader_epoch);
}

#[test]
fn producer_id_blocks_never_overlap_even_across_a_controller_failover() {
    let mut cluster = Cluster::new(3, false);
    let mut blocks = Vec::new();
    for broker in [1, 2, 3, 1] {
        let records = cluster
            .controller
            .allocate_producer_ids(broker, cluster.epochs[&broker])
            .unwrap();
        cluster.commit(records);
        blocks.push(cluster.controller.image().producer_id_blocks[&broker]);
        cluster.fail_over();
    }
    assert_eq!(
        blocks,
        vec![(0, 1000), (1000, 1000), (2000, 1000), (3000, 1000)]
    );
    assert!(matches!(
        cluster
            .controller
            .allocate_producer_ids(2, cluster.epochs[&2] - 1),
        Err(ControllerError::StaleBrokerEpoch { .. })
    ));
}

/// Brokers die and return and leaders shrink and grow ISRs at random; after every step the
/// invariants hold (checked in `commit`), leader epochs never go back, and the records alone
/// rebuild the controller's image.
#[test]
fn random_schedules_keep_the_invariants_and_replay_exactly() {
    for seed in 1..=40u64 {
        let mut rng = SeededRng::new(seed);
        let unclean = seed % 4 == 0;
        let mut cluster = Cluster::new(5, unclean);
        let topics: Vec<Uuid> = (0..3).map(|t| cluster.topic(&format!("t{t}"), 4)).collect();
        let mut alive: Vec<i32> = (1..=5).collect();
        let mut epochs: BTreeMap<(Uuid, i32), i32> = BTreeMap::new();
        for _step in 0..200 {
            match rng.below(5) {
                4 => cluster.fail_over(),
                0 if alive.len() > 1 => {
                    let index = rng.below(alive.len() as u64) as usize;
                    alive.remove(index);
                }
                1 => {
                    // A restart within the old session is refused (DuplicateBrokerRegistration,
                    // checked above): only fenced brokers come back.
                    let image = cluster.controller.image();
                    let dead: Vec<i32> = (1..=5)
                        .filter(|b| !alive.contains(b) && !image.is_live(*b))
                        .collect();
                    if !dead.is_empty() {
                        let broker = dead[rng.below(dead.len() as u64) as usize];
                        cluster.start(broker);
                        alive.push(broker);
                    }
                }
                _ => {
                    let topic = topics[rng.below(3) as usize];
                    let partition = rng.below(4) as i32;
                    let state = cluster.partition(topic, partition);
                    if state.leader != NO_LEADER && alive.contains(&state.leader) {
                        let mut isr = vec![state.leader];
                        for replica in &state.replicas {
                            if cluster.controller.image().is_live(*replica) && rng.below(2) == 0 {
                                isr.push(*replica);
                            }
                        }
                        let epoch = cluster.epochs[&state.leader];
                        let records = cluster
                            .controller
                            .alter_partition(
                                state.leader,
                                epoch,
                                topic,
                                partition,
                                state.partition_epoch,
                                isr,
                            )
                            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                        cluster.commit(records);
                    }
                }
            }
            cluster.pass_ms(1000 + rng.below(3) as i64 * 5000, &alive);
            for (topic_id, topic) in &cluster.controller.image().topics {
                for (index, state) in topic.partitions.iter().enumerate() {
                    let last = epochs.entry((*topic_id, index as i32)).or_insert(0);
                    assert!(
                        state.leader_epoch >= *last,
                        "seed {seed}: leader epoch went back"
                    );
                    *last = state.leader_epoch;
                }
            }
        }
        let mut replayed = MetadataImage::default();
        for record in &cluster.log {
            replayed.apply(record);
        }
        assert_eq!(&replayed, cluster.controller.image(), "seed {seed}");
    }
}

#[test]
fn topics_grow_change_configs_and_go_through_the_controller() {
    let mut cluster = Cluster::new(3, false);
    let topic = cluster.topic("events", 2);
    let error = cluster
        .controller
        .create_partitions("events", 2, None)
        .unwrap_err();
    assert!(
        matches!(
            error,
            ControllerError::PartitionsNotIncreased { current: 2, .. }
        ),
        "{error:?}"
    );
    let records = cluster
        .controller
        .create_partitions("events", 5, None)
        .unwrap();
    cluster.commit(records);
    let image = cluster.controller.image().clone();
    let grown = &image.topics[&topic];
    assert_eq!(grown.partitions.len(), 5);
    for state in &grown.partitions {
        assert_eq!(state.replicas.len(), 3, "the topic's replication factor");
        assert_eq!(state.leader, state.replicas[0]);
    }
    let error = cluster
        .controller
        .create_partitions("events", 7, Some(vec![vec![1, 2, 3]]))
        .unwrap_err();
    assert!(
        matches!(error, ControllerError::InvalidReplicaAssignment { .. }),
        "two new partitions need two assignments: {error:?}"
    );

    let configs = BTreeMap::from([("retention.ms".to_string(), "1000".to_string())]);
    let records = cluster
        .controller
        .alter_topic_configs("events", configs.clone())
        .unwrap();
    cluster.commit(records);
    assert_eq!(cluster.controller.image().topics[&topic].configs, configs);

    let records = cluster.controller.delete_topic("events").unwrap();
    cluster.commit(records);
    assert!(cluster.controller.image().topic_by_name("events").is_none());
    assert_eq!(
        cluster.controller.delete_topic("events").unwrap_err(),
        ControllerError::UnknownTopic {
            name: "events".into()
        }
    );
    // The image rebuilt from the records alone agrees.
    let mut replayed = MetadataImage::default();
    for record in &cluster.log {
        replayed.apply(record);
    }
    assert_eq!(&replayed, cluster.controller.image());
}

#[test]
fn a_reassignment_adds_replicas_waits_for_them_to_sync_then_drops_the_old_ones() {
    let mut cluster = Cluster::new(4, false);
    let records = cluster
        .controller
        .create_topic("moved", 1, None, Some(vec![vec![1, 2]]), BTreeMap::new())
        .unwrap();
    cluster.commit(records);
    let topic = cluster
        .controller
        .image()
        .topic_by_name("moved")
        .unwrap()
        .topic_id;
    let before = cluster.partition(topic, 0);

    let records = cluster
        .controller
        .reassign("moved", 0, Some(vec![3, 4]))
        .unwrap();
    cluster.commit(records);
    let moving = cluster.partition(topic, 0);
    assert_eq!(moving.replicas, [3, 4, 1, 2]);
    assert_eq!(
        (
            moving.adding_replicas.clone(),
            moving.removing_replicas.clone()
        ),
        (vec![3, 4], vec![1, 2])
    );
    assert_eq!(
        moving.leader, 1,
        "the leader stays while the new replicas catch up"
    );
    assert!(
        moving.leader_epoch > before.leader_epoch,
        "the leader learns its new followers"
    );
    cluster.pass_ms(2_000, &[1, 2, 3, 4]);
    assert!(
        cluster.partition(topic, 0).is_reassigning(),
        "3 and 4 are not in sync yet"
    );

    for isr in [vec![1, 2, 3], vec![1, 2, 3, 4]] {
        let state = cluster.partition(topic, 0);
        let records = cluster
            .controller
            .alter_partition(1, cluster.epochs[&1], topic, 0, state.partition_epoch, isr)
            .unwrap();
        cluster.commit(records);
        cluster.pass_ms(1_000, &[1, 2, 3, 4]);
    }
    let moved = cluster.partition(topic, 0);
    assert_eq!(moved.replicas, [3, 4]);
    assert_eq!(moved.isr, [3, 4]);
    assert_eq!(moved.leader, 3, "the old leader hands over");
    assert!(!moved.is_reassigning());
    assert_eq!(
        cluster.controller.reassign("moved", 0, None).unwrap_err(),
        ControllerError::NoReassignmentInProgress {
            topic: "moved".into(),
            partition: 0
        }
    );

    // Cancelled: back to the replicas before it.
    let records = cluster
        .controller
        .reassign("moved", 0, Some(vec![1, 2]))
        .unwrap();
    cluster.commit(records);
    let records = cluster.controller.reassign("moved", 0, None).unwrap();
    cluster.commit(records);
    let cancelled = cluster.partition(topic, 0);
    assert_eq!(
        (cancelled.replicas.clone(), cancelled.isr.clone()),
        (vec![3, 4], vec![3, 4])
    );
    assert!(!cancelled.is_reassigning());

    // Only removing a replica completes at once.
    let records = cluster
        .controller
        .reassign("moved", 0, Some(vec![4]))
        .unwrap();
    cluster.commit(records);
    let shrunk = cluster.partition(topic, 0);
    assert_eq!(
        (shrunk.replicas.clone(), shrunk.isr.clone(), shrunk.leader),
        (vec![4], vec![4], 4)
    );
    let error = cluster
        .controller
        .reassign("moved", 0, Some(vec![4, 9]))
        .unwrap_err();
    assert!(
        matches!(error, ControllerError::InvalidReplicaAssignment { .. }),
        "{error:?}"
    );
}

#[test]
fn operations_over_ten_thousand_metadata_records_are_refused_before_placement() {
    let mut cluster = Cluster::new(3, false);
    let huge = cluster
        .controller
        .create_topic("huge", i32::MAX, Some(1), None, BTreeMap::new())
        .unwrap_err();
    assert_eq!(
        huge,
        ControllerError::ExcessivelyLargeBatch {
            records: 1 + i32::MAX as u64
        }
    );
    let configs: BTreeMap<String, String> = (0..2)
        .map(|i| (format!("config.{i}"), "1".to_string()))
        .collect();
    let over = cluster
        .controller
        .create_topic("over", 9_998, Some(1), None, configs)
        .unwrap_err();
    assert_eq!(
        over,
        ControllerError::ExcessivelyLargeBatch { records: 10_001 }
    );
    assert!(cluster
        .controller
        .create_topic("largest", 9_999, Some(1), None, BTreeMap::new())
        .is_ok());
    cluster.topic("events", 2);
    let grown = cluster
        .controller
        .create_partitions("events", i32::MAX, None)
        .unwrap_err();
    assert_eq!(
        grown,
        ControllerError::ExcessivelyLargeBatch {
            records: i32::MAX as u64 - 2
        }
    );
}
