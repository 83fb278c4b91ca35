//! What every request handler shares: the broker's configuration, its topics and
//! coordinators, the cluster membership and replication machinery, metrics and clock. Built by
//! `server` at start-up; handlers receive it as `&Arc<BrokerContext>`.

use std::sync::Arc;

use crate::clock::Clock;
use crate::cluster::member::ClusterMember;
use crate::config::{BrokerConfig, LiveConfig};
use crate::group::GroupCoordinator;
use crate::metrics::Metrics;
use crate::producer::ProducerIdManager;
use crate::replication::Replication;
use crate::topic::TopicRegistry;
use crate::transaction::{BrokerChannel, TransactionCoordinator, TxnServices};

/// Everything request handlers share.
pub struct BrokerContext {
    /// The configuration, with the dynamic broker configs in effect ([`Self::config`]).
    pub live_config: LiveConfig,
    /// The dynamic broker configs on disk: alone the only copy, in a cluster a copy of the
    /// metadata image's.
    pub broker_configs: crate::broker_configs::BrokerConfigStore,
    /// SCRAM users of a broker running alone (in a cluster, the metadata image has them).
    pub user_credentials: crate::user_credentials::UserCredentialStore,
    /// ACLs of a broker running alone (in a cluster, the metadata image has them).
    pub acls: crate::acls::AclStore,
    /// Client quotas set (a broker running alone keeps them).
    pub quotas: crate::quota::QuotaStore,
    /// The rates client quotas are enforced on.
    pub quota_sensors: crate::quota::QuotaSensors,
    pub topics: TopicRegistry,
    /// Incremental fetch sessions (KIP-227).
    pub fetch_sessions: crate::fetch_session::FetchSessionCache,
    pub groups: GroupCoordinator,
    pub producer_ids: Arc<ProducerIdManager>,
    pub transactions: TransactionCoordinator,
    /// Requests to the other brokers of the cluster (transaction markers and verification).
    pub brokers: BrokerChannel,
    pub clock: Arc<dyn Clock>,
    pub metrics: Metrics,
    pub cluster_id: String,
    pub node_id: i32,
    /// The inter-broker listener's advertised host and port.
    pub advertised_host: String,
    pub advertised_port: u16,
    /// Every client listener's advertised address: Metadata answers the one a request came in on.
    pub listeners: Vec<crate::cluster::BrokerEndpoint>,
    /// Cluster mode (`controller.quorum.voters` set): the metadata image and the way to the
    /// active controller. `None` when the broker runs alone.
    pub cluster: Option<Arc<ClusterMember>>,
    /// Cluster mode: the fetchers of the partitions this broker follows, and the way ISR
    /// changes reach the controller.
    pub replication: Option<Replication>,
}

impl BrokerContext {
    /// The configuration as it is now (a snapshot: a dynamic change installs a new one).
    pub fn config(&self) -> Arc<BrokerConfig> {
        self.live_config.current()
    }

    /// Where clients of `listener` reach this broker.
    pub fn advertised(&self, listener: &str) -> (String, u16) {
        self.listeners
            .iter()
            .find(|endpoint| endpoint.name == listener)
            .map(|endpoint| (endpoint.host.clone(), endpoint.port))
            .unwrap_or_else(|| (self.advertised_host.clone(), self.advertised_port))
    }

    /// The cluster id clients see: the metadata log's in cluster mode (this broker's own until
    /// the first controller wrote one), else the one stored in the data directory.
    pub fn cluster_id(&self) -> String {
        self.cluster
            .as_ref()
            .and_then(|cluster| cluster.cluster_id())
            .unwrap_or_else(|| self.cluster_id.clone())
    }

    /// A SCRAM user's stored credential: from the metadata image in a cluster, else this
    /// broker's own store.
    pub fn scram_credential(
        &self,
        user: &str,
        mechanism: crate::security::scram::ScramMechanism,
    ) -> Option<crate::security::scram::ScramCredential> {
        match &self.cluster {
            Some(cluster) => cluster
                .image()
                .image
                .scram_credentials
                .get(user)?
                .get(&mechanism)
                .cloned(),
            None => self.user_credentials.get(user, mechanism),
        }
    }

    /// Every ACL as it is now: the metadata image's in a cluster, else this broker's own.
    pub fn acl_snapshot(&self) -> crate::acls::AclSnapshot {
        match &self.cluster {
            Some(cluster) => crate::acls::AclSnapshot::Image(cluster.image().image),
            None => crate::acls::AclSnapshot::Local(self.acls.snapshot()),
        }
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
