//! What one request may do: its principal and client host against the ACLs and the
//! authorizer's settings as they were when the request arrived (one snapshot per request, so
//! an ACL change takes effect from the next request and never halfway through one). Without
//! `authorizer.class.name` everything is allowed, as on Kafka.
//!
//! Handlers ask in Kafka's terms — [`Access::allows`] an operation on a resource,
//! [`Access::allows_cluster`], [`Access::allows_any`] (KIP-679) — and answer Kafka's
//! `*_AUTHORIZATION_FAILED` codes themselves; [`Access::authorized_operations`] is KIP-430's
//! bit field.

use crate::acls::AclSnapshot;
use crate::context::BrokerContext;
use crate::handler::RequestOrigin;
use crate::security::acl::{
    authorize, authorize_any, operations_bit_field, AuthorizerSettings, Operation, ResourceType,
    CLUSTER_NAME,
};
use crate::security::KafkaPrincipal;

/// The field's value when the client did not ask for authorized operations.
pub const NOT_REQUESTED: i32 = i32::MIN;

pub struct Access {
    principal: KafkaPrincipal,
    /// The client's IP address as ACL host entries name it.
    host: String,
    /// `None`: no authorizer configured.
    authorizer: Option<(AuthorizerSettings, AclSnapshot)>,
}

impl Access {
    pub fn of(context: &BrokerContext, origin: &RequestOrigin<'_>) -> Access {
        let authorizer = crate::acls::authorizer_settings(&context.config())
            .map(|settings| (settings, context.acl_snapshot()));
        Access {
            principal: origin.principal.clone(),
            host: origin.peer.ip().to_string(),
            authorizer,
        }
    }

    /// Everything allowed: requests the broker makes of itself, and tests.
    pub fn unrestricted() -> Access {
        Access {
            principal: KafkaPrincipal::anonymous(),
            host: String::new(),
            authorizer: None,
        }
    }

    pub fn principal(&self) -> &KafkaPrincipal {
        &self.principal
    }

    pub fn allows(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        match &self.authorizer {
            None => true,
            Some((settings, acls)) => authorize(
                acls.bindings(),
                settings,
                &self.principal,
                &self.host,
                operation,
                resource_type,
                name,
            ),
        }
    }

    pub fn allows_topic(&self, operation: Operation, topic: &str) -> bool {
        self.allows(operation, ResourceType::Topic, topic)
    }

    pub fn allows_group(&self, operation: Operation, group: &str) -> bool {
        self.allows(operation, ResourceType::Group, group)
    }

    pub fn allows_transactional_id(&self, operation: Operation, id: &str) -> bool {
        self.allows(operation, ResourceType::TransactionalId, id)
    }

    pub fn allows_cluster(&self, operation: Operation) -> bool {
        self.allows(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether the operation is allowed on some resource of the type (KIP-679).
    pub fn allows_any(&self, operation: Operation, resource_type: ResourceType) -> bool {
        match &self.authorizer {
            None => true,
            Some((settings, acls)) => authorize_any(
                acls.bindings(),
                settings,
                &self.principal,
                &self.host,
                operation,
                resource_type,
            ),
        }
    }

    /// KIP-430's bit field for a resource, or [`NOT_REQUESTED`].
    pub fn authorized_operations(
        &self,
        requested: bool,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        match requested {
            false => NOT_REQUESTED,
            true => operations_bit_field(resource_type, |operation| {
                self.allows(operation, resource_type, name)
            }),
        }
    }
}
