//! The Parquet sink on a real S3-compatible server: `WEIR_TEST_S3_ENDPOINT` (scripts/test.sh
//! starts gofakes3 through scripts/s3/start.sh, with the bucket `weir-test`). Each test writes
//! under a prefix of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::store::{FileStore, ObjectStoreTarget};
use super::tests::{offsets, rows, schema};
use super::*;
use crate::sink::{Sink, SinkOffsets};

const BUCKET: &str = "weir-test";

fn endpoint() -> String {
    std::env::var("WEIR_TEST_S3_ENDPOINT").expect(
        "WEIR_TEST_S3_ENDPOINT is not set: these tests need an S3-compatible server \
         (scripts/s3/start.sh prints its endpoint)",
    )
}

fn options() -> BTreeMap<String, String> {
    [
        ("aws_endpoint", endpoint()),
        ("aws_allow_http", "true".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", "weir".into()),
        ("aws_secret_access_key", "weir-secret".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A sink config for a prefix of the test's own.
fn config(test: &str) -> ParquetSinkConfig {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut config = ParquetSinkConfig::new(&format!(
        "s3://{BUCKET}/{test}-{}-{nanos}/warehouse",
        std::process::id()
    ));
    config.storage_options = options();
    config
}

fn bucket() -> Arc<dyn ObjectStore> {
    let mut builder = AmazonS3Builder::new().with_bucket_name(BUCKET);
    for (key, value) in options() {
        builder = builder.with_config(key.parse().unwrap(), value);
    }
    Arc::new(builder.build().unwrap())
}

fn prefix_of(config: &ParquetSinkConfig) -> String {
    config
        .path
        .strip_prefix(&format!("s3://{BUCKET}/"))
        .unwrap()
        .to_string()
}

/// Every key under the sink's prefix, relative to it, sorted.
async fn keys(config: &ParquetSinkConfig) -> Vec<String> {
    let prefix = prefix_of(config);
    let mut keys: Vec<String> = bucket()
        .list(Some(&Path::from(prefix.as_str())))
        .map_ok(|meta| meta.location.as_ref()[prefix.len() + 1..].to_string())
        .try_collect()
        .await
        .unwrap();
    keys.sort();
    keys
}

/// The published files (outside `_weir/`), in order.
async fn published(config: &ParquetSinkConfig) -> Vec<String> {
    keys(config)
        .await
        .into_iter()
        .filter(|key| !key.starts_with("_weir/"))
        .collect()
}

async fn published_rows(config: &ParquetSinkConfig) -> usize {
    let mut rows = 0;
    for key in published(config).await {
        let location = Path::from(format!("{}/{key}", prefix_of(config)));
        let bytes = bucket()
            .get(&location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        rows += reader.map(|batch| batch.unwrap().num_rows()).sum::<usize>();
    }
    rows
}

#[tokio::test]
async fn commit_publishes_partitioned_objects_with_offsets() {
    let mut config = config("publish");
    config.partition_by = vec!["date(timestamp)".into(), "status".into()];
    let mut sink = ParquetSink::new(config.clone()).unwrap();
    assert_eq!(sink.open(schema()).await.unwrap(), SinkOffsets::new());
    sink.write(&rows(&[0, 1, 61], &[200, 404, 200]))
        .await
        .unwrap();
    assert_eq!(
        published_rows(&config).await,
        0,
        "nothing visible before the commit"
    );
    sink.commit(&offsets(&[(0, 3)])).await.unwrap();
    assert_eq!(
        keys(&config).await,
        [
            "_weir/manifests/0000000001.json",
            "date=2026-11-29/status=200/part-0000000001-00000.parquet",
            "date=2026-11-29/status=404/part-0000000001-00001.parquet",
        ],
        "published, and nothing left in staging"
    );
    assert_eq!(published_rows(&config).await, 3);
    let mut reopened = ParquetSink::new(config).unwrap();
    assert_eq!(reopened.open(schema()).await.unwrap(), offsets(&[(0, 3)]));
}

#[tokio::test]
async fn a_crash_discards_staged_objects_and_finishes_a_half_published_commit() {
    let config = config("crash");
    let mut sink = ParquetSink::new(config.clone()).unwrap();
    sink.open(schema()).await.unwrap();
    sink.write(&rows(&[0, 1], &[200, 200])).await.unwrap();
    sink.commit(&offsets(&[(0, 2)])).await.unwrap();
    // The second commit's first half only: files uploaded and the manifest written.
    sink.write(&rows(&[2, 3, 4], &[500, 500, 500]))
        .await
        .unwrap();
    let files = sink.close_files().await.unwrap();
    let target = ObjectStoreTarget::new(&config.path, &config.storage_options).unwrap();
    let manifest = Manifest {
        sequence: 2,
        offsets: offsets(&[(0, 5)]),
        files,
        committed_at_ms: 0,
    };
    target.write_manifest(&manifest).await.unwrap();
    // Then rows that never got a manifest.
    sink.write(&rows(&[5], &[200])).await.unwrap();
    let orphan = sink.close_files().await.unwrap();
    assert_eq!(orphan.len(), 1);
    drop(sink);
    assert_eq!(published_rows(&config).await, 2);

    let mut sink = ParquetSink::new(config.clone()).unwrap();
    assert_eq!(sink.open(schema()).await.unwrap(), offsets(&[(0, 5)]));
    assert_eq!(published_rows(&config).await, 5);
    let staged: Vec<String> = keys(&config)
        .await
        .into_iter()
        .filter(|key| key.starts_with("_weir/staging/"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");
}

#[tokio::test]
async fn a_second_writer_cannot_replace_a_commit() {
    let config = config("fence");
    let mut first = ParquetSink::new(config.clone()).unwrap();
    let mut second = ParquetSink::new(config.clone()).unwrap();
    first.open(schema()).await.unwrap();
    second.open(schema()).await.unwrap();
    first.write(&rows(&[0], &[200])).await.unwrap();
    second.write(&rows(&[0, 1], &[200, 200])).await.unwrap();
    first.commit(&offsets(&[(0, 1)])).await.unwrap();
    let error = second.commit(&offsets(&[(0, 2)])).await.unwrap_err();
    assert!(
        error.to_string().contains("committed by another writer"),
        "{error}"
    );
    let mut reopened = ParquetSink::new(config).unwrap();
    assert_eq!(reopened.open(schema()).await.unwrap(), offsets(&[(0, 1)]));
}

#[tokio::test]
async fn a_missing_bucket_is_a_clear_error_at_open() {
    let mut config = config("missing");
    config.path = "s3://no-such-bucket-weir/warehouse".into();
    let error = ParquetSink::new(config)
        .unwrap()
        .open(schema())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("s3://no-such-bucket-weir/warehouse/_weir/manifests"),
        "{error}"
    );
}

#[test]
fn unsupported_stores_and_unknown_options_are_refused() {
    let mut config = ParquetSinkConfig::new("gs://bucket/x");
    assert!(config.problems()[0].contains("'gs://' is not supported"));
    config.path = "s3://bucket/x".into();
    config.storage_options = [("aws_endpoint_typo".to_string(), "x".to_string())].into();
    assert!(
        config.problems()[0].contains("unknown S3 setting 'aws_endpoint_typo'"),
        "{:?}",
        config.problems()
    );
    config.path = "local-dir".into();
    assert!(config.problems()[0].contains("only an object store"));
}
