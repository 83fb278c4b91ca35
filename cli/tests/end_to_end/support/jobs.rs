//! Stream jobs as `weir job run` processes for crash tests: started with a log file each,
//! killed with -9 at random moments and restarted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use crate::support::rng::Rng;

/// Two copies of one job (instances "0" and "1") sharing the input's partitions.
pub(crate) struct JobPair {
    bootstrap: String,
    arguments: Vec<String>,
    logs: PathBuf,
    children: [Child; 2],
}

impl JobPair {
    /// Starts both copies of `weir job run <arguments>`, logging under `logs`.
    pub(crate) fn start(bootstrap: &str, arguments: &[&str], logs: &Path) -> Self {
        let arguments: Vec<String> = arguments.iter().map(|a| a.to_string()).collect();
        let children = [0, 1].map(|i| spawn(bootstrap, &arguments, i, logs));
        JobPair {
            bootstrap: bootstrap.to_string(),
            arguments,
            logs: logs.to_path_buf(),
            children,
        }
    }

    /// Kills a random copy with -9 `kills` times, a random 0.5–`max_pause_ms` apart, restarting
    /// it after up to half a second.
    pub(crate) fn kill_again_and_again(&mut self, rng: &mut Rng, kills: usize, max_pause_ms: u64) {
        for kill in 0..kills {
            thread::sleep(Duration::from_millis(rng.between(500, max_pause_ms)));
            let victim = rng.between(0, 2) as usize;
            self.children[victim].kill().expect("kill -9");
            self.children[victim].wait().expect("reaped");
            eprintln!("kill {} of {kills}: job instance {victim}", kill + 1);
            thread::sleep(Duration::from_millis(rng.between(0, 500)));
            self.children[victim] = spawn(&self.bootstrap, &self.arguments, victim, &self.logs);
        }
    }

    pub(crate) fn stop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Both copies' logs, for a failure message.
    pub(crate) fn logs(&self) -> String {
        [0, 1]
            .map(|i| std::fs::read_to_string(log_path(&self.logs, i)).unwrap_or_default())
            .join("\n---\n")
    }
}

impl Drop for JobPair {
    /// Stops both copies; with `WEIR_TEST_KEEP_LOGS=<dir>` their logs are kept there (a passing
    /// run's too, to compare with a failing one's).
    fn drop(&mut self) {
        self.stop();
        if let Some(keep) = std::env::var_os("WEIR_TEST_KEEP_LOGS") {
            let keep = PathBuf::from(keep);
            let _ = std::fs::create_dir_all(&keep);
            for instance in 0..2 {
                let kept = keep.join(format!("job-{instance}-{}.log", std::process::id()));
                let _ = std::fs::copy(log_path(&self.logs, instance), kept);
            }
        }
    }
}

fn log_path(logs: &Path, instance: usize) -> PathBuf {
    logs.join(format!("job-{instance}.log"))
}

fn spawn(bootstrap: &str, arguments: &[String], instance: usize, logs: &Path) -> Child {
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(log_path(logs, instance))
        .expect("job log");
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args([
            "job",
            "-b",
            bootstrap,
            "run",
            "--instance",
            &instance.to_string(),
        ])
        .args(arguments)
        .args([
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "heartbeat.interval.ms=500",
        ])
        // WEIR_TEST_JOB_LOG=info shows each copy's rebalances, reloads and routes on a failure.
        .env(
            "RUST_LOG",
            std::env::var("WEIR_TEST_JOB_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("weir job run starts")
}
