//! A broker's membership in the cluster (Kafka's BrokerLifecycleManager): register with the
//! active controller under a fresh incarnation id, heartbeat to keep the session, register
//! again when the controller no longer knows this incarnation's epoch, and ask for a controlled
//! shutdown before stopping so leaderships move first. A broker-only node first asks to be
//! added to the metadata quorum as an observer, so the metadata log reaches it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Mutex};
use tokio::task::JoinHandle;

use super::controller::{ControllerError, Registration};
use super::quorum::client::ControllerClient;
use super::quorum::rpc::{ControllerRequest, ControllerResponse};
use super::quorum::NodeId;

/// How long one registration or heartbeat may look for the active controller.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between failed registration attempts.
const REGISTER_BACKOFF: Duration = Duration::from_millis(500);

/// This broker's standing, as the controller last answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Membership {
    /// The epoch of the current registration (none before the first one succeeds).
    pub broker_epoch: Option<i64>,
    /// The metadata log index the last answer's records are at: the broker's image must reach
    /// it before it acts on what the answer changed.
    pub applied_index: u64,
}

pub struct BrokerLifecycle {
    broker_id: i32,
    client: Arc<Mutex<ControllerClient>>,
    membership: watch::Receiver<Membership>,
    /// Registering and heartbeating; aborted when the lifecycle ends.
    task: Option<JoinHandle<()>>,
}

impl BrokerLifecycle {
    /// Starts registering and heartbeating every `heartbeat_interval`; with `observer_address`
    /// (a broker-only node's controller listener) it joins the quorum as an observer first.
    pub fn spawn(
        registration: Registration,
        observer_address: Option<String>,
        client: ControllerClient,
        heartbeat_interval: Duration,
    ) -> BrokerLifecycle {
        let broker_id = registration.broker_id;
        let client = Arc::new(Mutex::new(client));
        let (publish, membership) = watch::channel(Membership::default());
        let task = tokio::spawn(run(
            registration,
            observer_address,
            Arc::clone(&client),
            heartbeat_interval,
            publish,
        ));
        BrokerLifecycle {
            broker_id,
            client,
            membership,
            task: Some(task),
        }
    }

    pub fn membership(&self) -> watch::Receiver<Membership> {
        self.membership.clone()
    }

    /// Stops heartbeating and asks the controller to fence this broker now, so its leaderships
    /// move before it stops serving. Gives up after `timeout` (the session then expires).
    pub async fn controlled_shutdown(mut self, timeout: Duration) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        let Some(broker_epoch) = self.membership.borrow().broker_epoch else {
            return;
        };
        let request = ControllerRequest::ControlledShutdown {
            broker_id: self.broker_id,
            broker_epoch,
        };
        match self.client.lock().await.call(request, timeout).await {
            Ok(ControllerResponse::Done { .. }) => {
                tracing::info!(
                    broker_id = self.broker_id,
                    "controlled shutdown acknowledged"
                );
            }
            Ok(other) => tracing::warn!(?other, "controlled shutdown refused"),
            Err(error) => tracing::warn!(%error, "controlled shutdown: no controller answered"),
        }
    }
}

impl Drop for BrokerLifecycle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn run(
    registration: Registration,
    observer_address: Option<String>,
    client: Arc<Mutex<ControllerClient>>,
    heartbeat_interval: Duration,
    publish: watch::Sender<Membership>,
) {
    let broker_id = registration.broker_id;
    if let Some(address) = observer_address {
        join_as_observer(broker_id as NodeId, address, &client).await;
    }
    loop {
        let broker_epoch = register(&registration, &client, &publish).await;
        // The first heartbeat at once: it unfences the new registration.
        let mut pause = Duration::ZERO;
        loop {
            tokio::time::sleep(pause).await;
            pause = heartbeat_interval;
            let request = ControllerRequest::Heartbeat {
                broker_id,
                broker_epoch,
            };
            let answer = client.lock().await.call(request, CALL_TIMEOUT).await;
            match answer {
                Ok(ControllerResponse::Done { applied_index, .. }) => {
                    publish.send_modify(|m| m.applied_index = m.applied_index.max(applied_index));
                }
                Ok(ControllerResponse::Rejected(
                    ControllerError::StaleBrokerEpoch { .. }
                    | ControllerError::UnknownBroker { .. },
                )) => {
                    tracing::warn!(
                        broker_id,
                        broker_epoch,
                        "registration lost; registering again"
                    );
                    break;
                }
                Ok(other) => tracing::warn!(broker_id, ?other, "heartbeat refused"),
                Err(error) => tracing::warn!(broker_id, %error, "heartbeat failed"),
            }
        }
    }
}

/// Asks the active controller until it has made this node an observer of the metadata log.
async fn join_as_observer(node_id: NodeId, address: String, client: &Mutex<ControllerClient>) {
    loop {
        let request = ControllerRequest::AddObserver {
            node_id,
            address: address.clone(),
        };
        let answer = client.lock().await.call(request, CALL_TIMEOUT).await;
        match answer {
            Ok(ControllerResponse::Done { .. }) => {
                tracing::info!(node_id, %address, "observing the metadata quorum");
                return;
            }
            Ok(other) => tracing::warn!(node_id, ?other, "joining the quorum as observer refused"),
            Err(error) => tracing::warn!(node_id, %error, "joining the quorum as observer failed"),
        }
        tokio::time::sleep(REGISTER_BACKOFF).await;
    }
}

/// Registers until the controller accepts; returns the new broker epoch.
async fn register(
    registration: &Registration,
    client: &Mutex<ControllerClient>,
    publish: &watch::Sender<Membership>,
) -> i64 {
    loop {
        let request = ControllerRequest::RegisterBroker(registration.clone());
        let answer = client.lock().await.call(request, CALL_TIMEOUT).await;
        match answer {
            Ok(ControllerResponse::Done {
                applied_index,
                broker_epoch: Some(broker_epoch),
            }) => {
                tracing::info!(
                    broker_id = registration.broker_id,
                    broker_epoch,
                    "registered with the controller"
                );
                publish.send_replace(Membership {
                    broker_epoch: Some(broker_epoch),
                    applied_index,
                });
                return broker_epoch;
            }
            Ok(other) => {
                tracing::warn!(
                    broker_id = registration.broker_id,
                    ?other,
                    "registration refused"
                )
            }
            Err(error) => {
                tracing::warn!(broker_id = registration.broker_id, %error, "registration failed")
            }
        }
        tokio::time::sleep(REGISTER_BACKOFF).await;
    }
}
