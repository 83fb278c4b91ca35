//! Nothing accepted is silently ignored (COMPATIBILITY.md): every broker property and topic
//! config in the tables is read somewhere outside them — or named in
//! [`ACCEPTED_WITHOUT_EFFECT`] with its reason — and every field of a topic's [`LogConfig`] is
//! read outside `config/`. `file.delete.delay.ms` was once parsed into `LogConfig` and never
//! read: the second check is the one that would have caught it.

use std::path::{Path, PathBuf};

use super::properties::{ACCEPTED_WITHOUT_EFFECT, BROKER_PROPERTIES, TOPIC_CONFIGS};

/// The broker's production sources (tests left out) with their text.
fn production_sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, text));
            }
        }
    }
    files
}

/// The identifier of a `const NAME: &str = "<value>"` in `text`, if there is one.
fn constant_named(text: &str, value: &str) -> Option<String> {
    let literal = format!("= \"{value}\";");
    let line = text.lines().find(|line| line.contains(&literal))?;
    let declared = line.split("const ").nth(1)?;
    Some(declared.split(':').next()?.trim().to_string())
}

#[test]
fn every_property_in_the_tables_is_read_outside_them_or_named_as_without_effect() {
    let sources = production_sources();
    let tables = Path::new("config").join("properties.rs");
    let (table_text, others): (Vec<_>, Vec<_>) = sources
        .iter()
        .partition(|(path, _)| path.ends_with(&tables));
    let table_text = &table_text[0].1;
    let names = BROKER_PROPERTIES
        .iter()
        .map(|p| p.name)
        .chain(TOPIC_CONFIGS.iter().map(|t| t.name));
    let mut unread = Vec::new();
    for name in names {
        if ACCEPTED_WITHOUT_EFFECT.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let literal = format!("\"{name}\"");
        let constant = constant_named(table_text, name);
        let read = others.iter().any(|(_, text)| {
            text.contains(&literal) || constant.as_ref().is_some_and(|c| text.contains(c.as_str()))
        });
        if !read {
            unread.push(name);
        }
    }
    assert!(
        unread.is_empty(),
        "accepted but read nowhere outside config/properties.rs (honour them, or name them in \
         ACCEPTED_WITHOUT_EFFECT with the reason): {unread:?}"
    );
    for (name, reason) in ACCEPTED_WITHOUT_EFFECT {
        assert!(reason.len() > 20, "{name}: say why it has no effect");
    }
}

#[test]
fn every_field_of_a_topics_log_config_is_read_outside_config() {
    let sources = production_sources();
    let topic = sources
        .iter()
        .find(|(path, _)| path.ends_with(Path::new("config").join("topic.rs")))
        .map(|(_, text)| text.clone())
        .unwrap();
    let body = topic
        .split("pub struct LogConfig {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .unwrap();
    let fields: Vec<&str> = body
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|line| line.split(':').next())
        .collect();
    assert!(
        fields.len() >= 15,
        "LogConfig's fields were not found: {fields:?}"
    );
    let config_dir = Path::new("src").join("config");
    let unread: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|field| {
            let access = format!(".{field}");
            !sources.iter().any(|(path, text)| {
                !path
                    .to_string_lossy()
                    .contains(config_dir.to_string_lossy().as_ref())
                    && text.match_indices(&access).any(|(at, _)| {
                        let next = text[at + access.len()..].chars().next();
                        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    })
            })
        })
        .collect();
    assert!(
        unread.is_empty(),
        "LogConfig fields parsed but read nowhere outside config/: {unread:?}"
    );
}
