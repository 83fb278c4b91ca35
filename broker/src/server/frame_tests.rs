//! Decoded-size bounds: what real requests hold once decoded, and the hostile ones refused.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, FetchRequest, GroupId, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::*;

fn frame(api_key: ApiKey, version: i16, body: &impl Encodable) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("rdkafka")));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, api_key.request_header_version(version))
        .unwrap();
    body.encode(&mut frame, version).unwrap();
    frame.freeze()
}

/// Decoded bytes per frame byte, asserting the frame decodes within its bound.
fn decoded_per_frame_byte(frame: Bytes) -> f64 {
    let frame_bytes = frame.len();
    let (decoded, cost) = decode_request_within(frame, decoded_bytes_bound(frame_bytes));
    assert!(decoded.is_ok(), "{:?}", decoded.err());
    cost.charged_bytes as f64 / frame_bytes as f64
}

fn name(text: String) -> StrBytes {
    StrBytes::from_string(text)
}

#[test]
fn requests_real_clients_send_decode_well_within_the_bound() {
    // A consumer fetching 5,000 partitions of 100 topics.
    let fetch = FetchRequest::default().with_max_wait_ms(500).with_topics(
        (0..100)
            .map(|t| {
                FetchTopic::default()
                    .with_topic_id(uuid::Uuid::from_u128(t + 1))
                    .with_partitions(
                        (0..50)
                            .map(|p| {
                                FetchPartition::default()
                                    .with_partition(p)
                                    .with_fetch_offset(1 << 20)
                            })
                            .collect(),
                    )
            })
            .collect(),
    );
    let fetch = decoded_per_frame_byte(frame(ApiKey::Fetch, 13, &fetch));
    // Commits for 10,000 partitions, metadata for 50,000 topics, offsets of 10,000 groups.
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(name("orders-enricher".into())))
        .with_topics(
            (0..100)
                .map(|t| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(name(format!("orders-{t}"))))
                        .with_partitions(
                            (0..100)
                                .map(|p| {
                                    OffsetCommitRequestPartition::default()
                                        .with_partition_index(p)
                                        .with_committed_offset(123_456)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let commit = decoded_per_frame_byte(frame(ApiKey::OffsetCommit, 8, &commit));
    let metadata = MetadataRequest::default().with_topics(Some(
        (0..50_000)
            .map(|t| {
                MetadataRequestTopic::default()
                    .with_name(Some(TopicName(name(format!("topic-{t}")))))
            })
            .collect(),
    ));
    let metadata = decoded_per_frame_byte(frame(ApiKey::Metadata, 12, &metadata));
    let groups = OffsetFetchRequest::default().with_groups(
        (0..10_000)
            .map(|g| {
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(name(format!("group-{g}"))))
            })
            .collect(),
    );
    let groups = decoded_per_frame_byte(frame(ApiKey::OffsetFetch, 8, &groups));
    let ratios = [fetch, commit, metadata, groups];
    eprintln!("decoded bytes per frame byte (fetch, commit, metadata, offset fetch): {ratios:?}");
    assert!(
        ratios
            .iter()
            .all(|r| *r < DECODED_BYTES_PER_FRAME_BYTE as f64 / 1.5),
        "decoded bytes per frame byte (fetch, commit, metadata, offset fetch): {ratios:?}"
    );
}

/// The 30 MB OffsetFetch of 10 million empty groups (3 bytes each) that took 1.3 GB.
fn empty_groups_offset_fetch(groups: u32) -> Bytes {
    let mut frame =
        BytesMut::from(&frame(ApiKey::OffsetFetch, 8, &OffsetFetchRequest::default())[..]);
    // The default body ends with an empty groups array (compact: 1), require_stable, no tags.
    frame.truncate(frame.len() - 3);
    let mut count = groups as u64 + 1;
    while count >= 0x80 {
        frame.put_u8((count as u8 & 0x7f) | 0x80);
        count >>= 7;
    }
    frame.put_u8(count as u8);
    for _ in 0..groups {
        // group_id "" (compact string: 1), topics null (compact array: 0), no tagged fields.
        frame.put_slice(&[1, 0, 0]);
    }
    frame.put_slice(&[0, 0]);
    frame.freeze()
}

#[test]
fn a_request_of_millions_of_empty_elements_is_refused_before_it_is_allocated() {
    let small = empty_groups_offset_fetch(1_000);
    assert!(decode_request(small).is_ok(), "the frame is well formed");
    let hostile = empty_groups_offset_fetch(10_000_000);
    let frame_bytes = hostile.len();
    let (decoded, cost) = decode_request_within(hostile, decoded_bytes_bound(frame_bytes));
    let reason = decoded.expect_err("refused");
    assert!(reason.contains("once decoded"), "{reason}");
    let wanted = cost.refused_at_bytes.expect("the budget refused it");
    assert!(
        wanted > 30 * frame_bytes,
        "asked for {wanted} for {frame_bytes} bytes"
    );
    assert_eq!(
        cost.charged_bytes, 0,
        "refused before the array was reserved"
    );
}
