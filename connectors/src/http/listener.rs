//! The endpoint's listener: at most `max_connections` open connections (accepting waits for a
//! slot, so further clients queue in the kernel's backlog), and a connection that sends nothing
//! for `read_timeout_seconds` — a client stalling in its headers or body, or an idle keep-alive
//! connection — is closed (the silence is counted from the last byte received or sent).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// A TCP listener bounding its connections' number and silence.
pub struct BoundedListener {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    read_timeout: Duration,
}

impl BoundedListener {
    pub fn new(listener: TcpListener, max_connections: usize, read_timeout: Duration) -> Self {
        BoundedListener {
            listener,
            slots: Arc::new(Semaphore::new(max_connections.min(Semaphore::MAX_PERMITS))),
            read_timeout,
        }
    }
}

impl axum::serve::Listener for BoundedListener {
    type Io = BoundedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (BoundedStream, std::net::SocketAddr) {
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .expect("the slots' semaphore is never closed");
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let stream = BoundedStream {
                        stream,
                        _slot: slot,
                        read_timeout: self.read_timeout,
                        silence: Box::pin(tokio::time::sleep(self.read_timeout)),
                    };
                    return (stream, peer);
                }
                Err(error) => {
                    // Out of file descriptors and similar: back off instead of spinning.
                    tracing::warn!(%error, "http source: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// An accepted connection holding its slot; reads fail with `TimedOut` after the read timeout
/// passes without a byte.
pub struct BoundedStream {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    read_timeout: Duration,
    silence: Pin<Box<Sleep>>,
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
