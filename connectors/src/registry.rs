//! The registry of connectors: every `kind:` a pipeline's source or sink may name, its config
//! type, and what a pipeline asks of it through [`SourceConnector`] and [`SinkConnector`]. The
//! pipelines crate asks these and never matches on a kind.
//!
//! Adding a connector: its folder (config with `deny_unknown_fields`, the source or sink, the
//! trait implemented beside the config) and one line in `sources!` or `sinks!` below.

use serde::Deserialize;

use crate::file::FileSourceConfig;
use crate::generator::GeneratorSourceConfig;
use crate::http::HttpSourceConfig;
use crate::kafka::{KafkaSinkConfig, KafkaSourceConfig};
use crate::parquet::ParquetSinkConfig;
use crate::postgres::PostgresSinkConfig;
use crate::stdout::StdoutSinkConfig;
#[cfg(feature = "runtime")]
pub use connectors::{SinkConnector, SinkTarget, SourceConnector, Unreachable};

/// What a pipeline asks of a connector (not in a settings-only build: every answer needs the
/// connector itself).
#[cfg(feature = "runtime")]
mod connectors {
    use std::time::Duration;

    use crate::error::ConnectorError;
    use crate::http::HttpSourceConfig;
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
        /// A source that is pushed to instead (an HTTP endpoint the pipeline serves), or `None`.
        fn served(&self) -> Option<&HttpSourceConfig> {
            None
        }
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
}

/// Declares a tagged config enum over connector config types and its dispatch to `$connector`.
macro_rules! registry {
    ($(#[$doc:meta])* $name:ident: $connector:ident { $($variant:ident($config:ty) = $kind:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(tag = "kind")]
        pub enum $name {
            $(#[serde(rename = $kind)] $variant($config)),+
        }

        impl $name {
            /// The `kind:` it was declared with.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $kind),+
                }
            }

            /// Every `kind:` there is.
            pub const KINDS: &'static [&'static str] = &[$($kind),+];

            /// The config of connector `kind` from its other fields (`kind` taken out), so that
            /// an error inside it carries its path (serde loses it inside a tagged enum);
            /// `None` for a kind there is not.
            pub fn deserialize_kind<'de, D: serde::Deserializer<'de>>(
                kind: &str,
                deserializer: D,
            ) -> Option<Result<Self, D::Error>> {
                match kind {
                    $($kind => Some(<$config>::deserialize(deserializer).map(Self::$variant)),)+
                    _ => None,
                }
            }

            /// The connector behind the kind.
            #[cfg(feature = "runtime")]
            pub fn connector(&self) -> &dyn $connector {
                match self {
                    $(Self::$variant(config) => config),+
                }
            }
        }
    };
}

registry! {
    /// A pipeline's `source:`, by its `kind:`.
    SourceConfig: SourceConnector {
        File(FileSourceConfig) = "file",
        Generator(GeneratorSourceConfig) = "generator",
        Http(HttpSourceConfig) = "http",
        Kafka(KafkaSourceConfig) = "kafka",
    }
}

registry! {
    /// One of a pipeline's `sinks:`, by its `kind:`.
    SinkConfig: SinkConnector {
        Parquet(ParquetSinkConfig) = "parquet",
        Postgres(PostgresSinkConfig) = "postgres",
        Kafka(KafkaSinkConfig) = "kafka",
        Stdout(StdoutSinkConfig) = "stdout",
    }
}
