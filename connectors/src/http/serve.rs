//! Serving one pipeline's endpoint: credentials and certificate loaded (a file that cannot be
//! used stops the start with the reason), then the bounded listener, TLS and the routes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use weir_tls::followed::FollowedCertificate;

use super::auth::Authenticator;
use super::config::{HttpSourceConfig, HttpTlsConfig};
use super::listener::BoundedListener;
use super::source::{router, IngestTarget};

/// Serves `POST /ingest/<pipeline>` on `listener` until `shutdown` completes.
pub async fn serve(
    pipeline: &str,
    config: &HttpSourceConfig,
    target: Arc<dyn IngestTarget>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let auth = config
        .auth
        .as_ref()
        .map(Authenticator::load)
        .transpose()
        .map_err(|problem| format!("auth: {problem}"))?;
    let tls = config.tls.as_ref().map(tls_acceptor).transpose()?;
    let listener = BoundedListener::new(
        listener,
        config.max_connections,
        Duration::from_secs(config.read_timeout_seconds),
        tls,
    )
    .map_err(|e| format!("listener: {e}"))?;
    let app = router(pipeline, config, target, auth);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| e.to_string())
}

/// The endpoint's TLS: its certificate (followed when its files change) and, with
/// `client_ca_file`, required client certificates.
fn tls_acceptor(config: &HttpTlsConfig) -> Result<TlsAcceptor, String> {
    let certificate = FollowedCertificate::load(&config.certificate_file, &config.key_file)
        .map_err(|e| format!("tls: {e}"))?;
    let provider = weir_tls::provider();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let builder = match &config.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let roots = weir_tls::pem::trust_store(Some(path))
                .map_err(|e| format!("tls.client_ca_file: {e}"))?;
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| format!("tls.client_ca_file: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut server = builder.with_cert_resolver(Arc::new(certificate));
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}
