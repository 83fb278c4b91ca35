//! Who may speak on the controller listener, and how this node reaches the others'.
//!
//! The controller listener is PLAINTEXT or SSL, by its entry in `listener.security.protocol.map`
//! (the first of `controller.listener.names`). On SSL its TLS files (`ssl.*`, or
//! `listener.name.<controller>.ssl.*`) serve the listener — reloaded when they change — and are
//! this node's client certificate and truststore when it connects to other voters; with
//! `ssl.client.auth=required` only holders of a certificate from the truststore's CAs get a
//! session, named by `ssl.principal.mapping.rules` as on the client listeners.
//!
//! With an authorizer on (`authorizer.class.name`), every request needs CLUSTER_ACTION on the
//! cluster — a super user (as Kafka's brokers and controllers usually are) or an ACL in the
//! current image — as Kafka's controller asks of Vote, BrokerRegistration, AlterPartition and
//! the rest; anyone else is refused with the reason and the connection closed. Without one,
//! everything is allowed, as on Kafka.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use weir_wire::tls_handshake;

use super::rpc::QuorumStream;
use crate::cluster::MetadataImage;
use crate::config::{BrokerConfig, ConfigError};
use crate::security::acl::{
    authorize, authorizer_settings, AuthorizerSettings, Operation, ResourceType, CLUSTER_NAME,
};
use crate::security::ssl_principal::SslPrincipalMapper;
use crate::security::tls::{self, TlsAcceptorCell, TlsSettings};
use crate::security::{BrokerIdentity, KafkaPrincipal};

/// The controller listener's security, both sides.
pub struct ControllerSecurity {
    /// SSL: the listener's acceptor; `None`: PLAINTEXT.
    acceptor: Option<Arc<TlsAcceptorCell>>,
    principal_mapper: SslPrincipalMapper,
    /// How this node connects to other controller listeners.
    identity: BrokerIdentity,
    /// `None`: no authorizer, every principal may act.
    authorizer: Option<AuthorizerSettings>,
}

impl std::fmt::Debug for ControllerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerSecurity")
            .field("tls", &self.acceptor.is_some())
            .field("identity", &self.identity)
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

impl ControllerSecurity {
    /// PLAINTEXT both ways, no authorizer (tests of the quorum alone).
    pub fn plaintext() -> Arc<ControllerSecurity> {
        Arc::new(ControllerSecurity {
            acceptor: None,
            principal_mapper: SslPrincipalMapper::parse("DEFAULT").expect("DEFAULT parses"),
            identity: BrokerIdentity::plaintext(),
            authorizer: None,
        })
    }

    /// The controller listener's security from the broker's properties.
    pub fn from_config(config: &BrokerConfig) -> Result<Arc<ControllerSecurity>, ConfigError> {
        let (listener, protocol) = config.controller_listener()?;
        let acceptor = match protocol.uses_tls() {
            true => Some(TlsAcceptorCell::new(TlsSettings::from_config(
                config, &listener,
            )?)?),
            false => None,
        };
        let rules = config
            .listener_property(&listener, "ssl.principal.mapping.rules")
            .unwrap_or_else(|| "DEFAULT".to_string());
        let principal_mapper =
            SslPrincipalMapper::parse(&rules).map_err(|reason| ConfigError::InvalidValue {
                name: "ssl.principal.mapping.rules".into(),
                value: rules.clone(),
                reason,
            })?;
        Ok(Arc::new(ControllerSecurity {
            acceptor,
            principal_mapper,
            identity: BrokerIdentity::for_listener(config, &listener, protocol)?,
            authorizer: authorizer_settings(config),
        }))
    }

    /// Reloads the listener's certificates when their files change, until shutdown.
    pub(super) fn spawn_reload(&self, shutdown: watch::Receiver<bool>) -> Option<JoinHandle<()>> {
        let cell = Arc::clone(self.acceptor.as_ref()?);
        Some(tokio::spawn(tls::watch_files(cell, shutdown)))
    }

    /// A connection to the controller listener at `address`: TCP, then TLS on SSL.
    pub(super) async fn connect(&self, address: &str) -> io::Result<Box<dyn QuorumStream>> {
        let tcp = TcpStream::connect(address).await?;
        let _ = tcp.set_nodelay(true);
        if !self.identity.uses_tls() {
            return Ok(Box::new(tcp));
        }
        let security = self.identity.client_security().map_err(io::Error::other)?;
        let config = security.tls_config().ok_or_else(|| {
            io::Error::other("the controller listener's TLS has no configuration")
        })?;
        let stream = tls_handshake(address, tcp, config)
            .await
            .map_err(io::Error::other)?;
        Ok(Box::new(stream))
    }

    /// An accepted connection, after TLS on SSL, with the principal it speaks for.
    pub(super) async fn accept(
        &self,
        tcp: TcpStream,
    ) -> Result<(Box<dyn QuorumStream>, KafkaPrincipal), String> {
        let _ = tcp.set_nodelay(true);
        let Some(acceptor) = &self.acceptor else {
            return Ok((Box::new(tcp), KafkaPrincipal::anonymous()));
        };
        let handshake = acceptor.acceptor().accept(tcp);
        let stream = match tokio::time::timeout(tls::HANDSHAKE_TIMEOUT, handshake).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(format!("TLS handshake failed: {error}")),
            Err(_) => return Err("TLS handshake timed out".into()),
        };
        let certificate = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first());
        let principal = match certificate {
            Some(certificate) => self.principal_mapper.principal(certificate.as_ref())?,
            None => KafkaPrincipal::anonymous(),
        };
        Ok((Box::new(stream), principal))
    }

    /// Why `principal` connecting from `peer` may not speak to the quorum, if it may not.
    pub(super) fn refusal(
        &self,
        principal: &KafkaPrincipal,
        peer: SocketAddr,
        image: &MetadataImage,
    ) -> Option<String> {
        let settings = self.authorizer.as_ref()?;
        let allowed = authorize(
            &image.acls,
            settings,
            principal,
            &peer.ip().to_string(),
            Operation::ClusterAction,
            ResourceType::Cluster,
            CLUSTER_NAME,
        );
        (!allowed).then(|| {
            format!(
                "{principal} may not speak to the controller quorum: it needs CLUSTER_ACTION on \
                 the cluster (a super user, or an ACL)"
            )
        })
    }
}
