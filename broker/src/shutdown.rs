//! The shutdown signal every long-running task of the broker watches: a `watch::Receiver<bool>`
//! whose value turns `true` once, when the broker stops.

use tokio::sync::watch;

/// Resolves once shutdown has been signalled (drops the channel's read guard before returning).
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
