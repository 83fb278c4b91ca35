//! The running broker: listener, connections, background tasks and shutdown.
//!
//! - `connection`: framing, request decoding, in-order responses with pipelining.
//! - `metrics_http`: the `/metrics` endpoint.
//! - `background`: retention, flushing and recovery-point checkpoints.

mod background;
mod connection;
mod metrics_http;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::clock::{Clock, SystemClock};
use crate::cluster::lifecycle::BrokerLifecycle;
use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::node::QuorumNode;
use crate::config::BrokerConfig;
use crate::error::{BrokerError, LogError};
use crate::group::GroupCoordinator;
use crate::metrics::Metrics;
use crate::producer::ProducerIdManager;
use crate::topic::TopicRegistry;
use crate::transaction::{BrokerChannel, TransactionCoordinator, TxnServices};

const CLEAN_SHUTDOWN_FILE: &str = ".clean-shutdown";
const CLUSTER_ID_FILE: &str = "meta/cluster-id";

/// Everything request handlers share.
pub struct BrokerContext {
    pub config: BrokerConfig,
    pub topics: TopicRegistry,
    pub groups: GroupCoordinator,
    pub producer_ids: Arc<ProducerIdManager>,
    pub transactions: TransactionCoordinator,
    /// Requests to the other brokers of the cluster (transaction markers and verification).
    pub brokers: BrokerChannel,
    pub clock: Arc<dyn Clock>,
    pub metrics: Metrics,
    pub cluster_id: String,
    pub node_id: i32,
    /// host and port given to clients in Metadata.
    pub advertised_host: String,
    pub advertised_port: u16,
    /// Cluster mode (`controller.quorum.voters` set): the metadata image and the way to the
    /// active controller. `None` when the broker runs alone.
    pub cluster: Option<Arc<ClusterMember>>,
    /// Cluster mode: the fetchers of the partitions this broker follows, and the way ISR
    /// changes reach the controller.
    pub replication: Option<crate::replication::Replication>,
}

impl BrokerContext {
    /// The cluster id clients see: the metadata log's in cluster mode (this broker's own until
    /// the first controller wrote one), else the one stored in the data directory.
    pub fn cluster_id(&self) -> String {
        self.cluster
            .as_ref()
            .and_then(|cluster| cluster.cluster_id())
            .unwrap_or_else(|| self.cluster_id.clone())
    }

    /// Whether a topic partition exists in the cluster (or, alone, here).
    pub fn partition_exists(&self, topic: &str, index: i32) -> bool {
        let image = self.cluster.as_ref().map(|cluster| cluster.image().image);
        crate::topic::partition_exists(&self.topics, image.as_deref(), topic, index)
    }

    /// What the transaction coordinator acts on.
    pub fn txn_services(&self) -> TxnServices<'_> {
        TxnServices {
            topics: &self.topics,
            groups: &self.groups,
            producer_ids: &self.producer_ids,
            channel: &self.brokers,
        }
    }
}

/// A running broker. Dropping it without `shutdown` leaves the data as after a crash.
pub struct Broker {
    context: Arc<BrokerContext>,
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
    /// Cluster mode: the quorum member and this broker's registration, stopped last.
    cluster: Option<(QuorumNode, BrokerLifecycle)>,
}

/// How long a stopping broker waits for the controller to move its leaderships away.
const CONTROLLED_SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Broker {
    /// Recovers the data directory, binds the listeners and starts serving.
    pub async fn start(config: BrokerConfig) -> Result<Broker, BrokerError> {
        Self::start_with_clock(config, Arc::new(SystemClock)).await
    }

    pub async fn start_with_clock(
        config: BrokerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Broker, BrokerError> {
        let data_dir = config.data_dir.clone();
        std::fs::create_dir_all(&data_dir).map_err(|e| LogError::io(&data_dir, e))?;
        let clean_shutdown = take_clean_shutdown_marker(&data_dir)?;
        if !clean_shutdown {
            tracing::info!(data_dir = %data_dir.display(), "no clean-shutdown marker: recovering logs");
        }
        let cluster_id = load_or_create_cluster_id(&data_dir, config.explicit("cluster.id"))?;
        let started = std::time::Instant::now();
        let topics = TopicRegistry::open(config.clone(), Arc::clone(&clock), clean_shutdown)?;
        tracing::info!(
            topics = topics.all().len(),
            partitions = topics.all_partitions().len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "logs loaded"
        );
        let groups = GroupCoordinator::new(
            config.group_limits(),
            config.offsets_topic_partitions(),
            Arc::clone(&clock),
        );
        if config.quorum_voters().is_empty() {
            let offsets_loaded = groups.load(&topics)?;
            if offsets_loaded > 0 {
                tracing::info!(records = offsets_loaded, "committed offsets loaded");
            }
        } else {
            // Groups load as this broker comes to lead their offsets partitions.
            groups.follow_partition_leadership();
        }
        let meta_dir = data_dir.join("meta");
        std::fs::create_dir_all(&meta_dir).map_err(|e| LogError::io(&meta_dir, e))?;
        // In a cluster, producer ids come from the controller so no two brokers share one.
        let producer_ids = Arc::new(match config.quorum_voters().is_empty() {
            true => ProducerIdManager::open(&meta_dir)?,
            false => ProducerIdManager::from_controller(),
        });
        let transactions =
            TransactionCoordinator::new(config.transaction_settings(), Arc::clone(&clock));
        if config.quorum_voters().is_empty() {
            let transactions_loaded = transactions.load(&topics)?;
            if transactions_loaded > 0 {
                tracing::info!(
                    transactional_ids = transactions_loaded,
                    "transaction state loaded"
                );
            }
        } else {
            // Transactional ids load as this broker comes to lead their state partitions.
            transactions.follow_partition_leadership();
        }
        let listener = TcpListener::bind(config.listen).await.map_err(|e| {
            BrokerError::InvalidRequest(format!("cannot listen on {}: {e}", config.listen))
        })?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
        let (advertised_host, advertised_port) = match &config.advertised_listener {
            Some((host, port)) => (host.clone(), *port),
            None => (local_addr.ip().to_string(), local_addr.port()),
        };
        let node_id = config.node_id();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (cluster_member, cluster) = if config.quorum_voters().is_empty() {
            (None, None)
        } else {
            let parts = ClusterMember::start(
                &config,
                advertised_host.clone(),
                advertised_port,
                Arc::clone(&clock),
                shutdown_rx.clone(),
            )
            .await?;
            (Some(parts.member), Some((parts.quorum, parts.lifecycle)))
        };
        let (replication, isr_changes) = match &cluster_member {
            Some(member) => {
                let setup = crate::replication::fetcher::FetcherSetup {
                    node_id,
                    settings: config.replica_settings(),
                    cluster: Arc::clone(member),
                };
                let (replication, changes) =
                    crate::replication::Replication::new(setup, shutdown_rx.clone());
                (Some(replication), Some(changes))
            }
            None => (None, None),
        };
        let brokers = BrokerChannel::new(node_id, cluster_member.clone());
        let context = Arc::new(BrokerContext {
            config: config.clone(),
            topics,
            groups,
            producer_ids,
            transactions,
            brokers,
            clock,
            metrics: Metrics::new(),
            cluster_id,
            node_id,
            advertised_host,
            advertised_port,
            cluster: cluster_member,
            replication,
        });
        let mut tasks = JoinSet::new();
        let metrics_addr = match config.metrics_listen {
            Some(addr) => Some(
                metrics_http::spawn(&mut tasks, addr, Arc::clone(&context), shutdown_rx.clone())
                    .await?,
            ),
            None => None,
        };
        background::spawn(&mut tasks, Arc::clone(&context), shutdown_rx.clone());
        if let (Some(cluster), Some(isr_changes)) = (&context.cluster, isr_changes) {
            tasks.spawn(crate::replication::follow_metadata(
                Arc::clone(&context),
                Arc::clone(cluster),
                shutdown_rx.clone(),
            ));
            tasks.spawn(crate::replication::isr::send_isr_changes(
                Arc::clone(&context),
                Arc::clone(cluster),
                isr_changes,
                shutdown_rx.clone(),
            ));
            tasks.spawn(crate::cluster::producer_ids::keep_blocks(
                Arc::clone(cluster),
                Arc::clone(&context.producer_ids),
                shutdown_rx.clone(),
            ));
            tasks.spawn(crate::replication::isr::check_lagging_followers(
                Arc::clone(&context),
                config.replica_settings().lag_time_max_ms,
                shutdown_rx.clone(),
            ));
        }
        tasks.spawn(connection::accept_loop(
            listener,
            Arc::clone(&context),
            shutdown_rx,
        ));
        tracing::info!(
            listen = %local_addr,
            advertised = %format!("{}:{}", context.advertised_host, context.advertised_port),
            metrics = ?metrics_addr,
            node_id,
            cluster_id = %context.cluster_id,
            "weir broker ready"
        );
        Ok(Broker {
            context,
            local_addr,
            metrics_addr,
            shutdown,
            tasks,
            cluster,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    pub fn context(&self) -> &Arc<BrokerContext> {
        &self.context
    }

    /// Stops accepting, lets in-flight requests finish, flushes and closes every log, and leaves
    /// the clean-shutdown marker.
    pub async fn shutdown(mut self) -> Result<(), BrokerError> {
        tracing::info!("shutting down");
        let quorum = match self.cluster.take() {
            Some((quorum, lifecycle)) => {
                lifecycle
                    .controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT)
                    .await;
                Some(quorum)
            }
            None => None,
        };
        let _ = self.shutdown.send(true);
        while self.tasks.join_next().await.is_some() {}
        if let Some(replication) = &self.context.replication {
            replication.stop().await;
        }
        if let Some(quorum) = quorum {
            quorum.shutdown().await;
        }
        if self.context.cluster.is_some() {
            background::checkpoint_high_watermarks(&self.context);
        }
        let now_ms = self.context.clock.now_ms();
        let mut first_error = None;
        for partition in self.context.topics.all_partitions() {
            if let Err(error) = partition.log().close(now_ms) {
                tracing::error!(%error, topic = %partition.topic, partition = partition.index, "closing log failed");
                first_error.get_or_insert(error);
            }
        }
        if let Some(error) = first_error {
            return Err(error.into());
        }
        let marker = self.context.config.data_dir.join(CLEAN_SHUTDOWN_FILE);
        std::fs::write(&marker, b"").map_err(|e| LogError::io(&marker, e))?;
        tracing::info!("shutdown complete");
        Ok(())
    }

    /// Stops serving without flushing or closing logs, as a crash would (tests).
    pub async fn abort(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        if let Some(replication) = &self.context.replication {
            replication.stop().await;
        }
        if let Some((quorum, lifecycle)) = self.cluster.take() {
            // The quorum member's listener and controller task stop on the signal.
            let _ = self.shutdown.send(true);
            drop(lifecycle);
            quorum.shutdown().await;
        }
    }
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
    crate::log::index::write_file_synced(&path, id.as_bytes())
        .map_err(|e| LogError::io(&path, e))?;
    Ok(id)
}

/// Resolves once shutdown has been signalled (drops the channel's read guard before returning).
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
