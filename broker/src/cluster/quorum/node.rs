//! One member of the controller quorum: Raft over the durable log and state machine, the
//! controller listener, and the controller task.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{InitializeError, RaftError};
use openraft::{BasicNode, Raft, SnapshotPolicy};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::controller_service::{self, ControllerHandle};
use super::log_store::QuorumLogStore;
use super::network::{self, QuorumNetwork, QuorumServices};
use super::security::ControllerSecurity;
use super::state_machine::{AppliedImage, MetadataStateMachine};
use super::{MetadataTypes, NodeId};
use crate::clock::Clock;
use crate::cluster::controller::ControllerConfig;
use crate::config::QuorumRole;

#[derive(Debug, Clone)]
pub struct QuorumConfig {
    pub node_id: NodeId,
    /// `controller.quorum.voters`: node id → controller listener address.
    pub voters: BTreeMap<NodeId, String>,
    /// A voter, or an observer (a Raft learner the active controller adds when asked).
    pub role: QuorumRole,
    /// Where the Raft log, vote and snapshots live.
    pub dir: PathBuf,
    pub controller: ControllerConfig,
    /// Raft's election timeout range and leader heartbeat (KRaft: `controller.quorum.*`).
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// Entries between snapshots of the image (each lets Raft purge the log before it).
    pub entries_between_snapshots: u64,
    /// The controller listener's TLS and who may speak on it.
    pub security: Arc<ControllerSecurity>,
}

impl QuorumConfig {
    /// KRaft-like timing: elections after 1–2 s without a leader, leader heartbeats every 250 ms.
    pub fn new(node_id: NodeId, voters: BTreeMap<NodeId, String>, dir: PathBuf) -> Self {
        QuorumConfig {
            node_id,
            voters,
            role: QuorumRole::Voter,
            dir,
            controller: ControllerConfig::default(),
            election_timeout_min_ms: 1_000,
            election_timeout_max_ms: 2_000,
            heartbeat_interval_ms: 250,
            entries_between_snapshots: 2_000,
            security: ControllerSecurity::plaintext(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QuorumError {
    #[error("node {node_id} is not among controller.quorum.voters {voters:?}")]
    NotAVoter {
        node_id: NodeId,
        voters: Vec<NodeId>,
    },
    #[error("node {node_id} is an observer but is listed in controller.quorum.voters")]
    ListedObserver { node_id: NodeId },
    #[error("quorum storage under {dir}: {source}")]
    Storage {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen for controllers: {0}")]
    Listen(std::io::Error),
    #[error("raft: {0}")]
    Raft(String),
}

pub struct QuorumNode {
    node_id: NodeId,
    raft: Raft<MetadataTypes>,
    images: watch::Receiver<AppliedImage>,
    controller: ControllerHandle,
    listen_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl QuorumNode {
    /// Starts the member on a bound controller listener; a pristine voter proposes the
    /// configured voters as the first membership (every voter does, with the same set). An
    /// observer waits for the active controller to add it (see `ControllerRequest::AddObserver`).
    pub async fn start(
        config: QuorumConfig,
        listener: TcpListener,
        clock: Arc<dyn Clock>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<QuorumNode, QuorumError> {
        let listed = config.voters.contains_key(&config.node_id);
        match config.role {
            QuorumRole::Voter if !listed => {
                return Err(QuorumError::NotAVoter {
                    node_id: config.node_id,
                    voters: config.voters.keys().copied().collect(),
                })
            }
            QuorumRole::Observer if listed => {
                return Err(QuorumError::ListedObserver {
                    node_id: config.node_id,
                })
            }
            _ => {}
        }
        let storage_error = |source| QuorumError::Storage {
            dir: config.dir.clone(),
            source,
        };
        let log_store = QuorumLogStore::open(&config.dir).map_err(storage_error)?;
        let state_machine = MetadataStateMachine::open(&config.dir).map_err(storage_error)?;
        let images = state_machine.subscribe();
        let raft_config = openraft::Config {
            cluster_name: "weir-metadata".into(),
            election_timeout_min: config.election_timeout_min_ms,
            election_timeout_max: config.election_timeout_max_ms,
            heartbeat_interval: config.heartbeat_interval_ms,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(config.entries_between_snapshots),
            max_in_snapshot_log_to_keep: config.entries_between_snapshots,
            ..Default::default()
        }
        .validate()
        .map_err(|e| QuorumError::Raft(e.to_string()))?;
        let raft = Raft::new(
            config.node_id,
            Arc::new(raft_config),
            QuorumNetwork {
                security: Arc::clone(&config.security),
            },
            log_store,
            state_machine,
        )
        .await
        .map_err(|e| QuorumError::Raft(e.to_string()))?;
        let listen_addr = listener.local_addr().map_err(QuorumError::Listen)?;
        let (controller, controller_task) = controller_service::spawn(
            config.node_id,
            raft.clone(),
            images.clone(),
            config.controller.clone(),
            clock,
            shutdown.clone(),
        );
        let services = QuorumServices {
            node_id: config.node_id,
            raft: raft.clone(),
            controller: controller.clone(),
            security: Arc::clone(&config.security),
            images: images.clone(),
        };
        let reload_task = config.security.spawn_reload(shutdown.clone());
        let server_task = tokio::spawn(network::serve(listener, services, shutdown));
        if config.role == QuorumRole::Voter {
            initialize_if_pristine(&raft, &config.voters).await?;
        }
        tracing::info!(
            node_id = config.node_id,
            role = ?config.role,
            controller_listen = %listen_addr,
            voters = ?config.voters,
            "controller quorum member started"
        );
        Ok(QuorumNode {
            node_id: config.node_id,
            raft,
            images,
            controller,
            listen_addr,
            tasks: [controller_task, server_task]
                .into_iter()
                .chain(reload_task)
                .collect(),
        })
    }

    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    pub fn raft(&self) -> &Raft<MetadataTypes> {
        &self.raft
    }

    /// The applied image, changing as entries are applied.
    pub fn images(&self) -> watch::Receiver<AppliedImage> {
        self.images.clone()
    }

    pub fn controller(&self) -> &ControllerHandle {
        &self.controller
    }

    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// The current leader (active controller), if known.
    pub fn leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    /// Stops Raft and the tasks (the shutdown signal must have been sent for the listener).
    pub async fn shutdown(self) {
        if let Err(error) = self.raft.shutdown().await {
            tracing::warn!(%error, "raft shutdown");
        }
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
    }
}

async fn initialize_if_pristine(
    raft: &Raft<MetadataTypes>,
    voters: &BTreeMap<NodeId, String>,
) -> Result<(), QuorumError> {
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|e| QuorumError::Raft(e.to_string()))?;
    if initialized {
        return Ok(());
    }
    let members: BTreeMap<NodeId, BasicNode> = voters
        .iter()
        .map(|(id, address)| (*id, BasicNode::new(address)))
        .collect();
    match raft.initialize(members).await {
        Ok(()) => Ok(()),
        Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(()),
        Err(error) => Err(QuorumError::Raft(error.to_string())),
    }
}

/// Waits until `images` has applied at least `index` (or `timeout` passes).
pub async fn wait_applied(
    images: &mut watch::Receiver<AppliedImage>,
    index: u64,
    timeout: Duration,
) -> bool {
    tokio::time::timeout(timeout, images.wait_for(|i| i.applied_index >= index))
        .await
        .is_ok_and(|r| r.is_ok())
}
