//! `weir broker` with an SSL listener outlives its TLS clients: consumers that read to the end
//! and go away while a fetch is being answered (as kcat -e does) leave it serving. The broker
//! died of SIGPIPE here once: the CLI restored SIGPIPE's default for every command, and a TLS
//! write to a closed connection is a writev, which cannot suppress the signal.

use std::process::{Command, Stdio};
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

/// Writes the broker's keystore (chain and key) and the CA; returns their paths.
fn certificates(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Weir CLI test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let certificate = params.signed_by(&key, &ca, &ca_key).unwrap();
    let (keystore, ca_path) = (dir.join("broker.pem"), dir.join("ca.pem"));
    std::fs::write(
        &keystore,
        format!("{}{}", certificate.pem(), key.serialize_pem()),
    )
    .unwrap();
    std::fs::write(&ca_path, ca.pem()).unwrap();
    (keystore, ca_path)
}

#[test]
fn a_tls_broker_outlives_clients_that_leave_mid_fetch() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let (keystore, ca) = certificates(dir.path());
    let port = free_port();
    let mut broker = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["broker", "--metrics-listen", "off", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--set", &format!("listeners=SSL://127.0.0.1:{port}")])
        .args([
            "--set",
            &format!("advertised.listeners=SSL://localhost:{port}"),
        ])
        .args([
            "--set",
            &format!("ssl.keystore.location={}", keystore.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut client = ClientConfig::new();
    client
        .set("bootstrap.servers", format!("localhost:{port}"))
        .set("security.protocol", "ssl")
        .set("ssl.ca.location", ca.to_str().unwrap());
    let producer: BaseProducer = client.create().unwrap();
    for i in 0..5 {
        let value = format!("record-{i}");
        let record = BaseRecord::<(), String>::to("leavers")
            .payload(&value)
            .partition(0);
        producer.send(record).map_err(|(error, _)| error).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    for round in 0..3 {
        let mut config = client.clone();
        config
            .set("group.id", "leavers")
            .set("fetch.wait.max.ms", "200")
            .set("enable.partition.eof", "true");
        let consumer: BaseConsumer = config.create().unwrap();
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset("leavers", 0, Offset::Beginning)
            .unwrap();
        consumer.assign(&assignment).unwrap();
        let (mut read, deadline) = (0, Instant::now() + Duration::from_secs(30));
        while read < 5 && Instant::now() < deadline {
            if let Some(Ok(_)) = consumer.poll(Duration::from_millis(500)) {
                read += 1;
            }
        }
        assert_eq!(read, 5, "round {round}");
        drop(consumer); // with a fetch outstanding, as kcat -e leaves
        std::thread::sleep(Duration::from_millis(700));
        assert!(
            broker.try_wait().unwrap().is_none(),
            "the broker exited after round {round}: {:?}",
            broker.try_wait()
        );
    }
    let consumer: BaseConsumer = client.create().unwrap();
    consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("still serving TLS clients");
    broker.kill().unwrap();
}
