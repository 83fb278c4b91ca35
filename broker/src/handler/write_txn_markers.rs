//! WriteTxnMarkers: transaction markers for partitions this broker leads. Transaction
//! coordinators on other brokers send it to end their transactions here (each marker held by
//! the in-sync replicas before it is answered, as Kafka appends them with acks=all); operators
//! use it to abort a hanging transaction (KIP-664, `weir txn abort`).

use std::sync::Arc;

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use crate::context::BrokerContext;
use crate::transaction::markers::{write_local, TxnMarker};

pub async fn handle(
    context: &Arc<BrokerContext>,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let replicated = context.cluster.is_some();
    let mut results = Vec::with_capacity(request.markers.len());
    for requested in request.markers {
        let marker = TxnMarker {
            producer_id: requested.producer_id.0,
            producer_epoch: requested.producer_epoch,
            commit: requested.transaction_result,
            coordinator_epoch: requested.coordinator_epoch,
        };
        let mut topics = Vec::with_capacity(requested.topics.len());
        for topic in requested.topics {
            // The partitions' markers wait for their replicas side by side.
            let name = topic.name.to_string();
            let name = &name;
            let writes = topic.partition_indexes.iter().map(|&index| async move {
                let tp = (name.clone(), index);
                let written =
                    write_local(&context.topics, &context.groups, marker, &tp, replicated).await;
                WritableTxnMarkerPartitionResult::default()
                    .with_partition_index(index)
                    .with_error_code(super::errors::code(written.err()))
            });
            let partitions = futures::future::join_all(writes).await;
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(topic.name)
                    .with_partitions(partitions),
            );
        }
        results.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(requested.producer_id)
                .with_topics(topics),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(results)
}
