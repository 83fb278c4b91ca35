//! What a broker in cluster mode holds: its quorum member (a controller voter in combined mode,
//! or an observer — a broker-only node, `process.roles=broker`), its lifecycle (registration, heartbeats), and the way request handlers
//! reach the cluster — the applied image, and requests to the active controller that return
//! once this broker's own image holds their outcome.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Mutex};

use super::controller::Registration;
use super::image::BrokerEndpoint;
use super::lifecycle::{BrokerLifecycle, Membership};
use super::quorum::client::ControllerClient;
use super::quorum::node::{wait_applied, QuorumConfig, QuorumNode};
use super::quorum::rpc::{ControllerRequest, ControllerResponse};
use super::quorum::security::ControllerSecurity;
use super::quorum::state_machine::AppliedImage;
use super::quorum::{NodeId, QuorumDescription};
use crate::clock::Clock;
use crate::cluster::ControllerConfig;
use crate::config::{BrokerConfig, QuorumRole};
use crate::error::BrokerError;

/// How long a request to the controller (CreateTopics, …) may wait for an answer, then for this
/// broker's image to hold it.
pub const CONTROLLER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A quorum member's standing, for `weir cluster info` and DescribeCluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStatus {
    pub node_id: NodeId,
    pub leader: Option<NodeId>,
    pub term: u64,
    pub applied_index: u64,
    pub voters: BTreeMap<NodeId, String>,
}

pub struct ClusterMember {
    node_id: i32,
    voters: BTreeMap<NodeId, String>,
    raft: openraft::Raft<super::quorum::MetadataTypes>,
    images: watch::Receiver<AppliedImage>,
    membership: watch::Receiver<Membership>,
    controller: Mutex<ControllerClient>,
}

/// The running parts that stop with the broker.
pub struct ClusterParts {
    pub member: Arc<ClusterMember>,
    pub quorum: QuorumNode,
    pub lifecycle: BrokerLifecycle,
}

impl ClusterMember {
    /// Starts the quorum member on the controller listener and registers this broker: other
    /// brokers reach it at `host:port` (its inter-broker listener), clients at `listeners`.
    pub async fn start(
        config: &BrokerConfig,
        host: String,
        port: u16,
        listeners: Vec<BrokerEndpoint>,
        clock: Arc<dyn Clock>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<ClusterParts, BrokerError> {
        let voters = config.quorum_voters();
        let node_id = config.node_id();
        let role = config.quorum_role()?;
        let Some(controller_listen) = config.controller_address()? else {
            return Err(BrokerError::InvalidRequest(match role {
                QuorumRole::Voter => format!(
                    "node {node_id} is in controller.quorum.voters but has no --controller-listen"
                ),
                QuorumRole::Observer => format!(
                    "node {node_id} is a broker-only node (not in controller.quorum.voters) and \
                     needs --controller-listen: the active controller sends the metadata log there"
                ),
            }));
        };
        let listed_port = voters
            .get(&(node_id as NodeId))
            .and_then(|address| address.rsplit_once(':'))
            .and_then(|(_, port)| port.parse::<u16>().ok());
        if listed_port.is_some_and(|port| port != controller_listen.port()) {
            tracing::warn!(
                node_id,
                %controller_listen,
                voters = ?voters,
                "--controller-listen's port differs from this node's entry in controller.quorum.voters"
            );
        }
        let listener = TcpListener::bind(controller_listen).await.map_err(|e| {
            BrokerError::InvalidRequest(format!("cannot listen on {controller_listen}: {e}"))
        })?;
        let mut quorum_config = QuorumConfig::new(
            node_id as NodeId,
            voters.clone(),
            config.data_dir.join("meta").join("quorum"),
        );
        quorum_config.role = role;
        quorum_config.controller = ControllerConfig::from_config(config);
        let election_ms = config.election_timeout_ms();
        quorum_config.election_timeout_min_ms = election_ms;
        quorum_config.election_timeout_max_ms = election_ms * 2;
        quorum_config.heartbeat_interval_ms = (election_ms / 4).max(1);
        let security = ControllerSecurity::from_config(config)?;
        quorum_config.security = Arc::clone(&security);
        let quorum = QuorumNode::start(quorum_config, listener, clock, shutdown)
            .await
            .map_err(|e| BrokerError::InvalidRequest(format!("controller quorum: {e}")))?;
        let registration = Registration {
            broker_id: node_id,
            incarnation_id: uuid::Uuid::new_v4(),
            host,
            port,
            rack: None,
            listeners,
        };
        // Where voters reach an observer: its controller listener, under the advertised host
        // when it listens on every interface.
        let observer_address = (role == QuorumRole::Observer).then(|| {
            if controller_listen.ip().is_unspecified() {
                format!("{}:{}", registration.host, controller_listen.port())
            } else {
                controller_listen.to_string()
            }
        });
        let lifecycle = BrokerLifecycle::spawn(
            registration,
            observer_address,
            ControllerClient::new(&voters, &security),
            Duration::from_millis(config.broker_heartbeat_interval_ms()),
        );
        let member = Arc::new(ClusterMember {
            node_id,
            voters: voters.clone(),
            raft: quorum.raft().clone(),
            images: quorum.images(),
            membership: lifecycle.membership(),
            controller: Mutex::new(ControllerClient::new(&voters, &security)),
        });
        Ok(ClusterParts {
            member,
            quorum,
            lifecycle,
        })
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// The image as applied on this broker now.
    pub fn image(&self) -> AppliedImage {
        self.images.borrow().clone()
    }

    /// Changes whenever this broker applies metadata.
    pub fn watch_images(&self) -> watch::Receiver<AppliedImage> {
        self.images.clone()
    }

    /// Resolves once this broker is registered and its image holds everything up to the
    /// registration's answer — Kafka's broker serves requests only from then on, so a client
    /// never sees Metadata without this broker in it. False if the cluster stopped first.
    pub async fn caught_up(&self) -> bool {
        let mut membership = self.membership.clone();
        let index = match membership.wait_for(|m| m.broker_epoch.is_some()).await {
            Ok(registered) => registered.applied_index,
            Err(_) => return false,
        };
        let mut images = self.images.clone();
        let caught_up = images
            .wait_for(|image| image.applied_index >= index)
            .await
            .is_ok();
        caught_up
    }

    /// This broker's registration, as the controller last answered.
    pub fn membership(&self) -> watch::Receiver<Membership> {
        self.membership.clone()
    }

    /// The cluster's id from the metadata log, once the first controller wrote it.
    pub fn cluster_id(&self) -> Option<String> {
        self.images.borrow().image.cluster_id.clone()
    }

    /// The active controller's node id, if this broker knows one.
    pub fn active_controller(&self) -> Option<i32> {
        self.raft
            .metrics()
            .borrow()
            .current_leader
            .map(|id| id as i32)
    }

    pub fn quorum_status(&self) -> QuorumStatus {
        let metrics = self.raft.metrics().borrow().clone();
        QuorumStatus {
            node_id: self.node_id as NodeId,
            leader: metrics.current_leader,
            term: metrics.current_term,
            applied_index: self.images.borrow().applied_index,
            voters: self.voters.clone(),
        }
    }

    /// Sends `request` to the active controller; once accepted, waits until this broker's image
    /// holds its records, so what the caller reads next reflects it.
    pub async fn request(&self, request: ControllerRequest) -> Result<u64, BrokerError> {
        match self.call_controller(request).await? {
            ControllerResponse::Done { applied_index, .. } => {
                let mut images = self.images.clone();
                if !wait_applied(&mut images, applied_index, CONTROLLER_REQUEST_TIMEOUT).await {
                    return Err(BrokerError::ControllerUnavailable(format!(
                        "metadata index {applied_index} not applied here within {:?}",
                        CONTROLLER_REQUEST_TIMEOUT
                    )));
                }
                Ok(applied_index)
            }
            ControllerResponse::Rejected(error) => Err(BrokerError::Controller(error)),
            other => Err(BrokerError::ControllerUnavailable(format!("{other:?}"))),
        }
    }

    /// Whether this broker may take traffic (a readiness probe): registered with the
    /// controller, its metadata caught up to the registration, and not fenced. The reason
    /// when not.
    pub fn readiness(&self) -> Result<(), String> {
        let membership = *self.membership.borrow();
        if membership.broker_epoch.is_none() {
            return Err("not registered with an active controller yet".into());
        }
        let applied = self.images.borrow();
        if applied.applied_index < membership.applied_index {
            return Err(format!(
                "metadata applied to index {} of {}",
                applied.applied_index, membership.applied_index
            ));
        }
        match applied.image.brokers.get(&self.node_id) {
            Some(broker) if !broker.fenced => Ok(()),
            Some(_) => Err("fenced by the controller (no heartbeat answered yet)".into()),
            None => Err("not in the applied metadata yet".into()),
        }
    }

    /// The quorum as the active controller sees it (voters, observers, how far each got).
    pub async fn describe_quorum(&self) -> Result<QuorumDescription, BrokerError> {
        match self
            .call_controller(ControllerRequest::DescribeQuorum)
            .await?
        {
            ControllerResponse::Quorum(description) => Ok(description),
            other => Err(BrokerError::ControllerUnavailable(format!("{other:?}"))),
        }
    }

    /// The active controller's answer to `request` (none within the timeout: unavailable).
    async fn call_controller(
        &self,
        request: ControllerRequest,
    ) -> Result<ControllerResponse, BrokerError> {
        self.controller
            .lock()
            .await
            .call(request, CONTROLLER_REQUEST_TIMEOUT)
            .await
            .map_err(|e| BrokerError::ControllerUnavailable(e.to_string()))
    }

    /// Asks the controller to create a topic without waiting (auto-creation): the caller
    /// answers "not available yet" and the client retries.
    pub fn create_topic_soon(
        self: &Arc<Self>,
        name: &str,
        partitions: i32,
        replication_factor: Option<i32>,
        configs: std::collections::BTreeMap<String, String>,
    ) {
        let request = ControllerRequest::CreateTopic {
            name: name.to_string(),
            partitions,
            replication_factor,
            assignments: None,
            configs,
        };
        let cluster = Arc::clone(self);
        let topic = name.to_string();
        tokio::spawn(async move {
            match cluster.request(request).await {
                Ok(_)
                | Err(BrokerError::Controller(
                    crate::cluster::ControllerError::TopicAlreadyExists { .. },
                )) => {}
                Err(error) => tracing::warn!(topic, %error, "creating a topic failed"),
            }
        });
    }
}
