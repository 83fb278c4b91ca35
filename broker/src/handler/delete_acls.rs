//! DeleteAcls: each filter's matching ACLs removed and listed (an invalid filter is
//! INVALID_REQUEST and removes nothing). Without an authorizer: SECURITY_DISABLED.

use std::sync::Arc;

use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};
use kafka_protocol::ResponseError;

use super::acl_requests::{
    change, filter_of, needs_cluster_permission, text, AclFields, NO_AUTHORIZER,
};
use super::errors::error_for;
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DeleteAclsRequest,
) -> DeleteAclsResponse {
    let failed = |error: ResponseError, message: &str| {
        DeleteAclsFilterResult::default()
            .with_error_code(error.code())
            .with_error_message(Some(text(message)))
    };
    // Kafka asks for ALTER on the cluster before it looks for an authorizer.
    let refusal = match access.allows_cluster(Operation::Alter) {
        false => Some((
            ResponseError::ClusterAuthorizationFailed,
            needs_cluster_permission(access, "DeleteAcls", Operation::Alter),
        )),
        true => crate::acls::authorizer_settings(&context.config())
            .is_none()
            .then(|| (ResponseError::SecurityDisabled, NO_AUTHORIZER.to_string())),
    };
    if let Some((error, message)) = refusal {
        let results = request
            .filters
            .iter()
            .map(|_| failed(error, &message))
            .collect();
        return DeleteAclsResponse::default().with_filter_results(results);
    }
    let filters: Vec<Result<_, String>> = request
        .filters
        .iter()
        .map(|filter| filter_of(&AclFields::of_delete_filter(filter)))
        .collect();
    let valid: Vec<_> = filters
        .iter()
        .filter_map(|f| f.as_ref().ok())
        .cloned()
        .collect();
    let removed = change(context, Vec::new(), &valid).await;
    let results = filters
        .iter()
        .map(|filter| match (filter, &removed) {
            (Err(reason), _) => failed(ResponseError::InvalidRequest, reason),
            (Ok(_), Err(error)) => failed(error_for(error), &error.to_string()),
            (Ok(filter), Ok(removed)) => {
                let matching = removed
                    .iter()
                    .filter(|binding| filter.matches(binding))
                    .map(|binding| {
                        DeleteAclsMatchingAcl::default()
                            .with_resource_type(binding.resource_type.code())
                            .with_resource_name(text(&binding.resource_name))
                            .with_pattern_type(binding.pattern_type.code())
                            .with_principal(text(&binding.principal))
                            .with_host(text(&binding.host))
                            .with_operation(binding.operation.code())
                            .with_permission_type(binding.permission.code())
                    })
                    .collect();
                DeleteAclsFilterResult::default().with_matching_acls(matching)
            }
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}
