//! Reading pipeline files: a file (one pipeline, or several under `pipelines:`) or a directory
//! of `*.yaml`/`*.yml` files; variables interpolated; every problem a [`Diagnostic`] with its
//! file, line and column.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{PipelineConfig, PipelinesFile};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::interpolate::{interpolate, read_bounded, Environment, ProcessEnvironment, ReadError};
use crate::locate::{Location, Locations};
use crate::repair::{deserialize_repairing, strip_location, within, Problem};

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
    load_checked(path).into_result()
}

/// [`load`], going on after each problem: every file, every problem (`weir pipeline validate`).
pub fn load_checked(path: &Path) -> LoadReport {
    let files = if path.is_dir() {
        let listed = match std::fs::read_dir(path) {
            Ok(listed) => listed,
            Err(e) => {
                let message = format!("cannot list the directory: {e}");
                return LoadReport::failed(single(path, None, message));
            }
        };
        let mut files: Vec<PathBuf> = listed
            .flatten()
            .map(|entry| entry.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            let message = "no *.yaml or *.yml files in the directory".into();
            return LoadReport::failed(single(path, None, message));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut report = LoadReport::default();
    for file in files {
        report.extend(load_file(&file));
    }
    report
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

fn load_file(file: &Path) -> LoadReport {
    match read_bounded(file, MAX_PIPELINE_FILE_BYTES) {
        Ok(text) => load_text_checked(file, &text, &ProcessEnvironment),
        Err(e) => {
            let message = match e {
                ReadError::TooLarge { .. } => format!("{e}: not a pipeline file"),
                ReadError::Io(_) => format!("cannot read: {e}"),
            };
            LoadReport::failed(single(file, None, message))
        }
    }
}

/// The pipelines of `text`, read from `file`, its `${…}` references taken from `environment`.
pub fn load_text(
    file: &Path,
    text: &str,
    environment: &impl Environment,
) -> Result<Vec<LoadedPipeline>, Diagnostics> {
    load_text_checked(file, text, environment).into_result()
}

/// What loading a path found: the pipelines (repaired where it had problems, so that the
/// checks of a whole config can still run), every problem, and the repaired fields.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub pipelines: Vec<LoadedPipeline>,
    pub problems: Vec<Diagnostic>,
    /// (file, path) of each field repaired to go on: other checks' words on it are not kept.
    pub repaired: Vec<(PathBuf, String)>,
}

impl LoadReport {
    /// The pipelines, or every problem if there was one.
    pub fn into_result(self) -> Result<Vec<LoadedPipeline>, Diagnostics> {
        match self.problems.is_empty() {
            true => Ok(self.pipelines),
            false => Err(Diagnostics(self.problems)),
        }
    }

    /// Whether `diagnostic` is about a field that was repaired (its words are about a stand-in).
    pub fn is_about_repaired(&self, diagnostic: &Diagnostic) -> bool {
        self.repaired
            .iter()
            .any(|(file, path)| *file == diagnostic.file && within(&diagnostic.path, path))
    }

    fn extend(&mut self, other: LoadReport) {
        self.pipelines.extend(other.pipelines);
        self.problems.extend(other.problems);
        self.repaired.extend(other.repaired);
    }

    fn failed(diagnostics: Diagnostics) -> Self {
        LoadReport {
            problems: diagnostics.0,
            ..LoadReport::default()
        }
    }
}

/// [`load_text`], going on after each problem (`weir pipeline validate` reports them all).
pub fn load_text_checked(file: &Path, text: &str, environment: &impl Environment) -> LoadReport {
    let text = match interpolate(text, environment) {
        Ok(text) => text,
        Err(e) => return LoadReport::failed(single(file, Some(e.location), e.message)),
    };
    let locations = Arc::new(Locations::of(&text));
    let document: serde_yaml::Value = match serde_yaml::from_str(&text) {
        Ok(document) => document,
        Err(e) => {
            let message = strip_location(&e.to_string());
            return LoadReport::failed(single(file, yaml_location(&e, &text), message));
        }
    };
    let several = document
        .as_mapping()
        .is_some_and(|m| m.contains_key("pipelines"));
    let (configs, problems, repaired) = if several {
        let parsed = deserialize_repairing::<PipelinesFile>(document);
        let configs = parsed.value.map(|file| {
            let indexed = file.pipelines.into_iter().enumerate();
            indexed
                .map(|(index, config)| (format!("pipelines[{index}]"), config))
                .collect()
        });
        (configs, parsed.problems, parsed.repaired)
    } else {
        let parsed = deserialize_repairing::<PipelineConfig>(document);
        let configs = parsed.value.map(|config| vec![(String::new(), config)]);
        (configs, parsed.problems, parsed.repaired)
    };
    let end = Location::end_of(&text);
    let problems = problems
        .into_iter()
        .map(|problem| diagnostic(file, &locations, problem, end))
        .collect();
    let pipelines = configs
        .unwrap_or_default()
        .into_iter()
        .map(|(path, config)| LoadedPipeline {
            config,
            file: file.to_path_buf(),
            path,
            locations: Arc::clone(&locations),
        })
        .collect();
    LoadReport {
        pipelines,
        problems,
        repaired: repaired
            .into_iter()
            .map(|path| (file.to_path_buf(), path))
            .collect(),
    }
}

/// A problem placed in the file: an unknown field at its key, else the field's value (or the
/// nearest enclosing one), else — nothing there, as in an empty file — where the file ends.
fn diagnostic(file: &Path, locations: &Locations, problem: Problem, end: Location) -> Diagnostic {
    let location = problem
        .unknown_field
        .as_deref()
        .and_then(|name| locations.key_under(&problem.path, name))
        .or_else(|| locations.value(&problem.path))
        .unwrap_or(end);
    Diagnostic {
        file: file.to_path_buf(),
        location: Some(location),
        path: problem.path,
        message: problem.message,
        hint: problem.hint,
    }
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
