//! The transaction coordinator service: every transactional id's state (`transaction::state`),
//! persisted to `__transaction_state` before it is acted on, and the markers that end a
//! transaction in each of its partitions (a single broker writes them directly — Kafka's
//! WriteTxnMarkers to itself).
//!
//! Ending a transaction: state → PrepareCommit/PrepareAbort (persisted: the decision), markers
//! to every partition (on `__consumer_offsets` also the pending offsets apply or go), state →
//! CompleteCommit/CompleteAbort (persisted). A crash in between leaves a Prepare state that
//! loading finishes. Open transactions past `transaction.timeout.ms` are aborted by `tick`,
//! with the producer's epoch bumped so that the zombie is fenced.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_protocol::ResponseError;

use crate::clock::Clock;
use crate::error::BrokerError;
use crate::group::offsets::OFFSETS_TOPIC;
use crate::group::GroupCoordinator;
use crate::log::control::MarkerKind;
use crate::producer::ProducerIdManager;
use crate::topic::{internal, Topic, TopicRegistry};
use crate::transaction::records::{self, TRANSACTION_STATE_TOPIC};
use crate::transaction::state::{TopicPartition, TxnMetadata, TxnState};

/// Coordinator epoch written in markers (one coordinator, never moved).
const COORDINATOR_EPOCH: i32 = 0;

/// Settings from the broker properties of the same names.
#[derive(Debug, Clone, Copy)]
pub struct TransactionSettings {
    /// `transaction.state.log.num.partitions`
    pub state_partitions: i32,
    /// `transaction.state.log.segment.bytes`
    pub state_segment_bytes: i64,
    /// `transaction.max.timeout.ms`
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an id with no transaction for this long is forgotten.
    pub id_expiration_ms: i64,
}

/// What the services the coordinator acts on.
pub struct TxnServices<'a> {
    pub topics: &'a TopicRegistry,
    pub groups: &'a GroupCoordinator,
    pub producer_ids: &'a ProducerIdManager,
}

pub struct TransactionCoordinator {
    transactions: Mutex<HashMap<String, TxnMetadata>>,
    settings: TransactionSettings,
    clock: Arc<dyn Clock>,
}

impl TransactionCoordinator {
    pub fn new(settings: TransactionSettings, clock: Arc<dyn Clock>) -> Self {
        TransactionCoordinator {
            transactions: Mutex::new(HashMap::new()),
            settings,
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, TxnMetadata>> {
        self.transactions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The transaction state topic, created on first use (compacted, like Kafka's).
    pub fn state_topic(&self, topics: &TopicRegistry) -> Result<Arc<Topic>, BrokerError> {
        let configs = BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            (
                "segment.bytes".to_string(),
                self.settings.state_segment_bytes.to_string(),
            ),
        ]);
        internal::ensure_topic(
            topics,
            TRANSACTION_STATE_TOPIC,
            self.settings.state_partitions,
            configs,
        )
    }

    /// Reads `__transaction_state` back and finishes the transactions a crash left decided but
    /// not complete. Open ones stay open: their timeout aborts them if the producer is gone.
    pub fn load(&self, services: &TxnServices<'_>) -> Result<usize, BrokerError> {
        let Some(topic) = services.topics.get(TRANSACTION_STATE_TOPIC) else {
            return Ok(0);
        };
        let mut loaded = HashMap::new();
        internal::for_each_record(&topic, |record| {
            let Some(id) = record.key.as_deref().and_then(records::decode_key) else {
                return;
            };
            match record.value.as_deref().and_then(records::decode_value) {
                Some(txn) => loaded.insert(id, txn),
                None => loaded.remove(&id),
            };
        })?;
        let count = loaded.len();
        let mut transactions = self.lock();
        *transactions = loaded;
        let preparing: Vec<String> = transactions
            .iter()
            .filter(|(_, txn)| txn.state.is_preparing())
            .map(|(id, _)| id.clone())
            .collect();
        for id in preparing {
            tracing::info!(transactional_id = %id, "finishing a transaction decided before the restart");
            self.finish(&mut transactions, services, &id)?;
        }
        Ok(count)
    }

    /// InitProducerId with a transactional id: a new incarnation of the producer. An open
    /// transaction of the previous one is aborted; its epoch is fenced.
    pub fn init_producer_id(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        timeout_ms: i32,
        current: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ResponseError> {
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        if timeout_ms <= 0 || timeout_ms > self.settings.max_timeout_ms {
            return Err(ResponseError::InvalidTransactionTimeout);
        }
        let now_ms = self.clock.now_ms();
        let mut transactions = self.lock();
        let mut txn = match transactions.get(transactional_id) {
            None => {
                let id = services
                    .producer_ids
                    .next_id()
                    .map_err(|e| crate::handler::errors::producer_id_error(&e))?;
                let txn = TxnMetadata::new(id, timeout_ms, now_ms);
                self.persist(services.topics, transactional_id, &txn)?;
                transactions.insert(transactional_id.to_string(), txn.clone());
                return Ok((txn.producer_id, txn.producer_epoch));
            }
            Some(existing) => existing.clone(),
        };
        // KIP-360: a producer naming its id and epoch must be the current incarnation.
        if let Some((producer_id, epoch)) = current.filter(|(id, _)| *id >= 0) {
            if producer_id != txn.producer_id || epoch != txn.producer_epoch {
                return Err(ResponseError::ProducerFenced);
            }
        }
        if txn.state == TxnState::Ongoing {
            txn.end(false, now_ms)?;
        }
        transactions.insert(transactional_id.to_string(), txn.clone());
        if txn.state.is_preparing() {
            self.finish(&mut transactions, services, transactional_id)
                .map_err(|e| crate::handler::errors::error_for(&e))?;
            txn = transactions[transactional_id].clone();
        }
        txn.timeout_ms = timeout_ms;
        txn.forget_last_end();
        // As Kafka: the new incarnation starts with no transaction.
        txn.state = TxnState::Empty;
        txn.partitions.clear();
        txn.start_ms = -1;
        if txn.bump_epoch(now_ms).is_none() {
            txn.producer_id = services
                .producer_ids
                .next_id()
                .map_err(|e| crate::handler::errors::producer_id_error(&e))?;
            txn.producer_epoch = 0;
        }
        self.persist(services.topics, transactional_id, &txn)?;
        let answer = (txn.producer_id, txn.producer_epoch);
        transactions.insert(transactional_id.to_string(), txn);
        Ok(answer)
    }

    /// AddPartitionsToTxn. Unknown partitions fail the whole request, as in Kafka: those get
    /// UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED.
    pub fn add_partitions(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, Option<ResponseError>)>, ResponseError> {
        let unknown = |(topic, partition): &TopicPartition| {
            topics
                .get(topic)
                .and_then(|t| t.partition(*partition).cloned())
                .is_none()
        };
        if partitions.iter().any(unknown) {
            return Ok(partitions
                .into_iter()
                .map(|tp| {
                    let error = if unknown(&tp) {
                        ResponseError::UnknownTopicOrPartition
                    } else {
                        ResponseError::OperationNotAttempted
                    };
                    (tp, Some(error))
                })
                .collect());
        }
        self.update(
            topics,
            transactional_id,
            producer_id,
            epoch,
            |txn, now_ms| txn.add_partitions(partitions.iter().cloned(), now_ms),
        )?;
        Ok(partitions.into_iter().map(|tp| (tp, None)).collect())
    }

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    pub fn add_offsets(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group_id: &str,
    ) -> Result<(), ResponseError> {
        let (_, partition) = services
            .groups
            .offsets_partition(services.topics, group_id)
            .map_err(|e| crate::handler::errors::error_for(&e))?;
        let tp = (OFFSETS_TOPIC.to_string(), partition.index);
        self.update(
            services.topics,
            transactional_id,
            producer_id,
            epoch,
            |txn, now_ms| txn.add_partitions([tp], now_ms),
        )
    }

    /// Whether a transactional produce from `producer_id`/`epoch` to a partition belongs to an
    /// open transaction that added it (KIP-890 part 1).
    pub fn verify(&self, producer_id: i64, epoch: i16, topic: &str, partition: i32) -> bool {
        let tp = (topic.to_string(), partition);
        self.lock()
            .values()
            .any(|txn| txn.covers(producer_id, epoch, &tp))
    }

    /// Transaction version 2 (KIP-890 part 2): a transactional produce adds its partition to
    /// the transaction itself (Produce v12+), instead of an AddPartitionsToTxn before it.
    pub fn add_partition_for_produce(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: TopicPartition,
    ) -> Result<(), ResponseError> {
        let added = self.add_partitions(
            topics,
            transactional_id,
            producer_id,
            epoch,
            vec![partition],
        )?;
        match added.into_iter().find_map(|(_, error)| error) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// EndTxn: commit or abort the open transaction. With `bump_epoch` (transaction version 2,
    /// EndTxn v5+) the producer's epoch goes up with every transaction. Returns the producer id
    /// and epoch the client continues with.
    pub fn end_txn(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        bump_epoch: bool,
    ) -> Result<(i64, i16), ResponseError> {
        let now_ms = self.clock.now_ms();
        let mut transactions = self.lock();
        let mut txn = transactions
            .get(transactional_id)
            .cloned()
            .ok_or(ResponseError::InvalidProducerIdMapping)?;
        let decided = if bump_epoch {
            let new_producer_id = || {
                services
                    .producer_ids
                    .next_id()
                    .map_err(|e| crate::handler::errors::producer_id_error(&e))
            };
            txn.end_bumping_epoch(producer_id, epoch, commit, now_ms, new_producer_id)?
        } else {
            txn.check_producer(producer_id, epoch)?;
            txn.end(commit, now_ms)?
        };
        if decided {
            self.persist(services.topics, transactional_id, &txn)?;
            transactions.insert(transactional_id.to_string(), txn);
            self.finish(&mut transactions, services, transactional_id)
                .map_err(|e| crate::handler::errors::error_for(&e))?;
        }
        let txn = &transactions[transactional_id];
        Ok((txn.producer_id, txn.producer_epoch))
    }

    /// Aborts open transactions past their timeout, fencing their producers.
    pub fn tick(&self, services: &TxnServices<'_>) {
        let now_ms = self.clock.now_ms();
        let mut transactions = self.lock();
        let expired: Vec<String> = transactions
            .iter()
            .filter(|(_, txn)| txn.is_expired(now_ms) || txn.state.is_preparing())
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            let mut txn = transactions[&id].clone();
            if txn.state == TxnState::Ongoing {
                tracing::info!(transactional_id = %id, producer_id = txn.producer_id, "aborting a transaction past its timeout");
                // The abort is written with a bumped epoch: the timed-out producer is fenced.
                if txn.bump_epoch(now_ms).is_none() {
                    tracing::warn!(transactional_id = %id, "producer epoch exhausted; aborting without fencing");
                }
                let _ = txn.end(false, now_ms);
                if let Err(error) = self.persist(services.topics, &id, &txn) {
                    tracing::warn!(transactional_id = %id, ?error, "could not persist a timeout abort");
                    continue;
                }
                transactions.insert(id.clone(), txn);
            }
            if let Err(error) = self.finish(&mut transactions, services, &id) {
                tracing::warn!(transactional_id = %id, %error, "could not finish a transaction; retrying later");
            }
        }
    }

    /// Forgets transactional ids idle (no open transaction) for `transactional.id.expiration.ms`,
    /// as Kafka does: a tombstone in `__transaction_state`.
    pub fn expire_ids(&self, topics: &TopicRegistry) {
        let now_ms = self.clock.now_ms();
        let mut transactions = self.lock();
        let expired: Vec<String> = transactions
            .iter()
            .filter(|(_, txn)| {
                matches!(
                    txn.state,
                    TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
                ) && now_ms.saturating_sub(txn.last_update_ms) > self.settings.id_expiration_ms
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            match self.write_record(topics, &id, None) {
                Ok(()) => {
                    tracing::info!(transactional_id = %id, "transactional id expired");
                    transactions.remove(&id);
                }
                Err(error) => tracing::warn!(transactional_id = %id, ?error, "could not expire"),
            }
        }
    }

    /// The state of every transactional id (DescribeTransactions, ListTransactions).
    pub fn snapshot(&self) -> BTreeMap<String, TxnMetadata> {
        self.lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Applies `change` to an id's state after checking the producer, and persists it.
    fn update(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        change: impl FnOnce(&mut TxnMetadata, i64) -> Result<(), ResponseError>,
    ) -> Result<(), ResponseError> {
        let now_ms = self.clock.now_ms();
        let mut transactions = self.lock();
        let mut txn = transactions
            .get(transactional_id)
            .cloned()
            .ok_or(ResponseError::InvalidProducerIdMapping)?;
        txn.check_producer(producer_id, epoch)?;
        let before = txn.clone();
        change(&mut txn, now_ms)?;
        if txn.partitions != before.partitions || txn.state != before.state {
            self.persist(topics, transactional_id, &txn)?;
        }
        transactions.insert(transactional_id.to_string(), txn);
        Ok(())
    }

    /// Writes the markers of a decided transaction and completes it.
    fn finish(
        &self,
        transactions: &mut HashMap<String, TxnMetadata>,
        services: &TxnServices<'_>,
        transactional_id: &str,
    ) -> Result<(), BrokerError> {
        let Some(mut txn) = transactions.get(transactional_id).cloned() else {
            return Ok(());
        };
        let commit = match txn.state {
            TxnState::PrepareCommit => true,
            TxnState::PrepareAbort => false,
            _ => return Ok(()),
        };
        let kind = if commit {
            MarkerKind::Commit
        } else {
            MarkerKind::Abort
        };
        for (topic, index) in &txn.partitions {
            // A deleted topic needs no marker.
            let Some(partition) = services
                .topics
                .get(topic)
                .and_then(|t| t.partition(*index).cloned())
            else {
                continue;
            };
            partition.append_marker(
                txn.producer_id,
                txn.producer_epoch,
                kind,
                COORDINATOR_EPOCH,
            )?;
            if topic == OFFSETS_TOPIC {
                services.groups.complete_txn(txn.producer_id, commit);
            }
        }
        txn.complete(self.clock.now_ms());
        self.persist(services.topics, transactional_id, &txn)
            .map_err(|error| {
                BrokerError::InvalidRequest(format!("persisting {transactional_id}: {error:?}"))
            })?;
        transactions.insert(transactional_id.to_string(), txn);
        Ok(())
    }

    /// Appends the id's state to its `__transaction_state` partition.
    fn persist(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        txn: &TxnMetadata,
    ) -> Result<(), ResponseError> {
        self.write_record(topics, transactional_id, Some(txn))
    }

    /// Appends the id's record (`None`: a tombstone) to its `__transaction_state` partition.
    fn write_record(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        txn: Option<&TxnMetadata>,
    ) -> Result<(), ResponseError> {
        let write = || -> Result<(), BrokerError> {
            let topic = self.state_topic(topics)?;
            let index = crate::group::offsets::partition_for(
                transactional_id,
                topic.partitions.len() as i32,
            );
            let partition =
                topic
                    .partition(index)
                    .ok_or_else(|| BrokerError::UnknownTopicOrPartition {
                        topic: TRANSACTION_STATE_TOPIC.into(),
                        partition: index,
                    })?;
            let record = (
                records::encode_key(transactional_id),
                txn.map(records::encode_value),
            );
            let batch = internal::key_value_batch(vec![record], None, self.clock.now_ms())?;
            partition.append(batch)?;
            Ok(())
        };
        write().map_err(|error| {
            tracing::error!(transactional_id, %error, "cannot persist transaction state");
            crate::handler::errors::error_for(&error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::BrokerConfig;

    #[test]
    fn idle_transactional_ids_expire_and_stay_expired_after_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().into());
        let topics = TopicRegistry::open(config.clone(), clock.clone(), false).unwrap();
        let groups = GroupCoordinator::new(config.group_limits(), 3, clock.clone());
        std::fs::create_dir_all(dir.path().join("meta")).unwrap();
        let producer_ids = ProducerIdManager::open(&dir.path().join("meta")).unwrap();
        let services = TxnServices {
            topics: &topics,
            groups: &groups,
            producer_ids: &producer_ids,
        };
        let settings = TransactionSettings {
            state_partitions: 3,
            state_segment_bytes: 1 << 20,
            max_timeout_ms: 60_000,
            id_expiration_ms: 10_000,
        };
        let coordinator = TransactionCoordinator::new(settings, clock.clone());
        coordinator
            .init_producer_id(&services, "idle", 30_000, None)
            .unwrap();
        clock.advance_ms(5_000);
        coordinator
            .init_producer_id(&services, "busy", 30_000, None)
            .unwrap();
        topics.create("t", 1, 1, Default::default()).unwrap();
        let (id, epoch) = coordinator
            .init_producer_id(&services, "open", 30_000, None)
            .unwrap();
        coordinator
            .add_partitions(&topics, "open", id, epoch, vec![("t".into(), 0)])
            .unwrap();
        clock.advance_ms(6_000); // "idle" 11 s idle, "busy" 6 s, "open" has a transaction
        coordinator.expire_ids(&topics);
        let left: Vec<String> = coordinator.snapshot().into_keys().collect();
        assert_eq!(left, vec!["busy".to_string(), "open".to_string()]);
        let reloaded = TransactionCoordinator::new(settings, clock);
        reloaded.load(&services).unwrap();
        let left: Vec<String> = reloaded.snapshot().into_keys().collect();
        assert_eq!(
            left,
            vec!["busy".to_string(), "open".to_string()],
            "the tombstone holds"
        );
    }
}
