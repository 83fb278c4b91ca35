//! Topics: names, ids, partitions and config overrides, persisted under `<data dir>/meta/topics`.
//!
//! Each topic's definition is one JSON file written atomically; partition logs live in
//! `<data dir>/<topic>-<partition>/`. Topics are immutable values swapped under a lock
//! (copy-on-write), so request handlers work on a consistent snapshot without holding the lock.
//! `internal`: the coordinators' internal topics and their key/value batches; `codec`: the
//! string/bytes encodings of their records.

pub mod codec;
pub mod internal;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::clock::Clock;
use crate::config::{validate_topic_config, BrokerConfig, LiveConfig, LogConfig};
use crate::durable_file;
use crate::error::BrokerError;
use crate::log::error::LogError;
use crate::log::PartitionLog;
use crate::partition::Partition;

/// Kafka's internal topics (its `Topic.INTERNAL_TOPICS`): flagged internal in Metadata, and
/// clients may not produce to them. Other names starting with `__` are ordinary topics.
pub const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// Whether `name` is one of Kafka's internal topics.
pub fn is_internal(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_CHARS: usize = 249;
/// Upper bound on partitions per topic, so a typo cannot create millions of directories.
pub const MAX_PARTITIONS_PER_TOPIC: i32 = 10_000;

pub struct Topic {
    pub name: Arc<str>,
    pub id: Uuid,
    /// Every partition of the topic by index; `None` where this broker holds no replica
    /// (cluster mode). A broker running alone holds them all.
    pub partitions: Vec<Option<Arc<Partition>>>,
    pub overrides: BTreeMap<String, String>,
    pub config: LogConfig,
}

impl Topic {
    /// The partition if this broker holds a replica of it.
    pub fn partition(&self, index: i32) -> Option<&Arc<Partition>> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.partitions.get(i))
            .and_then(Option::as_ref)
    }

    /// The topic's partition count (hosted here or not).
    pub fn partition_count(&self) -> i32 {
        self.partitions.len() as i32
    }

    /// The partitions this broker holds replicas of.
    pub fn hosted(&self) -> impl Iterator<Item = &Arc<Partition>> {
        self.partitions.iter().flatten()
    }

    pub fn is_internal(&self) -> bool {
        is_internal(&self.name)
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct TopicRecord {
    id: Uuid,
    partitions: i32,
    #[serde(default)]
    configs: BTreeMap<String, String>,
    /// The partitions this broker holds replicas of (cluster mode); absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hosted: Option<Vec<i32>>,
}

/// A topic's metadata file, checked before anything is opened for it: the name it is stored
/// under and the partition counts must be ones the broker could have written.
fn read_topic_record(path: &Path, name: &str) -> Result<TopicRecord, String> {
    validate_topic_name(name).map_err(|e| e.to_string())?;
    let bytes = fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    let record: TopicRecord =
        serde_json::from_slice(&bytes).map_err(|e| format!("does not decode: {e}"))?;
    if !(1..=MAX_PARTITIONS_PER_TOPIC).contains(&record.partitions) {
        return Err(format!(
            "{} partitions is outside 1..={MAX_PARTITIONS_PER_TOPIC}",
            record.partitions
        ));
    }
    let hosted_outside = record
        .hosted
        .iter()
        .flatten()
        .any(|index| !(0..record.partitions).contains(index));
    if hosted_outside {
        return Err("it hosts a partition the topic does not have".into());
    }
    Ok(record)
}

/// Checks a topic name as Kafka does.
/// Whether a topic partition exists: in the cluster's metadata when there is a cluster (this
/// broker may host none of the topic's replicas), else in the local registry.
pub fn partition_exists(
    topics: &TopicRegistry,
    image: Option<&crate::cluster::MetadataImage>,
    topic: &str,
    index: i32,
) -> bool {
    match image {
        Some(image) => image
            .topic_by_name(topic)
            .is_some_and(|t| index >= 0 && (index as usize) < t.partitions.len()),
        None => topics
            .get(topic)
            .is_some_and(|t| t.partition(index).is_some()),
    }
}

pub fn validate_topic_name(name: &str) -> Result<(), BrokerError> {
    let invalid = |reason: &str| BrokerError::InvalidTopic {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if name.is_empty() {
        return Err(invalid("the name is empty"));
    }
    if name == "." || name == ".." {
        return Err(invalid("'.' and '..' are not allowed"));
    }
    if name.chars().count() > MAX_TOPIC_NAME_CHARS {
        return Err(invalid("longer than 249 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(invalid(
            "only ASCII letters, digits, '.', '_' and '-' are allowed",
        ));
    }
    Ok(())
}

pub struct TopicRegistry {
    data_dir: PathBuf,
    meta_dir: PathBuf,
    /// The broker's configuration with its dynamic broker configs: the defaults of every
    /// topic config a topic does not override.
    config: LiveConfig,
    clock: Arc<dyn Clock>,
    topics: RwLock<HashMap<Arc<str>, Arc<Topic>>>,
    /// Serialises create/delete/alter so that files and the map change together.
    admin_lock: std::sync::Mutex<()>,
}

impl TopicRegistry {
    /// Loads every topic under the data directory, recovering each partition log.
    pub fn open(
        config: LiveConfig,
        clock: Arc<dyn Clock>,
        clean_shutdown: bool,
    ) -> Result<Self, BrokerError> {
        let data_dir = config.current().data_dir.clone();
        let meta_dir = data_dir.join("meta").join("topics");
        fs::create_dir_all(&meta_dir).map_err(|e| LogError::io(&meta_dir, e))?;
        let registry = TopicRegistry {
            data_dir,
            meta_dir,
            config,
            clock,
            topics: RwLock::new(HashMap::new()),
            admin_lock: std::sync::Mutex::new(()),
        };
        registry.remove_deleted_dirs();
        let mut loaded = HashMap::new();
        for entry in
            fs::read_dir(&registry.meta_dir).map_err(|e| LogError::io(&registry.meta_dir, e))?
        {
            let entry = entry.map_err(|e| LogError::io(&registry.meta_dir, e))?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(name) = file_name.strip_suffix(".json") else {
                continue;
            };
            let record = match read_topic_record(&entry.path(), name) {
                Ok(record) => record,
                Err(reason) => {
                    tracing::warn!(
                        path = %entry.path().display(),
                        %reason,
                        "not loading a topic whose metadata cannot be trusted; its data stays \
                         in the data directory untouched"
                    );
                    continue;
                }
            };
            let topic = registry.open_topic(name, record, clean_shutdown)?;
            loaded.insert(Arc::clone(&topic.name), Arc::new(topic));
        }
        *registry.write_topics() = loaded;
        Ok(registry)
    }

    fn remove_deleted_dirs(&self) {
        if let Ok(entries) = fs::read_dir(&self.data_dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().ends_with("-delete") {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
    }

    fn open_topic(
        &self,
        name: &str,
        record: TopicRecord,
        clean_shutdown: bool,
    ) -> Result<Topic, BrokerError> {
        let name: Arc<str> = Arc::from(name);
        let config = self.config.current().log_config(&record.configs);
        let now_ms = self.clock.now_ms();
        let mut partitions = Vec::with_capacity(record.partitions as usize);
        for index in 0..record.partitions {
            if record
                .hosted
                .as_ref()
                .is_some_and(|hosted| !hosted.contains(&index))
            {
                partitions.push(None);
                continue;
            }
            let dir = self.partition_dir(&name, index);
            let log = PartitionLog::open(&dir, config.clone(), clean_shutdown, now_ms)?;
            let partition = match record.hosted {
                // A cluster's replica waits for the metadata to say who leads.
                Some(_) => {
                    Partition::new_replica(Arc::clone(&name), index, log, self.clock.clone())
                }
                None => Partition::new(Arc::clone(&name), index, log, 0, self.clock.clone()),
            };
            partitions.push(Some(Arc::new(partition)));
        }
        Ok(Topic {
            name,
            id: record.id,
            partitions,
            overrides: record.configs,
            config,
        })
    }

    fn partition_dir(&self, topic: &str, index: i32) -> PathBuf {
        self.data_dir.join(format!("{topic}-{index}"))
    }

    fn meta_path(&self, topic: &str) -> PathBuf {
        self.meta_dir.join(format!("{topic}.json"))
    }

    fn read_topics(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Arc<Topic>>> {
        self.topics.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_topics(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Arc<Topic>>> {
        self.topics.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.read_topics().get(name).cloned()
    }

    pub fn get_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.read_topics().values().find(|t| t.id == id).cloned()
    }

    /// All topics, sorted by name.
    pub fn all(&self) -> Vec<Arc<Topic>> {
        let mut topics: Vec<_> = self.read_topics().values().cloned().collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        topics
    }

    pub fn partition(&self, topic: &str, index: i32) -> Result<Arc<Partition>, BrokerError> {
        self.get(topic)
            .and_then(|t| t.partition(index).cloned())
            .ok_or_else(|| BrokerError::UnknownTopicOrPartition {
                topic: topic.to_string(),
                partition: index,
            })
    }

    /// The broker's configuration as it is now.
    pub fn broker_config(&self) -> Arc<BrokerConfig> {
        self.config.current()
    }

    /// Gives every topic the log config it has under the broker configs now in effect (after a
    /// dynamic broker config changed a default it does not override).
    pub fn apply_broker_defaults(&self) {
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let broker = self.config.current();
        for topic in self.all() {
            let config = broker.log_config(&topic.overrides);
            if config == topic.config {
                continue;
            }
            // Only the effective config changed, which is not stored: nothing to write.
            let updated = Topic {
                name: Arc::clone(&topic.name),
                id: topic.id,
                partitions: topic.partitions.clone(),
                overrides: topic.overrides.clone(),
                config: config.clone(),
            };
            for partition in updated.hosted() {
                partition.set_config(config.clone());
            }
            self.write_topics()
                .insert(Arc::clone(&topic.name), Arc::new(updated));
        }
    }

    /// Checks a CreateTopics request without creating anything.
    pub fn validate_new_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        validate_topic_name(name)?;
        if self.get(name).is_some() {
            return Err(BrokerError::TopicAlreadyExists {
                topic: name.to_string(),
            });
        }
        if !(1..=MAX_PARTITIONS_PER_TOPIC).contains(&partitions) {
            return Err(BrokerError::InvalidPartitions {
                count: partitions,
                reason: format!("must be between 1 and {MAX_PARTITIONS_PER_TOPIC}"),
            });
        }
        if replication_factor != 1 {
            return Err(BrokerError::InvalidReplicationFactor {
                factor: replication_factor as i32,
                reason: "this broker runs alone: only 1 replica is possible".into(),
            });
        }
        for (key, value) in configs {
            validate_topic_config(key, value)?;
        }
        Ok(())
    }

    /// Creates a topic. `partitions` and `replication_factor` of -1 take the broker defaults.
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, BrokerError> {
        let partitions = if partitions == -1 {
            self.config.current().num_partitions()
        } else {
            partitions
        };
        let replication_factor = if replication_factor == -1 {
            1
        } else {
            replication_factor
        };
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.validate_new_topic(name, partitions, replication_factor, &configs)?;
        let record = TopicRecord {
            id: Uuid::new_v4(),
            partitions,
            configs,
            hosted: None,
        };
        let topic = Arc::new(self.open_topic(name, record.clone(), false)?);
        self.persist(name, &record)?;
        self.write_topics()
            .insert(Arc::clone(&topic.name), Arc::clone(&topic));
        tracing::info!(topic = name, partitions, "created topic");
        Ok(topic)
    }

    fn persist(&self, name: &str, record: &TopicRecord) -> Result<(), BrokerError> {
        let path = self.meta_path(name);
        let bytes = serde_json::to_vec_pretty(record)
            .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
        durable_file::replace(&path, &bytes).map_err(|e| LogError::io(&path, e))?;
        Ok(())
    }

    /// Deletes a topic and its data.
    pub fn delete(&self, name: &str) -> Result<Uuid, BrokerError> {
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let topic = self
            .write_topics()
            .remove(name)
            .ok_or_else(|| BrokerError::UnknownTopic {
                topic: name.to_string(),
            })?;
        let path = self.meta_path(name);
        fs::remove_file(&path).map_err(|e| LogError::io(&path, e))?;
        for partition in topic.hosted() {
            self.remove_partition_dir(&topic, partition.index);
        }
        tracing::info!(topic = name, "deleted topic");
        Ok(topic.id)
    }

    /// Drops this broker's replicas of some partitions of a topic, with their data (a
    /// reassignment moved them to other brokers).
    pub fn drop_replicas(&self, name: &str, indexes: &[i32]) -> Result<(), BrokerError> {
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let topic = self.get(name).ok_or_else(|| BrokerError::UnknownTopic {
            topic: name.to_string(),
        })?;
        let partitions = topic
            .partitions
            .iter()
            .enumerate()
            .map(|(index, partition)| {
                partition
                    .clone()
                    .filter(|_| !indexes.contains(&(index as i32)))
            })
            .collect();
        self.replace(
            &topic,
            partitions,
            topic.overrides.clone(),
            topic.config.clone(),
        )?;
        for &index in indexes {
            if topic.partition(index).is_some() {
                self.remove_partition_dir(&topic, index);
                tracing::info!(
                    topic = name,
                    partition = index,
                    "replica removed from this broker"
                );
            }
        }
        Ok(())
    }

    /// Renames a partition's directory out of the way, then removes it.
    fn remove_partition_dir(&self, topic: &Topic, index: i32) {
        let dir = self.partition_dir(&topic.name, index);
        let doomed = self.data_dir.join(format!(
            "{}-{index}.{}-delete",
            topic.name,
            topic.id.simple()
        ));
        if let Err(e) = fs::rename(&dir, &doomed) {
            tracing::warn!(dir = %dir.display(), error = %e, "could not rename a removed partition");
            return;
        }
        if let Err(e) = fs::remove_dir_all(&doomed) {
            tracing::warn!(dir = %doomed.display(), error = %e, "could not remove a removed partition");
        }
    }

    /// Grows a topic to `count` partitions.
    pub fn create_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), BrokerError> {
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let topic = self.get(name).ok_or_else(|| BrokerError::UnknownTopic {
            topic: name.to_string(),
        })?;
        let current = topic.partition_count();
        if count <= current {
            return Err(BrokerError::InvalidPartitions {
                count,
                reason: format!("topic currently has {current} partitions, which is higher than or equal to the requested {count}"),
            });
        }
        if count > MAX_PARTITIONS_PER_TOPIC {
            return Err(BrokerError::InvalidPartitions {
                count,
                reason: format!("at most {MAX_PARTITIONS_PER_TOPIC} partitions"),
            });
        }
        if validate_only {
            return Ok(());
        }
        let now_ms = self.clock.now_ms();
        let mut partitions = topic.partitions.clone();
        for index in current..count {
            let log = PartitionLog::open(
                &self.partition_dir(name, index),
                topic.config.clone(),
                false,
                now_ms,
            )?;
            partitions.push(Some(Arc::new(Partition::new(
                Arc::clone(&topic.name),
                index,
                log,
                0,
                Arc::clone(&self.clock),
            ))));
        }
        self.replace(
            &topic,
            partitions,
            topic.overrides.clone(),
            topic.config.clone(),
        )
    }

    /// Replaces a topic's config overrides (after validating each).
    pub fn set_overrides(
        &self,
        name: &str,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), BrokerError> {
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let topic = self.get(name).ok_or_else(|| BrokerError::UnknownTopic {
            topic: name.to_string(),
        })?;
        for (key, value) in &overrides {
            validate_topic_config(key, value)?;
        }
        if validate_only {
            return Ok(());
        }
        let config = self.config.current().log_config(&overrides);
        self.replace(&topic, topic.partitions.clone(), overrides, config.clone())?;
        for partition in topic.hosted() {
            partition.set_config(config.clone());
        }
        Ok(())
    }

    /// Persists and publishes a changed version of `topic` (copy-on-write).
    fn replace(
        &self,
        topic: &Topic,
        partitions: Vec<Option<Arc<Partition>>>,
        overrides: BTreeMap<String, String>,
        config: LogConfig,
    ) -> Result<(), BrokerError> {
        let all_hosted = partitions.iter().all(Option::is_some);
        let record = TopicRecord {
            id: topic.id,
            partitions: partitions.len() as i32,
            configs: overrides.clone(),
            hosted: (!all_hosted).then(|| {
                partitions
                    .iter()
                    .flatten()
                    .map(|partition| partition.index)
                    .collect()
            }),
        };
        self.persist(&topic.name, &record)?;
        let updated = Topic {
            name: Arc::clone(&topic.name),
            id: topic.id,
            partitions,
            overrides,
            config,
        };
        self.write_topics()
            .insert(Arc::clone(&topic.name), Arc::new(updated));
        Ok(())
    }

    /// Cluster mode: makes the local topic match the metadata — the topic `name` with `id`,
    /// `partition_count` partitions and this broker's replicas of `hosted` ones. A local topic
    /// of the same name but another id is an older, deleted incarnation and is removed first.
    pub fn adopt(
        &self,
        name: &str,
        id: Uuid,
        partition_count: i32,
        hosted: &[i32],
        configs: &BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, BrokerError> {
        if let Some(existing) = self.get(name) {
            if existing.id != id {
                self.delete(name)?;
            } else {
                let missing = (0..partition_count)
                    .any(|index| hosted.contains(&index) && existing.partition(index).is_none());
                let same_configs = existing.overrides == *configs
                    && existing.config == self.config.current().log_config(configs);
                if !missing && existing.partition_count() == partition_count && same_configs {
                    return Ok(existing);
                }
            }
        }
        let _admin = self.admin_lock.lock().unwrap_or_else(|p| p.into_inner());
        let config = self.config.current().log_config(configs);
        let now_ms = self.clock.now_ms();
        let existing = self.get(name);
        let name: Arc<str> = Arc::from(name);
        let mut partitions = Vec::with_capacity(partition_count.max(0) as usize);
        for index in 0..partition_count {
            let kept = existing.as_ref().and_then(|t| t.partition(index).cloned());
            let partition = match kept {
                Some(partition) => {
                    // Changed overrides (AlterConfigs through the controller) apply at once.
                    partition.set_config(config.clone());
                    Some(partition)
                }
                None if hosted.contains(&index) => {
                    let dir = self.partition_dir(&name, index);
                    let log = PartitionLog::open(&dir, config.clone(), false, now_ms)?;
                    let clock = Arc::clone(&self.clock);
                    Some(Arc::new(Partition::new_replica(
                        Arc::clone(&name),
                        index,
                        log,
                        clock,
                    )))
                }
                None => None,
            };
            partitions.push(partition);
        }
        let topic = Topic {
            name: Arc::clone(&name),
            id,
            partitions: Vec::new(),
            overrides: configs.clone(),
            config: config.clone(),
        };
        self.replace(&topic, partitions, configs.clone(), config)?;
        if existing.is_none() {
            tracing::info!(topic = %name, partitions = partition_count, hosted = ?hosted, "topic replicas created here");
        }
        self.get(&name).ok_or_else(|| BrokerError::UnknownTopic {
            topic: name.to_string(),
        })
    }

    /// Every partition of every topic.
    pub fn all_partitions(&self) -> Vec<Arc<Partition>> {
        self.read_topics()
            .values()
            .flat_map(|t| t.hosted().cloned().collect::<Vec<_>>())
            .collect()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        validate_topic_name("web.logs_v1-2").unwrap();
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a b").is_err());
        assert!(validate_topic_name("ümlaut").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        validate_topic_name(&"x".repeat(249)).unwrap();
    }
}
