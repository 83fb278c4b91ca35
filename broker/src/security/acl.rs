//! ACLs with Kafka's semantics (the StandardAuthorizer's): bindings of a resource pattern
//! (topic, group, cluster, transactional id; literal, `*`, or prefixed) to an entry (principal,
//! host, operation, allow/deny), filters over them (DescribeAcls, DeleteAcls), and the decision
//! for one request:
//!
//! 1. a super user (`super.users`) may do anything;
//! 2. the ACLs whose pattern matches the resource (its literal name, the literal `*`, or a
//!    prefix of the name) and whose principal (`User:*` is everyone) and host (`*`) match;
//! 3. a matching DENY for the operation (or ALL) denies; else a matching ALLOW allows, where
//!    ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and ALTER_CONFIGS allows
//!    DESCRIBE_CONFIGS;
//! 4. when no ACL at all has a pattern matching the resource, `allow.everyone.if.no.acl.found`
//!    decides (false by default); otherwise it is denied.

use serde::{Deserialize, Serialize};

use super::KafkaPrincipal;
use crate::config::BrokerConfig;

/// The resource types of the ACL APIs (Kafka's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
    DelegationToken,
    User,
}

impl ResourceType {
    pub const ANY_CODE: i8 = 1;

    pub fn from_code(code: i8) -> Option<ResourceType> {
        Some(match code {
            2 => ResourceType::Topic,
            3 => ResourceType::Group,
            4 => ResourceType::Cluster,
            5 => ResourceType::TransactionalId,
            6 => ResourceType::DelegationToken,
            7 => ResourceType::User,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
            ResourceType::DelegationToken => 6,
            ResourceType::User => 7,
        }
    }
}

/// The one name a CLUSTER resource has.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name matching every resource of its type.
pub const WILDCARD: &str = "*";

/// How a binding's resource name matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PatternType {
    Literal,
    Prefixed,
}

impl PatternType {
    pub fn from_code(code: i8) -> Option<PatternType> {
        match code {
            3 => Some(PatternType::Literal),
            4 => Some(PatternType::Prefixed),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        match self {
            PatternType::Literal => 3,
            PatternType::Prefixed => 4,
        }
    }
}

/// A filter's pattern type: ANY (1) and MATCH (2) besides the two a binding can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternFilter {
    Any,
    Match,
    Exactly(PatternType),
}

impl PatternFilter {
    pub fn from_code(code: i8) -> Option<PatternFilter> {
        match code {
            1 => Some(PatternFilter::Any),
            2 => Some(PatternFilter::Match),
            _ => PatternType::from_code(code).map(PatternFilter::Exactly),
        }
    }
}

/// The operations of the ACL APIs (Kafka's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operation {
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    CreateTokens,
    DescribeTokens,
    TwoPhaseCommit,
}

impl Operation {
    pub const ANY_CODE: i8 = 1;

    pub fn from_code(code: i8) -> Option<Operation> {
        Some(match code {
            2 => Operation::All,
            3 => Operation::Read,
            4 => Operation::Write,
            5 => Operation::Create,
            6 => Operation::Delete,
            7 => Operation::Alter,
            8 => Operation::Describe,
            9 => Operation::ClusterAction,
            10 => Operation::DescribeConfigs,
            11 => Operation::AlterConfigs,
            12 => Operation::IdempotentWrite,
            13 => Operation::CreateTokens,
            14 => Operation::DescribeTokens,
            15 => Operation::TwoPhaseCommit,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            Operation::All => 2,
            Operation::Read => 3,
            Operation::Write => 4,
            Operation::Create => 5,
            Operation::Delete => 6,
            Operation::Alter => 7,
            Operation::Describe => 8,
            Operation::ClusterAction => 9,
            Operation::DescribeConfigs => 10,
            Operation::AlterConfigs => 11,
            Operation::IdempotentWrite => 12,
            Operation::CreateTokens => 13,
            Operation::DescribeTokens => 14,
            Operation::TwoPhaseCommit => 15,
        }
    }

    /// Every operation a binding can name, in code order.
    pub const ALL_OPERATIONS: [Operation; 14] = [
        Operation::All,
        Operation::Read,
        Operation::Write,
        Operation::Create,
        Operation::Delete,
        Operation::Alter,
        Operation::Describe,
        Operation::ClusterAction,
        Operation::DescribeConfigs,
        Operation::AlterConfigs,
        Operation::IdempotentWrite,
        Operation::CreateTokens,
        Operation::DescribeTokens,
        Operation::TwoPhaseCommit,
    ];

    /// Kafka's name (`AclOperation`): `READ`, `IDEMPOTENT_WRITE`…
    pub fn name(self) -> &'static str {
        match self {
            Operation::All => "ALL",
            Operation::Read => "READ",
            Operation::Write => "WRITE",
            Operation::Create => "CREATE",
            Operation::Delete => "DELETE",
            Operation::Alter => "ALTER",
            Operation::Describe => "DESCRIBE",
            Operation::ClusterAction => "CLUSTER_ACTION",
            Operation::DescribeConfigs => "DESCRIBE_CONFIGS",
            Operation::AlterConfigs => "ALTER_CONFIGS",
            Operation::IdempotentWrite => "IDEMPOTENT_WRITE",
            Operation::CreateTokens => "CREATE_TOKENS",
            Operation::DescribeTokens => "DESCRIBE_TOKENS",
            Operation::TwoPhaseCommit => "TWO_PHASE_COMMIT",
        }
    }

    /// The operation named `READ`, `Read`, `IdempotentWrite` or `idempotent-write` (as
    /// kafka-acls.sh takes them: case and `_`/`-` ignored).
    pub fn from_name(name: &str) -> Option<Operation> {
        let folded = |text: &str| -> String {
            text.chars()
                .filter(|c| *c != '_' && *c != '-')
                .map(|c| c.to_ascii_lowercase())
                .collect()
        };
        let wanted = folded(name.trim());
        Self::ALL_OPERATIONS
            .into_iter()
            .find(|operation| folded(operation.name()) == wanted)
    }

    /// Whether an ALLOW of `self` allows `requested` (ALL everything; READ, WRITE, DELETE and
    /// ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
    pub fn allows(self, requested: Operation) -> bool {
        self == requested
            || self == Operation::All
            || (requested == Operation::Describe
                && matches!(
                    self,
                    Operation::Read | Operation::Write | Operation::Delete | Operation::Alter
                ))
            || (requested == Operation::DescribeConfigs && self == Operation::AlterConfigs)
    }

    /// Whether a DENY of `self` denies `requested` (no implication: only itself and ALL).
    pub fn denies(self, requested: Operation) -> bool {
        self == requested || self == Operation::All
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Permission {
    Deny,
    Allow,
}

impl Permission {
    pub const ANY_CODE: i8 = 1;

    pub fn from_code(code: i8) -> Option<Permission> {
        match code {
            2 => Some(Permission::Deny),
            3 => Some(Permission::Allow),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        match self {
            Permission::Deny => 2,
            Permission::Allow => 3,
        }
    }
}

/// One ACL: who may (or may not) do what to which resources, from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    /// `User:alice`, or `User:*` for everyone.
    pub principal: String,
    /// A client's IP address, or `*`.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclBinding {
    /// Whether the binding's pattern covers a resource (step 2 of the decision).
    fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => {
                    self.resource_name == name || self.resource_name == WILDCARD
                }
                PatternType::Prefixed => name.starts_with(&self.resource_name),
            }
    }

    fn applies_to(&self, principal: &str, host: &str) -> bool {
        (self.principal == principal || self.principal == "User:*")
            && (self.host == host || self.host == WILDCARD)
    }
}

/// A DescribeAcls / DeleteAcls filter: `None` fields match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// `None`: ANY.
    pub resource_type: Option<ResourceType>,
    pub resource_name: Option<String>,
    pub pattern: PatternFilter,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Option<Operation>,
    pub permission: Option<Permission>,
}

impl AclFilter {
    pub fn matches(&self, binding: &AclBinding) -> bool {
        let field =
            |wanted: &Option<String>, value: &str| wanted.as_deref().is_none_or(|w| w == value);
        self.resource_type
            .is_none_or(|t| t == binding.resource_type)
            && self.pattern_matches(binding)
            && field(&self.principal, &binding.principal)
            && field(&self.host, &binding.host)
            && self.operation.is_none_or(|o| o == binding.operation)
            && self.permission.is_none_or(|p| p == binding.permission)
    }

    fn pattern_matches(&self, binding: &AclBinding) -> bool {
        match self.pattern {
            PatternFilter::Exactly(pattern) => {
                pattern == binding.pattern_type
                    && self
                        .resource_name
                        .as_deref()
                        .is_none_or(|n| n == binding.resource_name)
            }
            PatternFilter::Any => self
                .resource_name
                .as_deref()
                .is_none_or(|n| n == binding.resource_name),
            // MATCH: the bindings that would apply to the named resource.
            PatternFilter::Match => match &self.resource_name {
                None => true,
                Some(name) => match binding.pattern_type {
                    PatternType::Literal => {
                        binding.resource_name == *name || binding.resource_name == WILDCARD
                    }
                    PatternType::Prefixed => name.starts_with(&binding.resource_name),
                },
            },
        }
    }
}

/// What decides when no ACL covers a resource, and who is exempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    pub super_users: Vec<KafkaPrincipal>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// Kafka's authorizer class, the one value of `authorizer.class.name` that turns ACLs on.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The authorizer's settings when `authorizer.class.name` turns it on; `None` when off.
pub fn authorizer_settings(config: &BrokerConfig) -> Option<AuthorizerSettings> {
    let class = config.explicit("authorizer.class.name").unwrap_or("");
    if class.is_empty() {
        return None;
    }
    let super_users = config
        .explicit("super.users")
        .unwrap_or("")
        .split(';')
        .filter_map(|entry| KafkaPrincipal::parse(entry.trim()))
        .collect();
    Some(AuthorizerSettings {
        super_users,
        allow_everyone_if_no_acl_found: config.boolean("allow.everyone.if.no.acl.found"),
    })
}

/// The decision for `principal` at `host` doing `operation` to a resource.
pub fn authorize<'a>(
    bindings: impl IntoIterator<Item = &'a AclBinding>,
    settings: &AuthorizerSettings,
    principal: &KafkaPrincipal,
    host: &str,
    operation: Operation,
    resource_type: ResourceType,
    resource_name: &str,
) -> bool {
    if settings.super_users.contains(principal) {
        return true;
    }
    let principal = principal.to_string();
    let mut covered = false;
    let mut allowed = false;
    for binding in bindings {
        if !binding.covers(resource_type, resource_name) {
            continue;
        }
        covered = true;
        if !binding.applies_to(&principal, host) {
            continue;
        }
        match binding.permission {
            Permission::Deny if binding.operation.denies(operation) => return false,
            Permission::Allow if binding.operation.allows(operation) => allowed = true,
            _ => {}
        }
    }
    allowed || (!covered && settings.allow_everyone_if_no_acl_found)
}

/// Whether `principal` at `host` may do `operation` to at least one resource of a type:
/// Kafka's `authorizeByResourceType` (KIP-679; an idempotent producer without IDEMPOTENT_WRITE
/// on the cluster may still produce where it may WRITE some topic). Only bindings of exactly
/// `operation` count, as in Kafka; a DENY on the literal `*` denies outright, and an ALLOW
/// counts unless a DENY covers its whole pattern (the same literal, or a prefix of it).
pub fn authorize_any<'a>(
    bindings: impl IntoIterator<Item = &'a AclBinding>,
    settings: &AuthorizerSettings,
    principal: &KafkaPrincipal,
    host: &str,
    operation: Operation,
    resource_type: ResourceType,
) -> bool {
    if settings.super_users.contains(principal) {
        return true;
    }
    let principal = principal.to_string();
    let mut allowed: Vec<(&str, PatternType)> = Vec::new();
    let mut denied: Vec<(&str, PatternType)> = Vec::new();
    for binding in bindings {
        if binding.resource_type != resource_type
            || binding.operation != operation
            || !binding.applies_to(&principal, host)
        {
            continue;
        }
        let pattern = (binding.resource_name.as_str(), binding.pattern_type);
        match binding.permission {
            Permission::Deny if pattern == (WILDCARD, PatternType::Literal) => return false,
            Permission::Deny => denied.push(pattern),
            Permission::Allow => allowed.push(pattern),
        }
    }
    let denied_prefix_of = |name: &str| {
        denied
            .iter()
            .any(|(prefix, kind)| *kind == PatternType::Prefixed && name.starts_with(prefix))
    };
    allowed.iter().any(|(name, kind)| match kind {
        PatternType::Literal => {
            !denied.contains(&(name, PatternType::Literal)) && !denied_prefix_of(name)
        }
        PatternType::Prefixed => !denied_prefix_of(name),
    })
}

/// The operations Kafka lists for a resource type in KIP-430's authorized operations.
pub fn supported_operations(resource_type: ResourceType) -> &'static [Operation] {
    use Operation::*;
    match resource_type {
        ResourceType::Topic => &[
            Read,
            Write,
            Create,
            Describe,
            Delete,
            Alter,
            DescribeConfigs,
            AlterConfigs,
        ],
        ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
        ResourceType::Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
        ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
        ResourceType::DelegationToken => &[Describe],
        ResourceType::User => &[CreateTokens, DescribeTokens],
    }
}

/// KIP-430's bit field: bit `code` set for each supported operation `allowed` lets through.
pub fn operations_bit_field(
    resource_type: ResourceType,
    mut allowed: impl FnMut(Operation) -> bool,
) -> i32 {
    supported_operations(resource_type)
        .iter()
        .filter(|operation| allowed(**operation))
        .fold(0, |bits, operation| bits | 1 << operation.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_names_as_kafka_acls_takes_them() {
        for operation in Operation::ALL_OPERATIONS {
            assert_eq!(Operation::from_name(operation.name()), Some(operation));
            assert_eq!(Operation::from_code(operation.code()), Some(operation));
        }
        assert_eq!(
            Operation::from_name("IdempotentWrite"),
            Some(Operation::IdempotentWrite)
        );
        assert_eq!(
            Operation::from_name(" describe-configs"),
            Some(Operation::DescribeConfigs)
        );
        assert_eq!(Operation::from_name("Any"), None);
        assert_eq!(Operation::from_name("Reed"), None);
    }

    fn binding(
        resource: (ResourceType, &str, PatternType),
        principal: &str,
        operation: Operation,
        permission: Permission,
    ) -> AclBinding {
        AclBinding {
            resource_type: resource.0,
            resource_name: resource.1.into(),
            pattern_type: resource.2,
            principal: principal.into(),
            host: WILDCARD.into(),
            operation,
            permission,
        }
    }

    fn decide(
        bindings: &[AclBinding],
        settings: &AuthorizerSettings,
        who: &str,
        op: Operation,
        topic: &str,
    ) -> bool {
        let principal = KafkaPrincipal::parse(who).unwrap();
        authorize(
            bindings,
            settings,
            &principal,
            "127.0.0.1",
            op,
            ResourceType::Topic,
            topic,
        )
    }

    #[test]
    fn allow_implies_describe_and_deny_wins() {
        use Operation::*;
        let topic = (ResourceType::Topic, "orders", PatternType::Literal);
        let acls = [
            binding(topic, "User:alice", Read, Permission::Allow),
            binding(topic, "User:bob", All, Permission::Allow),
            binding(topic, "User:bob", Write, Permission::Deny),
        ];
        let strict = AuthorizerSettings::default();
        assert!(decide(&acls, &strict, "User:alice", Read, "orders"));
        assert!(
            decide(&acls, &strict, "User:alice", Describe, "orders"),
            "READ implies DESCRIBE"
        );
        assert!(!decide(&acls, &strict, "User:alice", Write, "orders"));
        assert!(decide(&acls, &strict, "User:bob", Read, "orders"));
        assert!(
            !decide(&acls, &strict, "User:bob", Write, "orders"),
            "deny wins over allow"
        );
        assert!(!decide(&acls, &strict, "User:carol", Read, "orders"));
    }

    #[test]
    fn a_deny_does_not_imply() {
        use Operation::*;
        let topic = (ResourceType::Topic, "t", PatternType::Literal);
        let acls = [
            binding(topic, "User:a", Read, Permission::Deny),
            binding(topic, "User:a", Describe, Permission::Allow),
        ];
        assert!(decide(
            &acls,
            &AuthorizerSettings::default(),
            "User:a",
            Describe,
            "t"
        ));
    }

    #[test]
    fn wildcards_prefixes_super_users_and_the_no_acl_rule() {
        use Operation::*;
        let acls = [
            binding(
                (ResourceType::Topic, "logs-", PatternType::Prefixed),
                "User:*",
                Write,
                Permission::Allow,
            ),
            binding(
                (ResourceType::Topic, WILDCARD, PatternType::Literal),
                "User:reader",
                Read,
                Permission::Allow,
            ),
        ];
        let strict = AuthorizerSettings::default();
        assert!(decide(&acls, &strict, "User:anyone", Write, "logs-web"));
        assert!(!decide(&acls, &strict, "User:anyone", Write, "metrics"));
        assert!(decide(&acls, &strict, "User:reader", Read, "metrics"));
        let admin = AuthorizerSettings {
            super_users: vec![KafkaPrincipal::user("admin")],
            allow_everyone_if_no_acl_found: false,
        };
        assert!(decide(&[], &admin, "User:admin", Delete, "anything"));
        assert!(!decide(&[], &admin, "User:other", Describe, "anything"));
        let open = AuthorizerSettings {
            super_users: Vec::new(),
            allow_everyone_if_no_acl_found: true,
        };
        assert!(decide(&[], &open, "User:other", Write, "anything"));
        let only_topic = [binding(
            (ResourceType::Topic, "t", PatternType::Literal),
            "User:x",
            Read,
            Permission::Allow,
        )];
        assert!(
            !decide(&only_topic, &open, "User:y", Read, "t"),
            "an ACL covers t, so the open rule does not apply"
        );
        assert!(decide(&only_topic, &open, "User:y", Read, "u"));
    }

    #[test]
    fn filters_with_match_find_what_applies_to_a_name() {
        use Operation::*;
        let acls = [
            binding(
                (ResourceType::Topic, "logs-", PatternType::Prefixed),
                "User:a",
                Write,
                Permission::Allow,
            ),
            binding(
                (ResourceType::Topic, WILDCARD, PatternType::Literal),
                "User:b",
                Read,
                Permission::Allow,
            ),
            binding(
                (ResourceType::Topic, "logs-web", PatternType::Literal),
                "User:c",
                Read,
                Permission::Allow,
            ),
            binding(
                (ResourceType::Group, "logs-web", PatternType::Literal),
                "User:c",
                Read,
                Permission::Allow,
            ),
        ];
        let filter = AclFilter {
            resource_type: Some(ResourceType::Topic),
            resource_name: Some("logs-web".into()),
            pattern: PatternFilter::Match,
            principal: None,
            host: None,
            operation: None,
            permission: None,
        };
        assert_eq!(acls.iter().filter(|b| filter.matches(b)).count(), 3);
        let literal = AclFilter {
            pattern: PatternFilter::Exactly(PatternType::Literal),
            ..filter.clone()
        };
        assert_eq!(acls.iter().filter(|b| literal.matches(b)).count(), 1);
        let everything = AclFilter {
            resource_type: None,
            resource_name: None,
            pattern: PatternFilter::Any,
            ..filter
        };
        assert_eq!(acls.iter().filter(|b| everything.matches(b)).count(), 4);
    }
}

#[cfg(test)]
mod resource_type_tests {
    use super::*;

    fn allow(name: &str, pattern_type: PatternType, permission: Permission) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type,
            principal: "User:p".into(),
            host: WILDCARD.into(),
            operation: Operation::Write,
            permission,
        }
    }

    fn any_write(bindings: &[AclBinding]) -> bool {
        authorize_any(
            bindings,
            &AuthorizerSettings::default(),
            &KafkaPrincipal::user("p"),
            "10.0.0.1",
            Operation::Write,
            ResourceType::Topic,
        )
    }

    #[test]
    fn some_allowed_resource_is_enough_unless_a_deny_covers_it() {
        use PatternType::*;
        use Permission::*;
        assert!(!any_write(&[]));
        assert!(any_write(&[allow("a", Literal, Allow)]));
        assert!(!any_write(&[
            allow("a", Literal, Allow),
            allow("a", Literal, Deny)
        ]));
        assert!(!any_write(&[
            allow("ab", Literal, Allow),
            allow("a", Prefixed, Deny)
        ]));
        assert!(any_write(&[
            allow("a", Prefixed, Allow),
            allow("ab", Prefixed, Deny)
        ]));
        assert!(!any_write(&[
            allow("a", Literal, Allow),
            allow("*", Literal, Deny)
        ]));
        let mut read = allow("a", Literal, Allow);
        read.operation = Operation::Read;
        assert!(!any_write(&[read]), "only the exact operation counts");
    }

    #[test]
    fn bit_fields_carry_kafkas_operation_codes() {
        // librdkafka expects 8 topic and 7 cluster operations when nothing is restricted.
        let all = |t| operations_bit_field(t, |_| true);
        assert_eq!(all(ResourceType::Topic).count_ones(), 8);
        assert_eq!(all(ResourceType::Cluster).count_ones(), 7);
        let group = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
        assert_eq!(all(ResourceType::Group), group);
        assert_eq!(
            operations_bit_field(ResourceType::Topic, |op| op == Operation::Read),
            1 << 3
        );
    }
}
