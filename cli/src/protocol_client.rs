//! A minimal Kafka protocol client (kafka-protocol crate) for the admin calls where rdkafka falls
//! short: rust-rdkafka 0.39 drops per-resource errors of AlterConfigs, so a refused config change
//! would be reported as success. Talks to the first bootstrap broker; works with Weir and Kafka.
//! Also compiled into the compatibility scenario (`compat/scenario`).

use anyhow::{bail, Context};
use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest response accepted.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Time allowed for connecting and for each request.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct ProtocolClient {
    stream: TcpStream,
    next_correlation_id: i32,
}

impl ProtocolClient {
    pub async fn connect(bootstrap: &str) -> anyhow::Result<Self> {
        let first = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        let stream = tokio::time::timeout(REQUEST_TIMEOUT, TcpStream::connect(first))
            .await
            .with_context(|| format!("timed out connecting to {first}"))?
            .with_context(|| format!("cannot connect to {first}"))?;
        Ok(ProtocolClient {
            stream,
            next_correlation_id: 1,
        })
    }

    pub async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> anyhow::Result<R::Response> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("weir-cli")));
        let mut body = BytesMut::new();
        header.encode(&mut body, R::header_version(version))?;
        request.encode(&mut body, version)?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        let exchange = async {
            self.stream.write_all(&frame).await?;
            let size = self.stream.read_i32().await?;
            if size < 0 || size as usize > MAX_RESPONSE_BYTES {
                bail!("response of {size} bytes is out of bounds");
            }
            let mut response = vec![0u8; size as usize];
            self.stream.read_exact(&mut response).await?;
            Ok(bytes::Bytes::from(response))
        };
        let mut response = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .context("request timed out")??;
        let header = ResponseHeader::decode(&mut response, R::Response::header_version(version))?;
        if header.correlation_id != correlation_id {
            bail!(
                "response correlation id {} does not match {correlation_id}",
                header.correlation_id
            );
        }
        let decoded = R::Response::decode(&mut response, version)?;
        if response.has_remaining() {
            tracing::debug!(
                trailing = response.remaining(),
                "trailing bytes in response"
            );
        }
        Ok(decoded)
    }
}
