//! `weir user create|list|delete` against `weir broker`: a user created with a password file logs
//! in over SASL_PLAINTEXT with SCRAM-SHA-512 (librdkafka), is listed with its mechanism and
//! iterations, and after `delete` is refused; the broker's refusals (too few iterations) fail
//! the command with Kafka's message; a bootstrap list is tried broker by broker.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

fn weir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .output()
        .unwrap()
}

fn start_broker(dir: &std::path::Path, plain: u16, sasl: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["broker", "--metrics-listen", "off", "--data-dir"])
        .arg(dir.join("data"))
        .args([
            "--set",
            &format!("listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"),
        ])
        .args(["--set", "sasl.enabled.mechanisms=SCRAM-SHA-512"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Whether `user` with `password` gets Metadata over SCRAM-SHA-512 within a few seconds.
fn logs_in(sasl: u16, user: &str, password: &str) -> bool {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{sasl}"))
        .set("security.protocol", "sasl_plaintext")
        .set("sasl.mechanism", "SCRAM-SHA-512")
        .set("sasl.username", user)
        .set("sasl.password", password)
        .create()
        .unwrap();
    consumer
        .fetch_metadata(None, Duration::from_secs(4))
        .is_ok()
}

#[test]
fn users_made_by_the_cli_log_in_until_deleted() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let (plain, sasl) = (free_port(), free_port());
    let mut broker = start_broker(dir.path(), plain, sasl);
    let bootstrap = format!("127.0.0.1:{plain}");
    let password_file = dir.path().join("bob.password");
    std::fs::write(&password_file, "s3cret-of-bob\n").unwrap();
    let password = password_file.to_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let created = weir(&[
            "user",
            "-b",
            &bootstrap,
            "create",
            "bob",
            "--password-file",
            password,
            "--iterations",
            "8192",
        ]);
        if created.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "create failed: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(logs_in(sasl, "bob", "s3cret-of-bob"), "bob cannot log in");
    assert!(
        !logs_in(sasl, "bob", "s3cret-of-bob\n"),
        "the password file's newline became part of it"
    );

    // A bootstrap list whose first broker is gone: the next one answers.
    let with_a_dead_first = format!("127.0.0.1:{},{bootstrap}", free_port());
    let listed = weir(&["user", "-b", &with_a_dead_first, "list"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "USER\tMECHANISM\tITERATIONS\nbob\tSCRAM-SHA-512\t8192\n"
    );

    let refused = weir(&[
        "user",
        "-b",
        &bootstrap,
        "create",
        "eve",
        "--password-file",
        password,
        "--iterations",
        "100",
    ]);
    assert!(!refused.status.success(), "too few iterations accepted");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Too few iterations"));

    let deleted = weir(&["user", "-b", &bootstrap, "delete", "bob"]);
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    assert!(
        !logs_in(sasl, "bob", "s3cret-of-bob"),
        "a deleted user logged in"
    );
    let again = weir(&["user", "-b", &bootstrap, "delete", "bob"]);
    assert!(!again.status.success(), "deleting a missing user succeeded");
    broker.kill().unwrap();
    broker.wait().unwrap();
}
