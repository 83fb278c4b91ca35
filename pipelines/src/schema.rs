//! The columns of a pipeline's topic, from its source's format.

use weir_connectors::weblog::LogFormat;
use weir_streams::decode::{parse_schema, RecordDecoder};
use weir_streams::record::ValueFormat;
use weir_streams::sql::SqlTransform;

use crate::config::PipelineConfig;
use crate::error::{PipelineError, Result};

pub fn source_format(config: &PipelineConfig) -> LogFormat {
    config.source.connector().format()
}

/// How the topic's records decode: access logs by their fixed columns, JSON lines by the
/// declared `schema`, raw lines as one `value` column.
pub fn topic_decoder(config: &PipelineConfig) -> Result<RecordDecoder> {
    let streams = PipelineError::streams(&config.name);
    let format = source_format(config);
    let declared = match (format.schema(), &config.schema) {
        (Some(columns), _) => {
            Some(parse_schema(columns).map_err(PipelineError::streams(&config.name))?)
        }
        (None, Some(columns)) => {
            Some(parse_schema(columns).map_err(PipelineError::streams(&config.name))?)
        }
        (None, None) if format == LogFormat::Json => {
            return Err(PipelineError::Stage {
                pipeline: config.name.clone(),
                message: "JSON lines need `schema:` (their columns as name:type,…)".into(),
            })
        }
        (None, None) => None,
    };
    let value_format = if format.is_json() {
        ValueFormat::Json
    } else {
        ValueFormat::Raw
    };
    RecordDecoder::new(value_format, declared).map_err(streams)
}

/// The pipeline's transform planned against the topic's columns (None without one).
pub async fn planned_transform(
    config: &PipelineConfig,
    decoder: &RecordDecoder,
) -> Result<Option<SqlTransform>> {
    let Some(transform) = &config.transform else {
        return Ok(None);
    };
    SqlTransform::new(
        &[(transform.table.as_str(), decoder.schema())],
        &transform.sql,
    )
    .await
    .map(Some)
    .map_err(PipelineError::streams(&config.name))
}
