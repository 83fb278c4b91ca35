//! KIP-279 truncation on replica logs modelled as the leader epoch of each offset: whatever
//! the history of elections (clean or not) and partial copies, a follower that truncates
//! against its new leader ends up with a prefix of the leader's log.

use std::path::Path;

use super::{truncation_step, TruncationStep};
use crate::log::leader_epochs::LeaderEpochCache;
use crate::seeded_rng::SeededRng;

/// A replica's log: the leader epoch of each offset (one leader per epoch, so an offset and
/// its epoch name one record).
#[derive(Debug, Clone, Default)]
struct ModelLog {
    epochs: Vec<i32>,
    /// Epochs this replica began leading at (recorded at election, as Kafka does).
    led_from: Vec<(i32, i64)>,
}

impl ModelLog {
    fn cache(&self) -> LeaderEpochCache {
        let mut starts: Vec<(i32, i64)> = self
            .epochs
            .iter()
            .enumerate()
            .map(|(offset, epoch)| (*epoch, offset as i64))
            .chain(self.led_from.iter().copied())
            .collect();
        starts.sort_by_key(|(epoch, offset)| (*epoch, *offset));
        let mut cache = LeaderEpochCache::empty(Path::new("/nonexistent"));
        for (epoch, offset) in starts {
            cache.assign(epoch, offset);
        }
        cache
    }

    fn len(&self) -> i64 {
        self.epochs.len() as i64
    }

    fn truncate(&mut self, offset: i64) {
        self.epochs.truncate(offset.max(0) as usize);
        self.led_from.retain(|(_, start)| *start < offset);
    }
}

/// Runs the follower's truncation rounds against `leader`; returns the rounds taken.
fn truncate_against(follower: &mut ModelLog, leader: &ModelLog) -> usize {
    for round in 1..=64 {
        let Some(latest) = follower.cache().latest_epoch() else {
            return round;
        };
        let answer = leader.cache().end_offset_for(latest, leader.len());
        let cache = follower.cache();
        let step = truncation_step(
            answer,
            |epoch| cache.end_offset_for(epoch, follower.len()),
            0,
        );
        follower.truncate(step.cut_at);
        if step.done || follower.cache().latest_epoch() == Some(latest) {
            return round;
        }
    }
    panic!("truncation did not settle");
}

fn assert_prefix(follower: &ModelLog, leader: &ModelLog, context: &str) {
    let leader_cache = leader.cache();
    let follower_cache = follower.cache();
    assert!(
        follower.epochs.len() <= leader.epochs.len()
            && leader.epochs[..follower.epochs.len()] == follower.epochs[..],
        "{context}: follower {:?} (epochs {:?}) is not a prefix of leader {:?} (epochs {:?})",
        follower.epochs,
        follower_cache.entries(),
        leader.epochs,
        leader_cache.entries(),
    );
}

#[test]
fn a_follower_ahead_in_an_old_epoch_cuts_back_to_the_leaders_log() {
    // Epoch 1 wrote 0..4 on the old leader (the follower), only 0..2 reached the new leader;
    // epoch 2 wrote 2..5 on the new leader.
    let mut follower = ModelLog {
        epochs: vec![1, 1, 1, 1],
        led_from: vec![(1, 0)],
    };
    let leader = ModelLog {
        epochs: vec![1, 1, 2, 2, 2],
        led_from: vec![(2, 2)],
    };
    truncate_against(&mut follower, &leader);
    assert_eq!(follower.epochs, vec![1, 1]);
}

#[test]
fn a_leader_without_the_followers_epoch_is_asked_again_with_an_older_one() {
    // The follower led epoch 3 (never replicated); the leader's answer names epoch 1, which
    // the follower lacks (it has 0 then 3): it cuts where its epoch 0 ends, then asks again.
    let mut follower = ModelLog {
        epochs: vec![0, 0, 3, 3],
        led_from: vec![(0, 0), (3, 2)],
    };
    let leader = ModelLog {
        epochs: vec![0, 0, 1, 4],
        led_from: vec![(1, 2), (4, 3)],
    };
    let rounds = truncate_against(&mut follower, &leader);
    assert_eq!(follower.epochs, vec![0, 0]);
    assert!(rounds >= 1);
    assert_eq!(
        truncation_step((7, -1), |_| (0, 0), 5),
        TruncationStep {
            cut_at: 5,
            done: true
        },
        "a leader that knows no such epoch leaves the committed prefix"
    );
}

#[test]
fn random_histories_always_leave_followers_with_a_prefix_of_their_leader() {
    for seed in 0..300u64 {
        let mut rng = SeededRng::new(seed);
        let mut replicas = vec![ModelLog::default(); 3];
        let mut leader = 0usize;
        let mut epoch = 0;
        replicas[0].led_from.push((0, 0));
        for step in 0..40 {
            let context = format!("seed {seed} step {step}");
            match rng.below(4) {
                // The leader appends in its epoch.
                0 | 1 => {
                    for _ in 0..=rng.below(3) {
                        replicas[leader].epochs.push(epoch);
                    }
                }
                // A follower truncates against the leader, then copies part of what it lacks.
                2 => {
                    let follower = rng.below(3) as usize;
                    if follower == leader {
                        continue;
                    }
                    let leader_log = replicas[leader].clone();
                    truncate_against(&mut replicas[follower], &leader_log);
                    assert_prefix(&replicas[follower], &leader_log, &context);
                    let have = replicas[follower].epochs.len();
                    let copy = rng.below((leader_log.epochs.len() - have) as u64 + 1) as usize;
                    let copied = &leader_log.epochs[have..have + copy];
                    replicas[follower].epochs.extend_from_slice(copied);
                }
                // Any replica is elected (clean or not): a new epoch begins at its log end.
                _ => {
                    leader = rng.below(3) as usize;
                    epoch += 1;
                    let start = replicas[leader].len();
                    replicas[leader].led_from.push((epoch, start));
                }
            }
        }
        let leader_log = replicas[leader].clone();
        for (id, follower) in replicas.iter_mut().enumerate() {
            if id != leader {
                truncate_against(follower, &leader_log);
                assert_prefix(follower, &leader_log, &format!("seed {seed} end"));
            }
        }
    }
}
