//! Requests from this broker to the others for the transaction machinery: markers to partition
//! leaders (WriteTxnMarkers), and partition leaders asking a transaction's coordinator whether
//! a write belongs to an open transaction (AddPartitionsToTxn v4+, KIP-890).
//!
//! One connection per broker, reused; requests to one broker go one at a time. A failed
//! exchange drops the connection (the next call reconnects) and is answered with a retriable
//! error code, as a lost response is in Kafka.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::protocol::Request;
use kafka_protocol::ResponseError;
use weir_wire::ProtocolClient;

use crate::cluster::member::ClusterMember;
use crate::cluster::MetadataImage;
use crate::security::BrokerIdentity;

/// Connecting to another broker gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type Connection = Arc<tokio::sync::Mutex<Option<ProtocolClient>>>;

pub struct BrokerChannel {
    node_id: i32,
    cluster: Option<Arc<ClusterMember>>,
    /// How this broker connects to the others' inter-broker listener.
    identity: BrokerIdentity,
    connections: Mutex<HashMap<i32, Connection>>,
}

impl BrokerChannel {
    /// `cluster`: `None` when the broker runs alone (every partition and coordinator is here).
    pub fn new(
        node_id: i32,
        cluster: Option<Arc<ClusterMember>>,
        identity: BrokerIdentity,
    ) -> Self {
        BrokerChannel {
            node_id,
            cluster,
            identity,
            connections: Mutex::new(HashMap::new()),
        }
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    pub fn in_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// The cluster's metadata as this broker knows it (`None` alone).
    pub fn image(&self) -> Option<Arc<MetadataImage>> {
        self.cluster.as_ref().map(|cluster| cluster.image().image)
    }

    /// One request to broker `broker_id`, answered within `timeout`. Failures come back as the
    /// retriable error a client would see: BROKER_NOT_AVAILABLE (unknown or unreachable) or
    /// NETWORK_EXCEPTION (the exchange failed).
    pub async fn call<R: Request>(
        &self,
        broker_id: i32,
        version: i16,
        request: &R,
        timeout: Duration,
    ) -> Result<R::Response, ResponseError> {
        let connection = self.connection(broker_id);
        let mut connection = connection.lock().await;
        if connection.is_none() {
            *connection = Some(self.connect(broker_id).await?);
        }
        let client = connection.as_mut().expect("connected above");
        match client.call_within(version, request, timeout).await {
            Ok(response) => Ok(response),
            Err(error) => {
                tracing::debug!(broker_id, api = ?R::KEY, %error, "inter-broker request failed; reconnecting next time");
                *connection = None;
                Err(ResponseError::NetworkException)
            }
        }
    }

    fn connection(&self, broker_id: i32) -> Connection {
        let mut connections = self
            .connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(connections.entry(broker_id).or_default())
    }

    async fn connect(&self, broker_id: i32) -> Result<ProtocolClient, ResponseError> {
        let image = self.image().ok_or(ResponseError::BrokerNotAvailable)?;
        let broker = image
            .brokers
            .get(&broker_id)
            .ok_or(ResponseError::BrokerNotAvailable)?;
        let address = format!("{}:{}", broker.host, broker.port);
        let client_id = format!("weir-broker-{}", self.node_id);
        let security = self.identity.client_security().map_err(|error| {
            tracing::warn!(broker_id, %error, "cannot secure a connection to another broker");
            ResponseError::BrokerNotAvailable
        })?;
        ProtocolClient::connect_secured(&address, &client_id, CONNECT_TIMEOUT, &security)
            .await
            .map_err(|error| {
                tracing::debug!(broker_id, %error, "cannot reach another broker");
                ResponseError::BrokerNotAvailable
            })
    }
}
