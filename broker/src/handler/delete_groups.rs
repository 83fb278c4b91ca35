//! DeleteGroups: only empty groups; their committed offsets get tombstones.

use std::sync::Arc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;

pub fn handle(context: &Arc<BrokerContext>, request: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let results = request
        .groups_names
        .into_iter()
        .map(|group_id| {
            let error: Option<ResponseError> = match context.groups.coordinator_error(&group_id) {
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
