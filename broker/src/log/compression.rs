//! Compression codecs of record batches, with decompression bounded in output size.
//!
//! The broker keeps compressed batches compressed; it decompresses only to validate producer
//! batches and to find records by timestamp. A small compressed batch can expand to gigabytes, so
//! every decompression here stops with an error once `max_bytes` would be exceeded.

use std::io::Read;

use crate::log::error::BatchError;

/// The codec in bits 0–2 of a batch's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionCodec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl CompressionCodec {
    pub fn from_attributes(attributes: i16) -> Result<Self, BatchError> {
        match attributes & 0x07 {
            0 => Ok(CompressionCodec::None),
            1 => Ok(CompressionCodec::Gzip),
            2 => Ok(CompressionCodec::Snappy),
            3 => Ok(CompressionCodec::Lz4),
            4 => Ok(CompressionCodec::Zstd),
            other => Err(BatchError::UnknownCompression(other)),
        }
    }

    /// The codec's bits 0–2 of a batch's attributes.
    pub fn attribute_bits(self) -> i16 {
        match self {
            CompressionCodec::None => 0,
            CompressionCodec::Gzip => 1,
            CompressionCodec::Snappy => 2,
            CompressionCodec::Lz4 => 3,
            CompressionCodec::Zstd => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CompressionCodec::None => "none",
            CompressionCodec::Gzip => "gzip",
            CompressionCodec::Snappy => "snappy",
            CompressionCodec::Lz4 => "lz4",
            CompressionCodec::Zstd => "zstd",
        }
    }
}

/// Decompresses `input`, failing once the output would grow beyond `max_bytes`.
pub fn decompress_bounded(
    codec: CompressionCodec,
    input: &[u8],
    max_bytes: usize,
) -> Result<Vec<u8>, BatchError> {
    let fail = |error: std::io::Error| BatchError::Decompression {
        codec: codec.name(),
        reason: error.to_string(),
    };
    match codec {
        CompressionCodec::None => Ok(input.to_vec()),
        CompressionCodec::Gzip => {
            read_bounded(flate2::read::GzDecoder::new(input), max_bytes, codec)
        }
        CompressionCodec::Lz4 => {
            let decoder = lz4::Decoder::new(input).map_err(fail)?;
            read_bounded(decoder, max_bytes, codec)
        }
        CompressionCodec::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(input).map_err(fail)?;
            read_bounded(decoder, max_bytes, codec)
        }
        CompressionCodec::Snappy => decompress_snappy(input, max_bytes),
    }
}

/// Compresses a records section the way Kafka's clients do (snappy with snappy-java's framing),
/// for batches the broker rewrites (compaction). Uses kafka-protocol's compressors.
pub fn compress(codec: CompressionCodec, plain: &[u8]) -> Result<Vec<u8>, BatchError> {
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};
    let mut output = BytesMut::with_capacity(plain.len() / 2 + 64);
    let write = |buffer: &mut BytesMut| {
        buffer.put_slice(plain);
        Ok(())
    };
    let result = match codec {
        CompressionCodec::None => return Ok(plain.to_vec()),
        CompressionCodec::Gzip => Gzip::compress(&mut output, write),
        CompressionCodec::Snappy => Snappy::compress(&mut output, write),
        CompressionCodec::Lz4 => Lz4::compress(&mut output, write),
        CompressionCodec::Zstd => Zstd::compress(&mut output, write),
    };
    result.map_err(|error| BatchError::Compression {
        codec: codec.name(),
        reason: error.to_string(),
    })?;
    Ok(output.to_vec())
}

/// Compresses a records section with `codec` at `level` (KIP-390: gzip 1–9 or -1 for zlib's
/// default, lz4 1–17, zstd -131072–22; snappy has none), in the framing Kafka's clients use.
pub fn compress_at_level(
    codec: CompressionCodec,
    plain: &[u8],
    level: i32,
) -> Result<Vec<u8>, BatchError> {
    use std::io::Write;
    let fail = |error: std::io::Error| BatchError::Compression {
        codec: codec.name(),
        reason: error.to_string(),
    };
    match codec {
        CompressionCodec::None | CompressionCodec::Snappy => compress(codec, plain),
        CompressionCodec::Gzip => {
            let level = match level {
                -1 => flate2::Compression::default(),
                level => flate2::Compression::new(level.clamp(1, 9) as u32),
            };
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
            encoder.write_all(plain).map_err(fail)?;
            encoder.finish().map_err(fail)
        }
        CompressionCodec::Lz4 => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level.clamp(1, 17) as u32)
                .block_mode(lz4::BlockMode::Independent)
                .build(Vec::new())
                .map_err(fail)?;
            encoder.write_all(plain).map_err(fail)?;
            let (output, finished) = encoder.finish();
            finished.map_err(fail)?;
            Ok(output)
        }
        CompressionCodec::Zstd => zstd::bulk::compress(plain, level).map_err(fail),
    }
}

fn read_bounded(
    reader: impl Read,
    max_bytes: usize,
    codec: CompressionCodec,
) -> Result<Vec<u8>, BatchError> {
    let mut output = Vec::new();
    // Read one byte past the limit to tell "exactly at the limit" from "over it".
    let read = reader
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut output)
        .map_err(|error| BatchError::Decompression {
            codec: codec.name(),
            reason: error.to_string(),
        })?;
    if read > max_bytes {
        return Err(BatchError::DecompressedTooLarge { max_bytes });
    }
    Ok(output)
}

/// Kafka's snappy is snappy-java's framing: a 16-byte magic header followed by blocks, each a
/// big-endian u32 length and a raw snappy block. Without the header the input is one raw block.
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_BYTES: usize = 16;

fn decompress_snappy(input: &[u8], max_bytes: usize) -> Result<Vec<u8>, BatchError> {
    let invalid = |reason: String| BatchError::Decompression {
        codec: "snappy",
        reason,
    };
    let mut output = Vec::new();
    let decode_block = |block: &[u8], output: &mut Vec<u8>| -> Result<(), BatchError> {
        let length = snap::raw::decompress_len(block).map_err(|e| invalid(e.to_string()))?;
        if output.len() + length > max_bytes {
            return Err(BatchError::DecompressedTooLarge { max_bytes });
        }
        let start = output.len();
        output.resize(start + length, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut output[start..])
            .map_err(|e| invalid(e.to_string()))?;
        Ok(())
    };
    if input.len() < XERIAL_HEADER_BYTES || &input[..8] != XERIAL_MAGIC {
        decode_block(input, &mut output)?;
        return Ok(output);
    }
    let mut rest = &input[XERIAL_HEADER_BYTES..];
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(invalid("truncated block length".into()));
        }
        let length = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        rest = &rest[4..];
        if length > rest.len() {
            return Err(invalid(format!(
                "block of {length} bytes, {} remain",
                rest.len()
            )));
        }
        decode_block(&rest[..length], &mut output)?;
        rest = &rest[length..];
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_bomb_is_stopped_at_the_limit() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&vec![0u8; 10 * 1024 * 1024]).unwrap();
        let compressed = encoder.finish().unwrap();
        assert!(compressed.len() < 64 * 1024);
        let error = decompress_bounded(CompressionCodec::Gzip, &compressed, 1024 * 1024);
        assert!(matches!(
            error,
            Err(BatchError::DecompressedTooLarge { .. })
        ));
        let ok = decompress_bounded(CompressionCodec::Gzip, &compressed, 10 * 1024 * 1024).unwrap();
        assert_eq!(ok.len(), 10 * 1024 * 1024);
    }

    #[test]
    fn compress_then_decompress_gives_the_input_back() {
        let plain: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for codec in [
            CompressionCodec::None,
            CompressionCodec::Gzip,
            CompressionCodec::Snappy,
            CompressionCodec::Lz4,
            CompressionCodec::Zstd,
        ] {
            let packed = compress(codec, &plain).unwrap();
            let unpacked = decompress_bounded(codec, &packed, 1 << 20).unwrap();
            assert_eq!(unpacked, plain, "{}", codec.name());
        }
    }

    #[test]
    fn every_codec_round_trips_through_kafka_protocol_encoder() {
        use kafka_protocol::records::Compression;
        for (compression, codec) in [
            (Compression::Gzip, CompressionCodec::Gzip),
            (Compression::Snappy, CompressionCodec::Snappy),
            (Compression::Lz4, CompressionCodec::Lz4),
            (Compression::Zstd, CompressionCodec::Zstd),
        ] {
            let batch = crate::log::test_support::encode_batch(&[b"hello", b"world"], compression);
            let header = crate::log::batch::BatchHeader::parse(&batch).unwrap();
            assert_eq!(header.compression().unwrap(), codec);
            let limits = crate::log::batch::ValidationLimits {
                max_batch_bytes: 1 << 20,
                max_decompressed_bytes: 1 << 20,
                require_keys: false,
                timestamp_bounds_ms: None,
            };
            crate::log::batch::validate_producer_batch(&batch, &limits).unwrap();
        }
    }
}
