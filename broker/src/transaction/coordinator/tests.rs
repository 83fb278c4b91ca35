use super::persist::PendingChange;
use super::*;
use crate::clock::ManualClock;
use crate::config::BrokerConfig;
use kafka_protocol::ResponseError;

/// The Kafka error a client is answered with.
fn kafka<T>(result: Result<T, TxnError>) -> Result<T, ResponseError> {
    result.map_err(Into::into)
}

fn kafka_error(error: Option<TxnError>) -> Option<ResponseError> {
    error.map(Into::into)
}

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    topics: TopicRegistry,
    groups: GroupCoordinator,
    producer_ids: ProducerIdManager,
    channel: BrokerChannel,
    settings: TransactionSettings,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().into());
        let topics = TopicRegistry::open(
            crate::config::LiveConfig::new(config.clone()),
            clock.clone(),
            false,
        )
        .unwrap();
        let groups = GroupCoordinator::new(
            crate::group::state::GroupLimits::from_config(&config),
            3,
            clock.clone(),
        );
        std::fs::create_dir_all(dir.path().join("meta")).unwrap();
        let producer_ids = ProducerIdManager::open(&dir.path().join("meta")).unwrap();
        let settings = TransactionSettings {
            state_partitions: 3,
            state_segment_bytes: 1 << 20,
            max_timeout_ms: 60_000,
            id_expiration_ms: 10_000,
            state_replication_factor: 1,
            state_min_isr: 1,
        };
        Fixture {
            _dir: dir,
            clock,
            topics,
            groups,
            producer_ids,
            channel: BrokerChannel::new(0, None, crate::security::BrokerIdentity::plaintext()),
            settings,
        }
    }

    fn services(&self) -> TxnServices<'_> {
        TxnServices {
            topics: &self.topics,
            groups: &self.groups,
            producer_ids: &self.producer_ids,
            channel: &self.channel,
        }
    }

    fn coordinator(&self) -> TransactionCoordinator {
        TransactionCoordinator::new(self.settings, self.clock.clone())
    }
}

#[tokio::test]
async fn idle_transactional_ids_expire_and_stay_expired_after_a_reload() {
    let f = Fixture::new();
    let services = f.services();
    let coordinator = f.coordinator();
    coordinator
        .init_producer_id(&services, "idle", 30_000, None)
        .await
        .unwrap();
    f.clock.advance_ms(5_000);
    coordinator
        .init_producer_id(&services, "busy", 30_000, None)
        .await
        .unwrap();
    f.topics.create("t", 1, 1, Default::default()).unwrap();
    let (id, epoch) = coordinator
        .init_producer_id(&services, "open", 30_000, None)
        .await
        .unwrap();
    coordinator
        .add_partitions(&services, "open", id, epoch, vec![("t".into(), 0)])
        .await
        .unwrap();
    f.clock.advance_ms(6_000); // "idle" 11 s idle, "busy" 6 s, "open" has a transaction
    coordinator.expire_ids(&f.topics);
    let left: Vec<String> = coordinator.snapshot().into_keys().collect();
    assert_eq!(left, vec!["busy".to_string(), "open".to_string()]);
    let reloaded = f.coordinator();
    reloaded.load(&f.topics).unwrap();
    let left: Vec<String> = reloaded.snapshot().into_keys().collect();
    assert_eq!(
        left,
        vec!["busy".to_string(), "open".to_string()],
        "the tombstone holds"
    );
}

#[tokio::test]
async fn a_change_being_persisted_makes_other_requests_for_the_id_wait() {
    let f = Fixture::new();
    let services = f.services();
    let coordinator = f.coordinator();
    let (id, epoch) = coordinator
        .init_producer_id(&services, "app", 30_000, None)
        .await
        .unwrap();
    coordinator.lock().pending.insert("app".into());
    f.topics.create("t", 1, 1, Default::default()).unwrap();
    let added = coordinator
        .add_partitions(&services, "app", id, epoch, vec![("t".into(), 0)])
        .await;
    assert_eq!(
        kafka(added.map(|_| ())),
        Err(ResponseError::ConcurrentTransactions)
    );
    coordinator.lock().pending.remove("app");
    let added = coordinator
        .add_partitions(&services, "app", id, epoch, vec![("t".into(), 0)])
        .await;
    assert!(added.is_ok(), "{added:?}");
}

#[tokio::test]
async fn a_dropped_request_leaves_no_pending_mark() {
    let f = Fixture::new();
    let services = f.services();
    let coordinator = f.coordinator();
    {
        let pending = PendingChange {
            coordinator: &coordinator,
            id: "app".into(),
            partition: 0,
            coordinator_epoch: 0,
            done: false,
        };
        coordinator.lock().pending.insert("app".into());
        drop(pending);
    }
    assert!(coordinator.lock().pending.is_empty());
    coordinator
        .init_producer_id(&services, "app", 30_000, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn in_a_cluster_only_ids_of_led_state_partitions_are_served() {
    let f = Fixture::new();
    let services = f.services();
    let coordinator = f.coordinator();
    coordinator.follow_partition_leadership();
    let refused = coordinator
        .init_producer_id(&services, "app", 30_000, None)
        .await;
    assert_eq!(kafka(refused), Err(ResponseError::NotCoordinator));
    assert_eq!(
        kafka_error(coordinator.coordinator_error(&f.topics, "app")),
        Some(ResponseError::NotCoordinator)
    );
}

#[tokio::test]
async fn an_open_transaction_past_its_timeout_is_aborted_with_the_producer_fenced() {
    let f = Fixture::new();
    let services = f.services();
    let coordinator = f.coordinator();
    f.topics.create("t", 1, 1, Default::default()).unwrap();
    let (id, epoch) = coordinator
        .init_producer_id(&services, "slow", 1_000, None)
        .await
        .unwrap();
    coordinator
        .add_partitions(&services, "slow", id, epoch, vec![("t".into(), 0)])
        .await
        .unwrap();
    f.clock.advance_ms(2_000);
    coordinator.tick();
    let due = coordinator.next_to_settle().await;
    assert_eq!(due, BTreeSet::from(["slow".to_string()]));
    coordinator.settle(&services, "slow").await.unwrap();
    let txn = coordinator.snapshot()["slow"].clone();
    assert_eq!(txn.state, TxnState::CompleteAbort);
    assert_eq!(txn.producer_epoch, epoch + 1, "the zombie is fenced");
    let late = coordinator
        .end_txn(&services, "slow", id, epoch, true, false)
        .await;
    assert_eq!(kafka(late), Err(ResponseError::ProducerFenced));
    let partition = f.topics.partition("t", 0).unwrap();
    assert_eq!(partition.offsets().log_end_offset, 1, "one abort marker");
}

#[tokio::test]
async fn a_new_leader_of_a_state_partition_loads_its_ids_and_finishes_the_decided_ones() {
    let f = Fixture::new();
    let services = f.services();
    f.topics.create("t", 1, 1, Default::default()).unwrap();
    // Written by a former coordinator: a transaction decided (PrepareCommit), markers unwritten.
    let former = f.coordinator();
    let (id, epoch) = former
        .init_producer_id(&services, "decided", 30_000, None)
        .await
        .unwrap();
    former
        .add_partitions(&services, "decided", id, epoch, vec![("t".into(), 0)])
        .await
        .unwrap();
    let mut decided = former.snapshot()["decided"].clone();
    decided.state = TxnState::PrepareCommit;
    former
        .append_record(&f.topics, "decided", Some(&decided))
        .unwrap();

    let successor = f.coordinator();
    successor.follow_partition_leadership();
    let index = successor.partition_of(&f.topics, "decided");
    assert_eq!(
        kafka(
            successor
                .init_producer_id(&services, "decided", 30_000, None)
                .await
        ),
        Err(ResponseError::NotCoordinator),
        "not before it leads the partition"
    );
    successor
        .leadership_changed(&f.topics, index, Some(7))
        .unwrap();
    assert_eq!(
        successor.snapshot()["decided"].state,
        TxnState::PrepareCommit
    );
    let queued = successor.next_to_settle().await;
    assert_eq!(queued, BTreeSet::from(["decided".to_string()]));
    successor.settle(&services, "decided").await.unwrap();
    assert_eq!(
        successor.snapshot()["decided"].state,
        TxnState::CompleteCommit
    );
    let partition = f.topics.partition("t", 0).unwrap();
    let marker_epoch = partition
        .log()
        .producer_state()
        .get(id)
        .map(|entry| entry.coordinator_epoch);
    assert_eq!(
        marker_epoch,
        Some(7),
        "the marker carries the partition's leader epoch"
    );

    successor
        .leadership_changed(&f.topics, index, None)
        .unwrap();
    assert!(successor.snapshot().is_empty(), "its ids are dropped");
    assert_eq!(
        kafka_error(successor.coordinator_error(&f.topics, "decided")),
        Some(ResponseError::NotCoordinator)
    );
}
