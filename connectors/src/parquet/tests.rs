use std::fs::File;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::manifest;
use super::store::published_files;
use super::store::{FileStore, LocalStore};
use super::*;
use crate::sink::{Sink, SinkOffsets};

pub(super) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
        Field::new("status", DataType::Int64, true),
        Field::new("path", DataType::Utf8, true),
    ]))
}

/// Rows at `2026-11-29T13:00Z + minute` with the given statuses.
pub(super) fn rows(minutes: &[i64], statuses: &[i64]) -> RecordBatch {
    let base = 1_795_957_200_000i64; // 2026-11-29T13:00:00Z
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from(
                minutes
                    .iter()
                    .map(|m| base + m * 60_000)
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(statuses.to_vec())),
            Arc::new(StringArray::from(vec!["/"; statuses.len()])),
        ],
    )
    .unwrap()
}

pub(super) fn offsets(pairs: &[(i32, i64)]) -> SinkOffsets {
    pairs.iter().copied().collect()
}

fn read_rows(root: &std::path::Path) -> usize {
    published_files(root)
        .iter()
        .map(|path| {
            ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap().num_rows())
                .sum::<usize>()
        })
        .sum()
}

#[tokio::test]
async fn commit_publishes_partitioned_files_with_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ParquetSinkConfig::new(dir.path().to_str().unwrap());
    config.partition_by = vec![
        "date(timestamp)".into(),
        "hour(timestamp)".into(),
        "status".into(),
    ];
    let mut sink = ParquetSink::new(config.clone()).unwrap();
    assert_eq!(sink.open(schema()).await.unwrap(), SinkOffsets::new());
    sink.write(&rows(&[0, 1, 61], &[200, 404, 200]))
        .await
        .unwrap();
    assert_eq!(
        read_rows(dir.path()),
        0,
        "nothing visible before the commit"
    );
    sink.commit(&offsets(&[(0, 3)])).await.unwrap();
    let files: Vec<String> = published_files(dir.path())
        .iter()
        .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "date=2026-11-29/hour=13/status=200/part-0000000001-00000.parquet",
            "date=2026-11-29/hour=13/status=404/part-0000000001-00001.parquet",
            "date=2026-11-29/hour=14/status=200/part-0000000001-00002.parquet",
        ]
    );
    // The value-partition column lives in the directory name only.
    let file = File::open(&published_files(dir.path())[0]).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["timestamp", "path"]);
    assert_eq!(sink.stats().rows_committed, 3);
    let mut reopened = ParquetSink::new(config).unwrap();
    assert_eq!(reopened.open(schema()).await.unwrap(), offsets(&[(0, 3)]));
}

#[tokio::test]
async fn uncommitted_files_are_discarded_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let config = ParquetSinkConfig::new(dir.path().to_str().unwrap());
    let mut sink = ParquetSink::new(config.clone()).unwrap();
    sink.open(schema()).await.unwrap();
    sink.write(&rows(&[0, 1], &[200, 200])).await.unwrap();
    sink.commit(&offsets(&[(0, 2), (1, 0)])).await.unwrap();
    sink.write(&rows(&[2, 3, 4], &[500, 500, 500]))
        .await
        .unwrap();
    drop(sink); // a crash: the open file never got a manifest
    let mut sink = ParquetSink::new(config).unwrap();
    assert_eq!(
        sink.open(schema()).await.unwrap(),
        offsets(&[(0, 2), (1, 0)])
    );
    assert_eq!(read_rows(dir.path()), 2);
    assert_eq!(
        std::fs::read_dir(dir.path().join(manifest::STAGING_DIR))
            .unwrap()
            .count(),
        0
    );
    // The replayed rows get the next sequence's names: nothing is overwritten.
    sink.write(&rows(&[2, 3, 4], &[500, 500, 500]))
        .await
        .unwrap();
    sink.commit(&offsets(&[(0, 5), (1, 0)])).await.unwrap();
    assert_eq!(read_rows(dir.path()), 5);
}

#[tokio::test]
async fn a_crash_after_the_manifest_publishes_its_files_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = ParquetSinkConfig::new(dir.path().to_str().unwrap());
    let mut sink = ParquetSink::new(config.clone()).unwrap();
    sink.open(schema()).await.unwrap();
    sink.write(&rows(&[0, 1, 2], &[200, 301, 404]))
        .await
        .unwrap();
    // The commit's first half only: files closed and the manifest written, no renames.
    let files = sink.close_files().await.unwrap();
    let manifest = Manifest {
        sequence: 1,
        offsets: offsets(&[(0, 3)]),
        files,
        committed_at_ms: 0,
    };
    LocalStore::new(dir.path())
        .write_manifest(&manifest)
        .await
        .unwrap();
    drop(sink);
    assert_eq!(read_rows(dir.path()), 0);
    let mut sink = ParquetSink::new(config).unwrap();
    assert_eq!(sink.open(schema()).await.unwrap(), offsets(&[(0, 3)]));
    assert_eq!(read_rows(dir.path()), 3);
}

#[tokio::test]
async fn files_roll_by_size_and_age() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ParquetSinkConfig::new(dir.path().to_str().unwrap());
    config.target_file_bytes = 10_000;
    config.max_file_age_ms = 60_000;
    config.row_group_rows = 1000;
    let mut sink = ParquetSink::new(config).unwrap();
    sink.open(schema()).await.unwrap();
    assert!(!sink.should_commit(Duration::ZERO));
    assert!(
        sink.should_commit(Duration::from_secs(60)),
        "offsets alone are committed by age"
    );
    let minutes: Vec<i64> = (0..5000).collect();
    sink.write(&rows(&minutes, &vec![200; 5000])).await.unwrap();
    assert!(sink.should_commit(Duration::ZERO), "over the target size");
}

#[test]
fn bad_settings_are_refused() {
    let mut config = ParquetSinkConfig::new("out");
    config.partition_by = vec!["date(".into(), "weird-name".into()];
    config.target_file_bytes = 0;
    let problems = config.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
}

#[tokio::test]
async fn partition_columns_must_exist_and_fit() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ParquetSinkConfig::new(dir.path().to_str().unwrap());
    config.partition_by = vec!["hour(status)".into()];
    let error = ParquetSink::new(config.clone())
        .unwrap()
        .open(schema())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not a timestamp"), "{error}");
    config.partition_by = vec!["nope".into()];
    let error = ParquetSink::new(config)
        .unwrap()
        .open(schema())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no column 'nope' among timestamp, status, path"),
        "{error}"
    );
}
