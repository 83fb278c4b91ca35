//! DescribeCluster: this broker as the whole cluster and its controller.

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    _request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(context.cluster_id.clone()))
        .with_controller_id(BrokerId(context.node_id))
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(context.node_id))
            .with_host(StrBytes::from_string(context.advertised_host.clone()))
            .with_port(context.advertised_port as i32)])
}
