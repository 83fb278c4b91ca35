//! DeleteGroups: only empty groups; their committed offsets get tombstones. Each group needs
//! DELETE (else GROUP_AUTHORIZATION_FAILED, as Kafka).

use std::sync::Arc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let results = request
        .groups_names
        .into_iter()
        .map(|group_id| {
            let refused = !access.allows_group(Operation::Delete, &group_id);
            let error: Option<ResponseError> = match context.groups.coordinator_error(&group_id) {
                _ if refused => Some(ResponseError::GroupAuthorizationFailed),
                Some(error) => Some(error.into()),
                None => context
                    .groups
                    .delete_group(&context.topics, &group_id)
                    .err()
                    .map(Into::into),
            };
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(super::errors::code(error))
        })
        .collect();
    DeleteGroupsResponse::default().with_results(results)
}
