//! A bare Kafka protocol connection built on kafka-protocol, for the requests and byte-level
//! abuse that real clients never send.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) struct RawClient {
    stream: TcpStream,
    next_correlation_id: i32,
    client_id: &'static str,
}

impl RawClient {
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> Self {
        RawClient {
            stream: TcpStream::connect(addr).await.expect("connect"),
            next_correlation_id: 1,
            client_id: "weir-raw-test",
        }
    }

    /// The client id the request headers carry from now on.
    pub(crate) fn with_client_id(mut self, client_id: &'static str) -> Self {
        self.client_id = client_id;
        self
    }

    /// Encodes a request (header + body) without the size prefix.
    pub(crate) fn encode<R: Request>(&mut self, version: i16, request: &R) -> (i32, BytesMut) {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(self.client_id)));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .expect("encode header");
        request.encode(&mut body, version).expect("encode request");
        (correlation_id, body)
    }

    pub(crate) async fn send_frame(&mut self, body: &[u8]) {
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(body);
        self.stream.write_all(&frame).await.expect("write");
    }

    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// The next response frame, or None when the broker closed the connection.
    pub(crate) async fn read_frame(&mut self) -> Option<Bytes> {
        let read = async {
            let size = self.stream.read_i32().await.ok()?;
            let mut frame = vec![0u8; size as usize];
            self.stream.read_exact(&mut frame).await.ok()?;
            Some(Bytes::from(frame))
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), read)
            .await
            .expect("broker neither answered nor closed within 10 s")
    }

    /// Whether a response (or the close) arrives within `wait`; only for when the caller expects
    /// none, as a read cut off by the timeout leaves the stream mid-frame.
    pub(crate) async fn answers_within(&mut self, wait: std::time::Duration) -> bool {
        let mut first = [0u8; 1];
        tokio::time::timeout(wait, self.stream.peek(&mut first))
            .await
            .is_ok()
    }

    pub(crate) fn decode<R: Request>(version: i16, mut frame: Bytes) -> (i32, R::Response) {
        let header = ResponseHeader::decode(&mut frame, R::Response::header_version(version))
            .expect("response header");
        let response = R::Response::decode(&mut frame, version).expect("response body");
        assert!(!frame.has_remaining(), "trailing bytes in response");
        (header.correlation_id, response)
    }

    pub(crate) async fn call<R: Request>(&mut self, version: i16, request: &R) -> R::Response {
        let (correlation_id, body) = self.encode(version, request);
        self.send_frame(&body).await;
        let frame = self.read_frame().await.expect("response");
        let (got, response) = Self::decode::<R>(version, frame);
        assert_eq!(got, correlation_id, "correlation id");
        response
    }

    /// True when the broker has closed the connection (reads EOF).
    pub(crate) async fn is_closed(&mut self) -> bool {
        self.read_frame().await.is_none()
    }
}
