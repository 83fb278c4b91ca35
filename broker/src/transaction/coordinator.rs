//! The transaction coordinator service: every transactional id's state (`transaction::state`),
//! persisted to `__transaction_state` before it is acted on, and the markers that end a
//! transaction in each of its partitions (`transaction::markers`).
//!
//! Alone, this broker coordinates every transactional id. In a cluster, an id's coordinator is
//! the leader of its `__transaction_state` partition (Kafka's rule): leading a partition loads
//! its ids from the log ([`TransactionCoordinator::leadership_changed`]), losing it drops them;
//! the partition's leader epoch is the coordinator epoch written into markers, so a deposed
//! coordinator's late markers are refused. Elsewhere requests get NOT_COORDINATOR.
//!
//! Every change of an id's state is a [`transition`](TransactionCoordinator::transition):
//! decided on the current state, appended to the id's partition, and taken into memory only
//! once the partition's in-sync replicas hold it. Meanwhile the id is *pending*: other requests
//! for it get CONCURRENT_TRANSACTIONS (clients retry), as in Kafka.
//!
//! Ending a transaction: state → PrepareCommit/PrepareAbort (the decision), markers to every
//! partition (on `__consumer_offsets` also the pending offsets apply or go), state →
//! CompleteCommit/CompleteAbort. EndTxn finishes it itself when it can within
//! [`FINISH_WAIT`]; otherwise — and for decisions found on loading, and for open transactions
//! past `transaction.timeout.ms` (aborted with the producer's epoch bumped, fencing the zombie)
//! — the id is queued for the broker's settling task (`server::background`), which retries
//! until the markers are written or the coordinator moved.
//!
//! Here: the requests and leadership changes; `persist` the transition and its pending guard;
//! `settle` the markers, completion and timeouts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::clock::Clock;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::group::offsets::{self, OFFSETS_TOPIC};
use crate::group::GroupCoordinator;
use crate::producer::ProducerIdManager;
use crate::topic::{internal, Topic, TopicRegistry};
use crate::transaction::channel::BrokerChannel;
use crate::transaction::markers::MarkerWriter;
use crate::transaction::records::{self, TRANSACTION_STATE_TOPIC};
use crate::transaction::state::{TopicPartition, TxnMetadata, TxnState};
use crate::transaction::TxnError;

/// How long EndTxn (and InitProducerId ending a previous transaction) waits for the markers
/// before answering; the settling task carries on after that.
pub const FINISH_WAIT: Duration = Duration::from_secs(5);
/// Pause between rounds of markers that could not all be written.
const MARKER_RETRY_BACKOFF: Duration = Duration::from_millis(100);
const MAX_MARKER_RETRY_BACKOFF: Duration = Duration::from_secs(1);

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
    /// `transaction.state.log.replication.factor` (cluster mode)
    pub state_replication_factor: i32,
    /// `transaction.state.log.min.isr` (cluster mode; at most the replication factor)
    pub state_min_isr: i32,
}

impl TransactionSettings {
    pub fn from_config(config: &BrokerConfig) -> Self {
        Self {
            state_partitions: config.long_or("transaction.state.log.num.partitions", 50) as i32,
            state_segment_bytes: config.long_or("transaction.state.log.segment.bytes", 104_857_600),
            max_timeout_ms: config.long_or("transaction.max.timeout.ms", 900_000) as i32,
            id_expiration_ms: config.long_or("transactional.id.expiration.ms", 604_800_000),
            state_replication_factor: config.long_or("transaction.state.log.replication.factor", 3)
                as i32,
            state_min_isr: config.long_or("transaction.state.log.min.isr", 2) as i32,
        }
    }
}

/// What the coordinator acts on.
pub struct TxnServices<'a> {
    pub topics: &'a TopicRegistry,
    pub groups: &'a GroupCoordinator,
    pub producer_ids: &'a ProducerIdManager,
    pub channel: &'a BrokerChannel,
}

impl TxnServices<'_> {
    fn markers(&self) -> MarkerWriter<'_> {
        MarkerWriter {
            topics: self.topics,
            groups: self.groups,
            channel: self.channel,
        }
    }
}

#[derive(Default)]
struct CoordinatorState {
    transactions: HashMap<String, TxnMetadata>,
    /// Ids whose next state is being replicated, or whose markers are being written.
    pending: HashSet<String>,
    /// Ids for the settling task: decided transactions, and open ones past their timeout.
    to_settle: BTreeSet<String>,
    /// Cluster mode: `__transaction_state` partitions led here → leader epoch (the
    /// coordinator epoch of their ids' markers).
    owned: BTreeMap<i32, i32>,
}

pub struct TransactionCoordinator {
    state: Mutex<CoordinatorState>,
    settings: TransactionSettings,
    clock: Arc<dyn Clock>,
    in_cluster: AtomicBool,
    settle_queued: Notify,
    /// Bumped whenever a transaction completes.
    completions: watch::Sender<u64>,
}

/// What a transition decides.
enum Step<T> {
    /// Persist this state, then answer.
    Write(TxnMetadata, T),
    /// Nothing to persist.
    Answer(T),
}

impl TransactionCoordinator {
    pub fn new(settings: TransactionSettings, clock: Arc<dyn Clock>) -> Self {
        TransactionCoordinator {
            state: Mutex::new(CoordinatorState::default()),
            settings,
            clock,
            in_cluster: AtomicBool::new(false),
            settle_queued: Notify::new(),
            completions: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, CoordinatorState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Cluster mode: ids are served only once their state partition is led and loaded here.
    pub fn follow_partition_leadership(&self) {
        self.in_cluster.store(true, Ordering::Release);
    }

    fn in_cluster(&self) -> bool {
        self.in_cluster.load(Ordering::Acquire)
    }

    /// The transaction state topic's configs: compacted like Kafka's; in a cluster its writes
    /// need `transaction.state.log.min.isr` replicas.
    pub fn state_topic_configs(&self) -> BTreeMap<String, String> {
        let mut configs = BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            (
                "segment.bytes".to_string(),
                self.settings.state_segment_bytes.to_string(),
            ),
        ]);
        if self.in_cluster() {
            let min_isr = self
                .settings
                .state_min_isr
                .min(self.settings.state_replication_factor);
            configs.insert("min.insync.replicas".to_string(), min_isr.to_string());
        }
        configs
    }

    pub fn settings(&self) -> &TransactionSettings {
        &self.settings
    }

    /// The transaction state topic: alone, created on first use; in a cluster the controller
    /// creates it (FindCoordinator asks) and it is only read here.
    pub fn state_topic(&self, topics: &TopicRegistry) -> Result<Arc<Topic>, BrokerError> {
        if self.in_cluster() {
            return topics
                .get(TRANSACTION_STATE_TOPIC)
                .ok_or(BrokerError::UnknownTopic {
                    topic: TRANSACTION_STATE_TOPIC.into(),
                });
        }
        internal::ensure_topic(
            topics,
            TRANSACTION_STATE_TOPIC,
            self.settings.state_partitions,
            self.state_topic_configs(),
        )
    }

    /// The `__transaction_state` partition of `transactional_id`.
    pub fn partition_of(&self, topics: &TopicRegistry, transactional_id: &str) -> i32 {
        let partitions = topics
            .get(TRANSACTION_STATE_TOPIC)
            .map_or(self.settings.state_partitions, |t| {
                t.partitions.len() as i32
            });
        offsets::partition_for(transactional_id, partitions)
    }

    fn still_owns(&self, state: &CoordinatorState, partition: i32, epoch: i32) -> bool {
        !self.in_cluster() || state.owned.get(&partition) == Some(&epoch)
    }

    /// The coordinator epoch for `transactional_id`'s partition, or NOT_COORDINATOR.
    fn coordinator_epoch(&self, state: &CoordinatorState, partition: i32) -> Result<i32, TxnError> {
        if !self.in_cluster() {
            return Ok(0);
        }
        state
            .owned
            .get(&partition)
            .copied()
            .ok_or(TxnError::NotCoordinator)
    }

    /// NOT_COORDINATOR for an id this broker does not coordinate (DescribeTransactions).
    pub fn coordinator_error(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
    ) -> Option<TxnError> {
        let partition = self.partition_of(topics, transactional_id);
        self.coordinator_epoch(&self.lock(), partition).err()
    }

    /// Alone: reads `__transaction_state` back at start-up; decided transactions are queued to
    /// be finished. Open ones stay open: their timeout aborts them if the producer is gone.
    pub fn load(&self, topics: &TopicRegistry) -> Result<usize, BrokerError> {
        let Some(topic) = topics.get(TRANSACTION_STATE_TOPIC) else {
            return Ok(0);
        };
        let mut loaded = HashMap::new();
        internal::for_each_record(&topic, |record| apply_record(&mut loaded, record))?;
        let count = loaded.len();
        let mut state = self.lock();
        state.transactions = loaded;
        self.queue_decided(&mut state);
        Ok(count)
    }

    /// Cluster mode: this broker now leads partition `index` of `__transaction_state` at
    /// `leader_epoch` (`None`: it no longer does); its ids are loaded from the log, or dropped.
    pub fn leadership_changed(
        &self,
        topics: &TopicRegistry,
        index: i32,
        leader_epoch: Option<i32>,
    ) -> Result<(), BrokerError> {
        if !self.in_cluster() {
            return Ok(());
        }
        let belongs = |id: &str| self.partition_of(topics, id) == index;
        let mut state = self.lock();
        if state.owned.get(&index).copied() == leader_epoch {
            return Ok(());
        }
        state.transactions.retain(|id, _| !belongs(id));
        state.to_settle.retain(|id| !belongs(id));
        state.owned.remove(&index);
        let Some(leader_epoch) = leader_epoch else {
            tracing::info!(
                partition = index,
                "no longer coordinating the transactions of this state partition"
            );
            return Ok(());
        };
        let partition = topics.partition(TRANSACTION_STATE_TOPIC, index)?;
        let mut loaded = HashMap::new();
        internal::for_each_record_of(&partition, |record| apply_record(&mut loaded, record))?;
        let count = loaded.len();
        state.transactions.extend(loaded);
        state.owned.insert(index, leader_epoch);
        self.queue_decided(&mut state);
        tracing::info!(
            partition = index,
            leader_epoch,
            transactional_ids = count,
            "coordinating the transactions of this state partition"
        );
        Ok(())
    }

    /// InitProducerId with a transactional id: a new incarnation of the producer. An open
    /// transaction of the previous one is aborted first; its epoch is fenced.
    pub async fn init_producer_id(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        timeout_ms: i32,
        current: Option<(i64, i16)>,
    ) -> Result<(i64, i16), TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest {
                reason: "the transactional id is empty",
            });
        }
        if timeout_ms <= 0 || timeout_ms > self.settings.max_timeout_ms {
            return Err(TxnError::InvalidTimeout {
                timeout_ms,
                max_timeout_ms: self.settings.max_timeout_ms,
            });
        }
        // At most: abort the open transaction, finish it, start the new incarnation.
        for _ in 0..3 {
            let step = self
                .transition(services, transactional_id, |existing, now_ms| {
                    init_step(services, existing, timeout_ms, current, now_ms)
                })
                .await?;
            match step {
                Some(answer) => return Ok(answer),
                None => self.finish_in_time(services, transactional_id).await?,
            }
        }
        Err(TxnError::Concurrent)
    }

    /// AddPartitionsToTxn. Unknown partitions fail the whole request, as in Kafka: those get
    /// UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED.
    pub async fn add_partitions(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, Option<TxnError>)>, TxnError> {
        let unknown: Vec<bool> = partitions
            .iter()
            .map(|tp| !partition_exists(services, tp))
            .collect();
        if unknown.iter().any(|u| *u) {
            return Ok(partitions
                .into_iter()
                .zip(unknown)
                .map(|(tp, unknown)| {
                    let error = if unknown {
                        TxnError::UnknownPartition {
                            topic: tp.0.clone(),
                            partition: tp.1,
                        }
                    } else {
                        TxnError::NotAttempted
                    };
                    (tp, Some(error))
                })
                .collect());
        }
        let added = partitions.clone();
        self.update(
            services,
            transactional_id,
            producer_id,
            epoch,
            |txn, now| txn.add_partitions(added, now),
        )
        .await?;
        Ok(partitions.into_iter().map(|tp| (tp, None)).collect())
    }

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    pub async fn add_offsets(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group_id: &str,
    ) -> Result<(), TxnError> {
        let partition = services
            .groups
            .offsets_partition_index(services.topics, group_id);
        let tp = (OFFSETS_TOPIC.to_string(), partition);
        self.update(
            services,
            transactional_id,
            producer_id,
            epoch,
            |txn, now| txn.add_partitions([tp], now),
        )
        .await
    }

    /// Whether a transactional write of `transactional_id`'s producer (`producer_id`/`epoch`)
    /// to a partition belongs to its open transaction (KIP-890 part 1), and if not, why. Only
    /// ids coordinated here are known.
    pub fn verify(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: &TopicPartition,
    ) -> Result<(), TxnError> {
        match self.lock().transactions.get(transactional_id) {
            Some(txn) => txn.verify(producer_id, epoch, partition),
            None => Err(TxnError::UnknownTransactionalId),
        }
    }

    /// Transaction version 2 (KIP-890 part 2): a transactional produce adds its partition to
    /// the transaction itself (Produce v12+), instead of an AddPartitionsToTxn before it.
    pub async fn add_partition_for_produce(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: TopicPartition,
    ) -> Result<(), TxnError> {
        let added = self
            .add_partitions(
                services,
                transactional_id,
                producer_id,
                epoch,
                vec![partition],
            )
            .await?;
        match added.into_iter().find_map(|(_, error)| error) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// EndTxn: commit or abort the open transaction. With `bump_epoch` (transaction version 2,
    /// EndTxn v5+) the producer's epoch goes up with every transaction. Returns the producer id
    /// and epoch the client continues with. Answered once the markers are written, or after
    /// [`FINISH_WAIT`] with the decision persisted and the markers still on their way.
    pub async fn end_txn(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        bump_epoch: bool,
    ) -> Result<(i64, i16), TxnError> {
        let (decided, continues_as) = self
            .transition(services, transactional_id, |existing, now_ms| {
                let mut txn = existing.cloned().ok_or(TxnError::UnknownTransactionalId)?;
                let decided = if bump_epoch {
                    let new_producer_id = || next_producer_id(services);
                    txn.end_bumping_epoch(producer_id, epoch, commit, now_ms, new_producer_id)?
                } else {
                    txn.check_producer(producer_id, epoch)?;
                    txn.end(commit, now_ms)?
                };
                let continues_as = txn.continues_as();
                Ok(match decided {
                    true => Step::Write(txn, (true, continues_as)),
                    false => Step::Answer((false, continues_as)),
                })
            })
            .await?;
        if decided {
            if let Err(error) = self.finish_in_time(services, transactional_id).await {
                // The decision stands; the settling task (or the next coordinator) ends it.
                tracing::debug!(transactional_id, %error, "transaction decided, markers still on their way");
            }
        }
        Ok(continues_as)
    }

    /// Forgets transactional ids idle (no open transaction) for `transactional.id.expiration.ms`,
    /// as Kafka does: a tombstone in `__transaction_state`.
    pub fn expire_ids(&self, topics: &TopicRegistry) {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let expired: Vec<String> = state
            .transactions
            .iter()
            .filter(|(id, txn)| {
                matches!(
                    txn.state,
                    TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
                ) && now_ms.saturating_sub(txn.last_update_ms) > self.settings.id_expiration_ms
                    && !state.pending.contains(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            match self.append_record(topics, &id, None) {
                Ok(_) => {
                    tracing::info!(transactional_id = %id, "transactional id expired");
                    state.transactions.remove(&id);
                }
                Err(error) => tracing::warn!(transactional_id = %id, ?error, "could not expire"),
            }
        }
    }

    /// The state of every transactional id coordinated here (DescribeTransactions,
    /// ListTransactions).
    pub fn snapshot(&self) -> BTreeMap<String, TxnMetadata> {
        self.lock()
            .transactions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Applies `change` to an id's state after checking the producer, and persists it if it
    /// changed anything.
    async fn update(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        change: impl FnOnce(&mut TxnMetadata, i64) -> Result<(), TxnError>,
    ) -> Result<(), TxnError> {
        self.transition(services, transactional_id, |existing, now_ms| {
            let mut txn = existing.cloned().ok_or(TxnError::UnknownTransactionalId)?;
            txn.check_producer(producer_id, epoch)?;
            let before = txn.clone();
            change(&mut txn, now_ms)?;
            let changed = txn.partitions != before.partitions || txn.state != before.state;
            Ok(match changed {
                true => Step::Write(txn, ()),
                false => Step::Answer(()),
            })
        })
        .await
    }
}

/// A record of `__transaction_state` applied to the ids being loaded.
fn apply_record(
    loaded: &mut HashMap<String, TxnMetadata>,
    record: kafka_protocol::records::Record,
) {
    let skipped = |reason: &str| {
        tracing::warn!(
            offset = record.offset,
            reason,
            "skipping a __transaction_state record while loading"
        );
    };
    let Some(id) = record.key.as_deref().and_then(records::decode_key) else {
        skipped("its key does not decode");
        return;
    };
    match record.value.as_deref().map(records::decode_value) {
        Some(Some(txn)) => loaded.insert(id, txn),
        // A damaged value is not a tombstone: the state loaded before stays.
        Some(None) => {
            skipped("its value does not decode");
            None
        }
        None => loaded.remove(&id),
    };
}

fn partition_exists(services: &TxnServices<'_>, (topic, index): &TopicPartition) -> bool {
    let image = services.channel.image();
    crate::topic::partition_exists(services.topics, image.as_deref(), topic, *index)
}

fn next_producer_id(services: &TxnServices<'_>) -> Result<i64, TxnError> {
    Ok(services.producer_ids.next_id()?)
}

/// InitProducerId's decision on the id's current state: a new id, the next epoch — or first the
/// abort of the previous incarnation's open transaction (`None`: finish that, then ask again).
fn init_step(
    services: &TxnServices<'_>,
    existing: Option<&TxnMetadata>,
    timeout_ms: i32,
    current: Option<(i64, i16)>,
    now_ms: i64,
) -> Result<Step<Option<(i64, i16)>>, TxnError> {
    let Some(existing) = existing else {
        let txn = TxnMetadata::new(next_producer_id(services)?, timeout_ms, now_ms);
        let answer = (txn.producer_id, txn.producer_epoch);
        return Ok(Step::Write(txn, Some(answer)));
    };
    // KIP-360: a producer naming its id and epoch must be the current incarnation.
    if let Some((producer_id, epoch)) = current.filter(|(id, _)| *id >= 0) {
        if producer_id != existing.producer_id || epoch != existing.producer_epoch {
            return Err(TxnError::Fenced {
                requested: epoch,
                current: existing.producer_epoch,
            });
        }
    }
    let mut txn = existing.clone();
    match txn.state {
        TxnState::Ongoing => {
            txn.end(false, now_ms)?;
            return Ok(Step::Write(txn, None));
        }
        TxnState::PrepareCommit | TxnState::PrepareAbort => return Ok(Step::Answer(None)),
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {}
    }
    txn.timeout_ms = timeout_ms;
    txn.forget_last_end();
    // As Kafka: the new incarnation starts with no transaction.
    txn.state = TxnState::Empty;
    txn.partitions.clear();
    txn.start_ms = -1;
    if txn.bump_epoch(now_ms).is_none() {
        txn.producer_id = next_producer_id(services)?;
        txn.producer_epoch = 0;
    }
    let answer = (txn.producer_id, txn.producer_epoch);
    Ok(Step::Write(txn, Some(answer)))
}

mod persist;
mod settle;
#[cfg(test)]
mod tests;
