//! SSL listeners with rdkafka (librdkafka with OpenSSL): records written and read over TLS
//! exactly; PLAINTEXT bytes to the TLS port and a client that does not trust the broker's CA get
//! nowhere while the broker keeps serving; `ssl.client.auth=required` admits only clients with a
//! certificate from the truststore's CA; certificates replaced on disk are served without a
//! restart. Certificates are made in the test (rcgen).

use std::path::Path;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureRecord;
use rdkafka::{ClientConfig, Offset};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cluster::free_port;
use crate::common::*;

/// A CA and what it signs.
pub(crate) struct Authority {
    certificate: rcgen::Certificate,
    key: KeyPair,
}

impl Authority {
    pub(crate) fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        Authority { certificate, key }
    }

    /// (certificate PEM, key PEM) for `names`, for a server or a client.
    pub(crate) fn issue(
        &self,
        common_name: &str,
        names: &[&str],
        client: bool,
    ) -> (String, String) {
        let purpose = match client {
            true => ExtendedKeyUsagePurpose::ClientAuth,
            false => ExtendedKeyUsagePurpose::ServerAuth,
        };
        self.issue_for(common_name, names, vec![purpose])
    }

    /// (certificate PEM, key PEM) for a broker: a server to clients, a client to its peers.
    pub(crate) fn issue_peer(&self, common_name: &str, names: &[&str]) -> (String, String) {
        let purposes = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        self.issue_for(common_name, names, purposes)
    }

    fn issue_for(
        &self,
        common_name: &str,
        names: &[&str],
        purposes: Vec<ExtendedKeyUsagePurpose>,
    ) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = purposes;
        let key = KeyPair::generate().unwrap();
        let certificate = params
            .signed_by(&key, &self.certificate, &self.key)
            .unwrap();
        (certificate.pem(), key.serialize_pem())
    }

    pub(crate) fn write_ca(&self, path: &Path) {
        std::fs::write(path, self.certificate.pem()).unwrap();
    }

    /// Writes the broker's keystore: its chain and key in one PEM file.
    fn write_server_keystore(&self, path: &Path) {
        let (certificate, key) = self.issue("weir-broker", &["localhost", "127.0.0.1"], false);
        std::fs::write(path, format!("{certificate}{key}")).unwrap();
    }
}

/// Client properties for SSL to `port`, trusting `ca`, with an optional (cert, key) pair.
fn tls_client(port: u16, ca: &Path, identity: Option<(&Path, &Path)>) -> ClientConfig {
    let mut config = client_config(&format!("localhost:{port}"));
    config
        .set("security.protocol", "ssl")
        .set("ssl.ca.location", ca.to_str().unwrap());
    if let Some((certificate, key)) = identity {
        config
            .set("ssl.certificate.location", certificate.to_str().unwrap())
            .set("ssl.key.location", key.to_str().unwrap());
    }
    config
}

/// Whether a client with `config` gets Metadata within a few seconds.
fn reaches(config: &ClientConfig) -> bool {
    let consumer: BaseConsumer = config.create().unwrap();
    consumer
        .fetch_metadata(None, Duration::from_secs(4))
        .is_ok()
}

/// A broker with an SSL listener (`localhost:<port>`, keystore `keystore` unless `extra` names
/// one), plus a PLAINTEXT one on `plain` when given, and `extra` properties; returns it with the
/// SSL port.
async fn ssl_broker(
    dir: &Path,
    keystore: &Path,
    plain: Option<u16>,
    extra: &[(&str, &str)],
) -> (weir_broker::Broker, u16) {
    let ssl = free_port();
    let listeners = match plain {
        Some(plain) => format!("PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl}"),
        None => format!("SSL://127.0.0.1:{ssl}"),
    };
    let advertised = format!("SSL://localhost:{ssl}");
    let keystore = keystore.to_str().unwrap().to_string();
    let mut properties = vec![
        ("listeners", listeners.as_str()),
        ("advertised.listeners", advertised.as_str()),
    ];
    if !extra
        .iter()
        .any(|(name, _)| name.ends_with("ssl.keystore.location"))
    {
        properties.push(("ssl.keystore.location", keystore.as_str()));
    }
    properties.extend_from_slice(extra);
    (start(&dir.join("data"), &properties).await, ssl)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssl_listener_serves_tls_clients_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("Weir test CA");
    let (keystore, ca) = (dir.path().join("broker.pem"), dir.path().join("ca.pem"));
    authority.write_server_keystore(&keystore);
    authority.write_ca(&ca);
    let plain = free_port();
    let (broker, ssl) = ssl_broker(dir.path(), &keystore, Some(plain), &[]).await;

    // PLAINTEXT bytes (an ApiVersions frame) to the TLS port: closed, nothing answered.
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", ssl))
        .await
        .unwrap();
    let frame = [0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0];
    raw.write_all(&frame).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, raw.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the TLS port kept a plaintext client open");
    assert!(
        !answer.starts_with(&[0, 0, 0]),
        "a Kafka frame came back over plaintext: {answer:?}"
    );

    let untrusted = Authority::new("Someone else's CA");
    let other_ca = dir.path().join("other-ca.pem");
    untrusted.write_ca(&other_ca);
    assert!(
        !reaches(&tls_client(ssl, &other_ca, None)),
        "an untrusted broker was used"
    );

    let client = tls_client(ssl, &ca, None);
    let producer: rdkafka::producer::FutureProducer = client.clone().create().unwrap();
    create_topic(&format!("127.0.0.1:{plain}"), "secret", 1, &[]).await;
    let values: Vec<String> = (0..40).map(|i| format!("over-tls-{i}")).collect();
    for value in &values {
        let record = FutureRecord::<(), String>::to("secret")
            .payload(value)
            .partition(0);
        producer
            .send(record, Duration::from_secs(20))
            .await
            .map_err(|(error, _)| error)
            .expect("delivered over TLS");
    }
    let consumer: rdkafka::consumer::StreamConsumer = {
        let mut config = client.clone();
        config
            .set("group.id", "tls-reader")
            .set("enable.auto.commit", "false");
        config.create().unwrap()
    };
    let mut assignment = rdkafka::TopicPartitionList::new();
    assignment
        .add_partition_offset("secret", 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    while read.len() < values.len() {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .expect("records over TLS")
            .unwrap();
        read.push(message.detach());
    }
    assert_eq!(payloads(&read), values);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_client_auth_admits_only_certificates_of_the_truststores_ca() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("Weir test CA");
    let (keystore, ca) = (dir.path().join("broker.pem"), dir.path().join("ca.pem"));
    authority.write_server_keystore(&keystore);
    authority.write_ca(&ca);
    let write_identity = |authority: &Authority, name: &str| {
        let (certificate, key) = authority.issue(name, &[], true);
        let (cert_path, key_path) = (
            dir.path().join(format!("{name}.crt")),
            dir.path().join(format!("{name}.key")),
        );
        std::fs::write(&cert_path, certificate).unwrap();
        std::fs::write(&key_path, key).unwrap();
        (cert_path, key_path)
    };
    let trusted = write_identity(&authority, "app");
    let stranger = write_identity(&Authority::new("Rogue CA"), "rogue");
    let (broker, ssl) = ssl_broker(
        dir.path(),
        &keystore,
        None,
        &[
            (
                "listener.name.ssl.ssl.keystore.location",
                keystore.to_str().unwrap(),
            ),
            ("ssl.truststore.location", ca.to_str().unwrap()),
            ("ssl.client.auth", "required"),
        ],
    )
    .await;
    assert!(
        !reaches(&tls_client(ssl, &ca, None)),
        "no certificate admitted"
    );
    assert!(
        !reaches(&tls_client(ssl, &ca, Some((&stranger.0, &stranger.1)))),
        "a certificate of another CA admitted"
    );
    assert!(reaches(&tls_client(
        ssl,
        &ca,
        Some((&trusted.0, &trusted.1))
    )));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_replaced_on_disk_are_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (Authority::new("First CA"), Authority::new("Second CA"));
    let keystore = dir.path().join("broker.pem");
    let (first_ca, second_ca) = (dir.path().join("first.pem"), dir.path().join("second.pem"));
    first.write_ca(&first_ca);
    second.write_ca(&second_ca);
    first.write_server_keystore(&keystore);
    let (broker, ssl) = ssl_broker(dir.path(), &keystore, None, &[]).await;
    assert!(reaches(&tls_client(ssl, &first_ca, None)));
    // A damaged file is not taken: the current certificate stays.
    std::fs::write(&keystore, "not a PEM file").unwrap();
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(
        reaches(&tls_client(ssl, &first_ca, None)),
        "a damaged keystore was taken"
    );
    second.write_server_keystore(&keystore);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !reaches(&tls_client(ssl, &second_ca, None)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        !reaches(&tls_client(ssl, &first_ca, None)),
        "the old certificate is still served"
    );
    broker.shutdown().await.unwrap();
}

/// Writes a Secret as the kubelet mounts one: the files in a timestamped directory, `..data`
/// pointing at it and each key a link through `..data`; a later call swaps `..data` at once.
fn mount_secret(dir: &Path, generation: u32, files: &[(&str, &str)]) {
    let version = format!("..{generation}");
    std::fs::create_dir_all(dir.join(&version)).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(&version).join(name), text).unwrap();
        let link = dir.join(name);
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(Path::new("..data").join(name), &link).unwrap();
        }
    }
    let staged = dir.join("..data_tmp");
    std::os::unix::fs::symlink(&version, &staged).unwrap();
    std::fs::rename(&staged, dir.join("..data")).unwrap();
}

/// A Kubernetes TLS Secret (cert-manager's `tls.crt` and `tls.key`, separate files) with Weir's
/// `ssl.keystore.key.location`; the kubelet's swap of the mounted files to a new certificate is
/// followed without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_tls_secret_is_served_and_its_rotation_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    let (first, second) = (Authority::new("First CA"), Authority::new("Second CA"));
    let (first_ca, second_ca) = (dir.path().join("first.pem"), dir.path().join("second.pem"));
    first.write_ca(&first_ca);
    second.write_ca(&second_ca);
    let mount = |generation: u32, authority: &Authority| {
        let (certificate, key) = authority.issue("weir-broker", &["localhost"], false);
        mount_secret(
            &secret,
            generation,
            &[("tls.crt", &certificate), ("tls.key", &key)],
        );
    };
    mount(1, &first);
    let (chain, key) = (secret.join("tls.crt"), secret.join("tls.key"));
    let (chain, key) = (chain.to_str().unwrap(), key.to_str().unwrap());
    let extra = [
        ("ssl.keystore.location", chain),
        ("ssl.keystore.key.location", key),
    ];
    let (broker, ssl) = ssl_broker(dir.path(), &secret, None, &extra).await;
    assert!(reaches(&tls_client(ssl, &first_ca, None)));
    mount(2, &second);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !reaches(&tls_client(ssl, &second_ca, None)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rotated certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(!reaches(&tls_client(ssl, &first_ca, None)));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_no_principal_mapping_rule_names_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("Weir test CA");
    let (keystore, ca) = (dir.path().join("broker.pem"), dir.path().join("ca.pem"));
    authority.write_server_keystore(&keystore);
    authority.write_ca(&ca);
    let identity = |name: &str| {
        let (certificate, key) = authority.issue(name, &[], true);
        let paths = (
            dir.path().join(format!("{name}.crt")),
            dir.path().join(format!("{name}.key")),
        );
        std::fs::write(&paths.0, certificate).unwrap();
        std::fs::write(&paths.1, key).unwrap();
        paths
    };
    let (app, other) = (identity("app"), identity("other"));
    let (broker, ssl) = ssl_broker(
        dir.path(),
        &keystore,
        None,
        &[
            ("ssl.truststore.location", ca.to_str().unwrap()),
            ("ssl.client.auth", "required"),
            ("ssl.principal.mapping.rules", "RULE:^CN=(app)$/$1/U"),
        ],
    )
    .await;
    assert!(
        reaches(&tls_client(ssl, &ca, Some((&app.0, &app.1)))),
        "CN=app refused"
    );
    assert!(
        !reaches(&tls_client(ssl, &ca, Some((&other.0, &other.1)))),
        "a certificate no rule maps was admitted"
    );
    broker.shutdown().await.unwrap();
}

/// The suite a rustls client offering `offered` (in its order of preference) agrees on with the
/// SSL listener on `port`, by rustls' name, or why the handshake failed.
async fn negotiated_suite(
    port: u16,
    ca: &Path,
    offered: &[tokio_rustls::rustls::SupportedCipherSuite],
) -> Result<String, String> {
    use rustls_pki_types::pem::PemObject;
    use tokio_rustls::rustls;
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = offered.to_vec();
    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls_pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let stream = tokio::time::timeout(TIMEOUT, connector.connect(name, tcp))
        .await
        .expect("the handshake ends in time")
        .map_err(|error| error.to_string())?;
    let suite = stream.get_ref().1.negotiated_cipher_suite().unwrap();
    Ok(suite.suite().as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_cipher_suites_are_the_only_suites_served_preferred_in_their_order() {
    use tokio_rustls::rustls::crypto::ring::cipher_suite as suite;
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("Weir test CA");
    let (keystore, ca) = (dir.path().join("broker.pem"), dir.path().join("ca.pem"));
    authority.write_server_keystore(&keystore);
    authority.write_ca(&ca);
    // rcgen's keys are ECDSA P-256: the TLS 1.2 suite listed is an ECDSA one.
    let listed = "TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256,\
                  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
    let (broker, ssl) = ssl_broker(
        dir.path(),
        &keystore,
        None,
        &[("ssl.cipher.suites", listed)],
    )
    .await;

    // A client preferring AES-256 (rustls' and OpenSSL's first choice) gets the broker's first.
    let everything = tokio_rustls::rustls::crypto::ring::ALL_CIPHER_SUITES;
    assert_eq!(
        negotiated_suite(ssl, &ca, everything).await.unwrap(),
        "TLS13_CHACHA20_POLY1305_SHA256"
    );
    let aes = [
        suite::TLS13_AES_256_GCM_SHA384,
        suite::TLS13_AES_128_GCM_SHA256,
    ];
    assert_eq!(
        negotiated_suite(ssl, &ca, &aes).await.unwrap(),
        "TLS13_AES_128_GCM_SHA256"
    );
    // Suites not listed are not served, in TLS 1.3 or 1.2.
    let unlisted = [
        suite::TLS13_AES_256_GCM_SHA384,
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ];
    let refused = negotiated_suite(ssl, &ca, &unlisted).await.unwrap_err();
    assert!(
        refused.contains("HandshakeFailure") || refused.contains("handshake"),
        "{refused}"
    );
    let tls12 = [suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256];
    assert_eq!(
        negotiated_suite(ssl, &ca, &tls12).await.unwrap(),
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    );
    // librdkafka (OpenSSL's defaults) still connects, after the refused handshake.
    assert!(reaches(&tls_client(ssl, &ca, None)), "librdkafka over TLS");
    broker.shutdown().await.unwrap();
}
