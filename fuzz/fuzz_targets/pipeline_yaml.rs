//! A pipeline file's text through the loader `weir pipeline run|validate` uses: `${…}`
//! interpolation, the YAML parse, the model (every connector's settings by `kind:`), the
//! locator that places each diagnostic. Pipelines or diagnostics — never a panic, a stack
//! overflow or a runaway allocation — and every diagnostic points inside the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use weir_pipelines::interpolate::Environment;
use weir_pipelines::load::load_text;
use weir_pipelines::locate::Location;

/// Two variables and one secret file, none with a newline (so lines stay where they were).
struct FuzzEnvironment;

impl Environment for FuzzEnvironment {
    fn variable(&self, name: &str) -> Option<String> {
        match name {
            "HOST" => Some("db.example".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn secret_file(&self, path: &str) -> Result<String, String> {
        match path {
            "secret" => Ok("s3cret".into()),
            _ => Err("no such file".into()),
        }
    }
}

/// Fields a validation would point at, under every pipeline.
const FIELDS: [&str; 8] = [
    "",
    "name",
    "source",
    "source.paths[0]",
    "sinks[0]",
    "sinks[0].url",
    "transform.sql",
    "topic.partitions",
];

/// A diagnostic's line exists in the file (YAML's line breaks: `\r\n`, `\r`, `\n`).
fn check(text: &str, location: Option<Location>) {
    let Some(location) = location else { return };
    let end = Location::end_of(text);
    assert!(
        location.line >= 1 && location.line <= end.line && location.column >= 1,
        "{location:?} is outside a text that ends at {end:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_text(Path::new("fuzz.yaml"), text, &FuzzEnvironment) {
        Ok(pipelines) => {
            for pipeline in &pipelines {
                let config = &pipeline.config;
                let _ = (config.topic_name(), config.dead_letter_topic(), config.source.kind());
                for field in FIELDS {
                    let diagnostic = pipeline.key_diagnostic(field, "kind", "fuzz");
                    check(text, diagnostic.location);
                    let _ = diagnostic.to_string();
                }
            }
        }
        Err(diagnostics) => {
            for diagnostic in &diagnostics.0 {
                check(text, diagnostic.location);
            }
            let _ = diagnostics.to_string();
        }
    }
});
