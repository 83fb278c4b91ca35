//! Dynamic broker configs: where they are kept and how a change takes effect.
//!
//! A change (AlterConfigs or IncrementalAlterConfigs on a BROKER resource) is validated whole —
//! every name a dynamic property, every value valid, the combination one the broker can run with —
//! then stored: alone, in `<data dir>/meta/broker-configs.json` (replaced atomically and durably,
//! read at start-up before any log opens); in a cluster, as a metadata record through the
//! controller, so every broker applies it from its image and it survives restarts as the rest of
//! the metadata does (each broker keeps a copy in the same file, so that its logs open with them
//! before its image has caught up).
//!
//! Taking effect ([`apply`]): the broker's [`LiveConfig`] gets the new layers, and every topic
//! whose effective log config changed (a default it takes from a broker property, such as
//! `retention.ms` from `log.retention.ms`) gets it at once. Settings read when used
//! (`log.cleaner.backoff.ms`, `producer.id.expiration.ms`) see the new value on their next use; the
//! connection limits watch the live config.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::{
    validate_combined, validate_dynamic, BrokerResource, DynamicConfigs, LiveConfig,
};
use crate::durable_file;
use crate::error::BrokerError;
use crate::log::error::LogError;
use crate::topic::TopicRegistry;

/// Every BROKER resource's dynamic configs, by resource name ("" for the cluster default).
pub type BrokerConfigSets = BTreeMap<String, BTreeMap<String, String>>;

/// The file a broker running alone keeps its dynamic configs in, under `meta/`.
const FILE_NAME: &str = "broker-configs.json";
/// Bound on the file read at start-up: far above any set of Weir's properties.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The dynamic configs as stored on disk: alone, the broker's own; in a cluster, a copy of the
/// metadata image's, so that the logs opened at start-up take them before the image caught up.
pub struct BrokerConfigStore {
    path: PathBuf,
    sets: Mutex<BrokerConfigSets>,
}

impl BrokerConfigStore {
    /// Reads `meta_dir`'s file (none yet: no dynamic configs).
    pub fn open(meta_dir: &Path) -> Result<Self, BrokerError> {
        let path = meta_dir.join(FILE_NAME);
        let sets = read_sets(&path)?;
        Ok(BrokerConfigStore {
            path,
            sets: Mutex::new(sets),
        })
    }

    /// Cluster mode: keeps the image's sets when they differ from the stored copy.
    pub fn remember(&self, image_sets: &BrokerConfigSets) -> Result<(), BrokerError> {
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        if *sets != *image_sets {
            self.write(image_sets)?;
            *sets = image_sets.clone();
        }
        Ok(())
    }

    fn write(&self, sets: &BrokerConfigSets) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec_pretty(sets)
            .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
        durable_file::replace(&self.path, &bytes).map_err(|e| LogError::io(&self.path, e).into())
    }

    /// The stored sets.
    pub fn sets(&self) -> BrokerConfigSets {
        self.sets.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces one resource's set (the broker running alone), after `check` accepted the
    /// result; returns every set as stored.
    pub fn replace(
        &self,
        resource: BrokerResource,
        change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, BrokerError>,
        check: impl FnOnce(&BrokerConfigSets) -> Result<(), BrokerError>,
        validate_only: bool,
    ) -> Result<BrokerConfigSets, BrokerError> {
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = sets.clone();
        let current = next.get(&resource.name()).cloned().unwrap_or_default();
        let changed = change(&current)?;
        set_resource(&mut next, resource, changed);
        check(&next)?;
        if validate_only {
            return Ok(sets.clone());
        }
        self.write(&next)?;
        *sets = next.clone();
        Ok(next)
    }
}

/// Puts `configs` as `resource`'s set (an empty set is no entry).
pub fn set_resource(
    sets: &mut BrokerConfigSets,
    resource: BrokerResource,
    configs: BTreeMap<String, String>,
) {
    match configs.is_empty() {
        true => sets.remove(&resource.name()),
        false => sets.insert(resource.name(), configs),
    };
}

fn read_sets(path: &Path) -> Result<BrokerConfigSets, BrokerError> {
    let corrupt = |reason: String| BrokerError::DataDirectory {
        path: path.to_path_buf(),
        reason,
    };
    let sets: BrokerConfigSets =
        durable_file::read_json(path, MAX_FILE_BYTES, "the dynamic broker configs")
            .map_err(|e| BrokerError::metadata_file(path, e))?
            .unwrap_or_default();
    for (resource, configs) in &sets {
        BrokerResource::parse(resource).map_err(|e| corrupt(e.to_string()))?;
        validate_dynamic(configs).map_err(|e| corrupt(format!("resource {resource:?}: {e}")))?;
    }
    Ok(sets)
}

/// The layers that apply to broker `node_id`: its own set and the cluster default.
pub fn layers_for(sets: &BrokerConfigSets, node_id: i32) -> DynamicConfigs {
    DynamicConfigs {
        broker: sets.get(&node_id.to_string()).cloned().unwrap_or_default(),
        cluster_default: sets.get("").cloned().unwrap_or_default(),
    }
}

/// Checks a resource's new set, and what broker `node_id` would run with under `sets`. Every
/// refusal is INVALID_REQUEST, as Kafka answers for broker resources.
pub fn check_sets(
    live: &LiveConfig,
    node_id: i32,
    resource: BrokerResource,
    sets: &BrokerConfigSets,
) -> Result<(), BrokerError> {
    let configs = sets.get(&resource.name()).cloned().unwrap_or_default();
    validate_dynamic(&configs).map_err(BrokerError::BrokerConfig)?;
    let candidate = live.current().with_dynamic(layers_for(sets, node_id));
    validate_combined(&candidate).map_err(BrokerError::BrokerConfig)
}

/// Makes `sets` the dynamic configs broker `node_id` runs with: the live config, then every
/// topic whose effective log config changed. Nothing happens when they are already in effect.
pub fn apply(live: &LiveConfig, topics: &TopicRegistry, sets: &BrokerConfigSets, node_id: i32) {
    let layers = layers_for(sets, node_id);
    if !live.set_dynamic(layers.clone()) {
        return;
    }
    tracing::info!(
        broker = ?layers.broker,
        cluster_default = ?layers.cluster_default,
        "dynamic broker configs in effect"
    );
    topics.apply_broker_defaults();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    fn accept(_: &BrokerConfigSets) -> Result<(), BrokerError> {
        Ok(())
    }

    #[test]
    fn stored_sets_survive_a_reopen_and_validate_only_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = BrokerConfigStore::open(dir.path()).unwrap();
        let retention = set(&[("log.retention.ms", "7200000")]);
        store
            .replace(
                BrokerResource::ClusterDefault,
                |_| Ok(retention.clone()),
                accept,
                false,
            )
            .unwrap();
        let node = set(&[("message.max.bytes", "3000000")]);
        let validated = store
            .replace(
                BrokerResource::Broker(1),
                |_| Ok(node.clone()),
                accept,
                true,
            )
            .unwrap();
        assert_eq!(validated.get("1"), None, "validate_only stored the set");
        store
            .replace(
                BrokerResource::Broker(1),
                |_| Ok(node.clone()),
                accept,
                false,
            )
            .unwrap();
        let reopened = BrokerConfigStore::open(dir.path()).unwrap().sets();
        assert_eq!(reopened.get(""), Some(&retention));
        assert_eq!(reopened.get("1"), Some(&node));
        let layers = layers_for(&reopened, 1);
        assert_eq!(layers.broker, node);
        assert_eq!(layers.cluster_default, retention);
        assert!(layers_for(&reopened, 2).broker.is_empty());
        // Deleting every config of a resource removes its entry.
        store
            .replace(
                BrokerResource::Broker(1),
                |_| Ok(BTreeMap::new()),
                accept,
                false,
            )
            .unwrap();
        assert_eq!(
            BrokerConfigStore::open(dir.path()).unwrap().sets().get("1"),
            None
        );
    }

    #[test]
    fn a_refused_change_leaves_the_stored_sets_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = BrokerConfigStore::open(dir.path()).unwrap();
        let refused = store.replace(
            BrokerResource::ClusterDefault,
            |_| Ok(set(&[("log.retention.ms", "1")])),
            |_| Err(BrokerError::InvalidRequest("no".into())),
            false,
        );
        assert!(refused.is_err());
        assert!(store.sets().is_empty());
        assert!(!dir.path().join(FILE_NAME).exists());
    }

    #[test]
    fn a_damaged_or_hostile_file_is_a_clear_start_up_error() {
        let cases: [&[u8]; 4] = [
            b"{not json",
            br#"{"": {"socket.request.max.bytes": "1"}}"#,
            br#"{"broker-one": {"log.retention.ms": "1"}}"#,
            br#"{"": {"log.retention.ms": "soon"}}"#,
        ];
        for bytes in cases {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(FILE_NAME), bytes).unwrap();
            let error = BrokerConfigStore::open(dir.path()).err();
            assert!(
                matches!(error, Some(BrokerError::DataDirectory { .. })),
                "{}: {error:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let huge = vec![b' '; MAX_FILE_BYTES as usize + 1];
        std::fs::write(dir.path().join(FILE_NAME), huge).unwrap();
        assert!(matches!(
            BrokerConfigStore::open(dir.path()),
            Err(BrokerError::DataDirectory { .. })
        ));
    }
}
