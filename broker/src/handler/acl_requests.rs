//! What CreateAcls, DescribeAcls and DeleteAcls share: the request's codes made into bindings
//! and filters (unknown codes are INVALID_REQUEST, with Kafka's words), bindings made into
//! response fields, and the change itself — alone in the broker's store, in a cluster through
//! the controller.

use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;

use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::security::acl::{
    AclBinding, AclFilter, Operation, PatternFilter, PatternType, Permission, ResourceType,
};

/// The request fields of one binding or filter, as codes and strings.
pub struct AclFields<'a> {
    pub resource_type: i8,
    pub resource_name: Option<&'a str>,
    pub pattern_type: i8,
    pub principal: Option<&'a str>,
    pub host: Option<&'a str>,
    pub operation: i8,
    pub permission: i8,
}

/// A binding to create, or Kafka's reason it is invalid.
pub fn binding_of(fields: &AclFields<'_>) -> Result<AclBinding, String> {
    let resource_type = ResourceType::from_code(fields.resource_type)
        .ok_or_else(|| format!("Invalid resourceType {}", fields.resource_type))?;
    let pattern_type = PatternType::from_code(fields.pattern_type)
        .ok_or_else(|| format!("Invalid patternType {}", fields.pattern_type))?;
    let operation = Operation::from_code(fields.operation)
        .ok_or_else(|| format!("Invalid operation {}", fields.operation))?;
    let permission = Permission::from_code(fields.permission)
        .ok_or_else(|| format!("Invalid permissionType {}", fields.permission))?;
    let binding = AclBinding {
        resource_type,
        resource_name: fields.resource_name.unwrap_or("").to_string(),
        pattern_type,
        principal: fields.principal.unwrap_or("").to_string(),
        host: fields.host.unwrap_or("").to_string(),
        operation,
        permission,
    };
    crate::acls::check_new_binding(&binding)?;
    Ok(binding)
}

/// A filter (ANY codes match everything), or why it is invalid.
pub fn filter_of(fields: &AclFields<'_>) -> Result<AclFilter, String> {
    let any = |code: i8, any_code: i8| code == any_code;
    let resource_type = match fields.resource_type {
        code if any(code, ResourceType::ANY_CODE) => None,
        code => Some(
            ResourceType::from_code(code).ok_or_else(|| format!("Invalid resourceType {code}"))?,
        ),
    };
    let pattern = PatternFilter::from_code(fields.pattern_type)
        .ok_or_else(|| format!("Invalid patternType {}", fields.pattern_type))?;
    let operation = match fields.operation {
        code if any(code, Operation::ANY_CODE) => None,
        code => {
            Some(Operation::from_code(code).ok_or_else(|| format!("Invalid operation {code}"))?)
        }
    };
    let permission = match fields.permission {
        code if any(code, Permission::ANY_CODE) => None,
        code => Some(
            Permission::from_code(code).ok_or_else(|| format!("Invalid permissionType {code}"))?,
        ),
    };
    Ok(AclFilter {
        resource_type,
        resource_name: fields.resource_name.map(str::to_string),
        pattern,
        principal: fields.principal.map(str::to_string),
        host: fields.host.map(str::to_string),
        operation,
        permission,
    })
}

/// Kafka's words when no authorizer is configured.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";
/// Kafka's default message of CLUSTER_AUTHORIZATION_FAILED.
pub const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

pub fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// Adds `created` and removes `removed` (bindings a filter matched here).
pub async fn change(
    context: &Arc<BrokerContext>,
    created: Vec<AclBinding>,
    filters: &[AclFilter],
) -> Result<Vec<AclBinding>, BrokerError> {
    let Some(cluster) = &context.cluster else {
        let removed = context.acls.change(&created, filters)?;
        tracing::info!(
            created = created.len(),
            removed = removed.len(),
            "ACLs changed"
        );
        return Ok(removed);
    };
    let current = cluster.image().image.acls.clone();
    let removed: Vec<AclBinding> = current
        .iter()
        .filter(|binding| filters.iter().any(|filter| filter.matches(binding)))
        .cloned()
        .collect();
    if !created.is_empty() || !removed.is_empty() {
        cluster
            .request(ControllerRequest::ChangeAcls {
                created,
                removed: removed.clone(),
            })
            .await?;
    }
    Ok(removed)
}
