//! Network partitions with real processes: three `weir broker` processes, each in its own
//! network namespace joined by a bridge (`cluster/netns.rs`), hold a topic with three replicas
//! and `min.insync.replicas=2` while an idempotent rdkafka producer writes with acks=all. Again
//! and again one broker is cut off — its link taken down, so its sockets hang rather than
//! close — for longer than the broker session: a partition's leader (the controller elects
//! another from the ISR, the cut-off leader can no longer have anything acknowledged, and when
//! the link returns it truncates what it took alone), a follower (the ISR shrinks, writes go
//! on with two replicas), or a leader cut off from the other brokers only, so producers still
//! reach a leader that can no longer replicate (nothing it takes may be acknowledged). The history (`crash/history.rs`) must show no acknowledged write
//! lost, no duplicate, no offset holding two values and no record seen that later disappeared;
//! every cut-off broker must rejoin the ISRs once healed. Last, a follower is frozen (SIGSTOP)
//! past `replica.lag.time.max.ms` but within its session: the ISRs shrink while it stays
//! registered, and take it back once it resumes. Needs root (`ip netns`).

use crate::support::{history, netns, nodes, rng, workload};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use history::{History, Outcome};
use netns::PrivateNetwork;
use nodes::*;
use rng::Rng;
use workload::{read_all, TOPIC};

const CUTS: usize = 6;

#[test]
fn brokers_cut_off_by_a_network_partition_lose_and_duplicate_nothing() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("cluster partition seed {seed}");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let network = PrivateNetwork::create(&[1, 2, 3]);
    let mut nodes: Vec<Node> = (1..=3)
        .map(|id| {
            let properties = [
                "group.initial.rebalance.delay.ms=0",
                "replica.lag.time.max.ms=1500",
            ];
            let mut node = Node::local(id, &properties);
            // Each namespace has its own address, so every node takes the same ports.
            (node.host, node.port, node.controller_port) = (network.host(id), 9092, 9093);
            node.netns = Some(network.namespace(id));
            node
        })
        .collect();
    let voters = voters(&nodes);
    let bootstrap = start_with_topic(&mut nodes, dir.path(), &voters, TOPIC);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        thread::spawn(move || workload::idempotent_writer(&bootstrap, &stop))
    };
    let mut history = History::default();
    let mut lone_leader_truncations = 0;
    for cut in 0..CUTS {
        thread::sleep(Duration::from_millis(rng.between(500, 1500)));
        let describe = weir(&["topic", "describe", "-b", &bootstrap, TOPIC]).unwrap_or_default();
        let partition = cut as i32 % 3;
        let leader = leaders(&describe)
            .into_iter()
            .find(|(p, _)| *p == partition)
            .map(|(_, leader)| leader)
            .unwrap_or_else(|| panic!("no leader of {partition}:\n{describe}"));
        // A leader cut off from everyone, a follower cut off from everyone, or a leader cut
        // off from the other brokers only: producers still reach it, it still believes it
        // leads, and nothing it takes then may be acknowledged.
        let (victim, from_everyone) = match cut % 3 {
            0 => (leader, true),
            1 => ((1..=3).find(|id| *id != leader).unwrap(), true),
            _ => (leader, false),
        };
        match from_everyone {
            true => network.isolate(victim as u32, true),
            false => network.separate(victim as u32, true),
        }
        let witness = nodes
            .iter()
            .find(|n| n.id as i32 != victim)
            .unwrap()
            .bootstrap();
        wait_for_info(&witness, "the cut-off broker fenced", |info| {
            broker_lines(info) == 2
        });
        let describe = weir(&["topic", "describe", "-b", &witness, TOPIC]).unwrap_or_default();
        assert!(
            leaders(&describe).iter().all(|(_, l)| *l != victim),
            "leaders still on the cut-off broker:\n{describe}"
        );
        thread::sleep(Duration::from_millis(rng.between(500, 2000)));
        match from_everyone {
            true => network.isolate(victim as u32, false),
            false => network.separate(victim as u32, false),
        }
        wait_for_info(&witness, "every replica back in sync", |info| {
            broker_lines(info) == 3 && under_replicated(info) == Some(0)
        });
        let role = if victim == leader {
            "leader"
        } else {
            "follower"
        };
        let mut cut_off_from = "everyone";
        if !from_everyone {
            cut_off_from = "the other brokers";
            // What it took alone as a leader nobody followed is gone from its log now.
            let log = std::fs::read_to_string(dir.path().join(format!("node-{victim}.log")));
            let truncations = log
                .unwrap_or_default()
                .matches("truncating to the leader's log")
                .count();
            lone_leader_truncations += truncations;
        }
        eprintln!(
            "cut {} of {CUTS}: broker {victim} ({role} of {partition}, cut off from \
             {cut_off_from}) back in sync",
            cut + 1
        );
        history.reads.push(read_all(&bootstrap, false));
    }
    // Frozen past the lag time (1.5 s) but not the session (4 s): out of the ISRs, not fenced.
    let describe = weir(&["topic", "describe", "-b", &bootstrap, TOPIC]).unwrap_or_default();
    let leader = leaders(&describe)
        .first()
        .map(|(_, leader)| *leader)
        .unwrap_or(1);
    let frozen = nodes.iter().find(|n| n.id as i32 != leader).unwrap();
    let witness = nodes
        .iter()
        .find(|n| n.id as i32 == leader)
        .unwrap()
        .bootstrap();
    frozen.pause(true);
    let shrunk = wait_for_info(
        &witness,
        "the ISRs shrunk, the broker still registered",
        |info| under_replicated(info).is_some_and(|n| n > 0),
    );
    frozen.pause(false);
    assert_eq!(
        broker_lines(&shrunk),
        3,
        "fenced instead of dropped from the ISRs:\n{shrunk}"
    );
    wait_for_info(&witness, "the resumed follower back in sync", |info| {
        broker_lines(info) == 3 && under_replicated(info) == Some(0)
    });
    eprintln!(
        "broker {} frozen past the lag time: out of the ISRs, then back",
        frozen.id
    );
    history.reads.push(read_all(&bootstrap, false));

    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    history
        .txns
        .extend(writer.join().expect("idempotent writer"));
    let last = read_all(&bootstrap, false);
    history.reads.push(last.clone());
    let final_read = read_all(&bootstrap, true);

    let committed = history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .count();
    eprintln!(
        "{} writes ({committed} acknowledged), {} records read",
        history.txns.len(),
        final_read.records.len()
    );
    assert!(committed > 100, "the workload made progress: {committed}");
    assert!(
        lone_leader_truncations > 0,
        "no leader cut off from its followers took writes it later dropped: the partition did \
         not bite"
    );
    let anomalies = history.check(&final_read);
    assert!(anomalies.is_empty(), "seed {seed}: {anomalies:#?}");
    let vanished = history.vanished(&last);
    assert!(vanished.is_empty(), "seed {seed}: {vanished:#?}");
}
