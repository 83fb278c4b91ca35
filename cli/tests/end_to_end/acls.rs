//! `weir acl create|list|delete` and `weir user` against a `weir broker` with the
//! StandardAuthorizer, over its SASL_SSL listener: the CLI's protocol client speaks TLS and
//! SASL (PLAIN, SCRAM-SHA-512) from the same `-X` properties librdkafka takes. The ACLs it
//! creates decide what a librdkafka consumer may read, until it deletes them; a wrong password,
//! an untrusted broker certificate, a principal without the cluster's DESCRIBE and an operation
//! a resource type does not have each fail the command with the reason.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// A CA and the broker's keystore signed by it (for `localhost`); also a second CA that signed
/// nothing. Returns (keystore, ca, other ca).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        (certificate, key)
    };
    let (ca_certificate, ca_key) = ca("Weir ACL test CA");
    let (other_ca, _) = ca("Some other CA");
    let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let broker = params.signed_by(&key, &ca_certificate, &ca_key).unwrap();
    let paths = (
        dir.join("broker.pem"),
        dir.join("ca.pem"),
        dir.join("other-ca.pem"),
    );
    std::fs::write(&paths.0, format!("{}{}", broker.pem(), key.serialize_pem())).unwrap();
    std::fs::write(&paths.1, ca_certificate.pem()).unwrap();
    std::fs::write(&paths.2, other_ca.pem()).unwrap();
    paths
}

fn start_broker(dir: &Path, plain: u16, secure: u16, keystore: &Path) -> Child {
    let plain_module = "org.apache.kafka.common.security.plain.PlainLoginModule required \
        user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
    let settings = [
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secure}"),
        format!("advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://localhost:{secure}"),
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512".to_string(),
        format!("listener.name.sasl_ssl.plain.sasl.jaas.config={plain_module}"),
        format!("ssl.keystore.location={}", keystore.display()),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        "super.users=User:ANONYMOUS;User:admin".into(),
    ];
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command
        .args(["broker", "--metrics-listen", "off", "--data-dir"])
        .arg(dir.join("data"));
    for setting in &settings {
        command.args(["--set", setting]);
    }
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn weir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `-b`/`-X` arguments of a SASL_SSL login.
fn secured(bootstrap: &str, ca: &Path, mechanism: &str, user: &str, password: &str) -> Vec<String> {
    [
        "-b".to_string(),
        bootstrap.to_string(),
        "-X".into(),
        "security.protocol=sasl_ssl".into(),
        "-X".into(),
        format!("ssl.ca.location={}", ca.display()),
        "-X".into(),
        format!("sasl.mechanism={mechanism}"),
        "-X".into(),
        format!("sasl.username={user}"),
        "-X".into(),
        format!("sasl.password={password}"),
    ]
    .into()
}

fn weir_as(login: &[String], command: &[&str]) -> Output {
    let (head, rest) = command.split_at(1);
    let mut args: Vec<&str> = head.to_vec();
    args.extend(login.iter().map(String::as_str));
    args.extend(rest);
    weir(&args)
}

fn librdkafka(secure: u16, ca: &Path, user: &str, password: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", format!("localhost:{secure}"))
        .set("security.protocol", "sasl_ssl")
        .set("ssl.ca.location", ca.to_str().unwrap())
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", user)
        .set("sasl.password", password);
    config
}

/// What `user` reads of partition 0 of `topic` within a few seconds, or the error it gets.
fn read_as(
    secure: u16,
    ca: &Path,
    user: &str,
    topic: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let consumer: BaseConsumer = librdkafka(secure, ca, user, &format!("{user}-secret"))
        .set("group.id", format!("{user}-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while read.len() < count && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                use rdkafka::Message;
                read.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into());
            }
            Some(Err(error)) => return Err(error.to_string()),
            None => {}
        }
    }
    Ok(read)
}

/// `user` may not read `topic`: its Metadata says TOPIC_AUTHORIZATION_FAILED and a consumer
/// reads nothing of it.
fn assert_refused(secure: u16, ca: &Path, user: &str, topic: &str, count: usize) {
    let consumer: BaseConsumer = librdkafka(secure, ca, user, &format!("{user}-secret"))
        .create()
        .unwrap();
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        metadata.topics()[0].error(),
        Some(rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
    );
    match read_as(secure, ca, user, topic, count) {
        Ok(read) => assert!(read.is_empty(), "{user} read {read:?}"),
        Err(error) => assert!(error.contains("authorization failed"), "{error}"),
    }
}

#[test]
fn acls_made_by_the_cli_over_sasl_ssl_decide_what_a_client_reads() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let (keystore, ca, other_ca) = certificates(dir.path());
    let (plain, secure) = (free_port(), free_port());
    let mut broker = start_broker(dir.path(), plain, secure, &keystore);
    let bootstrap = format!("localhost:{secure}");
    let admin = secured(&bootstrap, &ca, "PLAIN", "admin", "admin-secret");

    // Ready when the admin's listing answers (header only: no ACLs yet).
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed = weir_as(&admin, &["acl", "list"]);
        if listed.status.success() || Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(listed.status.success(), "{}", stderr(&listed));
    let header = "RESOURCE-TYPE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION\n";
    assert_eq!(stdout(&listed), header);

    // The admin (a super user) writes records; alice may not read them yet.
    let producer: BaseProducer = librdkafka(secure, &ca, "admin", "admin-secret")
        .create()
        .unwrap();
    let values: Vec<String> = (0..20).map(|i| format!("acl-record-{i}")).collect();
    for value in &values {
        let record = BaseRecord::<(), String>::to("acl-orders")
            .payload(value)
            .partition(0);
        producer.send(record).map_err(|(error, _)| error).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    // A consumer with a group id needs READ on the group too: given first, so what is refused
    // next is the topic.
    let created = weir_as(
        &admin,
        &[
            "acl",
            "create",
            "--principal",
            "User:alice",
            "--operation",
            "READ",
            "--group",
            "alice-reader",
        ],
    );
    assert!(created.status.success(), "{}", stderr(&created));
    assert_refused(secure, &ca, "alice", "acl-orders", values.len());

    let created = weir_as(
        &admin,
        &[
            "acl",
            "create",
            "--principal",
            "User:alice",
            "--operation",
            "Read",
            "--topic",
            "acl-",
            "--pattern-type",
            "prefixed",
        ],
    );
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(stdout(&created), "1 ACLs created\n");
    let created = weir_as(
        &admin,
        &[
            "acl",
            "create",
            "--principal",
            "User:alice",
            "--operation",
            "describe",
            "--group",
            "audit",
            "--deny",
        ],
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let listed = weir_as(&admin, &["acl", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let mut lines: Vec<&str> = stdout(&listed).leak().lines().skip(1).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "GROUP\talice-reader\tLITERAL\tUser:alice\t*\tREAD\tALLOW",
            "GROUP\taudit\tLITERAL\tUser:alice\t*\tDESCRIBE\tDENY",
            "TOPIC\tacl-\tPREFIXED\tUser:alice\t*\tREAD\tALLOW",
        ]
    );
    // MATCH lists the bindings that cover a topic name.
    let matching = weir_as(
        &admin,
        &[
            "acl",
            "list",
            "--topic",
            "acl-orders",
            "--pattern-type",
            "match",
        ],
    );
    assert_eq!(
        stdout(&matching),
        format!("{header}TOPIC\tacl-\tPREFIXED\tUser:alice\t*\tREAD\tALLOW\n")
    );
    assert_eq!(
        read_as(secure, &ca, "alice", "acl-orders", values.len()).unwrap(),
        values
    );

    // A SCRAM user made over the secured listener logs in through the CLI, but may not list.
    let password_file = dir.path().join("bob.password");
    std::fs::write(&password_file, "bob-secret\n").unwrap();
    let made = weir_as(
        &admin,
        &[
            "user",
            "create",
            "bob",
            "--password-file",
            password_file.to_str().unwrap(),
        ],
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let bob = secured(&bootstrap, &ca, "SCRAM-SHA-512", "bob", "bob-secret");
    let deadline = Instant::now() + Duration::from_secs(10);
    let listed_by_bob = loop {
        let listed = weir_as(&bob, &["acl", "list"]);
        let error = stderr(&listed);
        if !error.contains("refused the login") || Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!listed_by_bob.status.success());
    assert!(
        stderr(&listed_by_bob).contains("ClusterAuthorizationFailed"),
        "{}",
        stderr(&listed_by_bob)
    );

    let wrong = weir_as(
        &secured(&bootstrap, &ca, "SCRAM-SHA-512", "bob", "not-bobs"),
        &["acl", "list"],
    );
    assert!(!wrong.status.success());
    assert!(
        stderr(&wrong).contains("refused the login: SASL authentication failed"),
        "{}",
        stderr(&wrong)
    );
    let untrusted = weir_as(
        &secured(&bootstrap, &other_ca, "PLAIN", "admin", "admin-secret"),
        &["acl", "list"],
    );
    assert!(!untrusted.status.success());
    assert!(
        stderr(&untrusted).contains("not signed by a trusted CA"),
        "{}",
        stderr(&untrusted)
    );
    let no_such_operation = weir_as(
        &admin,
        &[
            "acl",
            "create",
            "--principal",
            "User:alice",
            "--operation",
            "Read",
            "--cluster",
        ],
    );
    assert!(!no_such_operation.status.success());
    assert!(
        stderr(&no_such_operation).contains("READ is not an operation of a CLUSTER resource"),
        "{}",
        stderr(&no_such_operation)
    );

    let deleted = weir_as(
        &admin,
        &[
            "acl",
            "delete",
            "--topic",
            "acl-",
            "--pattern-type",
            "prefixed",
            "--principal",
            "User:alice",
        ],
    );
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert_eq!(stdout(&deleted), "1 ACLs deleted\n");
    assert_refused(secure, &ca, "alice", "acl-orders", values.len());
    // The PLAINTEXT listener's ANONYMOUS is a super user too: the admin path without a login.
    let remaining = weir(&["acl", "-b", &format!("127.0.0.1:{plain}"), "list"]);
    let remaining = stdout(&remaining);
    let mut lines: Vec<&str> = remaining.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "GROUP\talice-reader\tLITERAL\tUser:alice\t*\tREAD\tALLOW",
            "GROUP\taudit\tLITERAL\tUser:alice\t*\tDESCRIBE\tDENY",
            header.trim_end(),
        ]
    );
    broker.kill().unwrap();
    broker.wait().unwrap();
}
