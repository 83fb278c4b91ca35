//! Where the ACLs are kept, and the authorizer switched on by `authorizer.class.name`.
//!
//! Alone, the broker keeps them in `<data dir>/meta/acls.json` (replaced atomically and durably,
//! `durable_file`; read at start-up); in a cluster they are metadata records in every broker's
//! image, so a change takes effect on every broker without a restart. `authorizer.class.name` is
//! Kafka's own value, `org.apache.kafka.metadata.authorizer.StandardAuthorizer`; unset, nothing is
//! checked and the ACL APIs answer SECURITY_DISABLED, as Kafka does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::durable_file;
use crate::error::BrokerError;
use crate::log::error::LogError;
pub use crate::security::acl::{authorizer_settings, STANDARD_AUTHORIZER};
use crate::security::acl::{AclBinding, AclFilter, ResourceType, CLUSTER_NAME};

const FILE_NAME: &str = "acls.json";
/// Bound on the file read at start-up.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Why a binding cannot be created: Kafka's INVALID_REQUEST messages.
pub fn check_new_binding(binding: &AclBinding) -> Result<(), String> {
    if binding.resource_name.is_empty() {
        return Err("Resource name should not be empty".into());
    }
    if binding.resource_type == ResourceType::Cluster && binding.resource_name != CLUSTER_NAME {
        return Err(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        ));
    }
    if !binding.principal.contains(':') {
        return Err(format!(
            "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
            binding.principal
        ));
    }
    Ok(())
}

/// The ACLs as they were when a request arrived, without a copy: the applied metadata image's
/// in a cluster, or the single broker's set.
#[derive(Clone)]
pub enum AclSnapshot {
    Image(Arc<crate::cluster::image::MetadataImage>),
    Local(Arc<BTreeSet<AclBinding>>),
}

impl AclSnapshot {
    pub fn bindings(&self) -> &BTreeSet<AclBinding> {
        match self {
            AclSnapshot::Image(image) => &image.acls,
            AclSnapshot::Local(bindings) => bindings,
        }
    }
}

/// The ACLs of a broker running alone, on disk.
pub struct AclStore {
    path: PathBuf,
    bindings: Mutex<Arc<BTreeSet<AclBinding>>>,
}

impl AclStore {
    pub fn open(meta_dir: &Path) -> Result<AclStore, BrokerError> {
        let path = meta_dir.join(FILE_NAME);
        let bindings = durable_file::read_json(&path, MAX_FILE_BYTES, "the ACLs")
            .map_err(|e| BrokerError::metadata_file(&path, e))?
            .unwrap_or_default();
        Ok(AclStore {
            path,
            bindings: Mutex::new(Arc::new(bindings)),
        })
    }

    /// The bindings as they are now; later changes do not touch the snapshot.
    pub fn snapshot(&self) -> Arc<BTreeSet<AclBinding>> {
        self.lock().clone()
    }

    /// Adds `created` and removes what `deleted` matches, durably; returns what was removed.
    pub fn change(
        &self,
        created: &[AclBinding],
        deleted: &[AclFilter],
    ) -> Result<Vec<AclBinding>, BrokerError> {
        let mut bindings = self.lock();
        let mut next = BTreeSet::clone(&bindings);
        next.extend(created.iter().cloned());
        let removed: Vec<AclBinding> = next
            .iter()
            .filter(|binding| deleted.iter().any(|filter| filter.matches(binding)))
            .cloned()
            .collect();
        for binding in &removed {
            next.remove(binding);
        }
        if next != **bindings {
            let bytes = serde_json::to_vec_pretty(&next)
                .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
            durable_file::replace(&self.path, &bytes).map_err(|e| LogError::io(&self.path, e))?;
            *bindings = Arc::new(next);
        }
        Ok(removed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<BTreeSet<AclBinding>>> {
        self.bindings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::acl::{Operation, PatternFilter, PatternType, Permission};

    fn binding(name: &str, principal: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type: PatternType::Literal,
            principal: principal.into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    #[test]
    fn acls_survive_a_reopen_and_filters_delete_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open(dir.path()).unwrap();
        store
            .change(&[binding("a", "User:x"), binding("b", "User:y")], &[])
            .unwrap();
        let reopened = AclStore::open(dir.path()).unwrap();
        assert_eq!(reopened.snapshot().len(), 2);
        let by_principal = AclFilter {
            resource_type: None,
            resource_name: None,
            pattern: PatternFilter::Any,
            principal: Some("User:x".into()),
            host: None,
            operation: None,
            permission: None,
        };
        let removed = reopened.change(&[], &[by_principal]).unwrap();
        assert_eq!(removed, vec![binding("a", "User:x")]);
        assert_eq!(AclStore::open(dir.path()).unwrap().snapshot().len(), 1);
        std::fs::write(dir.path().join(FILE_NAME), b"[oops").unwrap();
        assert!(AclStore::open(dir.path()).is_err());
    }

    #[test]
    fn kafkas_refusals_of_new_bindings() {
        let mut cluster = binding("other", "User:x");
        cluster.resource_type = ResourceType::Cluster;
        assert!(check_new_binding(&cluster)
            .unwrap_err()
            .contains("kafka-cluster"));
        assert!(check_new_binding(&binding("", "User:x")).is_err());
        assert!(check_new_binding(&binding("t", "alice"))
            .unwrap_err()
            .contains("no colon"));
        assert!(check_new_binding(&binding("t", "User:x")).is_ok());
    }
}
