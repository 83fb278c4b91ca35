use super::*;
use kafka_protocol::ResponseError;

/// The Kafka error a client is answered with.
fn kafka<E: Into<ResponseError>>(error: Option<E>) -> Option<ResponseError> {
    error.map(Into::into)
}
use crate::clock::ManualClock;
use crate::config::BrokerConfig;

fn offset(value: i64, at_ms: i64) -> CommittedOffset {
    CommittedOffset {
        offset: value,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp_ms: at_ms,
    }
}

#[test]
fn offsets_of_empty_groups_expire_and_stay_expired_after_reload() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().to_path_buf());
    config.set("offsets.topic.num.partitions", "3").unwrap();
    let topics = TopicRegistry::open(
        crate::config::LiveConfig::new(config.clone()),
        clock.clone(),
        false,
    )
    .unwrap();
    topics.create("t", 1, 1, Default::default()).unwrap();
    let coordinator = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock.clone());
    coordinator
        .commit(&topics, "old", vec![("t".into(), 0, offset(5, 1_000_000))])
        .unwrap();
    clock.advance_ms(500);
    coordinator
        .commit(
            &topics,
            "recent",
            vec![("t".into(), 0, offset(7, 1_000_500))],
        )
        .unwrap();
    clock.advance_ms(700); // "old" committed 1200 ms ago, "recent" 700 ms ago
    coordinator.expire_offsets(&topics, 1000);
    let ids = coordinator.group_ids();
    assert_eq!(ids, vec!["recent".to_string()]);

    // Deleting offsets of an unsubscribed (memberless) group, and a group that does not exist.
    let results = coordinator
        .delete_offsets(&topics, "recent", vec![("t".into(), 0)])
        .unwrap();
    assert_eq!(results, vec![("t".to_string(), 0, None)]);
    assert_eq!(
        kafka(
            coordinator
                .delete_offsets(&topics, "nobody", vec![("t".into(), 0)])
                .err()
        ),
        Some(ResponseError::GroupIdNotFound)
    );

    // A fresh coordinator reading __consumer_offsets sees the tombstones.
    let reloaded = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock);
    assert!(
        reloaded.load(&topics).unwrap() >= 4,
        "2 commits and 2 tombstones"
    );
    assert!(reloaded.group_ids().is_empty());
}

fn join_request(member_id: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"subscription"))],
        require_known_member_id: false,
        group_instance_id: None,
    }
}

/// A coordinator (3 offsets partitions) on a fresh data directory, its clock moved by hand,
/// completing joins at once (`group.initial.rebalance.delay.ms` 0).
fn without_rebalance_delay() -> (
    tempfile::TempDir,
    Arc<ManualClock>,
    BrokerConfig,
    TopicRegistry,
    GroupCoordinator,
) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().into());
    config.set("group.initial.rebalance.delay.ms", "0").unwrap();
    let topics = TopicRegistry::open(
        crate::config::LiveConfig::new(config.clone()),
        clock.clone(),
        false,
    )
    .unwrap();
    let coordinator = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock.clone());
    (dir, clock, config, topics, coordinator)
}

#[tokio::test]
async fn a_settled_group_comes_back_after_a_restart_and_carries_on_without_a_rebalance() {
    let (_dir, clock, config, topics, coordinator) = without_rebalance_delay();
    let joined = coordinator.join(&topics, "g", join_request("")).await;
    let member = joined.member_id.clone();
    assert_eq!(joined.generation_id, 1);
    let assignment = Bytes::from_static(b"partitions 0-5");
    let synced = coordinator
        .sync(
            &topics,
            "g",
            &member,
            None,
            1,
            vec![(member.clone(), assignment.clone())],
        )
        .await;
    assert_eq!(synced.error, None);

    // "Restart": a new coordinator loads __consumer_offsets.
    clock.advance_ms(5_000);
    let restarted = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock.clone());
    restarted.load(&topics).unwrap();
    let summary = restarted.describe("g").unwrap();
    assert_eq!((summary.state, summary.generation_id), ("Stable", 1));
    assert_eq!(summary.protocol_name, "range");
    assert_eq!(summary.members.len(), 1);
    assert_eq!(summary.members[0].assignment, assignment);
    // The member's next heartbeat is accepted: no rebalance. Its session restarted at load.
    clock.advance_ms(9_000);
    restarted.tick(&topics);
    assert_eq!(restarted.heartbeat("g", &member, None, 1), None);
    let synced = restarted.sync(&topics, "g", &member, None, 1, vec![]).await;
    assert_eq!(
        synced.assignment, assignment,
        "a Stable group answers SyncGroup"
    );

    // The member goes silent: the group empties (generation 2), and that is persisted too.
    clock.advance_ms(10_001);
    restarted.tick(&topics);
    let again = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock.clone());
    again.load(&topics).unwrap();
    let summary = again.describe("g").unwrap();
    assert_eq!((summary.state, summary.generation_id), ("Empty", 2));
    assert!(summary.members.is_empty());
    assert_eq!(
        kafka(again.heartbeat("g", &member, None, 1)),
        Some(ResponseError::UnknownMemberId)
    );

    // Deleting the group writes a tombstone: after a reload it is gone.
    again.delete_group(&topics, "g").unwrap();
    let last = GroupCoordinator::new(GroupLimits::from_config(&config), 3, clock);
    last.load(&topics).unwrap();
    assert!(last.describe("g").is_none());
    assert!(last.group_ids().is_empty());
}

/// KIP-447: a TxnOffsetCommit of the group's current generation is pending (a `require_stable`
/// fetch answers it unstable) until its transaction ends; one of an older generation is refused
/// and leaves nothing pending, so a new owner reads the offset before it as stable.
#[tokio::test]
async fn transactional_commits_are_fenced_by_generation_and_pending_until_their_marker() {
    let (_dir, _clock, _config, topics, coordinator) = without_rebalance_delay();
    topics.create("t", 1, 1, Default::default()).unwrap();
    let joined = coordinator.join(&topics, "g", join_request("")).await;
    let member_id = joined.member_id.clone();
    let synced = coordinator
        .sync(
            &topics,
            "g",
            &member_id,
            None,
            1,
            vec![(member_id.clone(), Bytes::new())],
        )
        .await;
    assert_eq!(synced.error, None);
    coordinator
        .commit(&topics, "g", vec![("t".into(), 0, offset(10, 1_000_000))])
        .unwrap();
    let fetch = || {
        let fetched = coordinator.fetch_offsets("g", Some(vec![("t".into(), 0)]), true);
        let only = &fetched[0];
        (only.offset.as_ref().map(|o| o.offset), only.unstable)
    };
    let member = |generation_id| CommitMember {
        member_id: &member_id,
        group_instance_id: None,
        generation_id,
    };

    let zombie = coordinator.txn_commit(
        &topics,
        "g",
        (7, 0),
        Some(&member(0)),
        vec![("t".into(), 0, offset(20, 1_000_000))],
    );
    assert!(
        matches!(
            zombie,
            Err(TxnCommitError::Group(GroupError::IllegalGeneration { .. }))
        ),
        "an older generation's commit is refused"
    );
    assert_eq!(fetch(), (Some(10), false), "and leaves nothing pending");

    coordinator
        .txn_commit(
            &topics,
            "g",
            (8, 0),
            Some(&member(1)),
            vec![("t".into(), 0, offset(30, 1_000_000))],
        )
        .unwrap();
    assert_eq!(fetch(), (Some(10), true), "pending until its marker");
    let plain = coordinator.fetch_offsets("g", Some(vec![("t".into(), 0)]), false);
    assert!(
        !plain[0].unstable,
        "without require_stable nothing is unstable"
    );
    coordinator.complete_txn(8, true);
    assert_eq!(fetch(), (Some(30), false), "committed by its marker");

    coordinator
        .txn_commit(
            &topics,
            "g",
            (9, 0),
            None,
            vec![("t".into(), 0, offset(40, 1_000_000))],
        )
        .unwrap();
    assert_eq!(fetch(), (Some(30), true));
    coordinator.complete_txn(9, false);
    assert_eq!(
        fetch(),
        (Some(30), false),
        "an aborted transaction's offset goes"
    );
}
