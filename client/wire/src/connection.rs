//! [`ProtocolClient`]: one connection to one broker, one request at a time — TCP, then TLS and
//! the SASL login when [`ClientSecurity`] asks for them, all within the connect timeout — and
//! the errors it reports.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::security::ClientSecurity;

/// Largest response accepted.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Time allowed for connecting and for each request unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{address} did not answer within {timeout_ms} ms")]
    TimedOut { address: String, timeout_ms: u128 },
    #[error("connection to {address} failed: {source}")]
    Io {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{address} sent a response of {size} bytes (at most {MAX_RESPONSE_BYTES})")]
    ResponseSize { address: String, size: i32 },
    #[error("{address}: response correlation id {got} does not match {expected}")]
    Correlation {
        address: String,
        got: i32,
        expected: i32,
    },
    #[error("TLS with {address} failed: {reason}")]
    Tls { address: String, reason: String },
    #[error("{address} refused the login: {reason}")]
    Authentication { address: String, reason: String },
    #[error("{address}: cannot encode or decode {api}: {reason}")]
    Codec {
        address: String,
        api: String,
        reason: String,
    },
}

/// A connection's byte stream: TCP, or TLS over TCP.
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

pub struct ProtocolClient {
    stream: Box<dyn Transport>,
    pub(crate) address: String,
    client_id: StrBytes,
    timeout: Duration,
    next_correlation_id: i32,
}

impl ProtocolClient {
    /// Connects to the first broker of a bootstrap list, as `weir-cli`.
    pub async fn connect(bootstrap: &str) -> Result<Self, ClientError> {
        let first = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        Self::connect_as(first, "weir-cli", DEFAULT_TIMEOUT).await
    }

    /// Connects to `address` as `client_id`; `timeout` bounds the connect and each call.
    pub async fn connect_as(
        address: &str,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        Self::connect_secured(address, client_id, timeout, &ClientSecurity::plaintext()).await
    }

    /// Connects to the first broker of a bootstrap list, as `weir-cli`, with `security`.
    pub async fn connect_with(
        bootstrap: &str,
        security: &ClientSecurity,
    ) -> Result<Self, ClientError> {
        let first = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        Self::connect_secured(first, "weir-cli", DEFAULT_TIMEOUT, security).await
    }

    /// Connects to `address` as `client_id` with TLS and a SASL login as `security` says;
    /// `timeout` bounds connecting (TLS and login included) and then each call.
    pub async fn connect_secured(
        address: &str,
        client_id: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> Result<Self, ClientError> {
        let connecting = Self::open(address, client_id, timeout, security);
        match tokio::time::timeout(timeout, connecting).await {
            Err(_) => Err(timed_out(address, timeout)),
            Ok(result) => result,
        }
    }

    async fn open(
        address: &str,
        client_id: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> Result<Self, ClientError> {
        let tcp = TcpStream::connect(address)
            .await
            .map_err(|source| ClientError::Connect {
                address: address.to_string(),
                source,
            })?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Transport> = match &security.tls {
            None => Box::new(tcp),
            Some(config) => Box::new(tls_handshake(address, tcp, config.clone()).await?),
        };
        let mut client = ProtocolClient {
            stream,
            address: address.to_string(),
            client_id: StrBytes::from_string(client_id.to_string()),
            timeout,
            next_correlation_id: 1,
        };
        if let Some(login) = &security.sasl {
            client.authenticate(login).await?;
        }
        Ok(client)
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    pub async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ClientError> {
        self.call_within(version, request, self.timeout).await
    }

    /// One request, answered within `timeout` (a long-polling fetch needs its wait on top).
    pub async fn call_within<R: Request>(
        &mut self,
        version: i16,
        request: &R,
        timeout: Duration,
    ) -> Result<R::Response, ClientError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let frame = self.encode(version, request, correlation_id)?;
        let mut response = match tokio::time::timeout(timeout, self.exchange(&frame)).await {
            Err(_) => return Err(timed_out(&self.address, timeout)),
            Ok(result) => result?,
        };
        let codec = |reason: String| ClientError::Codec {
            address: self.address.clone(),
            api: format!("{:?} v{version} response", R::KEY),
            reason,
        };
        let header = ResponseHeader::decode(&mut response, R::Response::header_version(version))
            .map_err(|e| codec(e.to_string()))?;
        if header.correlation_id != correlation_id {
            return Err(ClientError::Correlation {
                address: self.address.clone(),
                got: header.correlation_id,
                expected: correlation_id,
            });
        }
        let decoded =
            R::Response::decode(&mut response, version).map_err(|e| codec(e.to_string()))?;
        if response.has_remaining() {
            tracing::debug!(
                trailing = response.remaining(),
                "trailing bytes in response"
            );
        }
        Ok(decoded)
    }

    fn encode<R: Request>(
        &self,
        version: i16,
        request: &R,
        correlation_id: i32,
    ) -> Result<BytesMut, ClientError> {
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .and_then(|()| request.encode(&mut body, version))
            .map_err(|error| ClientError::Codec {
                address: self.address.clone(),
                api: format!("{:?} v{version} request", R::KEY),
                reason: error.to_string(),
            })?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        Ok(frame)
    }

    async fn exchange(&mut self, frame: &[u8]) -> Result<Bytes, ClientError> {
        let io = |source| ClientError::Io {
            address: self.address.clone(),
            source,
        };
        self.stream.write_all(frame).await.map_err(io)?;
        // TLS holds written records until flushed.
        self.stream.flush().await.map_err(io)?;
        let size = self.stream.read_i32().await.map_err(io)?;
        if size < 0 || size as usize > MAX_RESPONSE_BYTES {
            return Err(ClientError::ResponseSize {
                address: self.address.clone(),
                size,
            });
        }
        let mut response = vec![0u8; size as usize];
        self.stream.read_exact(&mut response).await.map_err(io)?;
        Ok(Bytes::from(response))
    }
}

/// TLS over `tcp` to the broker at `address` (host:port; the host is the name its certificate
/// must carry unless `config` says otherwise), with a hint for the two refusals users meet.
pub async fn tls_handshake(
    address: &str,
    tcp: TcpStream,
    config: std::sync::Arc<tokio_rustls::rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, ClientError> {
    let tls_error = |reason: String| ClientError::Tls {
        address: address.to_string(),
        reason,
    };
    let host = address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let server_name = ServerName::try_from(host.to_string())
        .map_err(|e| tls_error(format!("{host} is not a host name or address: {e}")))?;
    tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| {
            let hint = match e.to_string() {
                text if text.contains("UnknownIssuer") => {
                    "; the broker's certificate is not signed by a trusted CA (ssl.ca.location)"
                }
                text if text.contains("NotValidForName") => {
                    "; the certificate does not name this host (ssl.endpoint.identification.algorithm)"
                }
                _ => "",
            };
            tls_error(format!("{e}{hint}"))
        })
}

fn timed_out(address: &str, timeout: Duration) -> ClientError {
    ClientError::TimedOut {
        address: address.to_string(),
        timeout_ms: timeout.as_millis(),
    }
}
