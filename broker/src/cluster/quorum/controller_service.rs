//! The active controller: on the Raft leader, one task takes brokers' requests in turn, decides
//! each with the [`Controller`] on the image every earlier decision built, commits the records
//! through Raft, and answers once they are committed. A periodic tick fences brokers whose
//! heartbeats stopped. On other voters the same task answers `NotController` with the leader.
//!
//! A node that becomes leader first waits until everything committed before its term is
//! applied, then starts a fresh [`Controller`] from that image (fresh heartbeat sessions, as a
//! KRaft controller that takes over).

use std::sync::Arc;
use std::time::Duration;

use openraft::error::{ClientWriteError, ForwardToLeader, RaftError};
use openraft::{BasicNode, ChangeMembers, Raft, ServerState};
use tokio::sync::{mpsc, oneshot, watch};

use super::rpc::{ControllerRequest, ControllerResponse};
use super::state_machine::AppliedImage;
use super::{MetadataBatch, MetadataTypes, NodeId, QuorumDescription, ReplicaProgress};
use crate::clock::Clock;
use crate::cluster::controller::{Controller, ControllerConfig, ControllerError};
use crate::cluster::record::MetadataRecord;

/// Requests waiting for the controller task; more are refused as unavailable.
const MAX_QUEUED_REQUESTS: usize = 1024;
/// How often the active controller looks for expired broker sessions.
const TICK_INTERVAL: Duration = Duration::from_millis(250);

type Pending = (ControllerRequest, oneshot::Sender<ControllerResponse>);

/// Submits requests to this node's controller task.
#[derive(Clone)]
pub struct ControllerHandle {
    requests: mpsc::Sender<Pending>,
}

impl ControllerHandle {
    pub async fn submit(&self, request: ControllerRequest) -> ControllerResponse {
        let (reply, answer) = oneshot::channel();
        if self.requests.try_send((request, reply)).is_err() {
            return ControllerResponse::Unavailable("the controller's queue is full".into());
        }
        answer.await.unwrap_or_else(|_| {
            ControllerResponse::Unavailable("the controller is shutting down".into())
        })
    }
}

/// Starts the controller task of node `node_id`.
pub fn spawn(
    node_id: NodeId,
    raft: Raft<MetadataTypes>,
    images: watch::Receiver<AppliedImage>,
    config: ControllerConfig,
    clock: Arc<dyn Clock>,
    shutdown: watch::Receiver<bool>,
) -> (ControllerHandle, tokio::task::JoinHandle<()>) {
    let (requests, queue) = mpsc::channel(MAX_QUEUED_REQUESTS);
    let service = ControllerService {
        node_id,
        raft,
        images,
        config,
        clock,
        active: None,
    };
    let task = tokio::spawn(service.run(queue, shutdown));
    (ControllerHandle { requests }, task)
}

struct ControllerService {
    node_id: NodeId,
    raft: Raft<MetadataTypes>,
    images: watch::Receiver<AppliedImage>,
    config: ControllerConfig,
    clock: Arc<dyn Clock>,
    /// The controller while this node leads, with the Raft term it leads in.
    active: Option<(u64, Controller)>,
}

impl ControllerService {
    async fn run(
        mut self,
        mut queue: mpsc::Receiver<Pending>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(TICK_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                pending = queue.recv() => {
                    let Some((request, reply)) = pending else { return };
                    let response = self.handle(request).await;
                    let _ = reply.send(response);
                }
                _ = tick.tick() => self.tick().await,
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            }
        }
    }

    /// The controller, if this node leads: started (after catching up) on a new term.
    async fn controller(&mut self) -> Result<&mut Controller, ControllerResponse> {
        let metrics = self.raft.metrics().borrow().clone();
        let leading =
            metrics.state == ServerState::Leader && metrics.current_leader == Some(self.node_id);
        if !leading {
            self.active = None;
            return Err(self.not_controller());
        }
        let term = metrics.current_term;
        if self.active.as_ref().map(|(t, _)| *t) != Some(term) {
            self.active = None;
            // Everything committed before this term is applied before deciding anything.
            if let Err(error) = self.raft.ensure_linearizable().await {
                return Err(ControllerResponse::Unavailable(format!(
                    "not yet caught up as leader: {error}"
                )));
            }
            let image = self.images.borrow().image.as_ref().clone();
            tracing::info!(
                node_id = self.node_id,
                term,
                brokers = image.brokers.len(),
                topics = image.topics.len(),
                "active controller"
            );
            let controller = Controller::new(self.config.clone(), image, self.clock.now_ms());
            let naming = controller.cluster_id_record();
            self.active = Some((term, controller));
            // The first controller names the cluster before deciding anything else.
            if let Some(record) = naming {
                if let failed @ (ControllerResponse::NotController { .. }
                | ControllerResponse::Unavailable(_)) = self.commit(vec![record]).await
                {
                    return Err(failed);
                }
            }
        }
        self.active
            .as_mut()
            .map(|(_, controller)| controller)
            .ok_or_else(|| ControllerResponse::Unavailable("no longer leading".into()))
    }

    fn not_controller(&self) -> ControllerResponse {
        let metrics = self.raft.metrics().borrow().clone();
        let leader = metrics.current_leader.and_then(|id| {
            let node = metrics.membership_config.membership().get_node(&id)?;
            Some((id, node.addr.clone()))
        });
        ControllerResponse::NotController { leader }
    }

    async fn handle(&mut self, request: ControllerRequest) -> ControllerResponse {
        match request {
            ControllerRequest::AddObserver { node_id, address } => {
                return self.add_observer(node_id, address).await
            }
            ControllerRequest::DescribeQuorum => return self.describe_quorum().await,
            _ => {}
        }
        let now_ms = self.clock.now_ms();
        let decided = match self.controller().await {
            Ok(controller) => decide(controller, request, now_ms),
            Err(response) => return response,
        };
        match decided {
            Ok(records) => self.commit(records).await,
            Err(error) => ControllerResponse::Rejected(error),
        }
    }

    /// Puts `node_id` into the Raft membership as a learner at `address` (or moves it there):
    /// from then on the leader — this one or a later one — replicates the metadata log to it.
    /// Answers at once when the membership already has it there.
    async fn add_observer(&mut self, node_id: NodeId, address: String) -> ControllerResponse {
        if let Err(response) = self.controller().await {
            return response;
        }
        let metrics = self.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership();
        if membership.voter_ids().any(|voter| voter == node_id) {
            return ControllerResponse::Rejected(ControllerError::VoterCannotObserve { node_id });
        }
        let change = match membership.get_node(&node_id) {
            Some(node) if node.addr == address => {
                return ControllerResponse::Done {
                    applied_index: metrics.membership_config.log_id().map_or(0, |id| id.index),
                    broker_epoch: None,
                };
            }
            // A learner's address may be replaced: it does not vote, so no quorum can split.
            Some(_) => ChangeMembers::SetNodes([(node_id, BasicNode::new(&address))].into()),
            None => ChangeMembers::AddNodes([(node_id, BasicNode::new(&address))].into()),
        };
        match self.raft.change_membership(change, true).await {
            Ok(written) => {
                tracing::info!(node_id, %address, "observer added to the metadata quorum");
                ControllerResponse::Done {
                    applied_index: written.log_id.index,
                    broker_epoch: None,
                }
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                self.active = None;
                forwarded(forward)
            }
            Err(error) => ControllerResponse::Unavailable(format!("adding observer: {error}")),
        }
    }

    /// The quorum from this leader's replication progress.
    async fn describe_quorum(&mut self) -> ControllerResponse {
        if let Err(response) = self.controller().await {
            return response;
        }
        let metrics = self.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership();
        let own_end = metrics.last_log_index.map(|index| index + 1);
        let progress = |node_id: NodeId| {
            let log_end_offset = if node_id == self.node_id {
                own_end
            } else {
                let replication = metrics.replication.as_ref();
                let matched = replication.and_then(|r| r.get(&node_id).copied().flatten());
                matched.map(|log_id| log_id.index + 1)
            };
            let address = membership
                .get_node(&node_id)
                .map(|node| node.addr.clone())
                .unwrap_or_default();
            ReplicaProgress {
                node_id,
                address,
                log_end_offset,
            }
        };
        ControllerResponse::Quorum(QuorumDescription {
            leader_id: self.node_id,
            leader_epoch: metrics.current_term,
            high_watermark: metrics.last_applied.map_or(0, |log_id| log_id.index + 1),
            voters: membership.voter_ids().map(progress).collect(),
            observers: membership.learner_ids().map(progress).collect(),
        })
    }

    async fn tick(&mut self) {
        let now_ms = self.clock.now_ms();
        let records = match self.controller().await {
            Ok(controller) => controller.tick(now_ms),
            Err(_) => return,
        };
        if !records.is_empty() {
            if let ControllerResponse::Unavailable(reason) = self.commit(records).await {
                tracing::warn!(%reason, "fencing expired brokers failed");
            }
        }
    }

    /// Appends the records through Raft; once committed the controller applies them too.
    async fn commit(&mut self, records: Vec<MetadataRecord>) -> ControllerResponse {
        let broker_epoch = records.iter().find_map(|record| match record {
            MetadataRecord::RegisterBroker { broker_epoch, .. } => Some(*broker_epoch),
            _ => None,
        });
        if records.is_empty() {
            let applied_index = self.images.borrow().applied_index;
            return ControllerResponse::Done {
                applied_index,
                broker_epoch,
            };
        }
        let batch = MetadataBatch {
            records: records.clone(),
        };
        match self.raft.client_write(batch).await {
            Ok(written) => {
                if let Some((_, controller)) = self.active.as_mut() {
                    controller.apply(&records);
                }
                ControllerResponse::Done {
                    applied_index: written.log_id.index,
                    broker_epoch,
                }
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                self.active = None;
                forwarded(forward)
            }
            Err(error) => {
                self.active = None;
                ControllerResponse::Unavailable(error.to_string())
            }
        }
    }
}

/// Raft's "not the leader" as the answer that sends the caller there.
fn forwarded(forward: ForwardToLeader<NodeId, BasicNode>) -> ControllerResponse {
    let leader = forward
        .leader_id
        .zip(forward.leader_node.map(|node| node.addr));
    ControllerResponse::NotController { leader }
}

fn decide(
    controller: &mut Controller,
    request: ControllerRequest,
    now_ms: i64,
) -> Result<Vec<MetadataRecord>, ControllerError> {
    match request {
        ControllerRequest::RegisterBroker(registration) => {
            controller.register_broker(registration, now_ms)
        }
        ControllerRequest::Heartbeat {
            broker_id,
            broker_epoch,
        } => controller.heartbeat(broker_id, broker_epoch, now_ms),
        ControllerRequest::ControlledShutdown {
            broker_id,
            broker_epoch,
        } => controller.controlled_shutdown(broker_id, broker_epoch),
        ControllerRequest::CreateTopic {
            name,
            partitions,
            replication_factor,
            assignments,
            configs,
        } => controller.create_topic(&name, partitions, replication_factor, assignments, configs),
        ControllerRequest::AlterPartition {
            leader_id,
            leader_broker_epoch,
            topic_id,
            partition,
            partition_epoch,
            isr,
        } => controller.alter_partition(
            leader_id,
            leader_broker_epoch,
            topic_id,
            partition,
            partition_epoch,
            isr,
        ),
        ControllerRequest::DeleteTopic { name } => controller.delete_topic(&name),
        ControllerRequest::CreatePartitions {
            name,
            count,
            assignments,
        } => controller.create_partitions(&name, count, assignments),
        ControllerRequest::Reassign {
            name,
            partition,
            target,
        } => controller.reassign(&name, partition, target),
        ControllerRequest::AlterTopicConfigs { name, configs } => {
            controller.alter_topic_configs(&name, configs)
        }
        ControllerRequest::AlterBrokerConfigs { resource, configs } => {
            Ok(controller.alter_broker_configs(resource, configs))
        }
        ControllerRequest::ChangeAcls { created, removed } => Ok(created
            .into_iter()
            .map(|binding| MetadataRecord::AclCreated { binding })
            .chain(
                removed
                    .into_iter()
                    .map(|binding| MetadataRecord::AclRemoved { binding }),
            )
            .collect()),
        ControllerRequest::AlterScramCredentials { changes } => Ok(changes
            .into_iter()
            .map(
                |(user, mechanism, credential)| MetadataRecord::ScramCredential {
                    user,
                    mechanism,
                    credential,
                },
            )
            .collect()),
        // Answered by the service (`add_observer`, `describe_quorum`): no records.
        ControllerRequest::AddObserver { .. } | ControllerRequest::DescribeQuorum => Ok(Vec::new()),
        ControllerRequest::AllocateProducerIds {
            broker_id,
            broker_epoch,
        } => controller.allocate_producer_ids(broker_id, broker_epoch),
    }
}
