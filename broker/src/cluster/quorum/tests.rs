use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;

use super::log_store::QuorumLogStore;
use super::state_machine::MetadataStateMachine;
use super::{MetadataTypes, NodeId};

struct OnDisk;

impl StoreBuilder<MetadataTypes, QuorumLogStore, MetadataStateMachine, tempfile::TempDir>
    for OnDisk
{
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, QuorumLogStore, MetadataStateMachine), StorageError<NodeId>>
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = QuorumLogStore::open(dir.path()).expect("log store");
        let machine = MetadataStateMachine::open(dir.path()).expect("state machine");
        Ok((dir, log, machine))
    }
}

/// openraft's own conformance suite for log stores and state machines.
#[test]
fn storage_passes_openraft_suite() {
    Suite::test_all(OnDisk).unwrap();
}

mod cluster {
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::net::TcpListener;
    use tokio::sync::watch;
    use uuid::Uuid;

    use crate::clock::SystemClock;
    use crate::cluster::controller::{ControllerError, Registration};
    use crate::cluster::image::MetadataImage;
    use crate::cluster::quorum::client::ControllerClient;
    use crate::cluster::quorum::node::{wait_applied, QuorumConfig, QuorumNode};
    use crate::cluster::quorum::rpc::{ControllerRequest, ControllerResponse};
    use crate::cluster::quorum::NodeId;

    const SESSION_TIMEOUT_MS: i64 = 1_500;
    const WAIT: Duration = Duration::from_secs(20);

    struct Member {
        node: QuorumNode,
        stop: watch::Sender<bool>,
    }

    struct TestQuorum {
        _dir: tempfile::TempDir,
        dirs: BTreeMap<NodeId, PathBuf>,
        voters: BTreeMap<NodeId, String>,
        members: BTreeMap<NodeId, Member>,
    }

    impl TestQuorum {
        async fn start(size: u64, entries_between_snapshots: u64) -> TestQuorum {
            let dir = tempfile::tempdir().unwrap();
            let mut listeners = BTreeMap::new();
            let mut voters = BTreeMap::new();
            let mut dirs = BTreeMap::new();
            for id in 1..=size {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                voters.insert(id, listener.local_addr().unwrap().to_string());
                listeners.insert(id, listener);
                dirs.insert(id, dir.path().join(format!("node-{id}")));
            }
            let mut quorum = TestQuorum {
                _dir: dir,
                dirs,
                voters,
                members: BTreeMap::new(),
            };
            for (id, listener) in listeners {
                quorum
                    .start_member(id, listener, entries_between_snapshots)
                    .await;
            }
            quorum
        }

        async fn start_member(&mut self, id: NodeId, listener: TcpListener, snapshots: u64) {
            let mut config = QuorumConfig::new(id, self.voters.clone(), self.dirs[&id].clone());
            config.election_timeout_min_ms = 300;
            config.election_timeout_max_ms = 600;
            config.heartbeat_interval_ms = 100;
            config.entries_between_snapshots = snapshots;
            config.controller.broker_session_timeout_ms = SESSION_TIMEOUT_MS;
            config.controller.default_replication_factor = 3;
            let (stop, stopped) = watch::channel(false);
            let node = QuorumNode::start(config, listener, Arc::new(SystemClock), stopped)
                .await
                .unwrap();
            self.members.insert(id, Member { node, stop });
        }

        async fn restart(&mut self, id: NodeId, snapshots: u64) {
            let listener = TcpListener::bind(&self.voters[&id]).await.unwrap();
            self.start_member(id, listener, snapshots).await;
        }

        async fn stop(&mut self, id: NodeId) {
            let member = self.members.remove(&id).unwrap();
            let _ = member.stop.send(true);
            member.node.shutdown().await;
        }

        async fn leader(&self) -> NodeId {
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                let leaders: Vec<NodeId> = self
                    .members
                    .values()
                    .filter_map(|m| m.node.leader())
                    .filter(|id| self.members.contains_key(id))
                    .collect();
                if let Some(first) = leaders.first() {
                    if leaders.len() == self.members.len() && leaders.iter().all(|l| l == first) {
                        return *first;
                    }
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no leader agreed on"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }

        fn client(&self) -> ControllerClient {
            ControllerClient::new(
                &self.voters,
                &crate::cluster::quorum::security::ControllerSecurity::plaintext(),
            )
        }

        /// Every running member's image once all have applied `index`.
        async fn images_at(&self, index: u64) -> Vec<MetadataImage> {
            let mut images = Vec::new();
            for member in self.members.values() {
                let mut receiver = member.node.images();
                assert!(
                    wait_applied(&mut receiver, index, WAIT).await,
                    "not applied"
                );
                images.push(receiver.borrow().image.as_ref().clone());
            }
            images
        }
    }

    async fn call(client: &mut ControllerClient, request: ControllerRequest) -> ControllerResponse {
        client.call(request, WAIT).await.unwrap()
    }

    async fn register(client: &mut ControllerClient, broker_id: i32) -> i64 {
        let registration = Registration {
            broker_id,
            incarnation_id: Uuid::new_v4(),
            host: "127.0.0.1".into(),
            port: 9000 + broker_id as u16,
            rack: None,
            listeners: Vec::new(),
        };
        match call(client, ControllerRequest::RegisterBroker(registration)).await {
            ControllerResponse::Done {
                broker_epoch: Some(epoch),
                ..
            } => epoch,
            other => panic!("registration answered {other:?}"),
        }
    }

    async fn heartbeat(client: &mut ControllerClient, broker_id: i32, broker_epoch: i64) -> u64 {
        let request = ControllerRequest::Heartbeat {
            broker_id,
            broker_epoch,
        };
        match call(client, request).await {
            ControllerResponse::Done { applied_index, .. } => applied_index,
            other => panic!("heartbeat answered {other:?}"),
        }
    }

    fn create_topic(name: &str, partitions: i32) -> ControllerRequest {
        ControllerRequest::CreateTopic {
            name: name.into(),
            partitions,
            replication_factor: None,
            assignments: None,
            configs: BTreeMap::new(),
        }
    }

    fn applied(response: ControllerResponse) -> u64 {
        match response {
            ControllerResponse::Done { applied_index, .. } => applied_index,
            other => panic!("answered {other:?}"),
        }
    }

    /// Three voters agree on one image; the leader's death elects another that carries on from
    /// the same image; a broker that stops heartbeating is fenced and loses its leaderships;
    /// the dead voter, restarted, catches up to the same image.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn three_voters_fail_over_and_agree() {
        let mut quorum = TestQuorum::start(3, 2_000).await;
        let first_leader = quorum.leader().await;
        let mut client = quorum.client();
        let mut epochs = BTreeMap::new();
        for broker_id in 1..=3 {
            let epoch = register(&mut client, broker_id).await;
            heartbeat(&mut client, broker_id, epoch).await;
            epochs.insert(broker_id, epoch);
        }
        let index = applied(call(&mut client, create_topic("clicks", 6)).await);
        let images = quorum.images_at(index).await;
        assert!(images.iter().all(|image| *image == images[0]));
        assert!(
            images[0].cluster_id.is_some(),
            "the first controller names the cluster"
        );
        let topic = images[0].topic_by_name("clicks").unwrap();
        assert_eq!(topic.partitions.len(), 6);
        for partition in &topic.partitions {
            assert_eq!(partition.replicas.len(), 3);
            assert_eq!(partition.isr.len(), 3);
        }
        let refused = call(&mut client, create_topic("clicks", 1)).await;
        assert_eq!(
            refused,
            ControllerResponse::Rejected(ControllerError::TopicAlreadyExists {
                name: "clicks".into()
            })
        );

        let cluster_id = images[0].cluster_id.clone();
        quorum.stop(first_leader).await;
        let second_leader = quorum.leader().await;
        assert_ne!(second_leader, first_leader);
        // The brokers still running keep heartbeating; the one beside the dead voter does not.
        let dead_broker = first_leader as i32;
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(3 * SESSION_TIMEOUT_MS as u64);
        while tokio::time::Instant::now() < deadline {
            for (&broker_id, &epoch) in &epochs {
                if broker_id != dead_broker {
                    heartbeat(&mut client, broker_id, epoch).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Three replicas cannot be placed on the two live brokers; two can.
        let refused = call(&mut client, create_topic("views", 2)).await;
        assert_eq!(
            refused,
            ControllerResponse::Rejected(ControllerError::InvalidReplicationFactor {
                replication_factor: 3,
                live_brokers: 2
            })
        );
        let mut views = create_topic("views", 2);
        if let ControllerRequest::CreateTopic {
            replication_factor, ..
        } = &mut views
        {
            *replication_factor = Some(2);
        }
        let index = applied(call(&mut client, views).await);
        let images = quorum.images_at(index).await;
        assert!(images.iter().all(|image| *image == images[0]));
        let image = &images[0];
        assert!(image.brokers[&dead_broker].fenced, "{:?}", image.brokers);
        for topic in image.topics.values() {
            for partition in &topic.partitions {
                assert_ne!(partition.leader, dead_broker);
                assert!(!partition.isr.contains(&dead_broker));
                assert!(!topic.name.eq("views") || !partition.replicas.contains(&dead_broker));
            }
        }

        assert_eq!(
            image.cluster_id, cluster_id,
            "a new controller keeps the cluster's id"
        );
        quorum.restart(first_leader, 2_000).await;
        let images = quorum.images_at(index).await;
        assert_eq!(images.len(), 3);
        assert!(images.iter().all(|image| *image == images[0]));
    }

    /// A voter that was down while the log moved past a snapshot gets the snapshot installed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lagging_voter_catches_up_from_a_snapshot() {
        let mut quorum = TestQuorum::start(3, 5).await;
        let leader = quorum.leader().await;
        let lagging = (1..=3).find(|id| *id != leader).unwrap();
        quorum.stop(lagging).await;
        let mut client = quorum.client();
        let epoch = register(&mut client, 7).await;
        heartbeat(&mut client, 7, epoch).await;
        let mut index = 0;
        for n in 0..40 {
            let request = ControllerRequest::CreateTopic {
                name: format!("t{n}"),
                partitions: 1,
                replication_factor: Some(1),
                assignments: None,
                configs: BTreeMap::new(),
            };
            index = applied(call(&mut client, request).await);
        }
        quorum.restart(lagging, 5).await;
        let images = quorum.images_at(index).await;
        assert!(images.iter().all(|image| *image == images[0]));
        assert_eq!(images[0].topics.len(), 40);
        let snapshot = quorum.dirs[&lagging].join("snapshot.json");
        assert!(snapshot.exists(), "the lagging voter holds no snapshot");
    }

    /// A lone voter restarted from its directory comes back with the same image.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_restarted_voter_keeps_its_image() {
        let mut quorum = TestQuorum::start(1, 3).await;
        quorum.leader().await;
        let mut client = quorum.client();
        let epoch = register(&mut client, 1).await;
        heartbeat(&mut client, 1, epoch).await;
        let mut index = 0;
        for n in 0..10 {
            let request = ControllerRequest::CreateTopic {
                name: format!("t{n}"),
                partitions: 2,
                replication_factor: Some(1),
                assignments: None,
                configs: BTreeMap::new(),
            };
            index = applied(call(&mut client, request).await);
        }
        let before = quorum.images_at(index).await.remove(0);
        quorum.stop(1).await;
        quorum.restart(1, 3).await;
        let after = quorum.images_at(index).await.remove(0);
        assert_eq!(before, after);
    }
}

/// A crash mid-append leaves a torn frame: it is cut, the entries before it stay.
#[tokio::test]
async fn a_torn_log_tail_is_cut_at_open() {
    use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader};
    use std::io::Write;

    let dir = tempfile::tempdir().unwrap();
    let entry = |index| Entry::<MetadataTypes> {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(super::MetadataBatch {
            records: vec![crate::cluster::MetadataRecord::DeleteTopic {
                topic_id: uuid::Uuid::from_u128(index as u128),
            }],
        }),
    };
    let frames = {
        let mut store = QuorumLogStore::open(dir.path()).unwrap();
        for index in 1..=3 {
            store.blocking_append([entry(index)]).await.unwrap();
        }
        std::fs::read(dir.path().join("log")).unwrap()
    };
    // Half of a fourth frame, as a crash during its write leaves it.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("log"))
        .unwrap();
    file.write_all(&frames[..frames.len() / 3 / 2]).unwrap();
    drop(file);
    let mut store = QuorumLogStore::open(dir.path()).unwrap();
    let entries = store.try_get_log_entries(0..10).await.unwrap();
    assert_eq!(entries, vec![entry(1), entry(2), entry(3)]);
    assert_eq!(
        std::fs::metadata(dir.path().join("log")).unwrap().len(),
        frames.len() as u64
    );
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id.map(|id| id.index), Some(3));
}

/// A voters list that names this node's own listener for another voter must not let the node
/// vote for itself twice: Raft requests carry their addressee and the wrong one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_listed_under_another_id_is_refused_and_elects_nobody() {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    use super::node::{QuorumConfig, QuorumNode};

    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let own = listener.local_addr().unwrap().to_string();
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unused = unused.local_addr().unwrap().to_string();
    // Node 1 listens where voter 2 is said to be; voter 1's own address and voter 3 are dead.
    let voters = BTreeMap::from([(1, unused.clone()), (2, own), (3, unused)]);
    let mut config = QuorumConfig::new(1, voters, dir.path().to_path_buf());
    config.election_timeout_min_ms = 100;
    config.election_timeout_max_ms = 200;
    config.heartbeat_interval_ms = 50;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let node = QuorumNode::start(
        config,
        listener,
        Arc::new(crate::clock::SystemClock),
        stopped,
    )
    .await
    .unwrap();
    // Ten election timeouts and more: a node that could count itself twice leads by now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(node.leader(), None);
    let _ = stop.send(true);
    node.shutdown().await;
}

/// Hostile or damaged frames in the middle of the quorum log — valid CRC over bytes that do not
/// decode, or entries that skip an index — end the log there with a logged reason; start-up goes
/// on with the contiguous entries before them.
#[tokio::test]
async fn hostile_log_frames_end_the_log_where_they_start() {
    use openraft::storage::RaftLogStorageExt;
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader};

    let entry = |index| Entry::<MetadataTypes> {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Blank,
    };
    let written = |entries: Vec<u64>| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut store = QuorumLogStore::open(dir.path()).unwrap();
        for index in entries {
            store.blocking_append([entry(index)]).await.unwrap();
        }
        drop(store);
        dir
    };
    let frame = |payload: &[u8]| {
        let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    };

    // A well-formed frame whose payload is not an entry, followed by a good-looking entry.
    let dir = written(vec![1, 2]).await;
    let path = dir.path().join("log");
    let good_length = std::fs::metadata(&path).unwrap().len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend(frame(br#"{"log_id": [[[[[[[[[[[[[[[[[[[[[[[["#));
    bytes.extend(frame(&serde_json::to_vec(&entry(3)).unwrap()));
    std::fs::write(&path, &bytes).unwrap();
    let mut store = QuorumLogStore::open(dir.path()).unwrap();
    let entries = store.try_get_log_entries(0..10).await.unwrap();
    assert_eq!(entries, vec![entry(1), entry(2)]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good_length);

    // Entry 4 after entry 2: a hole. The log keeps 1 and 2 and is cut before 4.
    let dir = written(vec![1, 2]).await;
    let path = dir.path().join("log");
    let good_length = std::fs::metadata(&path).unwrap().len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend(frame(&serde_json::to_vec(&entry(4)).unwrap()));
    std::fs::write(&path, &bytes).unwrap();
    let mut store = QuorumLogStore::open(dir.path()).unwrap();
    let entries = store.try_get_log_entries(0..10).await.unwrap();
    assert_eq!(entries, vec![entry(1), entry(2)]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good_length);
    store.blocking_append([entry(3)]).await.unwrap();
}
