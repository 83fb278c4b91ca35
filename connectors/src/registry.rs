//! The registry of connectors: every `kind:` a pipeline's source or sink may name, its config
//! type, and what a pipeline asks of it through [`SourceConnector`] and [`SinkConnector`]. The
//! pipelines crate asks these and never matches on a kind.
//!
//! Adding a connector: its folder (config with `deny_unknown_fields`, the source or sink, the
//! trait implemented beside the config) and one line in `sources!` or `sinks!` below.

use serde::Deserialize;

#[cfg(feature = "runtime")]
pub use crate::connector::{SinkConnector, SinkTarget, SourceConnector, Unreachable};
use crate::file::FileSourceConfig;
use crate::generator::GeneratorSourceConfig;
use crate::http::HttpSourceConfig;
use crate::kafka::{KafkaSinkConfig, KafkaSourceConfig};
use crate::parquet::ParquetSinkConfig;
use crate::postgres::PostgresSinkConfig;
use crate::stdout::StdoutSinkConfig;

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

impl SourceConfig {
    /// A source that is pushed to rather than polled (an HTTP endpoint the pipeline serves).
    pub fn served(&self) -> Option<&HttpSourceConfig> {
        match self {
            SourceConfig::Http(config) => Some(config),
            _ => None,
        }
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
