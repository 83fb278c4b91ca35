//! The HTTP endpoint over TLS with credentials, against reqwest (rustls) as the client: bearer
//! and basic credentials (401 with `WWW-Authenticate` otherwise), client certificates when a
//! client CA is set, a rotated certificate served without a restart, and a client that stalls
//! in its handshake delaying no one and being closed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use weir_connectors::http::{
    HttpAuthConfig, HttpSourceConfig, HttpTlsConfig, IngestReport, IngestTarget,
};
use weir_connectors::weblog::LogFormat;

/// Accepts every line.
struct Accept;

#[async_trait::async_trait]
impl IngestTarget for Accept {
    async fn ingest(&self, lines: Vec<&[u8]>) -> Result<IngestReport, String> {
        Ok(IngestReport {
            accepted: lines.len(),
            dead_letters: 0,
        })
    }
}

struct Authority {
    certificate: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        Authority { certificate, key }
    }

    /// A certificate and its key, PEM.
    fn issue(&self, name: &str, client: bool) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        if client {
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = params
            .signed_by(&key, &self.certificate, &self.key)
            .unwrap();
        (certificate.pem(), key.serialize_pem())
    }

    fn trusted(&self) -> reqwest::Certificate {
        reqwest::Certificate::from_pem(self.certificate.pem().as_bytes()).unwrap()
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The endpoint of pipeline `events` on a free port with TLS from `dir`'s server.pem/server.key.
async fn serve(config: HttpSourceConfig) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let shutdown = std::future::pending();
        weir_connectors::http::serve("events", &config, Arc::new(Accept), listener, shutdown)
            .await
            .unwrap()
    });
    port
}

fn tls_config(dir: &Path, server: &Authority) -> HttpSourceConfig {
    let (certificate, key) = server.issue("localhost", false);
    let mut config = HttpSourceConfig::new("127.0.0.1:0", LogFormat::Json);
    config.tls = Some(HttpTlsConfig {
        certificate_file: write(dir, "server.pem", &certificate),
        key_file: write(dir, "server.key", &key),
        client_ca_file: None,
    });
    config
}

fn client(port: u16, trusted: &Authority, identity: Option<(String, String)>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(trusted.trusted())
        .resolve("localhost", ([127, 0, 0, 1], port).into())
        .timeout(Duration::from_secs(10));
    if let Some((certificate, key)) = identity {
        let pem = format!("{certificate}{key}");
        builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

async fn post(
    client: &reqwest::Client,
    port: u16,
    authorization: Option<&str>,
) -> Result<(u16, Vec<String>, String), reqwest::Error> {
    let mut request = client
        .post(format!("https://localhost:{port}/ingest/events"))
        .body("{\"a\": 1}\n{\"a\": 2}\n");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let challenges = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    Ok((status, challenges, response.text().await?))
}

const ACCEPTED: &str = r#"{"accepted":2,"dead_letters":0}"#;

#[tokio::test]
async fn https_with_bearer_tokens_and_basic_users() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("weir test CA");
    let mut config = tls_config(dir.path(), &authority);
    config.auth = Some(HttpAuthConfig {
        bearer_tokens_file: Some(write(
            dir.path(),
            "tokens",
            "# rotated by the team\ns3cret-token\n",
        )),
        basic_users_file: Some(write(dir.path(), "users", "shipper:shipper-pass\n")),
    });
    let port = serve(config).await;
    let https = client(port, &authority, None);

    let ok = post(&https, port, Some("Bearer s3cret-token"))
        .await
        .unwrap();
    assert_eq!((ok.0, ok.2.as_str()), (200, ACCEPTED));
    let basic = base64::engine::general_purpose::STANDARD.encode("shipper:shipper-pass");
    let ok = post(&https, port, Some(&format!("Basic {basic}")))
        .await
        .unwrap();
    assert_eq!((ok.0, ok.2.as_str()), (200, ACCEPTED));

    let (status, challenges, body) = post(&https, port, None).await.unwrap();
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        challenges,
        [
            "Bearer realm=\"weir\"",
            "Basic realm=\"weir\", charset=\"UTF-8\""
        ]
    );
    assert!(body.contains("authentication required"), "{body}");
    let (status, _, body) = post(&https, port, Some("Bearer guessed")).await.unwrap();
    assert_eq!(
        (status, body.as_str()),
        (401, r#"{"error":"the bearer token is not accepted"}"#)
    );
    let wrong = base64::engine::general_purpose::STANDARD.encode("shipper:guess");
    let (status, _, body) = post(&https, port, Some(&format!("Basic {wrong}")))
        .await
        .unwrap();
    assert_eq!(
        (status, body.as_str()),
        (401, r#"{"error":"wrong user name or password"}"#)
    );

    // A client that does not trust the endpoint's CA, and plain HTTP to the TLS port, get nothing.
    let stranger = client(port, &Authority::new("another CA"), None);
    let refused = post(&stranger, port, Some("Bearer s3cret-token"))
        .await
        .unwrap_err();
    assert!(refused.is_connect(), "{refused:?}");
    let plain = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/ingest/events"))
        .header("authorization", "Bearer s3cret-token")
        .body("{}")
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP was answered: {plain:?}");
}

#[tokio::test]
async fn client_certificates_are_required_when_a_client_ca_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("weir test CA");
    let clients = Authority::new("weir client CA");
    let mut config = tls_config(dir.path(), &authority);
    config.tls.as_mut().unwrap().client_ca_file =
        Some(write(dir.path(), "clients.pem", &clients.certificate.pem()));
    let port = serve(config).await;

    let shipper = client(port, &authority, Some(clients.issue("shipper", true)));
    let ok = post(&shipper, port, None).await.unwrap();
    assert_eq!((ok.0, ok.2.as_str()), (200, ACCEPTED));
    let anonymous = client(port, &authority, None);
    assert!(
        post(&anonymous, port, None).await.is_err(),
        "served without a client certificate"
    );
    let forged = client(
        port,
        &authority,
        Some(Authority::new("forger").issue("shipper", true)),
    );
    assert!(
        post(&forged, port, None).await.is_err(),
        "served a certificate of another CA"
    );
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before = Authority::new("CA before");
    let port = serve(tls_config(dir.path(), &before)).await;
    let ok = post(&client(port, &before, None), port, None)
        .await
        .unwrap();
    assert_eq!(ok.0, 200);

    // cert-manager renews: new files signed by another CA. Within a few seconds new connections
    // get the new certificate.
    let after = Authority::new("CA after");
    tls_config(dir.path(), &after);
    let trusting_after = client(port, &after, None);
    let mut served = None;
    for _ in 0..50 {
        if let Ok(answer) = post(&trusting_after, port, None).await {
            served = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        served.expect("the renewed certificate was never served").0,
        200
    );
    assert!(post(&client(port, &before, None), port, None)
        .await
        .is_err());
}

#[tokio::test]
async fn a_client_stalling_in_its_handshake_delays_no_one_and_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("weir test CA");
    let mut config = tls_config(dir.path(), &authority);
    config.read_timeout_seconds = 3;
    let port = serve(config).await;
    let mut stalled = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ok = post(&client(port, &authority, None), port, None)
        .await
        .unwrap();
    assert_eq!(ok.0, 200);
    // Served while the stalled handshake still holds its connection (a listener that waited
    // for each handshake in turn would only have served it after the stalled one timed out).
    let mut byte = [0u8; 1];
    let still_open = tokio::time::timeout(Duration::from_millis(10), stalled.peek(&mut byte)).await;
    assert!(
        still_open.is_err(),
        "the stalled connection was closed first: {still_open:?}"
    );
    let mut rest = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the stalled handshake was not closed");
}

#[tokio::test]
async fn unusable_files_stop_the_endpoint_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tls_config(dir.path(), &Authority::new("weir test CA"));
    config.tls.as_mut().unwrap().key_file = write(dir.path(), "other.key", "not a key\n");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error =
        weir_connectors::http::serve("events", &config, Arc::new(Accept), listener, async {})
            .await
            .unwrap_err();
    assert!(
        error.starts_with("tls: ") && error.contains("other.key"),
        "{error}"
    );

    let mut config = HttpSourceConfig::new("127.0.0.1:0", LogFormat::Json);
    config.auth = Some(HttpAuthConfig {
        bearer_tokens_file: None,
        basic_users_file: None,
    });
    assert!(config
        .problems()
        .iter()
        .any(|p| p.contains("bearer_tokens_file or basic_users_file")));
    config.auth = Some(HttpAuthConfig {
        bearer_tokens_file: Some("/nonexistent/tokens".into()),
        basic_users_file: None,
    });
    assert_eq!(
        config.problems(),
        ["auth.bearer_tokens_file: /nonexistent/tokens is not a file"]
    );
}
