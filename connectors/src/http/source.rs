//! The HTTP endpoint: limits, line splitting, JSON checks, and the answer once the target has
//! durably written the lines.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use super::auth::Authenticator;
use super::config::HttpSourceConfig;
use crate::weblog::body::{body_lines, BodyError};

/// What became of a request's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IngestReport {
    pub accepted: usize,
    pub dead_letters: usize,
}

/// Where the lines go (the pipeline's topic): `ingest` returns once every record is durably
/// acknowledged, or an error when the cluster did not acknowledge them.
#[async_trait::async_trait]
pub trait IngestTarget: Send + Sync + 'static {
    async fn ingest(&self, lines: Vec<&[u8]>) -> Result<IngestReport, String>;
}

struct Endpoint {
    pipeline: String,
    config: HttpSourceConfig,
    pending_bytes: AtomicUsize,
    target: Arc<dyn IngestTarget>,
    auth: Option<Authenticator>,
}

/// The routes of one pipeline's endpoint.
pub(super) fn router(
    pipeline: &str,
    config: &HttpSourceConfig,
    target: Arc<dyn IngestTarget>,
    auth: Option<Authenticator>,
) -> Router {
    let endpoint = Arc::new(Endpoint {
        pipeline: pipeline.to_string(),
        config: config.clone(),
        pending_bytes: AtomicUsize::new(0),
        target,
        auth,
    });
    Router::new()
        .route("/ingest/{pipeline}", post(ingest))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .with_state(endpoint)
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn retry_later(status: StatusCode, seconds: u64, reason: String) -> Response {
    let mut response = answer(status, serde_json::json!({ "error": reason }));
    if let Ok(value) = seconds.to_string().parse() {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// 401 with the schemes the endpoint accepts.
fn unauthorized(auth: &Authenticator, reason: String) -> Response {
    let mut response = answer(
        StatusCode::UNAUTHORIZED,
        serde_json::json!({ "error": reason }),
    );
    for challenge in auth.challenges() {
        response.headers_mut().append(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static(challenge),
        );
    }
    response
}

fn too_large(reason: String) -> Response {
    answer(
        StatusCode::PAYLOAD_TOO_LARGE,
        serde_json::json!({ "error": reason }),
    )
}

/// Why a body was not read whole.
enum BodyRefusal {
    TooLarge,
    Busy,
    TooSlow,
    Broken(String),
}

impl BodyRefusal {
    fn answer(self, config: &HttpSourceConfig) -> Response {
        match self {
            BodyRefusal::TooLarge => too_large(format!(
                "the body is larger than max_body_bytes ({})",
                config.max_body_bytes
            )),
            BodyRefusal::Busy => retry_later(
                StatusCode::TOO_MANY_REQUESTS,
                config.retry_after_seconds,
                format!(
                    "busy: more than {} bytes are being written",
                    config.max_pending_bytes
                ),
            ),
            BodyRefusal::TooSlow => answer(
                StatusCode::REQUEST_TIMEOUT,
                serde_json::json!({ "error": format!(
                    "the body did not arrive within read_timeout_seconds ({} s)",
                    config.read_timeout_seconds
                ) }),
            ),
            BodyRefusal::Broken(reason) => answer(
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": format!("the body could not be read: {reason}") }),
            ),
        }
    }
}

/// Reads a body whole within `read_timeout_seconds` (however it trickles), its bytes reserved
/// against `max_pending_bytes` as they arrive, so a slow client holds only what it sent. Refused
/// at once (429) when the bytes being written leave no room for the `expected` ones.
async fn read_body(
    endpoint: &Endpoint,
    body: Body,
    expected: usize,
) -> Result<(Bytes, Reservation<'_>), BodyRefusal> {
    let config = &endpoint.config;
    let pending = &endpoint.pending_bytes;
    if pending.load(Ordering::SeqCst).saturating_add(expected) > config.max_pending_bytes {
        return Err(BodyRefusal::Busy);
    }
    let mut reservation = Reservation { pending, bytes: 0 };
    let mut collected = BytesMut::new();
    let mut chunks = body.into_data_stream();
    let reading = async {
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|error| BodyRefusal::Broken(error.to_string()))?;
            if collected.len() + chunk.len() > config.max_body_bytes {
                return Err(BodyRefusal::TooLarge);
            }
            reservation.bytes += chunk.len();
            if pending.fetch_add(chunk.len(), Ordering::SeqCst) + chunk.len()
                > config.max_pending_bytes
            {
                return Err(BodyRefusal::Busy);
            }
            collected.extend_from_slice(&chunk);
        }
        Ok(())
    };
    let whole_body = Duration::from_secs(config.read_timeout_seconds);
    tokio::time::timeout(whole_body, reading)
        .await
        .map_err(|_| BodyRefusal::TooSlow)??;
    Ok((collected.freeze(), reservation))
}

/// Gives the reserved bytes back however the request ends.
struct Reservation<'a> {
    pending: &'a AtomicUsize,
    bytes: usize,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.pending.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

async fn ingest(
    State(endpoint): State<Arc<Endpoint>>,
    Path(pipeline): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Before anything else, so that a stranger learns nothing (not even the pipeline's name).
    if let Some(auth) = &endpoint.auth {
        if let Err(refusal) = auth.check(&headers) {
            return unauthorized(auth, refusal.0);
        }
    }
    if pipeline != endpoint.pipeline {
        let reason = format!(
            "no pipeline {pipeline} here (this endpoint is /ingest/{})",
            endpoint.pipeline
        );
        return answer(
            StatusCode::NOT_FOUND,
            serde_json::json!({ "error": reason }),
        );
    }
    let config = &endpoint.config;
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if announced.is_some_and(|bytes| bytes > config.max_body_bytes) {
        return too_large(format!(
            "the body is larger than max_body_bytes ({})",
            config.max_body_bytes
        ));
    }
    let (body, _reservation) = match read_body(&endpoint, body, announced.unwrap_or(1)).await {
        Ok(read) => read,
        Err(refusal) => return refusal.answer(config),
    };
    let lines = match body_lines(&body, config.format, config.max_lines) {
        Ok(lines) => lines,
        Err(error @ BodyError::TooManyLines { .. }) => return too_large(error.to_string()),
        Err(BodyError::BadJsonLine(problem)) => {
            return answer(
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": problem }),
            )
        }
    };
    match endpoint.target.ingest(lines).await {
        Ok(report) => answer(StatusCode::OK, serde_json::json!(report)),
        Err(error) => retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            config.retry_after_seconds,
            format!("not written: {error}"),
        ),
    }
}
