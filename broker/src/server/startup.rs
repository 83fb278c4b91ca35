//! The steps of starting a broker: recover the data directory and load the topics and the
//! coordinators' state ([`open_storage`]), bind the client listener ([`Listener::bind`]), join
//! the cluster when `controller.quorum.voters` is set ([`join_cluster`]) and start the tasks
//! that follow it ([`spawn_cluster_tasks`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::metadata;
use crate::acls::AclStore;
use crate::broker_configs::BrokerConfigStore;
use crate::clock::Clock;
use crate::cluster::lifecycle::BrokerLifecycle;
use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::node::QuorumNode;
use crate::cluster::BrokerEndpoint;
use crate::config::{BrokerConfig, ConfigError, LiveConfig, SecurityProtocol};
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::group::state::GroupLimits;
use crate::group::GroupCoordinator;
use crate::log::error::LogError;
use crate::producer::ProducerIdManager;
use crate::replication::fetcher::{FetcherSetup, ReplicaSettings};
use crate::replication::isr::IsrChange;
use crate::replication::Replication;
use crate::security::listener::SaslListener;
use crate::security::ssl_principal::SslPrincipalMapper;
use crate::security::tls::{TlsAcceptorCell, TlsSettings};
use crate::security::BrokerIdentity;
use crate::topic::TopicRegistry;
use crate::transaction::{TransactionCoordinator, TransactionSettings};
use crate::user_credentials::UserCredentialStore;

/// Left in the data directory by a clean shutdown; its absence means recovery.
pub(super) const CLEAN_SHUTDOWN_FILE: &str = ".clean-shutdown";
const CLUSTER_ID_FILE: &str = "meta/cluster-id";

/// What the data directory holds, loaded.
pub(super) struct Storage {
    pub cluster_id: String,
    pub topics: TopicRegistry,
    pub groups: GroupCoordinator,
    pub producer_ids: Arc<ProducerIdManager>,
    pub transactions: TransactionCoordinator,
    /// The configuration with the dynamic broker configs stored here over it.
    pub live_config: LiveConfig,
    pub broker_configs: BrokerConfigStore,
    pub user_credentials: UserCredentialStore,
    pub acls: AclStore,
    pub quotas: crate::quota::QuotaStore,
}

/// Recovers the logs and loads the coordinators. Alone, groups and transactional ids load now;
/// in a cluster, as this broker comes to lead their internal partitions.
pub(super) fn open_storage(
    config: &BrokerConfig,
    clock: &Arc<dyn Clock>,
) -> Result<Storage, BrokerError> {
    let data_dir = &config.data_dir;
    check_data_dir(data_dir)?;
    let clean_shutdown = take_clean_shutdown_marker(data_dir)?;
    if !clean_shutdown {
        tracing::info!(data_dir = %data_dir.display(), "no clean-shutdown marker: recovering logs");
    }
    let cluster_id = load_or_create_cluster_id(data_dir, config.explicit("cluster.id"))?;
    let alone = config.quorum_voters().is_empty();
    let meta_dir = data_dir.join("meta");
    std::fs::create_dir_all(&meta_dir).map_err(|e| LogError::io(&meta_dir, e))?;
    // The dynamic broker configs are read before any log opens with its defaults (in a cluster,
    // the copy of the image's last applied here; the image's own follow).
    let broker_configs = BrokerConfigStore::open(&meta_dir)?;
    let layers = crate::broker_configs::layers_for(&broker_configs.sets(), config.node_id());
    let live_config = LiveConfig::new(config.with_dynamic(layers));
    let user_credentials = UserCredentialStore::open(&meta_dir)?;
    let acls = AclStore::open(&meta_dir)?;
    let quotas = crate::quota::QuotaStore::open(&meta_dir)?;
    let started = std::time::Instant::now();
    let topics = TopicRegistry::open(live_config.clone(), Arc::clone(clock), clean_shutdown)?;
    tracing::info!(
        topics = topics.all().len(),
        partitions = topics.all_partitions().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "logs loaded"
    );
    let groups = GroupCoordinator::new(
        GroupLimits::from_config(config),
        config.offsets_topic_partitions(),
        Arc::clone(clock),
    );
    let transactions =
        TransactionCoordinator::new(TransactionSettings::from_config(config), Arc::clone(clock));
    if alone {
        let offsets_loaded = groups.load(&topics)?;
        if offsets_loaded > 0 {
            tracing::info!(records = offsets_loaded, "committed offsets loaded");
        }
        let transactions_loaded = transactions.load(&topics)?;
        if transactions_loaded > 0 {
            tracing::info!(
                transactional_ids = transactions_loaded,
                "transaction state loaded"
            );
        }
    } else {
        groups.follow_partition_leadership();
        transactions.follow_partition_leadership();
    }
    // In a cluster, producer ids come from the controller so no two brokers share one.
    let producer_ids = Arc::new(match alone {
        true => ProducerIdManager::open(&meta_dir)?,
        false => ProducerIdManager::from_controller(),
    });
    Ok(Storage {
        cluster_id,
        topics,
        groups,
        producer_ids,
        transactions,
        live_config,
        broker_configs,
        user_credentials,
        acls,
        quotas,
    })
}

/// One bound client listener and the address clients are told.
pub(super) struct Listener {
    pub name: String,
    /// An SSL listener's acceptor (reloaded when its files change).
    pub tls: Option<Arc<TlsAcceptorCell>>,
    /// A SASL listener's mechanisms and PLAIN users.
    pub sasl: Option<Arc<SaslListener>>,
    /// How client certificates name their principals.
    pub principal_mapper: Arc<SslPrincipalMapper>,
    pub socket: TcpListener,
    pub local_addr: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
}

impl Listener {
    /// Binds every client listener (`listeners`, or the one on `--listen`).
    pub(super) async fn bind_all(config: &BrokerConfig) -> Result<Vec<Listener>, BrokerError> {
        let mut bound = Vec::new();
        for spec in config.client_listeners()? {
            let tls = match spec.protocol.uses_tls() {
                true => Some(TlsAcceptorCell::new(TlsSettings::from_config(
                    config, &spec.name,
                )?)?),
                false => None,
            };
            let sasl = match spec.protocol {
                SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                    let sasl = SaslListener::from_config(config, &spec.name)?;
                    if let Some(validator) = &sasl.oauth {
                        validator
                            .load()
                            .await
                            .map_err(|reason| ConfigError::InvalidValue {
                                name: format!(
                                    "sasl.oauthbearer.jwks.endpoint.url (listener {})",
                                    spec.name
                                ),
                                value: String::new(),
                                reason: format!("the signing keys cannot be loaded: {reason}"),
                            })?;
                    }
                    Some(Arc::new(sasl))
                }
                SecurityProtocol::Plaintext | SecurityProtocol::Ssl => None,
            };
            let rules = config
                .listener_property(&spec.name, "ssl.principal.mapping.rules")
                .unwrap_or_else(|| "DEFAULT".to_string());
            let principal_mapper = SslPrincipalMapper::parse(&rules).map_err(|reason| {
                BrokerError::Config(ConfigError::InvalidValue {
                    name: "ssl.principal.mapping.rules".into(),
                    value: rules.clone(),
                    reason,
                })
            })?;
            let socket = TcpListener::bind(spec.bind).await.map_err(|e| {
                BrokerError::InvalidRequest(format!(
                    "cannot listen on {} (listener {}): {e}",
                    spec.bind, spec.name
                ))
            })?;
            let local_addr = socket
                .local_addr()
                .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
            let (advertised_host, advertised_port) = match spec.advertised {
                Some((host, port)) => (host, port),
                None => (local_addr.ip().to_string(), local_addr.port()),
            };
            bound.push(Listener {
                name: spec.name,
                tls,
                sasl,
                principal_mapper: Arc::new(principal_mapper),
                socket,
                local_addr,
                advertised_host,
                advertised_port,
            });
        }
        Ok(bound)
    }

    pub(super) fn endpoint(&self) -> BrokerEndpoint {
        BrokerEndpoint {
            name: self.name.clone(),
            host: self.advertised_host.clone(),
            port: self.advertised_port,
        }
    }
}

/// The listener other brokers use (`inter.broker.listener.name`) among the bound ones.
pub(super) fn inter_broker<'a>(
    config: &BrokerConfig,
    listeners: &'a [Listener],
) -> Result<&'a Listener, BrokerError> {
    let name = config.inter_broker_listener()?.name;
    listeners
        .iter()
        .find(|listener| listener.name == name)
        .ok_or_else(|| BrokerError::InvalidRequest(format!("no bound listener {name}")))
}

/// How this broker connects to the other brokers' inter-broker listener (cluster mode).
fn inter_broker_identity(config: &BrokerConfig) -> Result<BrokerIdentity, BrokerError> {
    let spec = config.inter_broker_listener()?;
    Ok(BrokerIdentity::for_listener(
        config,
        &spec.name,
        spec.protocol,
    )?)
}

/// Cluster mode's parts (all `None` when the broker runs alone).
pub(super) struct ClusterParts {
    pub member: Option<Arc<ClusterMember>>,
    /// The quorum member and this broker's registration, stopped last.
    pub quorum: Option<(QuorumNode, BrokerLifecycle)>,
    pub replication: Option<Replication>,
    pub isr_changes: Option<mpsc::Receiver<IsrChange>>,
    /// How this broker reaches the others (plaintext when alone).
    pub identity: BrokerIdentity,
}

/// Starts the quorum member and this broker's registration, and the replication machinery.
pub(super) async fn join_cluster(
    config: &BrokerConfig,
    listeners: &[Listener],
    clock: &Arc<dyn Clock>,
    shutdown: &watch::Receiver<bool>,
) -> Result<ClusterParts, BrokerError> {
    if config.quorum_voters().is_empty() {
        return Ok(ClusterParts {
            member: None,
            quorum: None,
            replication: None,
            isr_changes: None,
            identity: BrokerIdentity::plaintext(),
        });
    }
    let inter_broker = inter_broker(config, listeners)?;
    let identity = inter_broker_identity(config)?;
    let parts = ClusterMember::start(
        config,
        inter_broker.advertised_host.clone(),
        inter_broker.advertised_port,
        listeners.iter().map(Listener::endpoint).collect(),
        Arc::clone(clock),
        shutdown.clone(),
    )
    .await?;
    let setup = FetcherSetup {
        node_id: config.node_id(),
        settings: ReplicaSettings::from_config(config),
        cluster: Arc::clone(&parts.member),
        identity: identity.clone(),
    };
    let (replication, isr_changes) = Replication::new(setup, shutdown.clone());
    Ok(ClusterParts {
        member: Some(parts.member),
        quorum: Some((parts.quorum, parts.lifecycle)),
        replication: Some(replication),
        isr_changes: Some(isr_changes),
        identity,
    })
}

/// The tasks of cluster mode: following the metadata, sending ISR changes to the controller,
/// keeping a block of producer ids.
pub(super) fn spawn_cluster_tasks(
    tasks: &mut JoinSet<()>,
    context: &Arc<BrokerContext>,
    isr_changes: mpsc::Receiver<IsrChange>,
    shutdown: &watch::Receiver<bool>,
) {
    let Some(cluster) = &context.cluster else {
        return;
    };
    tasks.spawn(metadata::follow_metadata(
        Arc::clone(context),
        Arc::clone(cluster),
        shutdown.clone(),
    ));
    tasks.spawn(crate::replication::isr::send_isr_changes(
        Arc::clone(cluster),
        context.metrics.isr_change_counters(),
        isr_changes,
        shutdown.clone(),
    ));
    tasks.spawn(crate::cluster::producer_id_blocks::keep_blocks(
        Arc::clone(cluster),
        Arc::clone(&context.producer_ids),
        shutdown.clone(),
    ));
}

/// The data directory exists (it is created if missing, as Kafka creates its log directories)
/// and takes writes: else start-up stops here with the path and the reason.
fn check_data_dir(data_dir: &Path) -> Result<(), BrokerError> {
    let failed = |what: &str, error: std::io::Error| BrokerError::DataDirectory {
        path: data_dir.to_path_buf(),
        reason: format!("{what}: {error}"),
    };
    std::fs::create_dir_all(data_dir).map_err(|e| failed("cannot be created", e))?;
    let probe = data_dir.join(".write-probe");
    std::fs::write(&probe, b"").map_err(|e| failed("is not writable", e))?;
    std::fs::remove_file(&probe).map_err(|e| failed("is not writable", e))
}

fn take_clean_shutdown_marker(data_dir: &Path) -> Result<bool, BrokerError> {
    let marker = data_dir.join(CLEAN_SHUTDOWN_FILE);
    match std::fs::remove_file(&marker) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(LogError::io(&marker, e).into()),
    }
}

fn load_or_create_cluster_id(
    data_dir: &Path,
    configured: Option<&str>,
) -> Result<String, BrokerError> {
    let path = data_dir.join(CLUSTER_ID_FILE);
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_string();
        if let Some(configured) = configured {
            if configured != existing {
                return Err(BrokerError::InvalidRequest(format!(
                    "cluster.id {configured} does not match {existing} stored in {}",
                    path.display()
                )));
            }
        }
        return Ok(existing);
    }
    let id = configured.map(str::to_string).unwrap_or_else(|| {
        let uuid = uuid::Uuid::new_v4();
        // Kafka's cluster ids are URL-safe base64 of 16 bytes; any string works for clients.
        uuid.simple().to_string()
    });
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| LogError::io(parent, e))?;
    }
    crate::durable_file::replace(&path, id.as_bytes()).map_err(|e| LogError::io(&path, e))?;
    Ok(id)
}
