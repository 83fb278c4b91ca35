//! CreateAcls: each creation validated on its own (INVALID_REQUEST with Kafka's words), the
//! valid ones stored together; an ACL that exists already is no change. Without an authorizer
//! every creation is SECURITY_DISABLED, as Kafka answers.

use std::sync::Arc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::ResponseError;

use super::acl_requests::{binding_of, change, text, AclFields, CLUSTER_REFUSED, NO_AUTHORIZER};
use super::errors::error_for;
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: CreateAclsRequest,
) -> CreateAclsResponse {
    let failed = |error: ResponseError, message: String| {
        AclCreationResult::default()
            .with_error_code(error.code())
            .with_error_message(Some(text(&message)))
    };
    // Kafka asks for ALTER on the cluster before it looks for an authorizer.
    let refusal = match access.allows_cluster(Operation::Alter) {
        false => Some((ResponseError::ClusterAuthorizationFailed, CLUSTER_REFUSED)),
        true => crate::acls::authorizer_settings(&context.config())
            .is_none()
            .then_some((ResponseError::SecurityDisabled, NO_AUTHORIZER)),
    };
    if let Some((error, message)) = refusal {
        let results = request
            .creations
            .iter()
            .map(|_| failed(error, message.into()))
            .collect();
        return CreateAclsResponse::default().with_results(results);
    }
    let outcomes: Vec<Result<_, String>> = request
        .creations
        .iter()
        .map(|creation| {
            binding_of(&AclFields {
                resource_type: creation.resource_type,
                resource_name: Some(creation.resource_name.as_str()),
                pattern_type: creation.resource_pattern_type,
                principal: Some(creation.principal.as_str()),
                host: Some(creation.host.as_str()),
                operation: creation.operation,
                permission: creation.permission_type,
            })
        })
        .collect();
    let valid = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .cloned()
        .collect();
    let stored = change(context, valid, &[]).await;
    let results = outcomes
        .into_iter()
        .map(|outcome| match (outcome, &stored) {
            (Err(reason), _) => failed(ResponseError::InvalidRequest, reason),
            (Ok(_), Err(error)) => failed(error_for(error), error.to_string()),
            (Ok(_), Ok(_)) => AclCreationResult::default(),
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}
