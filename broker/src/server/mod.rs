//! The running broker: start-up wiring, listener, connections, background tasks and shutdown.
//!
//! - `startup`: the steps of [`Broker::start`] — recovering the data directory and loading the
//!   coordinators, binding the listener, joining the cluster.
//! - `connection`: framing, in-order responses with pipelining.
//! - `response_frame`: a response as chunks, a Fetch's record batches by reference (no copy
//!   into the encoded response), written with vectored writes.
//! - `frame`: decoding one request frame (also what the fuzz targets drive).
//! - `limits`: `max.connections`, `max.connections.per.ip` and the request memory pool.
//! - `metrics_http`: the `/metrics` endpoint.
//! - `background`: retention, flushing, recovery-point checkpoints, coordinator ticks and the
//!   sweep for lagging followers.
//! - `metadata`: cluster mode — replicas, roles, fetchers and coordinators following the image.

mod authentication;
mod background;
mod connection;
pub mod frame;
mod frame_reader;
mod limits;
mod metadata;
mod metrics_http;
mod response_frame;
mod startup;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::clock::{Clock, SystemClock};
use crate::cluster::lifecycle::BrokerLifecycle;
use crate::cluster::quorum::node::QuorumNode;
use crate::config::BrokerConfig;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::log::error::LogError;
use crate::metrics::Metrics;
use crate::transaction::BrokerChannel;

/// A running broker. Dropping it without `shutdown` leaves the data as after a crash.
pub struct Broker {
    context: Arc<BrokerContext>,
    local_addr: SocketAddr,
    listener_addrs: Vec<(String, SocketAddr)>,
    metrics_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<()>,
    /// Cluster mode: the quorum member and this broker's registration, stopped last.
    cluster: Option<(QuorumNode, BrokerLifecycle)>,
}

/// A broker's start, shutdown or abort in progress, boxed so that its body is compiled once, in
/// this crate. An `async fn` of this crate awaited elsewhere is compiled again in every crate
/// that awaits it (release builds do not share generic code between crates), with everything it
/// calls: the metrics server, the quorum and its RPCs — about 9,000 functions in each test binary
/// and in the `weir` binary.
pub type BrokerFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// How long a stopping broker waits for the controller to move its leaderships away.
const CONTROLLED_SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Broker {
    /// Recovers the data directory, binds the listeners and starts serving.
    pub fn start(config: BrokerConfig) -> BrokerFuture<Result<Broker, BrokerError>> {
        Self::start_with_clock(config, Arc::new(SystemClock))
    }

    /// [`Broker::start`] with time from `clock` (tests move it by hand).
    pub fn start_with_clock(
        config: BrokerConfig,
        clock: Arc<dyn Clock>,
    ) -> BrokerFuture<Result<Broker, BrokerError>> {
        Box::pin(Self::started(config, clock))
    }

    async fn started(config: BrokerConfig, clock: Arc<dyn Clock>) -> Result<Broker, BrokerError> {
        crate::security::anonymous_reach::check(&config)?;
        let pool_bytes = config.queued_max_request_bytes()?;
        let storage = startup::open_storage(&config, &clock)?;
        let connection_limits =
            limits::ConnectionLimits::from_config(&storage.live_config.current())?;
        let listeners = startup::Listener::bind_all(&config).await?;
        let inter_broker = startup::inter_broker(&config, &listeners)?;
        let (advertised_host, advertised_port) = (
            inter_broker.advertised_host.clone(),
            inter_broker.advertised_port,
        );
        let (shutdown, shutdown_rx) = watch::channel(false);
        let cluster = startup::join_cluster(&config, &listeners, &clock, &shutdown_rx).await?;
        let context = Arc::new(BrokerContext {
            live_config: storage.live_config,
            broker_configs: storage.broker_configs,
            quotas: storage.quotas,
            quota_sensors: crate::quota::QuotaSensors::new(
                config.quota_window_size_seconds() * 1000,
                config.quota_window_num(),
            ),
            user_credentials: storage.user_credentials,
            acls: storage.acls,
            topics: storage.topics,
            fetch_sessions: crate::fetch_session::FetchSessionCache::new(
                config.max_incremental_fetch_session_cache_slots(),
            ),
            groups: storage.groups,
            producer_ids: storage.producer_ids,
            transactions: storage.transactions,
            brokers: BrokerChannel::new(config.node_id(), cluster.member.clone(), cluster.identity),
            clock,
            metrics: Metrics::new(),
            cluster_id: storage.cluster_id,
            node_id: config.node_id(),
            advertised_host,
            advertised_port,
            listeners: listeners.iter().map(startup::Listener::endpoint).collect(),
            cluster: cluster.member,
            replication: cluster.replication,
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
        if let Some(isr_changes) = cluster.isr_changes {
            startup::spawn_cluster_tasks(&mut tasks, &context, isr_changes, &shutdown_rx);
        }
        let local_addr = listeners[0].local_addr;
        let listener_addrs = listeners
            .iter()
            .map(|listener| (listener.name.clone(), listener.local_addr))
            .collect();
        let pool = request_pool(&context, pool_bytes);
        tasks.spawn(limits::follow_config(
            Arc::clone(&connection_limits),
            context.live_config.watch(),
            shutdown_rx.clone(),
        ));
        let shared = connection::Shared {
            context: Arc::clone(&context),
            limits: connection_limits,
            pool,
        };
        let names: Vec<String> = listeners.iter().map(|l| l.name.clone()).collect();
        spawn_listeners(&mut tasks, listeners, &shared, &shutdown_rx);
        tracing::info!(
            listen = %local_addr,
            listeners = ?names,
            advertised = %format!("{}:{}", context.advertised_host, context.advertised_port),
            metrics = ?metrics_addr,
            node_id = context.node_id,
            cluster_id = %context.cluster_id,
            "weir broker ready"
        );
        Ok(Broker {
            context,
            local_addr,
            listener_addrs,
            metrics_addr,
            shutdown,
            tasks,
            cluster: cluster.quorum,
        })
    }

    /// The first client listener's bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bound address of the client listener `name` (upper case, as in `listeners`).
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.listener_addrs
            .iter()
            .find(|(listener, _)| listener == name)
            .map(|(_, address)| *address)
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    pub fn context(&self) -> &Arc<BrokerContext> {
        &self.context
    }

    /// Stops accepting, lets in-flight requests finish, flushes and closes every log, and leaves
    /// the clean-shutdown marker.
    pub fn shutdown(self) -> BrokerFuture<Result<(), BrokerError>> {
        Box::pin(self.shut_down())
    }

    async fn shut_down(mut self) -> Result<(), BrokerError> {
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
        let mut offline = 0;
        for partition in self.context.topics.all_partitions() {
            if partition.offline_reason().is_some() {
                // Its files may hold torn writes: leave them to recovery at the next start.
                offline += 1;
                continue;
            }
            if let Err(error) = partition.log().close(now_ms) {
                tracing::error!(%error, topic = %partition.topic, partition = partition.index, "closing log failed");
                first_error.get_or_insert(error);
            }
        }
        if let Some(error) = first_error {
            return Err(error.into());
        }
        if offline > 0 {
            tracing::warn!(
                offline,
                "partitions offline after storage failures: no clean-shutdown marker, so the \
                 next start recovers every log"
            );
            return Ok(());
        }
        let marker = self
            .context
            .config()
            .data_dir
            .join(startup::CLEAN_SHUTDOWN_FILE);
        std::fs::write(&marker, b"").map_err(|e| LogError::io(&marker, e))?;
        tracing::info!("shutdown complete");
        Ok(())
    }

    /// Stops serving without flushing or closing logs, as a crash would (tests).
    pub fn abort(self) -> BrokerFuture<()> {
        Box::pin(self.aborted())
    }

    async fn aborted(mut self) {
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

/// The pool requests' bytes are taken from (`queued.max.request.bytes`), shown in the metrics.
fn request_pool(
    context: &BrokerContext,
    pool_bytes: Option<usize>,
) -> Arc<crate::memory_pool::RequestMemoryPool> {
    let pool = crate::memory_pool::RequestMemoryPool::new(
        pool_bytes,
        context.metrics.request_memory_used_bytes.clone(),
    );
    context
        .metrics
        .request_memory_capacity_bytes
        .set(pool.capacity_bytes().min(i64::MAX as usize) as i64);
    pool
}

/// Each listener's accept loop, and what it keeps fresh: OAuth validation keys, TLS files.
fn spawn_listeners(
    tasks: &mut JoinSet<()>,
    listeners: Vec<startup::Listener>,
    shared: &connection::Shared,
    shutdown_rx: &watch::Receiver<bool>,
) {
    for listener in listeners {
        if let Some(validator) = listener.sasl.as_ref().and_then(|sasl| sasl.oauth.clone()) {
            tasks.spawn(validator.refresh(shutdown_rx.clone()));
        }
        if let Some(tls) = &listener.tls {
            tasks.spawn(crate::security::tls::watch_files(
                Arc::clone(tls),
                shutdown_rx.clone(),
            ));
        }
        let security = connection::ListenerSecurity {
            name: Arc::from(listener.name.as_str()),
            tls: listener.tls,
            sasl: listener.sasl,
            principal_mapper: listener.principal_mapper,
        };
        tasks.spawn(connection::accept_loop(
            listener.socket,
            security,
            shared.clone(),
            shutdown_rx.clone(),
        ));
    }
}
