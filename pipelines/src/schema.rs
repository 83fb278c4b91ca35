//! The columns of a pipeline's topic, from its source's format.

use arrow::datatypes::{Schema, SchemaRef};
use weir_connectors::weblog::LogFormat;
use weir_streams::io::decode::{parse_schema, RecordDecoder};
use weir_streams::record::ValueFormat;
use weir_streams::sql::SqlTransform;
use weir_streams::plan::window_spec::Windows;

use crate::config::{PipelineConfig, TableConfig};
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

/// Each declared table's name and JSON value schema (`transform.tables`).
pub fn table_schemas(config: &PipelineConfig) -> Result<Vec<(String, Schema)>> {
    let tables = config.transform.iter().flat_map(|t| &t.tables);
    declared_schemas(config, "table", tables, |table| &table.name)
}

/// Each declared stream's topic and JSON value schema (`transform.streams`).
pub fn stream_schemas(config: &PipelineConfig) -> Result<Vec<(String, Schema)>> {
    let streams = config.transform.iter().flat_map(|t| &t.streams);
    declared_schemas(config, "stream", streams, |stream| &stream.topic)
}

fn declared_schemas<'a>(
    config: &PipelineConfig,
    what: &str,
    declared: impl Iterator<Item = &'a TableConfig>,
    key: impl Fn(&TableConfig) -> &String,
) -> Result<Vec<(String, Schema)>> {
    let mut schemas = Vec::new();
    for table in declared {
        let schema = parse_schema(&table.schema).map_err(|e| PipelineError::Stage {
            pipeline: config.name.clone(),
            message: format!("{what} {}: {e}", table.name),
        })?;
        schemas.push((key(table).clone(), schema));
    }
    Ok(schemas)
}

/// The pipeline's transform planned against the topic's columns and the declared tables' (None
/// without one).
pub async fn planned_transform(
    config: &PipelineConfig,
    decoder: &RecordDecoder,
) -> Result<Option<SqlTransform>> {
    let Some(transform) = &config.transform else {
        return Ok(None);
    };
    let streams = || PipelineError::streams(&config.name);
    let mut tables = Vec::new();
    for (name, schema) in table_schemas(config)? {
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).map_err(streams())?;
        tables.push((name, decoder.schema()));
    }
    let declared: Vec<(&str, SchemaRef)> = tables
        .iter()
        .map(|(name, schema)| (name.as_str(), schema.clone()))
        .collect();
    let mut streams_decoded = Vec::new();
    for ((_, schema), stream) in stream_schemas(config)?.into_iter().zip(&transform.streams) {
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).map_err(streams())?;
        streams_decoded.push((stream.name.as_str(), decoder.schema()));
    }
    if transform.joins_streams() && !source_format(config).is_json() {
        return Err(PipelineError::Stage {
            pipeline: config.name.clone(),
            message: "streams are joined with a topic of parsed lines (an access log format or \
                      json), not raw lines"
                .into(),
        });
    }
    let inputs: Vec<(&str, SchemaRef)> = std::iter::once((transform.table.as_str(), decoder.schema()))
        .chain(streams_decoded)
        .collect();
    let planned = SqlTransform::with_tables(&inputs, &declared, &transform.sql)
        .await
        .map_err(streams())?;
    if emits_changes(&planned) {
        let appending: Vec<String> = config
            .sinks
            .iter()
            .enumerate()
            .filter(|(_, sink)| !sink.connector().applies_changes())
            .map(|(index, sink)| format!("sinks[{index}] ({})", sink.kind()))
            .collect();
        if !appending.is_empty() {
            return Err(PipelineError::Stage {
                pipeline: config.name.clone(),
                message: format!(
                    "a GROUP BY without a window (an updating aggregate) emits upserts and \
                     deletions by group, which {} cannot apply (its files are append-only): \
                     write it to a postgres sink (a table keyed by the group), a kafka sink (a \
                     compacted topic) or stdout, or group by a window (tumble, hop, session)",
                    appending.join(" and ")
                ),
            });
        }
    }
    if transform.joins_streams() && planned.interval_join().is_none() {
        return Err(PipelineError::Stage {
            pipeline: config.name.clone(),
            message: "streams are declared but the query does not join them with the topic \
                      within a time bound"
                .into(),
        });
    }
    if transform.joins_tables() && !planned.joins_tables() {
        return Err(PipelineError::Stage {
            pipeline: config.name.clone(),
            message: "tables are declared but the query joins none of them".into(),
        });
    }
    Ok(Some(planned))
}

/// An updating aggregate: its job emits upserts and tombstones keyed by group (to a compacted
/// topic), which the sinks apply as changes.
pub fn emits_changes(transform: &SqlTransform) -> bool {
    transform
        .windowed()
        .is_some_and(|query| query.window == Windows::Updating)
}

/// A transform that runs as a job of its own, writing to the pipeline's job output topic for
/// the sinks: windows (state), or tables (kept current while the topic is read).
pub fn runs_as_job(transform: &SqlTransform) -> bool {
    transform.windowed().is_some() || transform.joins_tables() || transform.interval_join().is_some()
}
