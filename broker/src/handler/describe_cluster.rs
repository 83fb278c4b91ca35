//! DescribeCluster: the live brokers and the active controller (a broker running alone is both).

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;
use crate::handler::access::{Access, NOT_REQUESTED};
use crate::security::acl::{Operation, ResourceType, CLUSTER_NAME};

/// The brokers' addresses on `listener`, the one the request came in on.
pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    listener: &str,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    // KIP-430, as Kafka: none without DESCRIBE on the cluster.
    let operations = match request.include_cluster_authorized_operations {
        false => NOT_REQUESTED,
        true if !access.allows_cluster(Operation::Describe) => 0,
        true => access.authorized_operations(true, ResourceType::Cluster, CLUSTER_NAME),
    };
    if let Some(cluster) = &context.cluster {
        let image = cluster.image().image;
        let brokers = image
            .live_brokers()
            .filter_map(|broker| {
                let (host, port) = broker.endpoint(listener)?;
                Some(
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(broker.broker_id))
                        .with_host(StrBytes::from_string(host.to_string()))
                        .with_port(port as i32)
                        .with_rack(broker.rack.clone().map(StrBytes::from_string)),
                )
            })
            .collect();
        return DescribeClusterResponse::default()
            .with_cluster_authorized_operations(operations)
            .with_cluster_id(StrBytes::from_string(context.cluster_id()))
            .with_controller_id(BrokerId(cluster.active_controller().unwrap_or(-1)))
            .with_brokers(brokers);
    }
    let (host, port) = context.advertised(listener);
    DescribeClusterResponse::default()
        .with_cluster_authorized_operations(operations)
        .with_cluster_id(StrBytes::from_string(context.cluster_id()))
        .with_controller_id(BrokerId(context.node_id))
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(context.node_id))
            .with_host(StrBytes::from_string(host))
            .with_port(port as i32)])
}
