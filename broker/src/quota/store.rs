//! The client quotas set on this broker: what AlterClientQuotas changes and DescribeClientQuotas
//! and the throttles read. A broker running alone keeps them in `meta/client-quotas.json`,
//! replaced atomically and durably on every change and read at start-up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use super::entity::{QuotaEntity, QuotaKey};
use crate::durable_file;
use crate::error::BrokerError;
use crate::log::error::LogError;

/// One entity's quotas.
pub type QuotaSet = BTreeMap<QuotaKey, f64>;

/// The file's name under `meta/`.
const FILE_NAME: &str = "client-quotas.json";
/// Bound on the file read at start-up (about 100,000 entities).
const MAX_FILE_BYTES: u64 = 16 << 20;
/// Bound on the entities with quotas (Kafka has none; this keeps the file and the answers of
/// DescribeClientQuotas bounded).
pub const MOST_ENTITIES: usize = 100_000;

/// One change of an AlterClientQuotas request: set (`Some`) or remove (`None`) each key.
pub type QuotaChange = (QuotaEntity, Vec<(QuotaKey, Option<f64>)>);

#[derive(Serialize, Deserialize)]
struct StoredEntry {
    entity: QuotaEntity,
    quotas: Vec<(QuotaKey, f64)>,
}

pub struct QuotaStore {
    path: PathBuf,
    quotas: RwLock<BTreeMap<QuotaEntity, QuotaSet>>,
}

impl QuotaStore {
    /// Reads `meta_dir`'s file (none yet: no quotas).
    pub fn open(meta_dir: &Path) -> Result<QuotaStore, BrokerError> {
        let path = meta_dir.join(FILE_NAME);
        let quotas = read_quotas(&path)?;
        Ok(QuotaStore {
            path,
            quotas: RwLock::new(quotas),
        })
    }

    /// Every entity's quotas.
    pub fn all(&self) -> BTreeMap<QuotaEntity, QuotaSet> {
        self.quotas
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether any quota is set (the throttles skip all work otherwise).
    pub fn is_empty(&self) -> bool {
        self.quotas
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The quota of `key` that applies to `user` with `client_id`, and the entity that sets it
    /// (Kafka's precedence).
    pub fn applying(
        &self,
        user: &str,
        client_id: &str,
        key: QuotaKey,
    ) -> Option<(QuotaEntity, f64)> {
        let quotas = self.quotas.read().unwrap_or_else(|p| p.into_inner());
        if quotas.is_empty() {
            return None;
        }
        QuotaEntity::candidates(user, client_id)
            .into_iter()
            .find_map(|entity| {
                let quota = quotas.get(&entity)?.get(&key).copied()?;
                Some((entity, quota))
            })
    }

    /// Applies every change, or none: the result is written before it is used.
    pub fn alter(&self, changes: &[QuotaChange], validate_only: bool) -> Result<(), BrokerError> {
        let mut quotas = self.quotas.write().unwrap_or_else(|p| p.into_inner());
        let mut next = quotas.clone();
        for (entity, keys) in changes {
            let set = next.entry(entity.clone()).or_default();
            for (key, value) in keys {
                match value {
                    Some(value) => set.insert(*key, *value),
                    None => set.remove(key),
                };
            }
            if set.is_empty() {
                next.remove(entity);
            }
        }
        if next.len() > MOST_ENTITIES {
            return Err(BrokerError::InvalidRequest(format!(
                "at most {MOST_ENTITIES} entities may have quotas"
            )));
        }
        if validate_only {
            return Ok(());
        }
        let stored: Vec<StoredEntry> = next
            .iter()
            .map(|(entity, set)| StoredEntry {
                entity: entity.clone(),
                quotas: set.iter().map(|(key, value)| (*key, *value)).collect(),
            })
            .collect();
        let bytes = serde_json::to_vec_pretty(&stored)
            .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
        durable_file::replace(&self.path, &bytes).map_err(|e| LogError::io(&self.path, e))?;
        *quotas = next;
        Ok(())
    }
}

fn read_quotas(path: &Path) -> Result<BTreeMap<QuotaEntity, QuotaSet>, BrokerError> {
    let stored: Vec<StoredEntry> =
        durable_file::read_json(path, MAX_FILE_BYTES, "the client quotas")
            .map_err(|e| BrokerError::metadata_file(path, e))?
            .unwrap_or_default();
    Ok(stored
        .into_iter()
        .map(|entry| (entry.entity, entry.quotas.into_iter().collect()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::entity::EntityName;

    fn client(name: &str) -> QuotaEntity {
        QuotaEntity {
            user: None,
            client_id: Some(EntityName::Named(name.into())),
        }
    }

    #[test]
    fn quotas_survive_a_reopen_and_the_most_specific_applies() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuotaStore::open(dir.path()).unwrap();
        let default_client = QuotaEntity {
            user: None,
            client_id: Some(EntityName::Default),
        };
        let changes = vec![
            (
                client("slow"),
                vec![(QuotaKey::ProducerByteRate, Some(1000.0))],
            ),
            (
                default_client,
                vec![(QuotaKey::ProducerByteRate, Some(5000.0))],
            ),
        ];
        store.alter(&changes, true).unwrap();
        assert!(store.is_empty(), "validate_only changes nothing");
        store.alter(&changes, false).unwrap();
        let reopened = QuotaStore::open(dir.path()).unwrap();
        let applying =
            |client_id| reopened.applying("ANONYMOUS", client_id, QuotaKey::ProducerByteRate);
        assert_eq!(applying("slow").map(|(_, q)| q), Some(1000.0));
        assert_eq!(applying("other").map(|(_, q)| q), Some(5000.0));
        assert_eq!(
            reopened.applying("u", "slow", QuotaKey::ConsumerByteRate),
            None
        );
        reopened
            .alter(
                &[(client("slow"), vec![(QuotaKey::ProducerByteRate, None)])],
                false,
            )
            .unwrap();
        assert_eq!(reopened.all().len(), 1, "an entity without quotas is gone");
    }
}
