//! Background work: retention, periodic flushes (`flush.ms`, `flush.messages`) and
//! recovery-point checkpoints. Each loop stops when shutdown is signalled.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::server::BrokerContext;

/// How often partitions are checked for a due flush.
const FLUSH_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How often recovery points are written (Kafka's `log.flush.offset.checkpoint.interval.ms`).
const RECOVERY_POINT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

pub fn spawn(
    tasks: &mut JoinSet<()>,
    context: Arc<BrokerContext>,
    shutdown: watch::Receiver<bool>,
) {
    let retention_interval = Duration::from_millis(context.config.retention_check_interval_ms());
    tasks.spawn(every(retention_interval, shutdown.clone(), {
        let context = Arc::clone(&context);
        move || enforce_retention(&context)
    }));
    tasks.spawn(flush_loop(Arc::clone(&context), shutdown.clone()));
    tasks.spawn(every(
        crate::group::coordinator::TICK_INTERVAL,
        shutdown.clone(),
        {
            let context = Arc::clone(&context);
            move || context.groups.tick()
        },
    ));
    tasks.spawn(every(RECOVERY_POINT_CHECKPOINT_INTERVAL, shutdown, move || {
        for partition in context.topics.all_partitions() {
            if let Err(error) = partition.log().checkpoint_recovery_point() {
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
            _ = super::stopped(&mut shutdown) => return,
        }
    }
}

pub fn enforce_retention(context: &BrokerContext) {
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

async fn flush_loop(context: Arc<BrokerContext>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(FLUSH_CHECK_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = super::stopped(&mut shutdown) => return,
        }
        for partition in context.topics.all_partitions() {
            let due = partition.log().flush_due(partition.now_ms());
            if due {
                if let Err(error) = partition.flush_now().await {
                    tracing::warn!(%error, topic = %partition.topic, partition = partition.index, "flush failed");
                }
            }
        }
    }
}
