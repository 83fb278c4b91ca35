//! Reading pipeline files: a file (one pipeline, or several under `pipelines:`) or a directory
//! of `*.yaml`/`*.yml` files; variables interpolated; every problem a [`Diagnostic`] with its
//! file, line and column.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::config::{PipelineConfig, PipelinesFile};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::interpolate::{interpolate, read_bounded, Environment, ProcessEnvironment, ReadError};
use crate::locate::{Location, Locations};

/// The most a pipeline file may hold (a file that large is a mistake, or not a pipeline).
pub const MAX_PIPELINE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A pipeline and where it was declared.
#[derive(Debug, Clone)]
pub struct LoadedPipeline {
    pub config: PipelineConfig,
    pub file: PathBuf,
    /// The pipeline's path in its file (`""`, or `pipelines[2]`).
    pub path: String,
    pub locations: Arc<Locations>,
}

impl LoadedPipeline {
    /// A diagnostic about the field at `field` (relative to the pipeline, e.g. `sinks[0].url`).
    pub fn diagnostic(
        &self,
        field: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Diagnostic {
        let path = match (self.path.as_str(), field) {
            ("", field) => field.to_string(),
            (pipeline, "") => pipeline.to_string(),
            (pipeline, field) => format!("{pipeline}.{field}"),
        };
        Diagnostic {
            file: self.file.clone(),
            location: self.locations.value(&path),
            path,
            message: message.into(),
            hint,
        }
    }

    /// Like `diagnostic`, pointing at the key `name` under `field` (or the field itself).
    pub fn key_diagnostic(
        &self,
        field: &str,
        name: &str,
        message: impl Into<String>,
    ) -> Diagnostic {
        let mut diagnostic = self.diagnostic(field, message, None);
        if let Some(location) = self.locations.key_under(&diagnostic.path, name) {
            diagnostic.location = Some(location);
        }
        diagnostic
    }
}

/// The pipelines of a file or a directory.
pub fn load(path: &Path) -> Result<Vec<LoadedPipeline>, Diagnostics> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| single(path, None, format!("cannot list the directory: {e}")))?
            .flatten()
            .map(|entry| entry.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(single(
                path,
                None,
                "no *.yaml or *.yml files in the directory".into(),
            ));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut pipelines = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        match load_file(&file) {
            Ok(loaded) => pipelines.extend(loaded),
            Err(Diagnostics(found)) => problems.extend(found),
        }
    }
    if problems.is_empty() {
        Ok(pipelines)
    } else {
        Err(Diagnostics(problems))
    }
}

fn single(file: &Path, location: Option<Location>, message: String) -> Diagnostics {
    Diagnostics(vec![Diagnostic {
        file: file.to_path_buf(),
        location,
        path: String::new(),
        message,
        hint: None,
    }])
}

fn load_file(file: &Path) -> Result<Vec<LoadedPipeline>, Diagnostics> {
    let text = read_bounded(file, MAX_PIPELINE_FILE_BYTES).map_err(|e| {
        let message = match e {
            ReadError::TooLarge { .. } => format!("{e}: not a pipeline file"),
            ReadError::Io(_) => format!("cannot read: {e}"),
        };
        single(file, None, message)
    })?;
    load_text(file, &text, &ProcessEnvironment)
}

/// The pipelines of `text`, read from `file`, its `${…}` references taken from `environment`.
pub fn load_text(
    file: &Path,
    text: &str,
    environment: &impl Environment,
) -> Result<Vec<LoadedPipeline>, Diagnostics> {
    let text =
        interpolate(text, environment).map_err(|e| single(file, Some(e.location), e.message))?;
    let locations = Arc::new(Locations::of(&text));
    let document: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| {
        single(
            file,
            yaml_location(&e, &text),
            strip_location(&e.to_string()),
        )
    })?;
    let several = document
        .as_mapping()
        .is_some_and(|m| m.contains_key("pipelines"));
    let configs: Vec<(String, PipelineConfig)> = if several {
        let parsed: PipelinesFile = parse(file, &text, &locations)?;
        parsed
            .pipelines
            .into_iter()
            .enumerate()
            .map(|(index, config)| (format!("pipelines[{index}]"), config))
            .collect()
    } else {
        vec![(String::new(), parse(file, &text, &locations)?)]
    };
    Ok(configs
        .into_iter()
        .map(|(path, config)| LoadedPipeline {
            config,
            file: file.to_path_buf(),
            path,
            locations: Arc::clone(&locations),
        })
        .collect())
}

fn parse<T: DeserializeOwned>(
    file: &Path,
    text: &str,
    locations: &Locations,
) -> Result<T, Diagnostics> {
    let deserializer = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let inner = error.into_inner();
        let message = strip_location(&inner.to_string());
        // serde_yaml names the path itself in some messages; the diagnostic shows it once.
        let message = message
            .strip_prefix(&format!("{path}: "))
            .map(str::to_string)
            .unwrap_or(message);
        // Inside a tagged connector serde_yaml has no real place (it reports 1:1): find it.
        let reliable =
            yaml_location(&inner, text).filter(|l| path.is_empty() || (l.line, l.column) != (1, 1));
        let location = unknown_field(&message)
            .and_then(|name| locations.key_under(&path, name))
            .or(reliable)
            .or_else(|| locations.value(&path));
        let hint = hint_for(&message);
        Diagnostics(vec![Diagnostic {
            file: file.to_path_buf(),
            location,
            path,
            message,
            hint,
        }])
    })
}

/// Where serde_yaml places an error, kept inside `text`: at the end of a file without a final
/// line break it names the line after the last.
fn yaml_location(error: &serde_yaml::Error, text: &str) -> Option<Location> {
    let place = error.location()?;
    let place = Location {
        line: place.line(),
        column: place.column(),
    };
    Some(place.within(Location::end_of(text)))
}

/// serde_yaml appends " at line L column C"; the diagnostic shows the place itself.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message.to_string(),
    }
}

fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(&rest[..rest.find('`')?])
}

fn hint_for(message: &str) -> Option<String> {
    if message.starts_with("unknown variant") {
        Some("`kind` names a connector; the message lists the ones there are".into())
    } else if message.starts_with("missing field `kind`") {
        Some("every source and sink says which connector it is with `kind:`".into())
    } else {
        None
    }
}
