//! Writes the fuzz targets' seed corpus (fuzz/corpus/<target>/): for every API and version the
//! broker serves, a request that decodes (the empty request, re-encoded); record batches in every
//! codec; and a partition directory with a few batches and its indexes.
//!
//! `cargo run -p weir-broker --example fuzz_seeds -- fuzz/corpus`

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, RequestKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use weir_broker::config::LogConfig;
use weir_broker::handler::SUPPORTED_APIS;
use weir_broker::log::PartitionLog;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or("fuzz/corpus".into()));
    request_seeds(&out.join("request_frame"))?;
    let batches = batch_seeds(&out.join("record_batch"))?;
    segment_seeds(&out.join("segment_recovery"), &batches)?;
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), bytes)
}

/// Each seed is the target's two selector bytes, a mode byte, and the request body (mode 1) or
/// the whole frame (mode 0).
fn request_seeds(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    for (api_index, (api_key, min, max)) in SUPPORTED_APIS.iter().enumerate() {
        for version in *min..=*max {
            // The empty request: zeros decode as empty arrays, strings and tagged fields.
            let mut zeros = Bytes::from(vec![0u8; 64]);
            let Ok(request) = RequestKind::decode(*api_key, &mut zeros, version) else {
                continue;
            };
            let mut body = BytesMut::new();
            if request.encode(&mut body, version).is_err() {
                continue;
            }
            let selector = [api_index as u8, (version - min) as u8];
            let mut seed = selector.to_vec();
            seed.push(1);
            seed.extend_from_slice(&body);
            write(dir, &format!("{api_key:?}-v{version}-body"), &seed)?;
            let header = RequestHeader::default()
                .with_request_api_key(*api_key as i16)
                .with_request_api_version(version)
                .with_correlation_id(7)
                .with_client_id(Some(StrBytes::from_static_str("seed")));
            let mut frame = BytesMut::new();
            header.encode(&mut frame, api_key.request_header_version(version))?;
            frame.extend_from_slice(&body);
            let mut seed = selector.to_vec();
            seed.push(0);
            seed.extend_from_slice(&frame);
            write(dir, &format!("{api_key:?}-v{version}-frame"), &seed)?;
        }
    }
    Ok(())
}

fn batch(
    compression: Compression,
    base_offset: i64,
) -> Result<BytesMut, Box<dyn std::error::Error>> {
    let records: Vec<Record> = (0..3)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: base_offset + i,
            // kafka-protocol keeps one batch while offset − sequence stays constant.
            sequence: i as i32 - 1,
            timestamp: 1_700_000_000_000 + i,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(format!("value-{i}").repeat(20))),
            headers: Default::default(),
        })
        .collect();
    let mut batch = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut batch, records.iter(), &options)?;
    Ok(batch)
}

fn batch_seeds(dir: &Path) -> Result<Vec<BytesMut>, Box<dyn std::error::Error>> {
    let codecs = [
        ("none", Compression::None),
        ("gzip", Compression::Gzip),
        ("snappy", Compression::Snappy),
        ("lz4", Compression::Lz4),
        ("zstd", Compression::Zstd),
    ];
    let mut batches = Vec::new();
    for (name, compression) in codecs {
        let batch = batch(compression, 0)?;
        // Mode byte 0: the CRC is checked as written (valid here).
        let mut seed = vec![0u8];
        seed.extend_from_slice(&batch);
        write(dir, name, &seed)?;
        batches.push(batch);
    }
    Ok(batches)
}

fn segment_seeds(dir: &Path, batches: &[BytesMut]) -> Result<(), Box<dyn std::error::Error>> {
    let work = tempfile::tempdir()?;
    let config = LogConfig {
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(work.path(), config, false, 0)?;
    let mut base_offset: i64 = 0;
    for template in batches {
        // The same batch, moved to the offset where it goes.
        let mut batch = template.clone();
        batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
        log.append_as_is(&batch, 0)?;
        base_offset = log.log_end_offset();
    }
    log.close(0)?;
    let name = "00000000000000000000";
    let read = |extension: &str| std::fs::read(work.path().join(format!("{name}.{extension}")));
    let (segment, index, time) = (read("log")?, read("index")?, read("timeindex")?);
    let mut seed = Vec::new();
    seed.extend_from_slice(&(index.len() as u16).to_le_bytes());
    seed.extend_from_slice(&(time.len() as u16).to_le_bytes());
    seed.extend_from_slice(&index);
    seed.extend_from_slice(&time);
    seed.extend_from_slice(&segment);
    write(dir, "segment-with-indexes", &seed)?;
    let mut bare = vec![0u8; 4];
    bare.extend_from_slice(&segment);
    write(dir, "segment-alone", &bare)?;
    Ok(())
}
