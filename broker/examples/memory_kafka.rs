//! A Kafka that keeps produced batches in memory and serves them back: the yardstick for the
//! client's own ceiling in `scripts/bench/side_by_side.sh` (`BENCH_VS=memory`). No log, no disk,
//! no replication, no groups, no transactions — ApiVersions, Metadata, Produce, ListOffsets and
//! Fetch for one topic, enough for rdkafka_performance's producer and its partition-assigned
//! consumer. What a client reaches against it is what the client itself can do on this machine.
//!
//! (librdkafka's own mock cluster keeps only the newest 5 MiB of each partition, so a consumer
//! that starts from the beginning of a 300 MB topic never finds its first message there.)
//!
//! Usage: `memory_kafka TOPIC PARTITIONS` — listens on an ephemeral loopback port, prints
//! `bootstrap=127.0.0.1:PORT` on stdout and serves until killed. Memory grows with what is
//! produced (a benchmark tool, not a broker); a request over 128 MiB closes its connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
    RequestHeader, RequestKind, ResponseHeader, ResponseKind, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

const MAX_REQUEST_BYTES: usize = 128 << 20;
/// A v2 record batch's header, up to its first record.
const BATCH_HEADER_BYTES: usize = 61;
/// (API, lowest, highest version): the versions before topic ids and KIP-227 sessions matter.
const APIS: [(ApiKey, i16, i16); 5] = [
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 1, 12),
    (ApiKey::ApiVersions, 0, 3),
];
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNSUPPORTED_VERSION: i16 = 35;

/// One partition: its batches (base offsets patched in) and the offset the next one gets.
#[derive(Default)]
struct Partition {
    batches: Vec<(i64, Bytes)>,
    next_offset: i64,
}

struct Server {
    topic: String,
    partitions: Vec<Mutex<Partition>>,
    appended: Notify,
    port: u16,
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: memory_kafka TOPIC PARTITIONS";
    let topic = args.next().ok_or(usage)?;
    let partitions: usize = args.next().ok_or(usage)?.parse()?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = Arc::new(Server {
        topic,
        partitions: (0..partitions).map(|_| Mutex::default()).collect(),
        appended: Notify::new(),
        port,
    });
    println!("bootstrap=127.0.0.1:{port}");
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        let server = server.clone();
        tokio::spawn(async move {
            if let Err(error) = serve(server, socket).await {
                eprintln!("connection closed: {error}");
            }
        });
    }
}

/// Answers one connection's requests in order.
async fn serve(server: Arc<Server>, mut socket: TcpStream) -> Result<(), Failure> {
    loop {
        let size = match socket.read_i32().await {
            Ok(size) => size,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let size = usize::try_from(size).map_err(|_| "negative request size")?;
        if !(8..=MAX_REQUEST_BYTES).contains(&size) {
            return Err(format!("request of {size} bytes").into());
        }
        let mut frame = BytesMut::zeroed(size);
        socket.read_exact(&mut frame).await?;
        let response = answer(&server, frame.freeze()).await?;
        socket.write_all(&response).await?;
    }
}

/// Decodes one request and encodes its response frame (size prefix included).
async fn answer(server: &Server, mut frame: Bytes) -> Result<Bytes, Failure> {
    let api_key = ApiKey::try_from(i16::from_be_bytes([frame[0], frame[1]]))
        .map_err(|_| "unknown API key")?;
    let mut version = i16::from_be_bytes([frame[2], frame[3]]);
    let (_, _, highest) = APIS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .ok_or_else(|| format!("{api_key:?} is not served"))?;
    let header = RequestHeader::decode(&mut frame, api_key.request_header_version(version))?;
    let response = if api_key == ApiKey::ApiVersions && version > *highest {
        version = 0;
        ResponseKind::ApiVersions(api_versions().with_error_code(UNSUPPORTED_VERSION))
    } else {
        match RequestKind::decode(api_key, &mut frame, version)? {
            RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions()),
            RequestKind::Metadata(request) => ResponseKind::Metadata(metadata(server, request)),
            RequestKind::Produce(request) => ResponseKind::Produce(produce(server, request)),
            RequestKind::ListOffsets(request) => {
                ResponseKind::ListOffsets(list_offsets(server, request))
            }
            RequestKind::Fetch(request) => ResponseKind::Fetch(fetch(server, request).await),
            _ => return Err(format!("{api_key:?} is not served").into()),
        }
    };
    let mut buffer = BytesMut::with_capacity(1024);
    buffer.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(header.correlation_id)
        .encode(&mut buffer, api_key.response_header_version(version))?;
    response.encode(&mut buffer, version)?;
    let size = i32::try_from(buffer.len() - 4)?;
    buffer[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(buffer.freeze())
}

fn api_versions() -> ApiVersionsResponse {
    let keys = APIS.iter().map(|(key, lowest, highest)| {
        ApiVersion::default()
            .with_api_key(*key as i16)
            .with_min_version(*lowest)
            .with_max_version(*highest)
    });
    ApiVersionsResponse::default().with_api_keys(keys.collect())
}

fn metadata(server: &Server, request: MetadataRequest) -> MetadataResponse {
    let asked: Vec<String> = match request.topics {
        None => vec![server.topic.clone()],
        Some(topics) => topics
            .into_iter()
            .filter_map(|t| t.name.map(|n| n.to_string()))
            .collect(),
    };
    let topics = asked.into_iter().map(|name| {
        let known = name == server.topic;
        let partitions = (0..server.partitions.len() as i32).map(|index| {
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(BrokerId(0))
                .with_leader_epoch(-1)
                .with_replica_nodes(vec![BrokerId(0)])
                .with_isr_nodes(vec![BrokerId(0)])
        });
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name))))
            .with_error_code(if known { 0 } else { UNKNOWN_TOPIC_OR_PARTITION })
            .with_partitions(if known {
                partitions.collect()
            } else {
                Vec::new()
            })
    });
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(0))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(i32::from(server.port))])
        .with_cluster_id(Some(StrBytes::from_static_str("memory")))
        .with_controller_id(BrokerId(0))
        .with_topics(topics.collect())
}

/// The partition `index` of `topic`, if this server has it.
fn partition<'a>(server: &'a Server, topic: &str, index: i32) -> Option<&'a Mutex<Partition>> {
    if topic != server.topic {
        return None;
    }
    server.partitions.get(usize::try_from(index).ok()?)
}

fn produce(server: &Server, request: ProduceRequest) -> ProduceResponse {
    let responses = request.topic_data.into_iter().map(|topic| {
        let partitions = topic.partition_data.into_iter().map(|data| {
            let response = PartitionProduceResponse::default().with_index(data.index);
            match partition(server, topic.name.as_str(), data.index) {
                None => response.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                Some(slot) => {
                    let records = data.records.unwrap_or_default();
                    let base_offset = append(&mut slot.lock().expect("lock"), &records);
                    response.with_base_offset(base_offset)
                }
            }
        });
        let partitions = partitions.collect();
        TopicProduceResponse::default()
            .with_name(topic.name)
            .with_partition_responses(partitions)
    });
    let response = ProduceResponse::default().with_responses(responses.collect());
    server.appended.notify_waiters();
    response
}

/// Appends the record batches in `records` (v2 format), giving each its base offset; returns
/// the first one's.
fn append(partition: &mut Partition, mut records: &[u8]) -> i64 {
    let first = partition.next_offset;
    while records.len() >= BATCH_HEADER_BYTES {
        let length = (&records[8..12]).get_i32();
        let Some(end) = usize::try_from(length).ok().and_then(|l| l.checked_add(12)) else {
            break;
        };
        // A batch shorter than the v2 header, or longer than what came, ends the append.
        if end < BATCH_HEADER_BYTES || end > records.len() {
            break;
        }
        let last_offset_delta = (&records[23..27]).get_i32();
        let mut batch = BytesMut::from(&records[..end]);
        batch[0..8].copy_from_slice(&partition.next_offset.to_be_bytes());
        partition
            .batches
            .push((partition.next_offset, batch.freeze()));
        partition.next_offset += i64::from(last_offset_delta) + 1;
        records = &records[end..];
    }
    first
}

fn list_offsets(server: &Server, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let topics = request.topics.into_iter().map(|topic| {
        let partitions = topic.partitions.iter().map(|asked| {
            let response = ListOffsetsPartitionResponse::default()
                .with_partition_index(asked.partition_index)
                .with_timestamp(-1)
                .with_leader_epoch(-1);
            match partition(server, topic.name.as_str(), asked.partition_index) {
                None => response.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                Some(_) if asked.timestamp == -2 => response.with_offset(0),
                Some(slot) => response.with_offset(slot.lock().expect("lock").next_offset),
            }
        });
        ListOffsetsTopicResponse::default()
            .with_name(topic.name.clone())
            .with_partitions(partitions.collect())
    });
    ListOffsetsResponse::default().with_topics(topics.collect())
}

/// Reads what the request asks for; with less than `min_bytes`, waits for appends up to
/// `max_wait_ms`.
async fn fetch(server: &Server, request: FetchRequest) -> FetchResponse {
    let deadline = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
    loop {
        let appended = server.appended.notified();
        let (response, bytes) = read(server, &request);
        let now = tokio::time::Instant::now();
        if bytes >= usize::try_from(request.min_bytes).unwrap_or(0).max(1) || now >= deadline {
            return response;
        }
        let _ = tokio::time::timeout_at(deadline, appended).await;
    }
}

fn read(server: &Server, request: &FetchRequest) -> (FetchResponse, usize) {
    let mut remaining = usize::try_from(request.max_bytes).unwrap_or(0);
    let mut total = 0;
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for asked in &topic.partitions {
            let data = PartitionData::default()
                .with_partition_index(asked.partition)
                .with_last_stable_offset(-1)
                .with_preferred_read_replica(BrokerId(-1));
            let Some(slot) = partition(server, topic.topic.as_str(), asked.partition) else {
                partitions.push(data.with_error_code(UNKNOWN_TOPIC_OR_PARTITION));
                continue;
            };
            let slot = slot.lock().expect("lock");
            let data = data
                .with_high_watermark(slot.next_offset)
                .with_last_stable_offset(slot.next_offset)
                .with_log_start_offset(0);
            if asked.fetch_offset > slot.next_offset || asked.fetch_offset < 0 {
                partitions.push(data.with_error_code(OFFSET_OUT_OF_RANGE));
                continue;
            }
            let limit = usize::try_from(asked.partition_max_bytes)
                .unwrap_or(0)
                .min(remaining);
            let records = batches_from(&slot, asked.fetch_offset, limit, total == 0);
            remaining = remaining.saturating_sub(records.len());
            total += records.len();
            partitions.push(data.with_records(Some(records)));
        }
        topics.push(
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions),
        );
    }
    (FetchResponse::default().with_responses(topics), total)
}

/// The batches from the one holding `offset` on, within `limit` bytes (the first one whole
/// when `first_whole`, as KIP-74 says).
fn batches_from(partition: &Partition, offset: i64, limit: usize, first_whole: bool) -> Bytes {
    let start = partition
        .batches
        .partition_point(|(base, _)| *base <= offset)
        .saturating_sub(1);
    let mut out = BytesMut::new();
    for (base, batch) in &partition.batches[start.min(partition.batches.len())..] {
        let last = base + i64::from((&batch[23..27]).get_i32());
        if last < offset {
            continue;
        }
        if out.len() + batch.len() > limit && !(out.is_empty() && first_whole) {
            break;
        }
        out.extend_from_slice(batch);
    }
    out.freeze()
}
