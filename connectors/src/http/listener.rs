//! The endpoint's listener: at most `max_connections` open connections (accepting waits for a
//! slot, so further clients queue in the kernel's backlog), and a connection that sends nothing
//! for `read_timeout_seconds` — a client stalling in its TLS handshake, headers or body, or an
//! idle keep-alive connection — is closed (the silence is counted from the last byte received or
//! sent). With TLS, handshakes run on tasks of their own, so a slow client delays nobody else.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;

/// Connections accepted (and through their handshake) waiting for the server to take them.
const ACCEPTED_QUEUE: usize = 64;

/// A TCP listener bounding its connections' number and silence, optionally behind TLS.
pub(super) struct BoundedListener {
    accepted: mpsc::Receiver<(BoundedStream, std::net::SocketAddr)>,
    local_addr: std::net::SocketAddr,
}

impl BoundedListener {
    /// Starts accepting on `listener` (a task that ends when this listener is dropped).
    pub(super) fn new(
        listener: TcpListener,
        max_connections: usize,
        read_timeout: Duration,
        tls: Option<TlsAcceptor>,
    ) -> io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let (sender, accepted) = mpsc::channel(ACCEPTED_QUEUE);
        let accepting = Accepting {
            listener,
            slots: Arc::new(Semaphore::new(max_connections.min(Semaphore::MAX_PERMITS))),
            read_timeout,
            tls,
            sender,
        };
        tokio::spawn(accepting.run());
        Ok(BoundedListener {
            accepted,
            local_addr,
        })
    }
}

struct Accepting {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    read_timeout: Duration,
    tls: Option<TlsAcceptor>,
    sender: mpsc::Sender<(BoundedStream, std::net::SocketAddr)>,
}

impl Accepting {
    async fn run(self) {
        loop {
            let slot = tokio::select! {
                _ = self.sender.closed() => return,
                slot = Arc::clone(&self.slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => return,
                },
            };
            let (stream, peer) = tokio::select! {
                _ = self.sender.closed() => return,
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and similar: back off instead of spinning.
                        tracing::warn!(%error, "http source: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let sender = self.sender.clone();
            let read_timeout = self.read_timeout;
            let Some(tls) = self.tls.clone() else {
                let stream = BoundedStream::new(Box::new(stream), slot, read_timeout);
                if sender.send((stream, peer)).await.is_err() {
                    return;
                }
                continue;
            };
            tokio::spawn(async move {
                match tokio::time::timeout(read_timeout, tls.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let stream = BoundedStream::new(Box::new(stream), slot, read_timeout);
                        let _ = sender.send((stream, peer)).await;
                    }
                    Ok(Err(error)) => {
                        tracing::info!(%peer, %error, "http source: TLS handshake failed")
                    }
                    Err(_) => tracing::info!(%peer, "http source: TLS handshake timed out"),
                }
            });
        }
    }
}

impl axum::serve::Listener for BoundedListener {
    type Io = BoundedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (BoundedStream, std::net::SocketAddr) {
        match self.accepted.recv().await {
            Some(accepted) => accepted,
            // The accepting task only ends once this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        Ok(self.local_addr)
    }
}

/// What a connection reads and writes through: TCP, or TLS over it.
trait Connection: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Connection for T {}

/// An accepted connection holding its slot; reads fail with `TimedOut` after the read timeout
/// passes without a byte.
pub(super) struct BoundedStream {
    stream: Box<dyn Connection>,
    _slot: OwnedSemaphorePermit,
    read_timeout: Duration,
    silence: Pin<Box<Sleep>>,
}

impl BoundedStream {
    fn new(
        stream: Box<dyn Connection>,
        slot: OwnedSemaphorePermit,
        read_timeout: Duration,
    ) -> Self {
        BoundedStream {
            stream,
            _slot: slot,
            read_timeout,
            silence: Box::pin(tokio::time::sleep(read_timeout)),
        }
    }
}

impl AsyncRead for BoundedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_read(context, buffer) {
            Poll::Ready(result) => {
                let deadline = Instant::now() + this.read_timeout;
                this.silence.as_mut().reset(deadline);
                Poll::Ready(result)
            }
            Poll::Pending => match this.silence.as_mut().poll(context) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("nothing received for {:?}", this.read_timeout),
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for BoundedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.stream).poll_write(context, bytes);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            // An answer just went out (perhaps after a long write to the cluster): the client's
            // silence is counted from here, not from its request.
            let deadline = Instant::now() + this.read_timeout;
            this.silence.as_mut().reset(deadline);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
