//! The controller listener's protocol: length-prefixed JSON frames, one request and then its
//! response at a time per connection. Raft's own RPCs (between voters) and the brokers' requests
//! to the active controller share it.

use std::io;
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::security::ControllerSecurity;
use super::{MetadataTypes, NodeId, QuorumDescription};
use crate::cluster::controller::{ControllerError, Registration};
use crate::memory_pool::RequestMemoryPool;

/// A controller connection's byte stream: TCP, or TLS over TCP.
pub(crate) trait QuorumStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> QuorumStream for T {}

/// A frame longer than this is refused (snapshots travel in chunks well below it).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Serialize, Deserialize)]
pub enum QuorumRequest {
    /// A Raft RPC for voter `to`: a member refuses one addressed to another node id, so a
    /// voters list naming the wrong address cannot make a node count its own vote twice.
    Raft {
        to: NodeId,
        rpc: RaftRpc,
    },
    Controller(ControllerRequest),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RaftRpc {
    AppendEntries(AppendEntriesRequest<MetadataTypes>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<MetadataTypes>),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum QuorumResponse {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    Controller(ControllerResponse),
    /// The request could not be decoded or is not served here.
    Refused(String),
}

/// A broker's request to the active controller (Kafka's BrokerRegistration, BrokerHeartbeat,
/// ControlledShutdown, CreateTopics and AlterPartition, as the controller sees them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ControllerRequest {
    RegisterBroker(Registration),
    Heartbeat {
        broker_id: i32,
        broker_epoch: i64,
    },
    ControlledShutdown {
        broker_id: i32,
        broker_epoch: i64,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: Option<i32>,
        assignments: Option<Vec<Vec<i32>>>,
        configs: std::collections::BTreeMap<String, String>,
    },
    AlterPartition {
        leader_id: i32,
        leader_broker_epoch: i64,
        topic_id: uuid::Uuid,
        partition: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
    },
    DeleteTopic {
        name: String,
    },
    CreatePartitions {
        name: String,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
    },
    /// One partition's reassignment (`target` `None`: cancel it).
    Reassign {
        name: String,
        partition: i32,
        target: Option<Vec<i32>>,
    },
    AlterTopicConfigs {
        name: String,
        configs: std::collections::BTreeMap<String, String>,
    },
    /// A BROKER resource's whole set of dynamic configs ("" the cluster default).
    AlterBrokerConfigs {
        resource: String,
        configs: std::collections::BTreeMap<String, String>,
    },
    /// SCRAM credentials to store (`Some`) or remove, checked by the broker that asks.
    AlterScramCredentials {
        changes: Vec<(
            String,
            crate::security::scram::ScramMechanism,
            Option<crate::security::scram::ScramCredential>,
        )>,
    },
    /// ACLs to add and to remove (the ones a DeleteAcls filter matched at the asking broker).
    ChangeAcls {
        created: Vec<crate::security::acl::AclBinding>,
        removed: Vec<crate::security::acl::AclBinding>,
    },
    /// Makes node `node_id` an observer of the metadata log (a Raft learner), reached at
    /// `address` (its controller listener); a broker-only node asks before registering.
    AddObserver {
        node_id: NodeId,
        address: String,
    },
    /// How the quorum stands, as the active controller sees it.
    DescribeQuorum,
    /// A block of producer ids for the broker (its latest block in the image once applied).
    AllocateProducerIds {
        broker_id: i32,
        broker_epoch: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControllerResponse {
    /// Done; its records (if any) are in the metadata log up to `applied_index`. A registration
    /// also carries the broker epoch it was given.
    Done {
        applied_index: u64,
        broker_epoch: Option<i64>,
    },
    /// The answer to `DescribeQuorum`.
    Quorum(QuorumDescription),
    /// Refused for a reason the request can fix (or must give up on).
    Rejected(ControllerError),
    /// This node is not the active controller; the leader, if known, as (node id, address).
    NotController { leader: Option<(NodeId, String)> },
    /// The controller could not commit (lost leadership, quorum unreachable): retry.
    Unavailable(String),
}

pub async fn write_frame<T: Serialize>(
    stream: &mut (impl AsyncWrite + Unpin),
    message: &T,
) -> io::Result<()> {
    let payload = serde_json::to_vec(message).map_err(io::Error::other)?;
    if payload.len() > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("frame of {} bytes over {MAX_FRAME_BYTES}", payload.len()),
        ));
    }
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    stream.write_all(&frame).await?;
    stream.flush().await
}

/// Reads one frame; `Ok(None)` when the peer closed the connection between frames.
pub async fn read_frame<T: DeserializeOwned>(
    stream: &mut (impl AsyncRead + Unpin),
) -> io::Result<Option<T>> {
    let Some(length) = read_length(stream).await? else {
        return Ok(None);
    };
    decode(&read_payload(stream, length).await?)
}

/// How the controller listener reads a request: a connection silent for `idle` is closed, a
/// frame's bytes are reserved in `pool` before they are allocated, and a started frame must
/// arrive within `body_timeout`.
pub(crate) struct RequestBounds<'a> {
    pub(crate) pool: &'a RequestMemoryPool,
    pub(crate) idle: Duration,
    pub(crate) body_timeout: Duration,
}

/// Reads one request frame within `bounds`; `Ok(None)` when the peer closed between frames.
pub(crate) async fn read_request<T: DeserializeOwned>(
    stream: &mut (impl AsyncRead + Unpin),
    bounds: &RequestBounds<'_>,
) -> io::Result<Option<T>> {
    let timed_out = |what: &str, after: Duration| {
        io::Error::new(io::ErrorKind::TimedOut, format!("{what} for {after:?}"))
    };
    let length = tokio::time::timeout(bounds.idle, read_length(stream))
        .await
        .map_err(|_| timed_out("idle", bounds.idle))??;
    let Some(length) = length else {
        return Ok(None);
    };
    let _reserved = bounds.pool.reserve(length).await;
    let payload = tokio::time::timeout(bounds.body_timeout, read_payload(stream, length))
        .await
        .map_err(|_| timed_out("a frame incomplete", bounds.body_timeout))??;
    decode(&payload)
}

async fn read_length(stream: &mut (impl AsyncRead + Unpin)) -> io::Result<Option<usize>> {
    let mut length = [0u8; 4];
    match stream.read_exact(&mut length).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {length} bytes over {MAX_FRAME_BYTES}"),
        ));
    }
    Ok(Some(length))
}

async fn read_payload(stream: &mut (impl AsyncRead + Unpin), length: usize) -> io::Result<Vec<u8>> {
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).await?;
    Ok(payload)
}

fn decode<T: DeserializeOwned>(payload: &[u8]) -> io::Result<Option<T>> {
    serde_json::from_slice(payload)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Why a call failed: no connection could be made, or the exchange broke off.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("cannot reach {address}: {source}")]
    Unreachable { address: String, source: io::Error },
    #[error("call to {address} failed: {source}")]
    Broken { address: String, source: io::Error },
    #[error("no answer from {address} within {timeout:?}")]
    TimedOut { address: String, timeout: Duration },
}

/// One connection to a quorum member, made on first use and remade after any failure.
pub struct QuorumClient {
    address: String,
    security: Arc<ControllerSecurity>,
    stream: Option<Box<dyn QuorumStream>>,
}

impl QuorumClient {
    /// A client of the controller listener at `address`, connecting as `security` says.
    pub fn new(address: String, security: Arc<ControllerSecurity>) -> Self {
        QuorumClient {
            address,
            security,
            stream: None,
        }
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `request` and waits for its response, for at most `timeout` in all.
    pub async fn call(
        &mut self,
        request: &QuorumRequest,
        timeout: Duration,
    ) -> Result<QuorumResponse, CallError> {
        match tokio::time::timeout(timeout, self.exchange(request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => {
                self.stream = None;
                Err(error)
            }
            Err(_) => {
                self.stream = None;
                Err(CallError::TimedOut {
                    address: self.address.clone(),
                    timeout,
                })
            }
        }
    }

    async fn exchange(&mut self, request: &QuorumRequest) -> Result<QuorumResponse, CallError> {
        let broken = |address: &str, source| CallError::Broken {
            address: address.to_string(),
            source,
        };
        if self.stream.is_none() {
            let stream = self
                .security
                .connect(&self.address)
                .await
                .map_err(|source| CallError::Unreachable {
                    address: self.address.clone(),
                    source,
                })?;
            self.stream = Some(stream);
        }
        let address = self.address.clone();
        let Some(stream) = self.stream.as_mut() else {
            return Err(broken(&address, io::ErrorKind::NotConnected.into()));
        };
        write_frame(stream, request)
            .await
            .map_err(|e| broken(&address, e))?;
        match read_frame(stream).await {
            Ok(Some(response)) => Ok(response),
            Ok(None) => Err(broken(&address, io::ErrorKind::UnexpectedEof.into())),
            Err(e) => Err(broken(&address, e)),
        }
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;
    use tokio::net::TcpStream;

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    fn pool() -> (std::sync::Arc<RequestMemoryPool>, prometheus::IntGauge) {
        let used = prometheus::IntGauge::new("used", "used").unwrap();
        (
            RequestMemoryPool::new(Some(MAX_FRAME_BYTES), used.clone()),
            used,
        )
    }

    #[tokio::test]
    async fn the_controller_listener_bounds_silence_stalled_frames_and_sizes() {
        let (pool, used) = pool();
        let bounds = RequestBounds {
            pool: &pool,
            idle: Duration::from_millis(100),
            body_timeout: Duration::from_millis(100),
        };
        // Silent: closed after the idle time.
        let (_client, mut server) = pair().await;
        let silent = read_request::<QuorumRequest>(&mut server, &bounds).await;
        assert_eq!(silent.unwrap_err().kind(), io::ErrorKind::TimedOut);
        // A frame that never completes: closed after the body timeout, its bytes given back.
        let (mut client, mut server) = pair().await;
        client.write_all(&1000u32.to_be_bytes()).await.unwrap();
        client.write_all(&[b'{'; 10]).await.unwrap();
        let stalled = read_request::<QuorumRequest>(&mut server, &bounds).await;
        assert_eq!(stalled.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            used.get(),
            0,
            "the stalled frame's pool bytes were not given back"
        );
        // Over the largest frame: refused before anything is allocated.
        let (mut client, mut server) = pair().await;
        client.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        let oversized = read_request::<QuorumRequest>(&mut server, &bounds).await;
        assert_eq!(oversized.unwrap_err().kind(), io::ErrorKind::InvalidData);
        // Hostile JSON is an error, not a panic.
        let (mut client, mut server) = pair().await;
        let garbage = b"{\"Raft\":{\"to\":1,\"rpc\":[[[[[[[[[[";
        client
            .write_all(&(garbage.len() as u32).to_be_bytes())
            .await
            .unwrap();
        client.write_all(garbage).await.unwrap();
        let hostile = read_request::<QuorumRequest>(&mut server, &bounds).await;
        assert_eq!(hostile.unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
