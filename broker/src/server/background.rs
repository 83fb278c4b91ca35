//! Background work: retention, removed segments' files after `file.delete.delay.ms`, log
//! compaction, transaction timeouts, producer expiry, periodic flushes (`flush.ms`,
//! `flush.messages`), recovery-point and high watermark checkpoints, group ticks, the expiry of
//! empty groups' offsets and (cluster mode) the sweep for followers that fell out of the ISR.
//! Each loop stops when shutdown is signalled.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::context::BrokerContext;
use crate::log::compaction::CleanerSettings;
use crate::replication::fetcher::ReplicaSettings;
use crate::transaction::TxnError;

/// How often partitions are checked for a due flush.
const FLUSH_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How often removed segments' files are checked for a passed `file.delete.delay.ms`.
const RETIRED_FILES_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// How often recovery points are written (Kafka's `log.flush.offset.checkpoint.interval.ms`).
const RECOVERY_POINT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);
/// How often high watermarks are written in a cluster (Kafka's
/// `replica.high.watermark.checkpoint.interval.ms`).
const HIGH_WATERMARK_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);

pub(super) fn spawn(
    tasks: &mut JoinSet<()>,
    context: Arc<BrokerContext>,
    shutdown: watch::Receiver<bool>,
) {
    let retention_interval = Duration::from_millis(context.config().retention_check_interval_ms());
    tasks.spawn(every(retention_interval, shutdown.clone(), {
        let context = Arc::clone(&context);
        move || enforce_retention(&context)
    }));
    tasks.spawn(every(RETIRED_FILES_CHECK_INTERVAL, shutdown.clone(), {
        let context = Arc::clone(&context);
        move || delete_retired_files(&context)
    }));
    tasks.spawn(flush_loop(Arc::clone(&context), shutdown.clone()));
    let txn_check = Duration::from_millis(context.config().transaction_abort_check_interval_ms());
    tasks.spawn(every(txn_check, shutdown.clone(), {
        let context = Arc::clone(&context);
        move || {
            context.transactions.tick();
            context.transactions.expire_ids(&context.topics);
        }
    }));
    tasks.spawn(settle_transactions(Arc::clone(&context), shutdown.clone()));
    // `producer.id.expiration.ms` is dynamic: read at every check.
    let (_, producer_check_ms) = context.config().producer_expiration();
    tasks.spawn(every(
        Duration::from_millis(producer_check_ms),
        shutdown.clone(),
        {
            let context = Arc::clone(&context);
            move || expire_producers(&context, context.config().producer_expiration().0)
        },
    ));
    if CleanerSettings::from_config(&context.config()).enabled {
        tasks.spawn(cleaner_loop(Arc::clone(&context), shutdown.clone()));
    }
    // KIP-211: an empty group's offsets expire `offsets.retention.minutes` after its last
    // commit (or its last member), checked every `offsets.retention.check.interval.ms`.
    let offsets_retention_ms = context.config().offsets_retention_ms();
    tasks.spawn(every(
        Duration::from_millis(context.config().offsets_retention_check_interval_ms()),
        shutdown.clone(),
        {
            let context = Arc::clone(&context);
            move || {
                context
                    .groups
                    .expire_offsets(&context.topics, offsets_retention_ms)
            }
        },
    ));
    tasks.spawn(every(
        crate::group::coordinator::TICK_INTERVAL,
        shutdown.clone(),
        {
            let context = Arc::clone(&context);
            move || context.groups.tick(&context.topics)
        },
    ));
    if context.replication.is_some() {
        let lag_time_max_ms = ReplicaSettings::from_config(&context.config()).lag_time_max_ms;
        tasks.spawn(every(
            crate::replication::isr::lagging_check_period(lag_time_max_ms),
            shutdown.clone(),
            {
                let context = Arc::clone(&context);
                move || {
                    let replication = context.replication.as_ref();
                    crate::replication::isr::propose_lagging_shrinks(&context.topics, replication)
                }
            },
        ));
    }
    if context.cluster.is_some() {
        tasks.spawn(every(
            HIGH_WATERMARK_CHECKPOINT_INTERVAL,
            shutdown.clone(),
            {
                let context = Arc::clone(&context);
                move || checkpoint_high_watermarks(&context)
            },
        ));
    }
    tasks.spawn(every(RECOVERY_POINT_CHECKPOINT_INTERVAL, shutdown, move || {
        for partition in context.topics.all_partitions() {
            let log = partition.log();
            if let Err(error) = log.checkpoint_recovery_point() {
                if !log.dir().exists() {
                    continue; // deleted with its topic meanwhile
                }
                tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "recovery point checkpoint failed");
            }
        }
    }));
}

async fn every(
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
    mut work: impl FnMut() + Send + 'static,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => work(),
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
    }
}

/// Finishes the transactions the coordinator queues (decided ones whose markers are not all
/// written, open ones past their timeout), each in its own task; one that cannot finish yet is
/// queued again after a pause.
async fn settle_transactions(context: Arc<BrokerContext>, mut shutdown: watch::Receiver<bool>) {
    const RETRY_PAUSE: Duration = Duration::from_secs(1);
    let mut running: JoinSet<()> = JoinSet::new();
    loop {
        let queued = tokio::select! {
            queued = context.transactions.next_to_settle() => queued,
            Some(_) = running.join_next(), if !running.is_empty() => continue,
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        for transactional_id in queued {
            let context = Arc::clone(&context);
            running.spawn(async move {
                let settled = context
                    .transactions
                    .settle(&context.txn_services(), &transactional_id)
                    .await;
                match settled {
                    Ok(()) | Err(TxnError::NotCoordinator) => {}
                    // Being finished elsewhere (an EndTxn): the next tick looks again.
                    Err(TxnError::Concurrent) => {}
                    Err(error) => {
                        tracing::debug!(%transactional_id, %error, "transaction not settled; retrying");
                        tokio::time::sleep(RETRY_PAUSE).await;
                        context.transactions.queue_settle(&transactional_id);
                    }
                }
            });
        }
    }
}

/// Writes the high watermarks that moved (cluster mode; also on clean shutdown).
pub(super) fn checkpoint_high_watermarks(context: &BrokerContext) {
    for partition in context.topics.all_partitions() {
        if let Err(error) = partition.checkpoint_high_watermark() {
            tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "high watermark checkpoint failed");
        }
    }
}

/// Forgets idempotent producers idle for `producer.id.expiration.ms`, as Kafka does.
fn expire_producers(context: &BrokerContext, expiration_ms: i64) {
    let now_ms = context.clock.now_ms();
    for partition in context.topics.all_partitions() {
        let expired = partition.log().expire_producers(now_ms, expiration_ms);
        if expired > 0 {
            tracing::info!(topic = %partition.topic, partition = partition.index, expired, "idle producers expired");
        }
    }
}

pub(super) fn enforce_retention(context: &BrokerContext) {
    for partition in context.topics.all_partitions() {
        match partition.apply_retention() {
            Ok(0) => {}
            Ok(deleted) => {
                tracing::info!(topic = %partition.topic, partition = partition.index, deleted, "retention deleted segments")
            }
            Err(error) => {
                tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "retention failed")
            }
        }
    }
}

/// Deletes removed segments' files whose `file.delete.delay.ms` has passed.
fn delete_retired_files(context: &BrokerContext) {
    let now_ms = context.clock.now_ms();
    for partition in context.topics.all_partitions() {
        if let Err(error) = partition.log().delete_retired_files(now_ms) {
            tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "deleting removed segments' files failed");
        }
    }
}

/// The log cleaner: cleans the dirtiest compacted log that is due, again at once while any is,
/// else sleeps `log.cleaner.backoff.ms`. One pass at a time, on a blocking thread.
async fn cleaner_loop(context: Arc<BrokerContext>, mut shutdown: watch::Receiver<bool>) {
    loop {
        // `log.cleaner.backoff.ms` and `log.cleaner.dedupe.buffer.size` are dynamic: read at
        // every pass.
        let settings = CleanerSettings::from_config(&context.config());
        let backoff = Duration::from_millis(settings.backoff_ms.max(1));
        let work = {
            let context = Arc::clone(&context);
            tokio::task::spawn_blocking(move || {
                clean_dirtiest(&context, settings.dedupe_buffer_bytes)
            })
        };
        let cleaned = tokio::select! {
            result = work => result.unwrap_or(false),
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        if cleaned {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
    }
}

/// Cleans the compacted log with the highest dirty ratio among those due; false when none is.
pub(super) fn clean_dirtiest(context: &BrokerContext, memory_bytes: usize) -> bool {
    let mut dirtiest = None;
    for partition in context.topics.all_partitions() {
        if !partition.log().config().compact {
            continue;
        }
        match partition.dirty_ratio_if_due() {
            Ok(Some(ratio)) if dirtiest.as_ref().is_none_or(|(best, _)| ratio > *best) => {
                dirtiest = Some((ratio, partition));
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "cleaner could not inspect log")
            }
        }
    }
    let Some((ratio, partition)) = dirtiest else {
        return false;
    };
    let labels = [&*partition.topic];
    match partition.compact(memory_bytes) {
        Ok(Some(stats)) => {
            let metrics = &context.metrics;
            metrics
                .cleaner_passes_total
                .with_label_values(&labels)
                .inc();
            metrics
                .cleaner_bytes_read_total
                .with_label_values(&labels)
                .inc_by(stats.bytes_read);
            metrics
                .cleaner_bytes_written_total
                .with_label_values(&labels)
                .inc_by(stats.bytes_written);
            metrics
                .cleaner_records_removed_total
                .with_label_values(&labels)
                .inc_by(stats.records_removed);
            tracing::info!(
                topic = %partition.topic,
                partition = partition.index,
                dirty_ratio = ratio,
                bytes_read = stats.bytes_read,
                bytes_written = stats.bytes_written,
                records_removed = stats.records_removed,
                tombstones_removed = stats.tombstones_removed,
                keyless_removed = stats.keyless_removed,
                "log cleaned"
            );
            true
        }
        Ok(None) => false,
        Err(error) => {
            context
                .metrics
                .cleaner_errors_total
                .with_label_values(&labels)
                .inc();
            tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "log cleaning failed");
            false
        }
    }
}

async fn flush_loop(context: Arc<BrokerContext>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(FLUSH_CHECK_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
        for partition in context.topics.all_partitions() {
            if partition.offline_reason().is_some() {
                continue; // Reported when it went offline; nothing more to flush.
            }
            let due = partition.log().flush_due(partition.now_ms());
            if due {
                if let Err(error) = partition.flush_now().await {
                    tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "flush failed");
                }
            }
        }
    }
}
