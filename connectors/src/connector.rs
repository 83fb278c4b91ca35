//! What a pipeline asks of a connector, whatever its kind: [`SourceConnector`] of a source's
//! config, [`SinkConnector`] of a sink's. Each connector folder implements them beside its
//! config; the registry (`crate::registry`) maps a `kind:` to the config. Not in a
//! settings-only build: every answer needs the connector itself.

use std::time::Duration;

use crate::error::ConnectorError;
use crate::sink::Sink;
use crate::source::Source;
use crate::weblog::LogFormat;

/// What a pipeline asks of a source's config.
pub trait SourceConnector {
    /// What is wrong with the settings (each "field: problem"); empty when nothing is.
    fn problems(&self) -> Vec<String>;
    /// The format of the lines the source yields: it decides the pipeline topic's columns.
    fn format(&self) -> LogFormat;
    /// The source, polled by the pipeline's ingest stage.
    fn open(&self) -> Result<Box<dyn Source>, ConnectorError>;
    /// Whether what the source reads from answers within `timeout` (blocking: call it from
    /// a blocking context).
    fn reach(&self, _timeout: Duration) -> Result<(), Unreachable> {
        Ok(())
    }
}

/// What a sink writes, for its constructor.
pub struct SinkTarget<'a> {
    /// The pipeline's name (keys the sink's offsets).
    pub pipeline: &'a str,
    /// The topic the sink reads.
    pub topic: &'a str,
}

/// A source's origin or a sink's destination did not answer (`pipeline validate` without
/// `--offline`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    /// The config field to point at (`url`, `path`, `bootstrap`).
    pub field: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

/// What a pipeline asks of a sink's config.
#[async_trait::async_trait]
pub trait SinkConnector: Sync {
    /// What is wrong with the settings (each "field: problem"); empty when nothing is.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }
    fn open(&self, target: &SinkTarget<'_>) -> Result<Box<dyn Sink>, ConnectorError>;
    /// Whether the sink can apply an updating aggregate's changes — upserts and deletions
    /// by key ([`Sink::apply`]) — rather than only append rows.
    fn applies_changes(&self) -> bool {
        false
    }
    /// What is wrong with writing rows of `rows`' columns to this sink (an updating
    /// aggregate's changes when `changes`), each "field: problem": checked by `pipeline
    /// validate` against the planned query, and again when the sink opens.
    fn rows_problems(&self, _rows: &arrow::datatypes::Schema, _changes: bool) -> Vec<String> {
        Vec::new()
    }
    /// Whether the destination answers within `timeout`.
    async fn reach(&self, _timeout: Duration) -> Result<(), Unreachable> {
        Ok(())
    }
}
