//! A three-node cluster started as three `weir broker` processes with Kafka's property names,
//! observed through the `weir` CLI: all brokers register, a topic is placed across them, and
//! when the active controller's process is killed -9 another voter takes over, the dead
//! broker's leaderships move, and the restarted process rejoins every ISR and leads again what it is preferred for.
//! A fourth process then joins as a broker-only node (`process.roles=broker`): the quorum lists
//! it as an observer and the cluster as a broker.

use crate::support::nodes;

use std::time::{Duration, Instant};

use nodes::*;

#[test]
fn three_processes_form_a_cluster_and_survive_the_controller_being_killed() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, voters) = three_nodes(&["leader.imbalance.check.interval.seconds=1"]);
    for node in &mut nodes {
        node.start(dir.path(), &voters);
    }
    let mut cluster_ids = std::collections::BTreeSet::new();
    for node in &nodes {
        let info = wait_for_info(
            &node.bootstrap(),
            "three brokers and a controller",
            |info| broker_lines(info) == 3 && controller(info) > 0,
        );
        cluster_ids.insert(info.lines().next().unwrap_or_default().to_string());
    }
    assert_eq!(cluster_ids.len(), 1, "one cluster id: {cluster_ids:?}");
    let bootstrap = nodes[0].bootstrap();
    let created = weir(&[
        "topic",
        "create",
        "-b",
        &bootstrap,
        "spread",
        "--partitions",
        "3",
        "--replicas",
        "3",
    ]);
    assert!(created.is_some(), "topic create failed");
    let describe = weir(&["topic", "describe", "-b", &bootstrap, "spread"]).unwrap();
    let before = leaders(&describe);
    assert_eq!(before.len(), 3, "{describe}");
    let mut leader_ids: Vec<i32> = before.iter().map(|(_, leader)| *leader).collect();
    leader_ids.sort_unstable();
    assert_eq!(leader_ids, vec![1, 2, 3], "{describe}");

    let info = weir(&["cluster", "info", "-b", &bootstrap]).unwrap();
    let old_controller = controller(&info);
    let victim = nodes
        .iter_mut()
        .find(|n| n.id as i32 == old_controller)
        .expect("the controller is one of the nodes");
    victim.kill();
    let survivor = nodes
        .iter()
        .find(|n| n.id as i32 != old_controller)
        .unwrap()
        .bootstrap();
    let info = wait_for_info(&survivor, "a new controller, two brokers", |info| {
        let new = controller(info);
        new > 0 && new != old_controller && broker_lines(info) == 2
    });
    assert!(info.contains("under-replicated partitions: 3"), "{info}");
    let describe = weir(&["topic", "describe", "-b", &survivor, "spread"]).unwrap();
    for (partition, leader) in leaders(&describe) {
        assert_ne!(leader, old_controller, "partition {partition}: {describe}");
    }

    let victim = nodes
        .iter_mut()
        .find(|n| n.id as i32 == old_controller)
        .unwrap();
    victim.start(dir.path(), &voters);
    // Back: it registers, catches up as a follower and rejoins every ISR.
    wait_for_info(
        &survivor,
        "the restarted broker back in every ISR",
        |info| broker_lines(info) == 3 && under_replicated(info) == Some(0),
    );
    // In sync again, it gets back the leaderships it is preferred for
    // (auto.leader.rebalance.enable, checked every second here).
    let started = Instant::now();
    loop {
        let describe = weir(&["topic", "describe", "-b", &survivor, "spread"]).unwrap_or_default();
        if leaders(&describe) == before {
            break;
        }
        assert!(
            started.elapsed() < WAIT,
            "preferred leaders not restored ({before:?}):\n{describe}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    let mut observer = Node::local(4, &["process.roles=broker"]);
    observer.start(dir.path(), &voters);
    let info = wait_for_info(&survivor, "a fourth broker observing the quorum", |info| {
        broker_lines(info) == 4 && info.contains("\n  observer 4\t")
    });
    let voter_lines = info.lines().filter(|l| l.starts_with("  voter ")).count();
    assert_eq!(voter_lines, 3, "{info}");
}
