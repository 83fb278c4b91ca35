//! Answers for Kafka APIs this broker does not implement (yet): the API's own response with
//! UNSUPPORTED_VERSION, for the APIs whose responses carry a top-level error code. Clients only
//! send these when they ignore ApiVersions; anything else closes the connection, as Kafka does
//! with requests it cannot parse.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

/// The error response for an unimplemented API, if one can be built.
pub fn response(version: i16, request: &RequestKind) -> Option<ResponseKind> {
    top_level_error(version, request, ResponseError::UnsupportedVersion)
}

/// `request`'s response carrying only `error`, for the APIs whose responses have a top-level
/// error code (also NOT_COORDINATOR answers, `handler::group_routing`).
pub fn top_level_error(
    version: i16,
    request: &RequestKind,
    error: ResponseError,
) -> Option<ResponseKind> {
    let code = error.code();
    let response = match request {
        RequestKind::FindCoordinator(request) if version >= 4 => {
            let coordinators = request
                .coordinator_keys
                .iter()
                .map(|key| {
                    Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(-1))
                        .with_port(-1)
                        .with_error_code(code)
                })
                .collect();
            ResponseKind::FindCoordinator(
                FindCoordinatorResponse::default().with_coordinators(coordinators),
            )
        }
        RequestKind::FindCoordinator(_) => ResponseKind::FindCoordinator(
            FindCoordinatorResponse::default()
                .with_error_code(code)
                .with_node_id(BrokerId(-1))
                .with_port(-1),
        ),
        RequestKind::JoinGroup(_) => ResponseKind::JoinGroup(
            JoinGroupResponse::default()
                .with_error_code(code)
                .with_generation_id(-1),
        ),
        RequestKind::SyncGroup(_) => {
            ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(code))
        }
        RequestKind::Heartbeat(_) => {
            ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(code))
        }
        RequestKind::LeaveGroup(_) => {
            ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(code))
        }
        RequestKind::ListGroups(_) => {
            ResponseKind::ListGroups(ListGroupsResponse::default().with_error_code(code))
        }
        RequestKind::InitProducerId(_) => ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(code)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ),
        RequestKind::AddOffsetsToTxn(_) => {
            ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(code))
        }
        RequestKind::EndTxn(_) => {
            ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(code))
        }
        RequestKind::ConsumerGroupHeartbeat(_) => ResponseKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatResponse::default().with_error_code(code),
        ),
        _ => return None,
    };
    Some(response)
}
