//! Raft between voters over the controller listener: the client side ([`QuorumNetwork`], one
//! [`QuorumClient`] per peer) and the server side ([`serve`]), which also takes brokers'
//! requests to the active controller.
//!
//! The listener is bounded as the client one is: at most `MAX_CONTROLLER_CONNECTIONS`
//! connections (accepting waits for a slot), frame bytes reserved in a pool of
//! `CONTROLLER_POOL_BYTES` before they are allocated, idle connections closed after
//! `CONTROLLER_IDLE`, and a started frame due within `CONTROLLER_FRAME_TIMEOUT`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Raft};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::controller_service::ControllerHandle;
use super::rpc::{
    read_request, write_frame, CallError, QuorumClient, QuorumRequest, QuorumResponse, RaftRpc,
    RequestBounds, MAX_FRAME_BYTES,
};
use super::security::ControllerSecurity;
use super::state_machine::AppliedImage;
use crate::memory_pool::RequestMemoryPool;

/// Connections the controller listener holds (voters and brokers keep one or two each); at the
/// bound, accepting waits until one closes.
const MAX_CONTROLLER_CONNECTIONS: usize = 1024;
/// Request bytes all controller connections may hold at once: four largest frames.
const CONTROLLER_POOL_BYTES: usize = 4 * MAX_FRAME_BYTES;
/// A controller connection silent this long is closed (its peer reconnects on next use).
const CONTROLLER_IDLE: Duration = Duration::from_secs(600);
/// A started frame must be complete within this.
const CONTROLLER_FRAME_TIMEOUT: Duration = Duration::from_secs(30);
use super::{MetadataTypes, NodeId};

/// Makes one client per peer; openraft asks again after a client reported a failure.
pub struct QuorumNetwork {
    pub security: Arc<ControllerSecurity>,
}

impl RaftNetworkFactory<MetadataTypes> for QuorumNetwork {
    type Network = QuorumPeer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> QuorumPeer {
        QuorumPeer {
            target,
            client: QuorumClient::new(node.addr.clone(), Arc::clone(&self.security)),
        }
    }
}

pub struct QuorumPeer {
    target: NodeId,
    client: QuorumClient,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

// The error type is openraft's, as its `RaftNetwork` methods return it.
#[allow(clippy::result_large_err)]
impl QuorumPeer {
    async fn call<E: std::error::Error>(
        &mut self,
        rpc: RaftRpc,
        option: &RPCOption,
    ) -> Result<QuorumResponse, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let request = QuorumRequest::Raft {
            to: self.target,
            rpc,
        };
        let response = self
            .client
            .call(&request, option.hard_ttl())
            .await
            .map_err(|error| match &error {
                CallError::Unreachable { .. } => RPCError::Unreachable(Unreachable::new(&error)),
                _ => RPCError::Network(NetworkError::new(&error)),
            })?;
        if let QuorumResponse::Refused(reason) = &response {
            let error = std::io::Error::other(reason.clone());
            return Err(RPCError::Unreachable(Unreachable::new(&error)));
        }
        Ok(response)
    }

    fn unexpected<T, E: std::error::Error>(
        &self,
        response: QuorumResponse,
    ) -> Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let error = std::io::Error::other(format!(
            "node {} answered out of turn: {response:?}",
            self.target
        ));
        Err(RPCError::Network(NetworkError::new(&error)))
    }

    fn remote<T, E: std::error::Error>(
        &self,
        result: Result<T, RaftError<NodeId, E>>,
    ) -> Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        result.map_err(|error| RPCError::RemoteError(RemoteError::new(self.target, error)))
    }
}

impl RaftNetwork<MetadataTypes> for QuorumPeer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<MetadataTypes>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        match self.call(RaftRpc::AppendEntries(rpc), &option).await? {
            QuorumResponse::AppendEntries(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<MetadataTypes>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        match self.call(RaftRpc::InstallSnapshot(rpc), &option).await? {
            QuorumResponse::InstallSnapshot(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        match self.call(RaftRpc::Vote(rpc), &option).await? {
            QuorumResponse::Vote(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }

    fn backoff(&self) -> openraft::network::Backoff {
        openraft::network::Backoff::new(std::iter::repeat(Duration::from_millis(200)))
    }
}

/// What the controller listener serves.
#[derive(Clone)]
pub struct QuorumServices {
    pub node_id: NodeId,
    pub raft: Raft<MetadataTypes>,
    pub controller: ControllerHandle,
    /// Who may speak here (TLS, the principal's CLUSTER_ACTION).
    pub security: Arc<ControllerSecurity>,
    /// The image as applied here: the ACLs requests are checked against.
    pub images: watch::Receiver<AppliedImage>,
}

/// Accepts connections on the controller listener until shutdown.
pub async fn serve(
    listener: TcpListener,
    services: QuorumServices,
    mut shutdown: watch::Receiver<bool>,
) {
    let services = Arc::new(services);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONTROLLER_CONNECTIONS));
    let pool = RequestMemoryPool::new(
        Some(CONTROLLER_POOL_BYTES),
        prometheus::IntGauge::new("controller_request_memory_used_bytes", "unregistered")
            .expect("valid metric"),
    );
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("never closed"),
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let services = Arc::clone(&services);
                    let (shutdown, pool) = (shutdown.clone(), Arc::clone(&pool));
                    tokio::spawn(async move {
                        serve_connection(stream, peer, services, &pool, shutdown).await;
                        drop(slot);
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "controller listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
    }
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    services: Arc<QuorumServices>,
    pool: &RequestMemoryPool,
    mut shutdown: watch::Receiver<bool>,
) {
    let (mut stream, principal) = match services.security.accept(tcp).await {
        Ok(accepted) => accepted,
        Err(reason) => {
            tracing::info!(%peer, %reason, "controller listener: connection refused");
            return;
        }
    };
    let bounds = RequestBounds {
        pool,
        idle: CONTROLLER_IDLE,
        body_timeout: CONTROLLER_FRAME_TIMEOUT,
    };
    loop {
        let request = tokio::select! {
            read = read_request::<QuorumRequest>(&mut stream, &bounds) => read,
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        let request = match request {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%peer, %error, "controller listener: bad frame; closing");
                let refused = QuorumResponse::Refused(error.to_string());
                let _ = write_frame(&mut stream, &refused).await;
                return;
            }
        };
        let image = services.images.borrow().image.clone();
        if let Some(reason) = services.security.refusal(&principal, peer, &image) {
            tracing::warn!(%peer, %principal, "controller listener: {reason}; closing");
            let _ = write_frame(&mut stream, &QuorumResponse::Refused(reason)).await;
            return;
        }
        let response = answer(&services, request).await;
        if let Err(error) = write_frame(&mut stream, &response).await {
            tracing::debug!(%peer, %error, "controller listener: reply failed");
            return;
        }
    }
}

async fn answer(services: &QuorumServices, request: QuorumRequest) -> QuorumResponse {
    match request {
        QuorumRequest::Raft { to, .. } if to != services.node_id => {
            tracing::warn!(
                to,
                node_id = services.node_id,
                "refusing a Raft request for another node: check controller.quorum.voters"
            );
            QuorumResponse::Refused(format!(
                "addressed to node {to}, but this is node {} (check controller.quorum.voters)",
                services.node_id
            ))
        }
        QuorumRequest::Raft { rpc, .. } => match rpc {
            RaftRpc::AppendEntries(rpc) => {
                QuorumResponse::AppendEntries(services.raft.append_entries(rpc).await)
            }
            RaftRpc::Vote(rpc) => QuorumResponse::Vote(services.raft.vote(rpc).await),
            RaftRpc::InstallSnapshot(rpc) => {
                QuorumResponse::InstallSnapshot(services.raft.install_snapshot(rpc).await)
            }
        },
        QuorumRequest::Controller(request) => {
            QuorumResponse::Controller(services.controller.submit(request).await)
        }
    }
}
