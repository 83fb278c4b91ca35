//! One client connection: length-prefixed frames in, responses out in request order.
//!
//! The reader half handles one request at a time (so appends keep the client's order, as in
//! Kafka) and queues its response — ready, or deferred until e.g. an fsync completes — to the
//! writer half, which sends them strictly in order. Up to `MAX_QUEUED_RESPONSES` responses may be
//! in flight, which gives pipelining without unbounded memory.
//!
//! Before a connection is served it takes a `max.connections` slot (the accept loop waits for
//! one) and its address's place under `max.connections.per.ip`; before a frame is allocated its
//! size is reserved in the `queued.max.request.bytes` pool (see `limits`), and so is what its
//! decoded structs hold, within the frame's `frame::decoded_bytes_bound` (`decode_charged`).
//!
//! On a SASL listener, `authentication` decides what happens to each request until the client
//! has authenticated (and after its session expires); requests then carry its principal.
//!
//! Bad input closes the connection with a log line: a frame over `socket.request.max.bytes`, an
//! unknown API key, a version outside what we implement (except ApiVersions, which gets the
//! version-0 fallback), or a body that does not decode. An API we do not implement gets its own
//! response with UNSUPPORTED_VERSION where that response has an error code to carry it
//! (`handler::unsupported`), else the connection is closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures::future::BoxFuture;
use kafka_protocol::messages::{ApiKey, FetchResponse, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::authentication::{Authenticator, RawVerdict, Verdict};
use super::frame::{decode_request_within, decoded_bytes_bound, Decoded, FrameHeader};
use super::frame_reader::{read_frame, FrameBounds, FrameRead, FRAME_BODY_TIMEOUT};
use super::limits::{ConnectionLimits, ConnectionSlot, ListenerSlot};
use super::response_frame::{write_frame, ChunkedBuf, ResponseFrame};
use crate::context::BrokerContext;
use crate::handler::{self, api_versions, HandlerOutput};
use crate::memory_pool::{RequestMemory, RequestMemoryPool};
use crate::security::listener::SaslListener;
use crate::security::ssl_principal::SslPrincipalMapper;
use crate::security::tls::{self, TlsAcceptorCell};
use crate::security::KafkaPrincipal;

/// Responses queued per connection before the reader stops taking requests.
const MAX_QUEUED_RESPONSES: usize = 64;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// What every connection of the listener shares: the broker and the bounds on what it holds.
#[derive(Clone)]
pub(super) struct Shared {
    pub context: Arc<BrokerContext>,
    pub limits: Arc<ConnectionLimits>,
    pub pool: Arc<RequestMemoryPool>,
}

/// How a listener's connections are secured: TLS, SASL, both or neither.
#[derive(Clone)]
pub(super) struct ListenerSecurity {
    pub name: Arc<str>,
    pub tls: Option<Arc<TlsAcceptorCell>>,
    pub sasl: Option<Arc<SaslListener>>,
    /// An SSL listener's `ssl.principal.mapping.rules` (client certificates' principals).
    pub principal_mapper: Arc<SslPrincipalMapper>,
}

pub(super) async fn accept_loop(
    listener: TcpListener,
    security: ListenerSecurity,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    // In a cluster, connections wait in the listen backlog until this broker's metadata has
    // caught up (as Kafka enables request processing only then).
    if let Some(cluster) = shared.context.cluster.clone() {
        tokio::select! {
            ready = cluster.caught_up() => if !ready { return },
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
    }
    let mut connections = JoinSet::new();
    let for_connections = shutdown.clone();
    loop {
        tokio::select! {
            accepted = accept_with_slot(&listener, &shared.limits) => match accepted {
                Ok((slot, stream, peer)) => {
                    let slot = match shared.limits.admit(slot, peer.ip()) {
                        Ok(slot) => slot,
                        Err(refused) => {
                            tracing::info!(%peer, reason = %refused, "refusing connection");
                            shared.context.metrics.connections_refused_total.with_label_values(&["per_ip"]).inc();
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let shutdown = for_connections.clone();
                    let shared = shared.clone();
                    let security = security.clone();
                    match &security.tls {
                        None => {
                            let (read_half, write_half) = stream.into_split();
                            let authenticator = Authenticator::new(Arc::clone(&security.name), security.sasl.clone(), KafkaPrincipal::anonymous());
                            let link = Link { peer, listener: security.name, authenticator, mute: Default::default() };
                            connections.spawn(serve(read_half, write_half, link, slot, shared, shutdown));
                        }
                        Some(tls) => {
                            connections.spawn(serve_tls(tls.acceptor(), stream, peer, security, slot, shared, shutdown));
                        }
                    }
                }
                Err(error) => {
                    // Out of file descriptors and similar: back off briefly instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = crate::shutdown::stopped(&mut shutdown) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Waits for a `max.connections` slot, then for a connection (cancel-safe: an unused slot is
/// given back when the future is dropped).
async fn accept_with_slot(
    listener: &TcpListener,
    limits: &Arc<ConnectionLimits>,
) -> std::io::Result<(ListenerSlot, TcpStream, SocketAddr)> {
    let slot = limits.wait_for_slot().await;
    let (stream, peer) = listener.accept().await?;
    Ok((slot, stream, peer))
}

/// A response on its way to the writer.
enum Pending {
    Ready(ResponseFrame),
    Deferred {
        response: BoxFuture<'static, ResponseKind>,
        header: FrameHeader,
        started: Instant,
    },
}

/// Completes the TLS handshake (within `tls::HANDSHAKE_TIMEOUT`), then serves the connection.
/// A client that does not speak TLS, or whose certificate is not trusted, is closed with a log
/// line; nothing reaches the handlers.
async fn serve_tls(
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    security: ListenerSecurity,
    slot: ConnectionSlot,
    shared: Shared,
    shutdown: watch::Receiver<bool>,
) {
    let listener = security.name;
    let handshake = tokio::time::timeout(tls::HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::info!(%peer, %listener, %error, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, %listener, "TLS handshake timed out");
            return;
        }
    };
    // SASL names the principal on a SASL_SSL listener; on SSL a client certificate does.
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first());
    let principal = match (&security.sasl, certificate) {
        (None, Some(certificate)) => {
            match security.principal_mapper.principal(certificate.as_ref()) {
                Ok(principal) => principal,
                Err(reason) => {
                    tracing::info!(%peer, %listener, %reason, "TLS client refused: no principal");
                    return;
                }
            }
        }
        _ => KafkaPrincipal::anonymous(),
    };
    tracing::debug!(%peer, %listener, %principal, "TLS connection");
    let authenticator = Authenticator::new(Arc::clone(&listener), security.sasl, principal);
    let (read_half, write_half) = tokio::io::split(stream);
    let link = Link {
        peer,
        listener,
        authenticator,
        mute: Default::default(),
    };
    serve(read_half, write_half, link, slot, shared, shutdown).await;
}

/// One connection's peer, listener and authentication.
struct Link {
    peer: SocketAddr,
    listener: Arc<str>,
    authenticator: Authenticator,
    /// Set by a request over a client quota: nothing more is read until it has passed.
    mute: handler::ConnectionMute,
}

async fn serve<R, W>(
    read_half: R,
    write_half: W,
    mut link: Link,
    _slot: ConnectionSlot,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let context = shared.context;
    let peer = link.peer;
    context.metrics.connections.inc();
    context.metrics.connections_total.inc();
    tracing::debug!(%peer, "connection opened");
    let (queue, pending) = mpsc::channel(MAX_QUEUED_RESPONSES);
    let writer = tokio::spawn(write_responses(
        write_half,
        pending,
        Arc::clone(&context),
        peer,
    ));
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, read_half);
    let max_frame = context.config().socket_request_max_bytes();
    let idle = Duration::from_millis(
        context
            .config()
            .explicit("connections.max.idle.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(600_000),
    );
    loop {
        // Over a client quota (with or without a response, acks=0 too): the response went out,
        // the next request waits (KIP-219).
        let muted_ms = link.mute.take_ms();
        if muted_ms > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(muted_ms)) => {}
                _ = crate::shutdown::stopped(&mut shutdown) => break,
            }
        }
        let bounds = FrameBounds {
            max_frame: link.authenticator.max_frame(max_frame),
            pool: &shared.pool,
            idle,
            body_timeout: FRAME_BODY_TIMEOUT,
        };
        let read = tokio::select! {
            read = read_frame(&mut reader, &bounds) => read,
            _ = crate::shutdown::stopped(&mut shutdown) => break,
        };
        let frame = match read {
            Ok(FrameRead::Frame(frame, reserved)) => (frame, reserved),
            Ok(FrameRead::Closed) => break,
            Ok(FrameRead::Idle) => {
                tracing::debug!(%peer, "closing idle connection");
                break;
            }
            Err(reason) => {
                tracing::warn!(%peer, %reason, "closing connection");
                break;
            }
        };
        let (frame, mut reserved) = frame;
        let started = Instant::now();
        let handled = if link.authenticator.expects_raw_token() {
            raw_token(&context, &mut link.authenticator, &frame)
        } else {
            match decode_charged(frame, &shared.pool).await {
                Ok((decoded, decoded_memory)) => {
                    reserved.absorb(decoded_memory);
                    handle_frame(&context, &mut link, decoded, started).await
                }
                Err(reason) => Err(reason),
            }
        };
        // Handled: the request's bytes and its decoded structs leave the pool (a deferred
        // response no longer needs them).
        drop(reserved);
        let (pending, then_close) = match handled {
            Ok(Handled::Respond(pending)) => (pending, None),
            Ok(Handled::RespondAndClose(pending, reason)) => (pending, Some(reason)),
            Ok(Handled::Nothing) => continue,
            Err(reason) => {
                tracing::warn!(%peer, %reason, "closing connection");
                break;
            }
        };
        if queue.send(pending).await.is_err() {
            break;
        }
        if let Some(reason) = then_close {
            tracing::info!(%peer, %reason, "closing connection");
            break;
        }
    }
    drop(queue);
    let _ = writer.await;
    context.metrics.connections.dec();
    tracing::debug!(%peer, "connection closed");
}

/// Decodes a frame with what its structs hold taken from the pool: each attempt may use what
/// it holds plus what the pool has free, up to the frame's `decoded_bytes_bound`; an attempt
/// stopped short waits for the bytes it asked for (twice what it held at least) and decodes
/// again. A request past its bound is refused.
async fn decode_charged(
    frame: Bytes,
    pool: &RequestMemoryPool,
) -> Result<(Decoded, RequestMemory), String> {
    let bound = decoded_bytes_bound(frame.len()).min(pool.capacity_bytes());
    let mut held = RequestMemory::none(pool);
    loop {
        let limit = held
            .bytes()
            .saturating_add(pool.available_bytes())
            .min(bound);
        let (decoded, cost) = decode_request_within(frame.clone(), limit);
        let wanted = match (decoded, cost.refused_at_bytes) {
            (Ok(decoded), _) => {
                // Normally free at once: the pool had these bytes when the decode began.
                let more = cost.charged_bytes.saturating_sub(held.bytes());
                if more > 0 {
                    held.absorb(pool.reserve(more).await);
                }
                return Ok((decoded, held));
            }
            (Err(reason), None) => return Err(reason),
            (Err(reason), Some(wanted)) if wanted > bound || limit >= bound => return Err(reason),
            (Err(_), Some(wanted)) => wanted.max(held.bytes() * 2).min(bound),
        };
        held.absorb(pool.reserve(wanted - held.bytes()).await);
    }
}

/// What a frame came to.
enum Handled {
    Respond(Pending),
    /// Send this, then close (a failed authentication).
    RespondAndClose(Pending, String),
    /// Nothing to send (acks=0).
    Nothing,
}

/// A raw SASL token (after a v0 handshake): answered with a raw size-prefixed token.
fn raw_token(
    context: &Arc<BrokerContext>,
    authenticator: &mut Authenticator,
    frame: &[u8],
) -> Result<Handled, String> {
    match authenticator.raw_token(context, frame) {
        RawVerdict::Answer(token) => {
            let mut buffer = BytesMut::with_capacity(4 + token.len());
            buffer.put_i32(token.len() as i32);
            buffer.extend_from_slice(&token);
            Ok(Handled::Respond(Pending::Ready(ResponseFrame::whole(
                buffer.freeze(),
            ))))
        }
        RawVerdict::Close(reason) => Err(reason),
    }
}

async fn handle_frame(
    context: &Arc<BrokerContext>,
    link: &mut Link,
    decoded: Decoded,
    started: Instant,
) -> Result<Handled, String> {
    let ready = |bytes| Ok(Handled::Respond(Pending::Ready(bytes)));
    let (header_info, request_header, request) = match decoded {
        Decoded::Request {
            header,
            request_header,
            request,
        } => (header, request_header, request),
        Decoded::ApiVersionsTooNew(header) => {
            // KIP-511: answer in v0 so the client learns what we support.
            let response = ResponseKind::ApiVersions(api_versions::unsupported_version_response());
            let header = FrameHeader {
                version: 0,
                ..header
            };
            return ready(encode(context, header, &response, started)?);
        }
        Decoded::Unimplemented { header, request } => {
            if !link.authenticator.authenticated() {
                return Err(format!("{:?} before SASL authentication", header.api_key));
            }
            return unimplemented_api(context, header, &request, started).map(Handled::Respond);
        }
    };
    let FrameHeader {
        api_key,
        version,
        correlation_id,
    } = header_info;
    let client_id = request_header
        .client_id
        .as_ref()
        .map(|c| c.as_str())
        .unwrap_or("");
    tracing::trace!(api = ?api_key, version, correlation_id, client_id, "request");
    match link
        .authenticator
        .admit(context, api_key, version, &request)
    {
        Verdict::Serve => {}
        Verdict::Answer(response) => {
            return ready(encode(context, header_info, &response, started)?)
        }
        Verdict::AnswerAndClose {
            response,
            delay,
            reason,
        } => {
            let response = Box::pin(async move {
                tokio::time::sleep(delay).await;
                response
            });
            let pending = Pending::Deferred {
                response,
                header: header_info,
                started,
            };
            return Ok(Handled::RespondAndClose(pending, reason));
        }
        Verdict::Close(reason) => return Err(reason),
    }
    let origin = handler::RequestOrigin {
        client_id,
        peer: link.peer,
        listener: &link.listener,
        principal: link.authenticator.principal(),
        mute: &link.mute,
    };
    match handler::handle(context, version, &origin, request).await {
        HandlerOutput::Ready(response) => ready(encode(context, header_info, &response, started)?),
        HandlerOutput::Deferred(response) => Ok(Handled::Respond(Pending::Deferred {
            response,
            header: header_info,
            started,
        })),
        HandlerOutput::None => {
            record_request(context, api_key, started);
            Ok(Handled::Nothing)
        }
        HandlerOutput::Close => Err(format!("{api_key:?} cannot be answered")),
    }
}

/// An API we do not implement: answer UNSUPPORTED_VERSION where the API allows it, else close.
fn unimplemented_api(
    context: &Arc<BrokerContext>,
    header: FrameHeader,
    request: &RequestKind,
    started: Instant,
) -> Result<Pending, String> {
    let FrameHeader {
        api_key, version, ..
    } = header;
    let response = handler::unsupported::response(version, request)
        .ok_or_else(|| format!("{api_key:?} is not implemented"))?;
    tracing::debug!(api = ?api_key, version, "answered an unimplemented API with UNSUPPORTED_VERSION");
    encode(context, header, &response, started).map(Pending::Ready)
}

fn record_request(context: &BrokerContext, api_key: ApiKey, started: Instant) {
    let api = format!("{api_key:?}");
    context
        .metrics
        .requests_total
        .with_label_values(&[&api])
        .inc();
    context
        .metrics
        .request_duration_seconds
        .with_label_values(&[&api])
        .observe(started.elapsed().as_secs_f64());
}

fn encode(
    context: &BrokerContext,
    header: FrameHeader,
    response: &ResponseKind,
    started: Instant,
) -> Result<ResponseFrame, String> {
    record_request(context, header.api_key, started);
    let header_version = header.api_key.response_header_version(header.version);
    let response_header = ResponseHeader::default().with_correlation_id(header.correlation_id);
    let failed = |e| encode_failed(header, e);
    // A Fetch keeps its record batches by reference; everything else is encoded whole.
    if let ResponseKind::Fetch(fetch) = response {
        let mut buffer = ChunkedBuf::new(fetched_records(fetch));
        response_header
            .encode(&mut buffer, header_version)
            .map_err(failed)?;
        fetch.encode(&mut buffer, header.version).map_err(failed)?;
        return Ok(buffer.finish());
    }
    let mut buffer = BytesMut::with_capacity(1024);
    buffer.put_i32(0);
    response_header
        .encode(&mut buffer, header_version)
        .map_err(failed)?;
    response
        .encode(&mut buffer, header.version)
        .map_err(failed)?;
    let size = (buffer.len() - 4) as i32;
    buffer[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(ResponseFrame::whole(buffer.freeze()))
}

fn encode_failed(header: FrameHeader, error: impl std::fmt::Display) -> String {
    format!(
        "cannot encode {:?} v{} response: {error}",
        header.api_key, header.version
    )
}

/// A Fetch response's record batches, which the encoded frame keeps by reference.
fn fetched_records(fetch: &FetchResponse) -> Vec<Bytes> {
    fetch
        .responses
        .iter()
        .flat_map(|topic| &topic.partitions)
        .filter_map(|partition| partition.records.clone())
        .collect()
}

async fn write_responses(
    write_half: impl AsyncWrite + Unpin,
    mut pending: mpsc::Receiver<Pending>,
    context: Arc<BrokerContext>,
    peer: SocketAddr,
) {
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER_BYTES, write_half);
    while let Some(next) = pending.recv().await {
        let frame = match next {
            Pending::Ready(frame) => frame,
            Pending::Deferred {
                response,
                header,
                started,
            } => {
                let response = response.await;
                match encode(&context, header, &response, started) {
                    Ok(frame) => frame,
                    Err(reason) => {
                        tracing::error!(%peer, %reason, "dropping connection");
                        return;
                    }
                }
            }
        };
        if let Err(error) = write_frame(&mut writer, &frame).await {
            tracing::debug!(%peer, %error, "write failed");
            return;
        }
        if pending.is_empty() {
            if let Err(error) = writer.flush().await {
                tracing::debug!(%peer, %error, "flush failed");
                return;
            }
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}
