//! WriteTxnMarkers: writes transaction markers to partitions. Kafka's transaction coordinator
//! sends it to partition leaders; Weir's coordinator writes its markers itself, so this serves
//! the operator's abort of a hanging transaction (KIP-664, `weir txn abort`), as in Kafka.

use std::sync::Arc;

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::ResponseError;

use crate::handler::errors::log_error;
use crate::log::control::MarkerKind;
use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let markers = request
        .markers
        .into_iter()
        .map(|marker| {
            let kind = if marker.transaction_result {
                MarkerKind::Commit
            } else {
                MarkerKind::Abort
            };
            let topics = marker
                .topics
                .into_iter()
                .map(|requested| {
                    let topic = context.topics.get(requested.name.as_str());
                    let partitions = requested
                        .partition_indexes
                        .iter()
                        .map(|&index| {
                            let error = match topic.as_ref().and_then(|t| t.partition(index)) {
                                None => Some(ResponseError::UnknownTopicOrPartition),
                                Some(partition) => partition
                                    .append_marker(
                                        marker.producer_id.0,
                                        marker.producer_epoch,
                                        kind,
                                        marker.coordinator_epoch,
                                    )
                                    .err()
                                    .map(|error| log_error(&error)),
                            };
                            WritableTxnMarkerPartitionResult::default()
                                .with_partition_index(index)
                                .with_error_code(error.map_or(0, |e| e.code()))
                        })
                        .collect();
                    WritableTxnMarkerTopicResult::default()
                        .with_name(requested.name)
                        .with_partitions(partitions)
                })
                .collect();
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(topics)
        })
        .collect();
    WriteTxnMarkersResponse::default().with_markers(markers)
}
