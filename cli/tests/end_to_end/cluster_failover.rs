//! Failover with real processes and a Jepsen-style history check: three `weir broker`
//! processes hold a topic with three replicas and `min.insync.replicas=2`; an idempotent
//! rdkafka producer writes with acks=all, and two transactional producers commit and abort
//! transactions across its partitions, while brokers are killed -9 and restarted, again and
//! again: the leader of a partition — every other time after its followers were frozen
//! (SIGSTOP) for a while first, so the leader holds records no follower has when it dies
//! (acks=all must not have acknowledged them) — or the transaction coordinator of a writer,
//! with transactions open. The history (`crash/history.rs`) must show no acknowledged write or
//! committed transaction lost, no aborted write read committed, no transaction torn, no
//! duplicate, no offset holding two values, and no record a reader saw that later disappeared;
//! every restarted broker must catch up and rejoin the ISRs.

use crate::support::{history, nodes, rng, workload};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use history::{History, Outcome};
use nodes::*;
use rng::Rng;
use workload::{read_all, TOPIC};

const KILLS: usize = 4;
const TRANSACTIONAL_WRITERS: usize = 2;

/// The broker coordinating `transactional_id`, as `bootstrap` answers FindCoordinator.
fn transaction_coordinator(bootstrap: &str, transactional_id: &str) -> Option<i32> {
    use kafka_protocol::messages::FindCoordinatorRequest;
    use kafka_protocol::protocol::StrBytes;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = weir_wire::ProtocolClient::connect(bootstrap).await.ok()?;
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(transactional_id.into()))
            .with_key_type(1);
        let response = client.call(3, &request).await.ok()?;
        (response.error_code == 0).then_some(response.node_id.0)
    })
}

#[test]
fn leaders_and_coordinators_killed_9_lose_duplicate_and_tear_nothing() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("cluster failover seed {seed}");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, voters) = three_nodes(&["group.initial.rebalance.delay.ms=0"]);
    let bootstrap = start_with_topic(&mut nodes, dir.path(), &voters, TOPIC);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        thread::spawn(move || workload::idempotent_writer(&bootstrap, &stop))
    };
    let mut transactional_writers = Vec::new();
    for writer in 0..TRANSACTIONAL_WRITERS {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        let seed = seed.wrapping_add(writer as u64 + 1);
        transactional_writers.push(thread::spawn(move || {
            workload::transactional_writer(&bootstrap, writer, seed, &stop)
        }));
    }
    let mut history = History::default();
    for kill in 0..KILLS {
        thread::sleep(Duration::from_millis(rng.between(500, 1500)));
        let describe = weir(&["topic", "describe", "-b", &bootstrap, TOPIC]).unwrap_or_default();
        let partition = kill as i32 % 3;
        let frozen = kill % 2 == 0;
        // Every other time the victim is a transaction coordinator instead of a leader.
        let transactional_id = format!("crash-writer-{}", kill / 2 % TRANSACTIONAL_WRITERS);
        let coordinator = match frozen {
            true => None,
            false => transaction_coordinator(&bootstrap, &transactional_id),
        };
        let leader = coordinator.unwrap_or_else(|| {
            leaders(&describe)
                .into_iter()
                .find(|(p, _)| *p == partition)
                .map(|(_, leader)| leader)
                .unwrap_or_else(|| panic!("no leader of {partition}:\n{describe}"))
        });
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
        let role = match coordinator {
            Some(_) => format!("coordinating {transactional_id}"),
            None => format!("leading {partition}, followers frozen: {frozen}"),
        };
        eprintln!(
            "kill {} of {KILLS}: broker {leader} ({role}) back in sync",
            kill + 1
        );
        history.reads.push(read_all(&bootstrap, false));
    }
    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    for writer in transactional_writers {
        history
            .txns
            .extend(writer.join().expect("transactional writer"));
    }
    history
        .txns
        .extend(writer.join().expect("idempotent writer"));
    let last_uncommitted = read_all(&bootstrap, false);
    history.reads.push(last_uncommitted.clone());
    let final_read = read_all(&bootstrap, true);

    let count = |outcome| history.txns.iter().filter(|t| t.outcome == outcome).count();
    let (committed, aborted) = (count(Outcome::Committed), count(Outcome::Aborted));
    // An idempotent write is a "transaction" of one write.
    let committed_txns = history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && t.writes.len() > 1)
        .count();
    eprintln!(
        "{} writes and transactions ({committed} committed, {aborted} aborted, {} unknown), {} records read committed",
        history.txns.len(),
        history.txns.len() - committed - aborted,
        final_read.records.len()
    );
    assert!(committed > 100, "the workload made progress: {committed}");
    assert!(
        committed_txns > 5 && aborted > 0,
        "transactions committed ({committed_txns} of several writes) and aborted ({aborted})"
    );
    let anomalies = history.check(&final_read);
    assert!(anomalies.is_empty(), "seed {seed}: {anomalies:#?}");
    let vanished = history.vanished(&last_uncommitted);
    assert!(vanished.is_empty(), "seed {seed}: {vanished:#?}");

    // `weir txn` finds each id at its coordinator, wherever it moved.
    let listed = weir(&["txn", "list", "-b", &bootstrap]).expect("weir txn list");
    for writer in 0..TRANSACTIONAL_WRITERS {
        let transactional_id = format!("crash-writer-{writer}");
        assert!(
            listed
                .lines()
                .any(|line| line.starts_with(&format!("{transactional_id}\t"))),
            "{transactional_id} not listed:\n{listed}"
        );
        let described = weir(&["txn", "describe", "-b", &bootstrap, &transactional_id])
            .expect("weir txn describe");
        assert!(
            described.contains("state: Complete") || described.contains("state: Empty"),
            "{transactional_id} is not settled:\n{described}"
        );
    }
}
