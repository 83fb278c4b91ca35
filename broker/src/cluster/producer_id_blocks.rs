//! Keeps this broker supplied with producer id blocks from the active controller (cluster
//! mode): whenever the manager has no spare block, one is asked for (AllocateProducerIds);
//! once the answer is applied here, the broker's latest block in the image is the new one.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::producer::ProducerIdManager;

/// Pause after a refused or failed request before asking again.
const RETRY_BACKOFF: Duration = Duration::from_millis(500);

pub async fn keep_blocks(
    cluster: Arc<ClusterMember>,
    producer_ids: Arc<ProducerIdManager>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut membership = cluster.membership();
    loop {
        if !producer_ids.wants_block() {
            tokio::select! {
                _ = producer_ids.block_wanted() => continue,
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            }
        }
        let broker_epoch = tokio::select! {
            registered = membership.wait_for(|m| m.broker_epoch.is_some()) => match registered {
                Ok(membership) => membership.broker_epoch.unwrap_or_default(),
                Err(_) => return,
            },
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        let request = ControllerRequest::AllocateProducerIds {
            broker_id: cluster.node_id(),
            broker_epoch,
        };
        let answer = tokio::select! {
            answer = cluster.request(request) => answer,
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        };
        let block = answer.ok().and_then(|_| {
            let image = cluster.image().image;
            image.producer_id_blocks.get(&cluster.node_id()).copied()
        });
        match block {
            Some((first, size)) => {
                tracing::info!(first, size, "producer id block from the controller");
                producer_ids.add_block(first, first + size);
            }
            None => {
                tracing::warn!("no producer id block from the controller; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(RETRY_BACKOFF) => {}
                    _ = crate::shutdown::stopped(&mut shutdown) => return,
                }
            }
        }
    }
}
