use super::*;
use kafka_protocol::ResponseError;

/// The Kafka error a client is answered with.
fn kafka<E: Into<ResponseError>>(error: Option<E>) -> Option<ResponseError> {
    error.map(Into::into)
}

fn limits() -> GroupLimits {
    GroupLimits {
        min_session_timeout_ms: 6000,
        max_session_timeout_ms: 1_800_000,
        initial_rebalance_delay_ms: 0,
        max_members: 100,
    }
}

fn join(member_id: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member_id.into(),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), Bytes::from(format!("meta-{p}"))))
            .collect(),
        require_known_member_id: true,
        group_instance_id: None,
    }
}

fn joined(replies: &[Reply], waiter: Waiter) -> JoinReply {
    replies
        .iter()
        .find_map(|r| match r {
            Reply::Join(w, reply) if *w == waiter => Some(reply.clone()),
            _ => None,
        })
        .expect("join reply released")
}

#[test]
fn two_members_join_sync_and_rebalance_when_one_leaves() {
    let mut group = Group::new("g", limits());
    // KIP-394: the first join only hands out a member id.
    let (outcome, _) = group.join(join("", &["range"]), "m1".into(), 1, 0);
    let Outcome::Now(reply) = outcome else {
        panic!("expected MEMBER_ID_REQUIRED")
    };
    assert_eq!(kafka(reply.error), Some(ResponseError::MemberIdRequired));
    assert_eq!(reply.member_id, "m1");
    let (outcome, released) = group.join(join("m1", &["range"]), "x".into(), 2, 0);
    assert_eq!(outcome, Outcome::Parked);
    let reply = joined(&released, 2);
    assert_eq!((reply.generation_id, reply.leader.as_str()), (1, "m1"));
    assert_eq!(reply.members.len(), 1);
    assert_eq!(group.state, GroupState::CompletingRebalance);
    let (_, released) = group.sync("m1", 1, vec![("m1".into(), Bytes::from("a1"))], 3, 0);
    assert!(matches!(
        &released[..],
        [Reply::Sync(3, SyncReply { error: None, .. })]
    ));
    assert_eq!(group.state, GroupState::Stable);

    // A second member: the group rebalances; the first must rejoin (heartbeat says so).
    let (_, _) = group.join(join("", &["roundrobin", "range"]), "m2".into(), 4, 10);
    let (outcome, released) = group.join(join("m2", &["roundrobin", "range"]), "x".into(), 5, 10);
    assert_eq!(outcome, Outcome::Parked);
    assert!(released.is_empty(), "waits for m1 to rejoin");
    assert_eq!(
        kafka(group.heartbeat("m1", 1, 20)),
        Some(ResponseError::RebalanceInProgress)
    );
    let (_, released) = group.join(join("m1", &["range"]), "x".into(), 6, 20);
    let leader = joined(&released, 6);
    let follower = joined(&released, 5);
    assert_eq!(leader.generation_id, 2);
    assert_eq!(
        leader.protocol_name.as_deref(),
        Some("range"),
        "the only protocol both support"
    );
    assert_eq!(leader.members.len(), 2);
    assert!(follower.members.is_empty());
    let (outcome, released) = group.sync("m2", 2, vec![], 7, 20);
    assert_eq!(outcome, Outcome::Parked);
    assert!(released.is_empty(), "followers wait for the leader");
    let (_, released) = group.sync(
        "m1",
        2,
        vec![
            ("m1".into(), Bytes::from("p0")),
            ("m2".into(), Bytes::from("p1")),
        ],
        8,
        20,
    );
    assert_eq!(released.len(), 2);
    assert!(released.contains(&Reply::Sync(
        7,
        SyncReply {
            error: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignment: Bytes::from("p1"),
        }
    )));

    // Stale generations are fenced; leaving triggers a rebalance for the rest.
    assert_eq!(
        kafka(group.heartbeat("m2", 1, 30)),
        Some(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        kafka(group.check_commit("m2", 1)),
        Some(ResponseError::IllegalGeneration)
    );
    assert_eq!(group.check_commit("m2", 2), None);
    let (error, _) = group.leave("m2", 30);
    assert_eq!(error, None);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    assert_eq!(
        kafka(group.heartbeat("m2", 2, 31)),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn silent_members_expire_and_overdue_rebalances_complete() {
    let mut group = Group::new("g", limits());
    group.join(join("", &["range"]), "m1".into(), 1, 0);
    group.join(join("m1", &["range"]), "x".into(), 2, 0);
    group.sync("m1", 1, vec![], 3, 0);
    group.join(join("", &["range"]), "m2".into(), 4, 0);
    group.join(join("m2", &["range"]), "x".into(), 5, 0);
    // m1 keeps heartbeating but never rejoins: after the rebalance timeout (30 s) the
    // rebalance completes without it.
    for at in [9_000, 18_000, 27_000] {
        assert_eq!(
            kafka(group.heartbeat("m1", 1, at)),
            Some(ResponseError::RebalanceInProgress)
        );
    }
    assert!(group.tick(29_000).is_empty());
    let released = group.tick(30_000);
    let reply = joined(&released, 5);
    assert_eq!((reply.generation_id, reply.leader.as_str()), (2, "m2"));
    assert_eq!(group.members.len(), 1);
    group.sync("m2", 2, vec![], 6, 30_000);
    // m2 stops heartbeating: after its session timeout it is removed and the group is empty.
    assert!(group.tick(40_000).is_empty());
    assert_eq!(group.members.len(), 1);
    group.tick(40_001);
    assert_eq!(group.state, GroupState::Empty);
    assert!(group.is_empty());
    assert_eq!(
        group.check_commit("", -1),
        None,
        "simple commits on an empty group"
    );
}

#[test]
fn static_member_restart_keeps_its_assignment_without_rebalance() {
    let mut group = Group::new("g", limits());
    let mut first = join("", &["range"]);
    first.group_instance_id = Some("i1".into());
    let (outcome, released) = group.join(first.clone(), "old".into(), 1, 0);
    assert_eq!(
        outcome,
        Outcome::Parked,
        "no MEMBER_ID_REQUIRED for static members"
    );
    assert_eq!(joined(&released, 1).member_id, "old");
    group.sync("old", 1, vec![("old".into(), Bytes::from("p0,p1"))], 2, 0);
    assert_eq!(group.state, GroupState::Stable);

    // Restart: same instance id, no member id. Same generation, no rebalance.
    let (outcome, released) = group.join(first.clone(), "new".into(), 3, 1000);
    let Outcome::Now(reply) = outcome else {
        panic!("answered at once")
    };
    assert!(released.is_empty());
    assert_eq!(
        (
            reply.generation_id,
            reply.member_id.as_str(),
            reply.leader.as_str()
        ),
        (1, "new", "new")
    );
    assert_eq!(group.state, GroupState::Stable);
    let (outcome, _) = group.sync("new", 1, vec![], 4, 1000);
    assert!(
        matches!(outcome, Outcome::Now(SyncReply { error: None, ref assignment, .. }) if assignment == &Bytes::from("p0,p1"))
    );

    // The old incarnation is fenced.
    assert_eq!(
        kafka(group.check_instance("old", Some("i1"))),
        Some(ResponseError::FencedInstanceId)
    );
    assert_eq!(group.check_instance("new", Some("i1")), None);
    let mut zombie = first.clone();
    zombie.member_id = "old".into();
    let (outcome, _) = group.join(zombie, "x".into(), 5, 1000);
    assert!(matches!(
        outcome,
        Outcome::Now(JoinReply {
            error: Some(GroupError::FencedInstance { .. }),
            ..
        })
    ));
    assert_eq!(group.member_of_instance("i1").as_deref(), Some("new"));
}

#[test]
fn bad_joins_are_refused() {
    let mut group = Group::new("g", limits());
    let mut request = join("", &["range"]);
    request.session_timeout_ms = 10;
    let (outcome, _) = group.join(request, "m".into(), 1, 0);
    assert!(matches!(
        outcome,
        Outcome::Now(JoinReply {
            error: Some(GroupError::InvalidSessionTimeout { .. }),
            ..
        })
    ));
    let (outcome, _) = group.join(join("ghost", &["range"]), "m".into(), 1, 0);
    assert!(matches!(
        outcome,
        Outcome::Now(JoinReply {
            error: Some(GroupError::UnknownMember { .. }),
            ..
        })
    ));
    group.join(join("", &["range"]), "m1".into(), 1, 0);
    group.join(join("m1", &["range"]), "x".into(), 2, 0);
    let mut other = join("", &["sticky"]);
    other.require_known_member_id = false;
    let (outcome, _) = group.join(other, "m2".into(), 3, 0);
    assert!(matches!(
        outcome,
        Outcome::Now(JoinReply {
            error: Some(GroupError::InconsistentProtocol),
            ..
        })
    ));
}
