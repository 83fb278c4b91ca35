//! What every handler shares: who sent the request ([`RequestOrigin`]), what a handler
//! produces ([`HandlerOutput`]), and the partitions this broker leads ([`led_partition`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use kafka_protocol::messages::ResponseKind;

/// The partition `index` of `topic` if this broker leads it: a partition it holds no replica
/// of, or follows, is NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata).
pub fn led_partition(
    topic: &crate::topic::Topic,
    index: i32,
) -> Result<&Arc<crate::partition::Partition>, kafka_protocol::ResponseError> {
    use kafka_protocol::ResponseError;
    if !(0..topic.partition_count()).contains(&index) {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    match topic.partition(index) {
        Some(partition) if partition.is_leader() => Ok(partition),
        _ => Err(ResponseError::NotLeaderOrFollower),
    }
}

/// What a handler produces.
pub enum HandlerOutput {
    /// The response is ready.
    Ready(Box<ResponseKind>),
    /// The request's effects are applied; the response waits for something (e.g. an fsync)
    /// and is sent, in order, when ready. Later requests on the connection proceed meanwhile.
    Deferred(BoxFuture<'static, ResponseKind>),
    /// No response is sent (Produce with acks=0).
    None,
    /// The request cannot be answered; the connection is closed, as Kafka does.
    Close,
}

/// Who sent a request: the header's client id, the connection's peer and the listener it
/// came in on (Metadata answers that listener's addresses).
pub struct RequestOrigin<'a> {
    pub client_id: &'a str,
    pub peer: std::net::SocketAddr,
    pub listener: &'a str,
    /// Who the connection authenticated as (`User:ANONYMOUS` without authentication).
    pub principal: &'a crate::security::KafkaPrincipal,
    /// How long the connection is muted after this request (a client quota's throttle).
    pub mute: &'a ConnectionMute,
}

/// A connection's mute: a request over a client quota sets it, and the connection reads nothing
/// more from its client until that time has passed (Kafka's muting, KIP-219).
#[derive(Default)]
pub struct ConnectionMute(std::sync::atomic::AtomicU64);

impl ConnectionMute {
    /// Takes the mute set since the last call (0: none).
    pub fn take_ms(&self) -> u64 {
        self.0.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

impl RequestOrigin<'_> {
    /// Mutes the connection for `ms` after this request (the longest asked for wins).
    pub fn mute_for(&self, ms: u64) {
        self.mute
            .0
            .fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The client host as Kafka shows it in DescribeGroups ("/127.0.0.1").
    pub fn client_host(&self) -> String {
        format!("/{}", self.peer.ip())
    }
}
