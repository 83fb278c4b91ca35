//! An S3-compatible object store through the `object_store` crate. Staged files are uploaded
//! (multipart, in parts of a few MB) under `_weir/staging/`, which readers that skip `_`
//! directories (Hive, Spark, Trino, DuckDB's hive partitioning) never list; a manifest is a
//! single PUT (an object appears whole or not at all) made only if absent, so a second writer
//! cannot replace a commit; publishing copies each staged object to its final key on the server
//! side and deletes the staged one.
//!
//! Credentials and region come from the usual `AWS_*` environment variables (and the instance or
//! web-identity credentials in the cloud); `storage_options` in the YAML sets any of the
//! `object_store` S3 keys (`aws_endpoint`, `aws_region`, `aws_allow_http`, …) on top.
//! An upload cut short by a crash stays an incomplete multipart upload: invisible, and removed by
//! the bucket's `AbortIncompleteMultipartUpload` lifecycle rule.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use parquet::arrow::async_writer::AsyncFileWriter;

use super::FileStore;
use crate::error::ConnectorError;
use crate::parquet::manifest::{self, Manifest, PublishedFile, MANIFESTS_DIR, STAGING_DIR};
use weir_client::Remedy;

/// The URL schemes taken as S3 (`s3a` is Hadoop's name for the same).
const S3_SCHEMES: [&str; 2] = ["s3", "s3a"];

/// The scheme of `path` when it is a URL (`s3://…`), else `None` (a local path).
pub(super) fn scheme_of(path: &str) -> Option<&str> {
    let (scheme, _) = path.split_once("://")?;
    Some(scheme)
}

/// What is wrong with an object-store `path` and its options (empty when nothing is).
pub(crate) fn problems(path: &str, options: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    match scheme_of(path) {
        None if !options.is_empty() => problems.push(
            "storage_options: only an object store (path: s3://bucket/prefix) takes them".into(),
        ),
        None => {}
        Some(scheme) if !S3_SCHEMES.contains(&scheme) => problems.push(format!(
            "path: '{scheme}://' is not supported; use a local directory or s3://bucket/prefix \
             (any S3-compatible store, with storage_options.aws_endpoint)"
        )),
        Some(_) => {
            if bucket_and_prefix(path).0.is_empty() {
                problems.push(format!(
                    "path: '{path}' names no bucket (s3://bucket/prefix)"
                ));
            }
            for key in options.keys() {
                if key.parse::<AmazonS3ConfigKey>().is_err() {
                    problems.push(format!(
                        "storage_options: unknown S3 setting '{key}' (e.g. aws_endpoint, \
                         aws_region, aws_access_key_id, aws_secret_access_key, aws_allow_http)"
                    ));
                }
            }
        }
    }
    problems
}

/// A manifest's path under the root.
fn manifest_relative(sequence: u64) -> String {
    format!("{MANIFESTS_DIR}/{}", manifest::file_name(sequence))
}

fn bucket_and_prefix(url: &str) -> (&str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (bucket, prefix.trim_matches('/'))
}

pub(crate) struct ObjectStoreTarget {
    store: Arc<dyn ObjectStore>,
    url: String,
    prefix: String,
}

impl ObjectStoreTarget {
    pub(crate) fn new(
        url: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Self, ConnectorError> {
        let problems = problems(url, options);
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        let (bucket, prefix) = bucket_and_prefix(url);
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (key, value) in options {
            let key: AmazonS3ConfigKey = key
                .parse()
                .map_err(|e| ConnectorError::Config(format!("storage_options: {e}")))?;
            builder = builder.with_config(key, value);
        }
        let store = builder
            .build()
            .map_err(|e| ConnectorError::Config(format!("object store {url}: {e}")))?;
        Ok(ObjectStoreTarget {
            store: Arc::new(store),
            url: url.trim_end_matches('/').to_string(),
            prefix: prefix.to_string(),
        })
    }

    fn key(&self, relative: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(relative)
        } else {
            Path::from(format!("{}/{relative}", self.prefix))
        }
    }

    fn failed(
        &self,
        operation: &str,
        relative: &str,
        error: object_store::Error,
    ) -> ConnectorError {
        use object_store::Error as Failure;
        // Refusals (credentials, a missing bucket, an unsupported request) need a change;
        // anything else (the store's own retries exhausted) may pass later.
        let remedy = match error {
            Failure::PermissionDenied { .. }
            | Failure::Unauthenticated { .. }
            | Failure::NotSupported { .. }
            | Failure::NotImplemented { .. }
            | Failure::UnknownConfigurationKey { .. }
            | Failure::InvalidPath { .. } => Remedy::Fix,
            _ => Remedy::Retry,
        };
        ConnectorError::target(self.locate(relative), operation, remedy, error)
    }

    /// Deletes an object; one already gone is fine (a repeated recovery step).
    async fn delete(&self, relative: &str) -> Result<(), ConnectorError> {
        match self.store.delete(&self.key(relative)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed("deleting", relative, e)),
        }
    }

    /// The keys under a directory of the root, relative to the root.
    async fn list(&self, directory: &str) -> Result<Vec<String>, ConnectorError> {
        let prefix = match directory {
            "" => Path::from(self.prefix.as_str()),
            _ => self.key(directory),
        };
        let objects: Vec<_> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| self.failed("listing", directory, e))?;
        Ok(objects
            .into_iter()
            .filter_map(|object| {
                let key = object.location.as_ref();
                let relative = match self.prefix.is_empty() {
                    true => key,
                    false => key.strip_prefix(&self.prefix)?.strip_prefix('/')?,
                };
                Some(relative.to_string())
            })
            .collect())
    }
}

#[async_trait]
impl FileStore for ObjectStoreTarget {
    async fn prepare(&self) -> Result<(), ConnectorError> {
        // Listing proves the bucket exists and the credentials work before anything is written.
        self.list(MANIFESTS_DIR).await.map(|_| ())
    }

    async fn create_staged(
        &self,
        staging: &str,
    ) -> Result<Box<dyn AsyncFileWriter>, ConnectorError> {
        // Parts of a few MB are uploaded as the file grows; shutting the writer down (when the
        // Parquet writer finishes) completes the upload.
        Ok(Box::new(BufWriter::new(
            Arc::clone(&self.store),
            self.key(staging),
        )))
    }

    async fn seal_staged(&self, staging: &str) -> Result<u64, ConnectorError> {
        // The completed upload is durable once S3 answered; its size is what was stored.
        let meta = self
            .store
            .head(&self.key(staging))
            .await
            .map_err(|e| self.failed("reading", staging, e))?;
        Ok(meta.size)
    }

    async fn publish(&self, files: &[PublishedFile]) -> Result<(), ConnectorError> {
        for file in files {
            let staged = self.key(&file.staging);
            match self.store.copy(&staged, &self.key(&file.path)).await {
                Ok(()) => {}
                // Published before a crash interrupted the rest of the commit.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(self.failed("publishing", &file.staging, e)),
            }
            self.delete(&file.staging).await?;
        }
        Ok(())
    }

    async fn discard_staged(&self) -> Result<(), ConnectorError> {
        for relative in self.list(STAGING_DIR).await? {
            tracing::info!(object = %self.locate(&relative), "deleting a file written after the last commit");
            self.delete(&relative).await?;
        }
        Ok(())
    }

    async fn manifest_sequences(&self) -> Result<Vec<u64>, ConnectorError> {
        let mut sequences: Vec<u64> = self
            .list(MANIFESTS_DIR)
            .await?
            .iter()
            .filter_map(|relative| manifest::sequence_of(relative.rsplit('/').next()?))
            .collect();
        sequences.sort_unstable();
        Ok(sequences)
    }

    async fn read_manifest(&self, sequence: u64) -> Result<Manifest, ConnectorError> {
        let relative = manifest_relative(sequence);
        let bytes = self.read(&relative).await?;
        manifest::decode(&bytes, &self.locate(&relative))
    }

    async fn write_manifest(&self, manifest: &Manifest) -> Result<(), ConnectorError> {
        let relative = manifest_relative(manifest.sequence);
        let payload = PutPayload::from(manifest::encode(manifest)?);
        let create = PutOptions::from(PutMode::Create);
        match self
            .store
            .put_opts(&self.key(&relative), payload, create)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                // Ours, when a retried PUT's first attempt landed and its answer was lost.
                if self.read_manifest(manifest.sequence).await? == *manifest {
                    return Ok(());
                }
                Err(ConnectorError::Config(format!(
                    "{} was committed by another writer: two pipelines write to {}",
                    self.locate(&relative),
                    self.url
                )))
            }
            Err(e) => Err(self.failed("committing", &relative, e)),
        }
    }

    async fn delete_manifest(&self, sequence: u64) -> Result<(), ConnectorError> {
        self.delete(&manifest_relative(sequence)).await
    }

    async fn list_published(&self) -> Result<Vec<String>, ConnectorError> {
        let mut published: Vec<String> = self
            .list("")
            .await?
            .into_iter()
            .filter(|relative| !relative.starts_with("_weir/") && relative.ends_with(".parquet"))
            .collect();
        published.sort();
        Ok(published)
    }

    async fn read(&self, relative: &str) -> Result<Bytes, ConnectorError> {
        let found = self
            .store
            .get(&self.key(relative))
            .await
            .map_err(|e| self.failed("reading", relative, e))?;
        found
            .bytes()
            .await
            .map_err(|e| self.failed("reading", relative, e))
    }

    fn locate(&self, relative: &str) -> String {
        format!("{}/{relative}", self.url)
    }
}
