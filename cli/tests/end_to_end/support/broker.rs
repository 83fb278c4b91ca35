//! The `weir` binary as a child process that a test can kill with -9 and restart on the same
//! port and data directory.

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct BrokerProcess {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    starts: usize,
}

impl BrokerProcess {
    pub(crate) fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut broker = BrokerProcess {
            child: None,
            port,
            dir: tempfile::tempdir().expect("temp dir"),
            starts: 0,
        };
        broker.restart();
        broker
    }

    pub(crate) fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    /// Starts the broker (again) and waits until it accepts connections.
    pub(crate) fn restart(&mut self) {
        assert!(self.child.is_none(), "the broker is running");
        self.starts += 1;
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("broker log");
        let child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["broker", "--listen", &self.bootstrap()])
            .args(["--metrics-listen", "off", "--data-dir"])
            .arg(self.dir.path().join("data"))
            .args(["--set", "group.initial.rebalance.delay.ms=0"])
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("weir broker starts");
        self.child = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("broker exited with {status}:\n{}", self.log_tail());
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "broker not ready after {READY_TIMEOUT:?} (start {}):\n{}",
                self.starts,
                self.log_tail()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no shutdown code runs, unflushed page-cache writes stay (a process crash).
    pub(crate) fn kill_9(&mut self) {
        let mut child = self.child.take().expect("the broker is running");
        child.kill().expect("kill -9");
        child.wait().expect("reaped");
    }

    pub(crate) fn create_topic(&self, name: &str, partitions: u32) {
        let status = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["topic", "create", name, "--bootstrap", &self.bootstrap()])
            .args(["--partitions", &partitions.to_string()])
            .status()
            .expect("weir topic create");
        assert!(status.success(), "topic {name} created");
    }

    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
