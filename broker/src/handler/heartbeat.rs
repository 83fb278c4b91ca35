//! Heartbeat: keeps a member's session alive; tells it when to rejoin.

use std::sync::Arc;

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::context::BrokerContext;

pub fn handle(context: &Arc<BrokerContext>, request: HeartbeatRequest) -> HeartbeatResponse {
    let error = context.groups.heartbeat(
        &request.group_id,
        &request.member_id,
        request.group_instance_id.as_deref(),
        request.generation_id,
    );
    HeartbeatResponse::default().with_error_code(super::errors::code(error))
}
