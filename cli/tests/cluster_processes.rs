//! A three-node cluster started as three `weir broker` processes with Kafka's property names,
//! observed through the `weir` CLI: all brokers register, a topic is placed across them, and
//! when the active controller's process is killed -9 another voter takes over, the dead
//! broker's leaderships move, and the restarted process rejoins.

use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

struct Node {
    id: u32,
    port: u16,
    controller_port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Node {
    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn start(&mut self, dir: &Path, voters: &str) {
        let log = File::options()
            .create(true)
            .append(true)
            .open(dir.join(format!("node-{}.log", self.id)))
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["broker", "--listen", &self.bootstrap()])
            .arg("--controller-listen")
            .arg(format!("127.0.0.1:{}", self.controller_port))
            .arg("--data-dir")
            .arg(dir.join(format!("data-{}", self.id)))
            .args(["--metrics-listen", "off"])
            .args(["--set", &format!("node.id={}", self.id)])
            .args(["--set", &format!("controller.quorum.voters={voters}")])
            .args(["--set", "broker.session.timeout.ms=4000"])
            .args(["--set", "broker.heartbeat.interval.ms=500"])
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("weir broker starts");
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

fn weir(args: &[&str]) -> Option<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("weir runs");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `weir cluster info` from `bootstrap` until `ready` accepts it.
fn wait_for_info(bootstrap: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    let mut last = String::new();
    loop {
        if let Some(info) = weir(&["cluster", "info", "-b", bootstrap]) {
            if ready(&info) {
                return info;
            }
            last = info;
        }
        assert!(
            started.elapsed() < WAIT,
            "{what}: not seen from {bootstrap}; last answer:\n{last}"
        );
        thread::sleep(Duration::from_millis(300));
    }
}

fn broker_lines(info: &str) -> usize {
    info.lines()
        .skip_while(|l| *l != "brokers:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .count()
}

fn controller(info: &str) -> i32 {
    info.lines()
        .find_map(|l| l.strip_prefix("controller: "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or(-1)
}

/// partition → leader, from `weir topic describe`.
fn leaders(describe: &str) -> Vec<(i32, i32)> {
    describe
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "partition").then_some(())?;
            let partition = words.next()?.parse().ok()?;
            (words.next()? == "leader").then_some(())?;
            Some((partition, words.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn three_processes_form_a_cluster_and_survive_the_controller_being_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (1..=3)
        .map(|id| Node {
            id,
            port: free_port(),
            controller_port: free_port(),
            child: None,
        })
        .collect();
    let voters = nodes
        .iter()
        .map(|n| format!("{}@127.0.0.1:{}", n.id, n.controller_port))
        .collect::<Vec<_>>()
        .join(",");
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
    wait_for_info(&survivor, "the restarted broker back", |info| {
        broker_lines(info) == 3
    });
}
