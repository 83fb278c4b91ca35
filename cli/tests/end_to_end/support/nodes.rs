//! Cluster nodes as `weir broker` processes (combined mode, Kafka's property names) and the
//! `weir` CLI calls the process tests observe them with.

use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) struct Node {
    pub id: u32,
    pub port: u16,
    pub controller_port: u16,
    pub child: Option<Child>,
    /// Extra `--set` properties.
    pub properties: Vec<String>,
    /// Where it listens (and advertises itself).
    pub host: String,
    /// The network namespace it runs in (`cluster/netns.rs`), if not this one.
    pub netns: Option<String>,
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Node {
    /// A node on loopback with free ports.
    pub(crate) fn local(id: u32, properties: &[&str]) -> Node {
        Node {
            id,
            port: free_port(),
            controller_port: free_port(),
            child: None,
            properties: properties.iter().map(|p| p.to_string()).collect(),
            host: "127.0.0.1".into(),
            netns: None,
        }
    }

    pub(crate) fn bootstrap(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Its entry in `controller.quorum.voters`.
    pub(crate) fn voter(&self) -> String {
        format!("{}@{}:{}", self.id, self.host, self.controller_port)
    }

    pub(crate) fn start(&mut self, dir: &Path, voters: &str) {
        let log = File::options()
            .create(true)
            .append(true)
            .open(dir.join(format!("node-{}.log", self.id)))
            .expect("log file");
        // `ip netns exec` execs the broker: the child is the broker process itself.
        let mut command = match &self.netns {
            Some(namespace) => {
                let mut command = Command::new("ip");
                command.args([
                    "netns",
                    "exec",
                    namespace.as_str(),
                    env!("CARGO_BIN_EXE_weir"),
                ]);
                command
            }
            None => Command::new(env!("CARGO_BIN_EXE_weir")),
        };
        let child = command
            .args(["broker", "--listen", &self.bootstrap()])
            .arg("--controller-listen")
            .arg(format!("{}:{}", self.host, self.controller_port))
            .arg("--data-dir")
            .arg(dir.join(format!("data-{}", self.id)))
            .args(["--metrics-listen", "off"])
            .args(["--set", &format!("node.id={}", self.id)])
            .args(["--set", &format!("controller.quorum.voters={voters}")])
            .args(["--set", "broker.session.timeout.ms=4000"])
            .args(["--set", "broker.heartbeat.interval.ms=500"])
            .args(self.properties.iter().flat_map(|p| ["--set", p.as_str()]))
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("weir broker starts");
        self.child = Some(child);
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`): the process hangs without its sockets closing.
    pub(crate) fn pause(&self, paused: bool) {
        let signal = if paused { libc::SIGSTOP } else { libc::SIGCONT };
        if let Some(child) = &self.child {
            // SAFETY: signalling our own child process by its pid.
            #[allow(unsafe_code)] // kill only reads its integer arguments
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal)
            };
        }
    }

    pub(crate) fn kill(&mut self) {
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

/// Starts `nodes`, waits until each sees all of them and a controller, and creates `topic`
/// with three partitions, three replicas and `min.insync.replicas=2`. Returns the bootstrap
/// list of every node.
pub(crate) fn start_with_topic(
    nodes: &mut [Node],
    dir: &Path,
    voters: &str,
    topic: &str,
) -> String {
    for node in nodes.iter_mut() {
        node.start(dir, voters);
    }
    for node in nodes.iter() {
        wait_for_info(&node.bootstrap(), "every broker registered", |info| {
            broker_lines(info) == nodes.len() && controller(info) > 0
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
        topic,
        "--partitions",
        "3",
        "--replicas",
        "3",
        "-c",
        "min.insync.replicas=2",
    ]);
    assert!(created.is_some(), "topic create failed");
    bootstrap
}

pub(crate) fn weir(args: &[&str]) -> Option<String> {
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
pub(crate) fn wait_for_info(bootstrap: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
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

pub(crate) fn broker_lines(info: &str) -> usize {
    info.lines()
        .skip_while(|l| *l != "brokers:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .count()
}

pub(crate) fn controller(info: &str) -> i32 {
    info.lines()
        .find_map(|l| l.strip_prefix("controller: "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or(-1)
}

/// partition → leader, from `weir topic describe`.
pub(crate) fn leaders(describe: &str) -> Vec<(i32, i32)> {
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

/// Three nodes (not started) and their voters list.
pub(crate) fn three_nodes(properties: &[&str]) -> (Vec<Node>, String) {
    let nodes: Vec<Node> = (1..=3).map(|id| Node::local(id, properties)).collect();
    let voters = voters(&nodes);
    (nodes, voters)
}

/// `controller.quorum.voters` naming every node.
pub(crate) fn voters(nodes: &[Node]) -> String {
    nodes.iter().map(Node::voter).collect::<Vec<_>>().join(",")
}

/// The number after `under-replicated partitions: ` in `weir cluster info`.
pub(crate) fn under_replicated(info: &str) -> Option<usize> {
    info.lines()
        .find_map(|l| l.strip_prefix("under-replicated partitions: "))
        .and_then(|n| n.trim().parse().ok())
}
