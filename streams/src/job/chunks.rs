//! Rows in chunks: how a stage hands its results to the stages that read them (`stages`).
//!
//! A stage's results topic is internal to its job, so its records need not be one per row:
//! each checkpoint's rows go out as a few chunk records, each holding up to
//! [`CHUNK_MAX_ROWS`] rows or [`CHUNK_MAX_BYTES`] bytes (key, value and event time of every
//! row), instead of one record per row. That spares the producer, the broker and the reading
//! consumer their work per record (a windowed stage emits hundreds of thousands of small
//! rows), while the rows, their order and their exactly-once delivery stay those of the topic:
//! chunks are records of the checkpoint's transaction like any other.
//!
//! Partitions: a keyed row goes to its key's partition (its rows keep their order), an unkeyed
//! row to the partition after the previous row's, so every partition's event time moves on at
//! every checkpoint as with one record per row.
//!
//! Reading: a chunk is expanded into its rows before the stage sees them, each with the chunk's
//! partition and an offset of its own, `chunk offset × ROW_SLOTS + index` (row identities stay
//! unique; committed offsets are the chunks'). A record that is not a well-formed chunk is a
//! dead letter, never a panic: every length is checked against what remains.

use crate::aggregate::codec::partition_of;
use crate::record::InputRecord;

/// What a chunk starts with (and its format's version), followed by its row count (u32).
const MAGIC: &[u8; 5] = b"WRCH1";
const HEADER: usize = MAGIC.len() + 4;
/// The most rows one chunk holds.
pub(super) const CHUNK_MAX_ROWS: usize = 10_000;
/// The most bytes a chunk grows to (plus its last row): well under the broker's and the
/// producer's default largest message (1 MB).
pub(super) const CHUNK_MAX_BYTES: usize = 256 * 1024;
/// Offsets of a chunk's rows: `chunk offset × ROW_SLOTS + index`.
const ROW_SLOTS: i64 = 16_384;

const HAS_KEY: u8 = 1;
const HAS_VALUE: u8 = 2;
const HAS_TIME: u8 = 4;

/// One row of a stage's results.
pub(super) struct Row<'a> {
    pub(super) key: Option<&'a [u8]>,
    pub(super) value: Option<&'a [u8]>,
    pub(super) timestamp_ms: Option<i64>,
}

/// Rows (in their order) → (partition, chunk) for a topic of `partitions`.
pub(super) fn chunk<'a>(
    rows: impl IntoIterator<Item = Row<'a>>,
    partitions: i32,
) -> Vec<(i32, Vec<u8>)> {
    let partitions = partitions.max(1);
    let mut open: Vec<(Vec<u8>, usize)> = vec![(Vec::new(), 0); partitions as usize];
    let mut done = Vec::new();
    let mut next_unkeyed = 0;
    for row in rows {
        let partition = match row.key {
            Some(key) => partition_of(key, partitions),
            None => {
                next_unkeyed = (next_unkeyed + 1) % partitions;
                next_unkeyed
            }
        };
        let (chunk, rows) = &mut open[partition as usize];
        if chunk.is_empty() {
            chunk.extend_from_slice(MAGIC);
            chunk.extend_from_slice(&[0; 4]);
        }
        write_row(chunk, &row);
        *rows += 1;
        if *rows == CHUNK_MAX_ROWS || chunk.len() >= CHUNK_MAX_BYTES {
            done.push((partition, close(std::mem::take(chunk), *rows)));
            *rows = 0;
        }
    }
    for (partition, (chunk, rows)) in open.into_iter().enumerate() {
        if !chunk.is_empty() {
            done.push((partition as i32, close(chunk, rows)));
        }
    }
    done
}

/// The chunk with its row count in its header.
fn close(mut chunk: Vec<u8>, rows: usize) -> Vec<u8> {
    chunk[MAGIC.len()..HEADER].copy_from_slice(&(rows as u32).to_le_bytes());
    chunk
}

/// How many rows a record holds, read from its header (a checkpoint's bound counts rows): 1
/// when it is not a chunk (it becomes one dead letter).
pub(super) fn rows_in(value: Option<&[u8]>) -> usize {
    match value.and_then(|v| v.strip_prefix(MAGIC.as_slice())) {
        Some(rest) if rest.len() >= 4 => {
            u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")).max(1) as usize
        }
        _ => 1,
    }
}

fn write_row(chunk: &mut Vec<u8>, row: &Row) {
    let mut flags = 0;
    for (present, flag) in [
        (row.key.is_some(), HAS_KEY),
        (row.value.is_some(), HAS_VALUE),
        (row.timestamp_ms.is_some(), HAS_TIME),
    ] {
        if present {
            flags |= flag;
        }
    }
    chunk.push(flags);
    if let Some(time) = row.timestamp_ms {
        chunk.extend_from_slice(&time.to_le_bytes());
    }
    for bytes in [row.key, row.value].into_iter().flatten() {
        chunk.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        chunk.extend_from_slice(bytes);
    }
}

/// Why a record is not a chunk.
#[derive(Debug, thiserror::Error)]
#[error("not a chunk of rows: {0}")]
pub(super) struct NotAChunk(&'static str);

/// A chunk record → its rows, each with the record's partition, an offset of its own and (a
/// row without an event time) the record's timestamp.
pub(super) fn expand(record: &InputRecord) -> Result<Vec<InputRecord>, NotAChunk> {
    let bytes = record.value.as_deref().ok_or(NotAChunk("no value"))?;
    let mut rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(NotAChunk("no chunk header"))?;
    let count = u32::from_le_bytes(take(&mut rest, 4)?.try_into().expect("4 bytes")) as usize;
    if count > CHUNK_MAX_ROWS {
        return Err(NotAChunk("more rows than a chunk holds"));
    }
    let mut rows = Vec::with_capacity(count);
    while let Some((&flags, after)) = rest.split_first() {
        rest = after;
        if flags & !(HAS_KEY | HAS_VALUE | HAS_TIME) != 0 {
            return Err(NotAChunk("unknown row flags"));
        }
        if rows.len() == count {
            return Err(NotAChunk("more rows than its header says"));
        }
        let timestamp_ms = match flags & HAS_TIME {
            0 => record.timestamp_ms,
            _ => i64::from_le_bytes(take(&mut rest, 8)?.try_into().expect("8 bytes")),
        };
        let key = (flags & HAS_KEY != 0)
            .then(|| take_sized(&mut rest))
            .transpose()?;
        let value = (flags & HAS_VALUE != 0)
            .then(|| take_sized(&mut rest))
            .transpose()?;
        rows.push(InputRecord {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            partition: record.partition,
            offset: record.offset.saturating_mul(ROW_SLOTS) + rows.len() as i64,
            timestamp_ms,
            headers: None,
        });
    }
    if rows.len() != count {
        return Err(NotAChunk("fewer rows than its header says"));
    }
    Ok(rows)
}

fn take<'a>(rest: &mut &'a [u8], length: usize) -> Result<&'a [u8], NotAChunk> {
    if rest.len() < length {
        return Err(NotAChunk("a row is cut short"));
    }
    let (taken, after) = rest.split_at(length);
    *rest = after;
    Ok(taken)
}

fn take_sized<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], NotAChunk> {
    let length = u32::from_le_bytes(take(rest, 4)?.try_into().expect("4 bytes"));
    take(rest, length as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(value: Vec<u8>, partition: i32, offset: i64) -> InputRecord {
        InputRecord {
            key: None,
            value: Some(value),
            partition,
            offset,
            timestamp_ms: 77,
            headers: None,
        }
    }

    #[test]
    fn rows_come_back_as_they_went_keyed_ones_by_key_unkeyed_ones_spread() {
        let values: Vec<String> = (0..7).map(|i| format!("{{\"n\":{i}}}")).collect();
        let rows = values.iter().enumerate().map(|(i, v)| Row {
            key: (i % 2 == 0).then_some(b"k".as_slice()),
            value: (i != 3).then_some(v.as_bytes()),
            timestamp_ms: (i != 5).then_some(1_000 + i as i64),
        });
        let chunks = chunk(rows, 3);
        let key_partition = partition_of(b"k", 3);
        let mut seen = Vec::new();
        let mut unkeyed_partitions = std::collections::BTreeSet::new();
        for (n, (partition, bytes)) in chunks.into_iter().enumerate() {
            for row in expand(&record(bytes, partition, n as i64 + 10)).unwrap() {
                assert_eq!(row.partition, partition);
                match row.key {
                    Some(_) => assert_eq!(partition, key_partition),
                    None => {
                        unkeyed_partitions.insert(partition);
                    }
                }
                assert_eq!(row.offset / ROW_SLOTS, n as i64 + 10);
                seen.push((row.key, row.value, row.timestamp_ms));
            }
        }
        assert_eq!(
            unkeyed_partitions.len(),
            3,
            "unkeyed rows go round the partitions"
        );
        let mut want: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    (i % 2 == 0).then(|| b"k".to_vec()),
                    (i != 3).then(|| v.as_bytes().to_vec()),
                    if i == 5 { 77 } else { 1_000 + i as i64 },
                )
            })
            .collect();
        want.sort();
        seen.sort();
        assert_eq!(seen, want);
    }

    #[test]
    fn chunks_are_bounded_in_rows_and_bytes() {
        let value = vec![b'x'; 100];
        let rows = (0..25_000).map(|_| Row {
            key: None,
            value: Some(&value),
            timestamp_ms: Some(1),
        });
        let chunks = chunk(rows, 1);
        assert!(chunks.iter().all(|(_, c)| c.len() < CHUNK_MAX_BYTES + 200));
        let counts: Vec<usize> = chunks
            .iter()
            .map(|(p, c)| expand(&record(c.clone(), *p, 0)).unwrap().len())
            .collect();
        assert_eq!(counts.iter().sum::<usize>(), 25_000);
        assert!(counts.iter().all(|&n| n <= CHUNK_MAX_ROWS), "{counts:?}");
    }

    #[test]
    fn anything_else_is_refused_never_a_panic() {
        let whole = chunk(
            [Row {
                key: Some(b"key"),
                value: Some(b"value"),
                timestamp_ms: Some(5),
            }],
            1,
        )
        .remove(0)
        .1;
        for cut in 0..whole.len() {
            let result = expand(&record(whole[..cut].to_vec(), 0, 0));
            assert!(result.is_err(), "cut at {cut}");
        }
        let mut hostile = MAGIC.to_vec();
        hostile.extend([1, 0, 0, 0, HAS_VALUE, 0xff, 0xff, 0xff, 0xff, b'a']);
        assert!(expand(&record(hostile, 0, 0)).is_err());
        let mut flags = MAGIC.to_vec();
        flags.extend([1, 0, 0, 0, 0x80]);
        assert!(expand(&record(flags, 0, 0)).is_err());
        let mut too_many = MAGIC.to_vec();
        too_many.extend([0xff, 0xff, 0xff, 0xff]);
        assert!(expand(&record(too_many, 0, 0)).is_err());
        assert_eq!(rows_in(Some(&whole)), 1);
        assert_eq!(rows_in(Some(b"{}")), 1);
        assert!(expand(&record(b"{\"plain\":1}".to_vec(), 0, 0)).is_err());
    }
}
