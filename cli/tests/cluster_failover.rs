//! Failover with real processes and a Jepsen-style history check: three `weir broker`
//! processes hold a topic with three replicas and `min.insync.replicas=2`; an idempotent
//! rdkafka producer writes with acks=all while the leader of a partition is killed -9 and
//! restarted, again and again — every other time after its followers were frozen (SIGSTOP)
//! for a while first, so the leader holds records no follower has when it dies (acks=all must
//! not have acknowledged them: the followers resume and elect a leader without them). The history (`crash/history.rs`) must show no acknowledged write
//! lost, no duplicate, no offset holding two values, and no record a reader saw that later
//! disappeared; every restarted broker must catch up and rejoin the ISRs.

#[path = "crash/history.rs"]
mod history;
#[path = "cluster/nodes.rs"]
mod nodes;
#[path = "crash/rng.rs"]
mod rng;
// Transactional writers join once coordinators follow partition leadership.
#[allow(dead_code)]
#[path = "crash/workload.rs"]
mod workload;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use history::{History, Outcome};
use nodes::*;
use rng::Rng;
use workload::{read_all, TOPIC};

const KILLS: usize = 4;

#[test]
fn leaders_killed_9_under_acks_all_lose_and_duplicate_nothing() {
    let seed = Rng::seed_from_clock();
    eprintln!("cluster failover seed {seed}");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, voters) = three_nodes(&["group.initial.rebalance.delay.ms=0"]);
    for node in &mut nodes {
        node.start(dir.path(), &voters);
    }
    for node in &nodes {
        wait_for_info(&node.bootstrap(), "three brokers", |info| {
            broker_lines(info) == 3 && controller(info) > 0
        });
    }
    let bootstrap: String = nodes
        .iter()
        .map(Node::bootstrap)
        .collect::<Vec<_>>()
        .join(",");
    let created = weir(&[
        "topic",
        "create",
        "-b",
        &bootstrap,
        TOPIC,
        "--partitions",
        "3",
        "--replicas",
        "3",
        "-c",
        "min.insync.replicas=2",
    ]);
    assert!(created.is_some(), "topic create failed");

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        thread::spawn(move || workload::idempotent_writer(&bootstrap, &stop))
    };
    let mut history = History::default();
    for kill in 0..KILLS {
        thread::sleep(Duration::from_millis(rng.between(500, 1500)));
        let describe = weir(&["topic", "describe", "-b", &bootstrap, TOPIC]).unwrap_or_default();
        let partition = kill as i32 % 3;
        let leader = leaders(&describe)
            .into_iter()
            .find(|(p, _)| *p == partition)
            .map(|(_, leader)| leader)
            .unwrap_or_else(|| panic!("no leader of {partition}:\n{describe}"));
        let frozen = kill % 2 == 0;
        if frozen {
            for follower in nodes.iter().filter(|n| n.id as i32 != leader) {
                follower.pause(true);
            }
            thread::sleep(Duration::from_millis(rng.between(1000, 2000)));
        }
        let victim = nodes
            .iter_mut()
            .find(|n| n.id as i32 == leader)
            .expect("the leader is a node");
        victim.kill();
        if frozen {
            for follower in nodes.iter().filter(|n| n.id as i32 != leader) {
                follower.pause(false);
            }
        }
        let witness = nodes
            .iter()
            .find(|n| n.id as i32 != leader)
            .unwrap()
            .bootstrap();
        // The controller notices (session timeout) and elects a new leader from the ISR.
        wait_for_info(&witness, "the dead leader fenced", |info| {
            broker_lines(info) == 2
        });
        let describe = weir(&["topic", "describe", "-b", &witness, TOPIC]).unwrap_or_default();
        assert!(
            leaders(&describe).iter().all(|(_, l)| *l != leader),
            "leaders still on the dead broker:\n{describe}"
        );
        thread::sleep(Duration::from_millis(rng.between(0, 1000)));
        let victim = nodes.iter_mut().find(|n| n.id as i32 == leader).unwrap();
        victim.start(dir.path(), &voters);
        wait_for_info(&witness, "every replica back in sync", |info| {
            broker_lines(info) == 3 && under_replicated(info) == Some(0)
        });
        eprintln!(
            "kill {} of {KILLS}: broker {leader} (leading {partition}, followers frozen: {frozen}) back in sync",
            kill + 1
        );
        history.reads.push(read_all(&bootstrap, false));
    }
    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    history
        .txns
        .extend(writer.join().expect("idempotent writer"));
    let last = read_all(&bootstrap, false);
    history.reads.push(last.clone());

    let acknowledged = history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .count();
    eprintln!(
        "{} writes ({acknowledged} acknowledged), {} records at the end",
        history.txns.len(),
        last.records.len()
    );
    assert!(
        acknowledged > 100,
        "the workload made progress: {acknowledged}"
    );
    let anomalies = history.check(&last);
    assert!(anomalies.is_empty(), "seed {seed}: {anomalies:#?}");
    let vanished = history.vanished(&last);
    assert!(vanished.is_empty(), "seed {seed}: {vanished:#?}");
}
