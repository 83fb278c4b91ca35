//! DescribeCluster: the live brokers and the active controller (a broker running alone is both).

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    _request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    if let Some(cluster) = &context.cluster {
        let image = cluster.image().image;
        let brokers = image
            .live_brokers()
            .map(|broker| {
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(broker.broker_id))
                    .with_host(StrBytes::from_string(broker.host.clone()))
                    .with_port(broker.port as i32)
                    .with_rack(broker.rack.clone().map(StrBytes::from_string))
            })
            .collect();
        return DescribeClusterResponse::default()
            .with_cluster_id(StrBytes::from_string(context.cluster_id()))
            .with_controller_id(BrokerId(cluster.active_controller().unwrap_or(-1)))
            .with_brokers(brokers);
    }
    DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(context.cluster_id()))
        .with_controller_id(BrokerId(context.node_id))
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(context.node_id))
            .with_host(StrBytes::from_string(context.advertised_host.clone()))
            .with_port(context.advertised_port as i32)])
}
