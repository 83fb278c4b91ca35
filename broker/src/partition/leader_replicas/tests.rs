use super::*;
use crate::seeded_rng::SeededRng;

const LAG_MS: i64 = 30_000;

fn leader() -> LeaderReplicas {
    LeaderReplicas::new(1, vec![1, 2, 3], vec![1, 2, 3], 0, 0, 0, LAG_MS, 0)
}

#[test]
fn the_high_watermark_waits_for_every_isr_member() {
    let mut replicas = leader();
    replicas.leader_appended(10);
    assert_eq!(replicas.high_watermark(), 0, "no follower has fetched yet");
    replicas.follower_fetched(2, 10, 10, 1);
    assert_eq!(
        replicas.high_watermark(),
        0,
        "follower 3 holds nothing known"
    );
    replicas.follower_fetched(3, 4, 10, 1);
    assert_eq!(replicas.high_watermark(), 4);
    replicas.follower_fetched(3, 10, 10, 2);
    assert_eq!(replicas.high_watermark(), 10);
    // A fetch offset past the leader's end (a confused follower) counts as the end, no more.
    replicas.leader_appended(12);
    replicas.follower_fetched(2, 99, 12, 3);
    replicas.follower_fetched(3, 99, 12, 3);
    assert_eq!(replicas.high_watermark(), 12);
}

#[test]
fn a_lagging_member_is_dropped_and_the_rest_commit_without_it() {
    let mut replicas = leader();
    replicas.leader_appended(10);
    replicas.follower_fetched(2, 10, 10, 1_000);
    replicas.follower_fetched(3, 0, 10, 1_000);
    assert_eq!(replicas.high_watermark(), 0);
    assert_eq!(
        replicas.check_lagging(LAG_MS),
        None,
        "not yet past the lag time"
    );
    // Follower 2 keeps up; follower 3 stops fetching.
    replicas.follower_fetched(2, 10, 10, LAG_MS);
    let shrink = replicas.check_lagging(LAG_MS + 1).expect("a shrink");
    assert_eq!(shrink.isr, vec![1, 2]);
    // Until the controller commits it, the leaving member still holds the watermark back.
    assert_eq!(replicas.high_watermark(), 0);
    assert_eq!(
        replicas.check_lagging(LAG_MS + 2),
        None,
        "one proposal at a time"
    );
    replicas.isr_committed(vec![1, 2], 1, 10);
    assert_eq!(replicas.high_watermark(), 10);
    assert!(replicas.check_min_insync(2).is_ok());
    assert_eq!(
        replicas.check_min_insync(3),
        Err(NotEnoughReplicas {
            isr_size: 2,
            min_insync_replicas: 3
        })
    );
}

#[test]
fn a_follower_that_catches_up_is_proposed_back_and_counts_while_pending() {
    let mut replicas = LeaderReplicas::new(1, vec![1, 2, 3], vec![1, 2], 4, 20, 20, LAG_MS, 0);
    replicas.follower_fetched(2, 20, 20, 1);
    replicas.leader_appended(30);
    assert_eq!(
        replicas.follower_fetched(3, 10, 30, 2),
        None,
        "below the watermark"
    );
    replicas.follower_fetched(2, 30, 30, 3);
    assert_eq!(replicas.high_watermark(), 30);
    let expansion = replicas
        .follower_fetched(3, 30, 30, 4)
        .expect("an expansion");
    assert_eq!(
        expansion,
        IsrProposal {
            isr: vec![1, 2, 3],
            partition_epoch: 4
        }
    );
    // Pending, follower 3 already holds commits back: it may be elected once committed.
    replicas.leader_appended(40);
    replicas.follower_fetched(2, 40, 40, 5);
    assert_eq!(replicas.high_watermark(), 30);
    replicas.isr_committed(vec![1, 2, 3], 5, 40);
    replicas.follower_fetched(3, 40, 40, 6);
    assert_eq!(replicas.high_watermark(), 40);
}

#[test]
fn a_refused_proposal_can_be_made_again() {
    let mut replicas = leader();
    replicas.follower_fetched(2, 0, 0, 0);
    replicas.follower_fetched(3, 0, 0, 0);
    let first = replicas.check_lagging(LAG_MS + 1).expect("a shrink");
    assert_eq!(first.isr, vec![1]);
    replicas.proposal_failed();
    assert_eq!(replicas.check_lagging(LAG_MS + 2), Some(first));
}

/// Random appends, fetches, silences and controller answers: the watermark never moves back,
/// never passes the leader's end, and every committed ISR member holds everything below it —
/// so whichever of them the controller elects next has every committed record.
#[test]
fn random_schedules_never_commit_what_an_electable_replica_lacks() {
    for seed in 1..=200u64 {
        let mut rng = SeededRng::new(seed);
        let mut replicas = leader();
        let mut leader_log_end = 0i64;
        let mut follower_log_end = BTreeMap::from([(2, 0i64), (3, 0i64)]);
        let mut now_ms = 0i64;
        let mut last_high_watermark = 0;
        let mut partition_epoch = 0;
        for step in 0..400 {
            now_ms += rng.below(5_000) as i64;
            match rng.below(6) {
                0 | 1 => {
                    leader_log_end += 1 + rng.below(5) as i64;
                    replicas.leader_appended(leader_log_end);
                }
                2 | 3 => {
                    let follower = 2 + rng.below(2) as i32;
                    let held = follower_log_end[&follower];
                    let reached = held + rng.below((leader_log_end - held + 1) as u64) as i64;
                    follower_log_end.insert(follower, reached);
                    if let Some(proposal) =
                        replicas.follower_fetched(follower, reached, leader_log_end, now_ms)
                    {
                        assert!(proposal.isr.contains(&1), "seed {seed}: leader left out");
                    }
                }
                4 => {
                    replicas.check_lagging(now_ms);
                }
                _ => {
                    if let Some(proposal) = replicas.pending().cloned() {
                        if rng.below(3) == 0 {
                            replicas.proposal_failed();
                        } else {
                            partition_epoch += 1;
                            replicas.isr_committed(proposal.isr, partition_epoch, leader_log_end);
                        }
                    }
                }
            }
            let high_watermark = replicas.high_watermark();
            assert!(
                high_watermark >= last_high_watermark,
                "seed {seed} step {step}: went back"
            );
            assert!(
                high_watermark <= leader_log_end,
                "seed {seed} step {step}: past the end"
            );
            for member in replicas.isr() {
                if let Some(held) = follower_log_end.get(member) {
                    assert!(
                        *held >= high_watermark,
                        "seed {seed} step {step}: ISR member {member} holds {held} < {high_watermark}"
                    );
                }
            }
            last_high_watermark = high_watermark;
        }
    }
}
