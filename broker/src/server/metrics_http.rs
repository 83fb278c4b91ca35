//! The HTTP endpoints: `/metrics` (Prometheus text format), `/health` (liveness: the process
//! answers) and `/ready` (readiness: a broker running alone is ready once serving; one in a
//! cluster once registered, caught up with the metadata and unfenced — 503 with the reason
//! before).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::context::BrokerContext;
use crate::error::BrokerError;

pub(super) async fn spawn(
    tasks: &mut JoinSet<()>,
    addr: SocketAddr,
    context: Arc<BrokerContext>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<SocketAddr, BrokerError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        BrokerError::InvalidRequest(format!("cannot listen for metrics on {addr}: {e}"))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .with_state(context);
    tasks.spawn(async move {
        let stop = async move {
            crate::shutdown::stopped(&mut shutdown).await;
        };
        if let Err(error) = axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::error!(%error, "metrics endpoint failed");
        }
    });
    Ok(bound)
}

async fn ready(State(context): State<Arc<BrokerContext>>) -> impl IntoResponse {
    let readiness = context
        .cluster
        .as_ref()
        .map_or(Ok(()), |cluster| cluster.readiness());
    match readiness {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}

async fn metrics(State(context): State<Arc<BrokerContext>>) -> impl IntoResponse {
    let body = context
        .metrics
        .render(&context.topics, &context.groups, context.cluster.as_deref());
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
