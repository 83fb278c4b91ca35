//! SyncGroup: followers park until the leader sends the assignments.

use std::sync::Arc;

use futures::FutureExt;
use kafka_protocol::messages::{ResponseKind, SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;
use crate::handler::HandlerOutput;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: SyncGroupRequest,
) -> HandlerOutput {
    let context = Arc::clone(context);
    let assignments = request
        .assignments
        .iter()
        .map(|a| (a.member_id.to_string(), a.assignment.clone()))
        .collect();
    HandlerOutput::Deferred(
        async move {
            let reply = context
                .groups
                .sync(
                    &context.topics,
                    &request.group_id,
                    &request.member_id,
                    request.group_instance_id.as_deref(),
                    request.generation_id,
                    assignments,
                )
                .await;
            let mut response = SyncGroupResponse::default()
                .with_error_code(super::errors::code(reply.error))
                .with_assignment(reply.assignment);
            if version >= 5 {
                response.protocol_type = reply.protocol_type.map(StrBytes::from_string);
                response.protocol_name = reply.protocol_name.map(StrBytes::from_string);
            }
            ResponseKind::SyncGroup(response)
        }
        .boxed(),
    )
}
