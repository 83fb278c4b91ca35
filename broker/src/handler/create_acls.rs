//! CreateAcls: each creation validated on its own (INVALID_REQUEST with Kafka's words), the
//! valid ones stored together; an ACL that exists already is no change. Without an authorizer
//! every creation is SECURITY_DISABLED, as Kafka answers.

use std::sync::Arc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::ResponseError;

use super::acl_requests::{
    binding_of, change, needs_cluster_permission, text, AclFields, NO_AUTHORIZER,
};
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
        false => Some((
            ResponseError::ClusterAuthorizationFailed,
            needs_cluster_permission(access, "CreateAcls", Operation::Alter),
        )),
        true => crate::acls::authorizer_settings(&context.config())
            .is_none()
            .then(|| (ResponseError::SecurityDisabled, NO_AUTHORIZER.to_string())),
    };
    if let Some((error, message)) = refusal {
        let results = request
            .creations
            .iter()
            .map(|_| failed(error, message.clone()))
            .collect();
        return CreateAclsResponse::default().with_results(results);
    }
    let outcomes: Vec<Result<_, String>> = request
        .creations
        .iter()
        .map(|creation| binding_of(&AclFields::of_creation(creation)))
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
