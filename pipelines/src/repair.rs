//! Every problem of a pipeline file in one run. serde stops at the first error, so the loader
//! deserializes, notes the error at its path, repairs the document there and deserializes again,
//! up to [`MAX_PROBLEMS`]: an unknown field is left out, a misspelt choice replaced by the
//! nearest one, a value of the wrong type or a missing field given a stand-in. Connector
//! sections (`source`, `sinks[i]`) are first read by their kind's own config, so that their
//! errors carry their path (inside serde's tagged enums it is lost). The checks that need a
//! whole config then run on the repaired one; what they say of a repaired field is left out —
//! it would be about the stand-in.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_yaml::Value;

use crate::config::{SinkConfig, SourceConfig};
use crate::locate::join;

/// The most problems one file reports (and repairs it tries).
pub const MAX_PROBLEMS: usize = 50;

/// One refusal of the document, where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The field's path (`sinks[0].format`); for an unknown field, the map holding it.
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
    /// An unknown field's name: the problem points at its key.
    pub unknown_field: Option<String>,
}

/// What repairing deserialization found.
pub struct Repaired<T> {
    /// The value, once the document deserialized (repaired or not); `None` when a problem could
    /// not be repaired.
    pub value: Option<T>,
    pub problems: Vec<Problem>,
    /// Paths given a stand-in (or left out): later checks' words about them are not reported.
    pub repaired: Vec<String>,
}

/// Deserializes `T` from `document`, repairing it after each error (see the module docs).
pub fn deserialize_repairing<T: DeserializeOwned>(mut document: Value) -> Repaired<T> {
    if document.is_null() {
        // An empty file (or only comments): a map with nothing in it, so each missing field
        // is reported.
        document = Value::Mapping(serde_yaml::Mapping::new());
    }
    let mut found = Found::default();
    let sections = connector_sections(&document);
    for section in &sections {
        check_connector(&mut document, section, &mut found);
    }
    let value = found.repair_loop(&mut document, &sections, |value| {
        serde_path_to_error::deserialize::<_, T>(value.clone()).map_err(|error| {
            let path = error.path().to_string();
            let path = if path == "." { String::new() } else { path };
            (path, error.into_inner().to_string())
        })
    });
    Repaired {
        value,
        problems: found.problems,
        repaired: found.repaired,
    }
}

#[derive(Default)]
struct Found {
    problems: Vec<Problem>,
    repaired: Vec<String>,
}

/// A connector section: its path, and whether it is a source.
struct Section {
    path: String,
    source: bool,
}

fn connector_sections(document: &Value) -> Vec<Section> {
    let pipelines: Vec<String> = match document.get("pipelines").and_then(Value::as_sequence) {
        Some(list) => (0..list.len()).map(|i| format!("pipelines[{i}]")).collect(),
        None => vec![String::new()],
    };
    let mut sections = Vec::new();
    for pipeline in pipelines {
        sections.push(Section {
            path: join(&pipeline, "source"),
            source: true,
        });
        let sinks = join(&pipeline, "sinks");
        let count = get(document, &sinks)
            .and_then(Value::as_sequence)
            .map_or(0, Vec::len);
        sections.extend((0..count).map(|index| Section {
            path: format!("{sinks}[{index}]"),
            source: false,
        }));
    }
    sections
}

/// Reads a connector section by its kind's config, repairing it in `document`.
fn check_connector(document: &mut Value, section: &Section, found: &mut Found) {
    let Some(kind) = get(document, &section.path)
        .and_then(|s| s.get("kind"))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return; // no kind, or not a map: the whole-config pass says so
    };
    let read = found.repair_loop(document, &[], |document| {
        let Some(mut fields) = get(document, &section.path).cloned() else {
            return Ok(());
        };
        if let Some(map) = fields.as_mapping_mut() {
            map.remove("kind");
        }
        let mut track = serde_path_to_error::Track::new();
        let deserializer = serde_path_to_error::Deserializer::new(fields, &mut track);
        let result = match section.source {
            true => SourceConfig::deserialize_kind(&kind, deserializer).map(|r| r.map(drop)),
            false => SinkConfig::deserialize_kind(&kind, deserializer).map(|r| r.map(drop)),
        };
        match result {
            None | Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                let inner = track.path().to_string();
                let path = match inner.as_str() {
                    "." => section.path.clone(),
                    inner => join(&section.path, inner),
                };
                Err((path, error.to_string()))
            }
        }
    });
    if read.is_none() {
        // Not repaired: what the whole-config pass would say of it again is not reported.
        found.repaired.push(section.path.clone());
    }
}

impl Found {
    /// Tries `attempt` on the document, repairing after each error, until it succeeds, a
    /// problem cannot be repaired, or [`MAX_PROBLEMS`]. An error placed at a connector section
    /// itself (`sections`) is one serde lost the path of: reported, not repaired.
    fn repair_loop<T>(
        &mut self,
        document: &mut Value,
        sections: &[Section],
        mut attempt: impl FnMut(&Value) -> Result<T, (String, String)>,
    ) -> Option<T> {
        let mut seen = HashSet::new();
        while self.problems.len() < MAX_PROBLEMS {
            let (path, message) = match attempt(document) {
                Ok(value) => return Some(value),
                Err(error) => error,
            };
            if !seen.insert((path.clone(), message.clone())) {
                return None;
            }
            let problem = describe(&path, &message);
            if !self.repaired.iter().any(|r| within(&problem.path, r)) {
                self.problems.push(problem.clone());
            }
            let lost_path = sections.iter().any(|s| s.path == problem.path);
            if lost_path || !self.repair(document, &problem) {
                return None;
            }
        }
        None
    }

    /// Repairs the document where `problem` is; false when it cannot.
    fn repair(&mut self, document: &mut Value, problem: &Problem) -> bool {
        let path = problem.path.as_str();
        if let Some(field) = &problem.unknown_field {
            let removed = get_mut(document, path)
                .and_then(Value::as_mapping_mut)
                .and_then(|map| map.remove(field.as_str()));
            return removed.is_some();
        }
        if let Some(field) = quoted_after(&problem.message, "missing field `") {
            if field == "kind" {
                return false; // which connector was meant cannot be guessed
            }
            let Some(map) = get_mut(document, path).and_then(Value::as_mapping_mut) else {
                return false;
            };
            map.insert(Value::from(field), Value::from(""));
            self.repaired.push(join(path, field));
            return true;
        }
        let stand_in = match unknown_variant(&problem.message) {
            Some((given, choices)) => nearest(given, &choices).map(Value::from),
            None => expected(&problem.message).and_then(stand_in_for),
        };
        let Some(stand_in) = stand_in else {
            return false;
        };
        let Some(slot) = get_mut(document, path) else {
            return false;
        };
        *slot = stand_in;
        // A kind replaced: the rest of its section was written for another connector.
        let repaired = match path.strip_suffix(".kind") {
            Some(section) => section,
            None => path,
        };
        self.repaired.push(repaired.to_string());
        true
    }
}

/// The problem serde's `message` says of `path`, with a hint about that field.
fn describe(path: &str, message: &str) -> Problem {
    let message = strip_location(message);
    let message = message.as_str();
    // serde_yaml names the path itself in some messages; the diagnostic shows it once.
    let message = message
        .strip_prefix(&format!("{path}: "))
        .unwrap_or(message)
        .to_string();
    let unknown_field = quoted_after(&message, "unknown field `").map(str::to_string);
    // The path names the map holding an unknown field (some deserializers add the field).
    let path = match &unknown_field {
        Some(field) if path == field => "",
        Some(field) => path.strip_suffix(&format!(".{field}")).unwrap_or(path),
        None => path,
    };
    let hint = if let Some(field) = &unknown_field {
        let fields = quoted_list(&message);
        did_you_mean(field, &fields)
    } else if let Some((given, choices)) = unknown_variant(&message) {
        if path == "kind" || path.ends_with(".kind") {
            Some("`kind` names a connector; the message lists the ones there are".into())
        } else {
            did_you_mean(given, &choices)
        }
    } else if message.starts_with("missing field `kind`") {
        Some("every source and sink says which connector it is with `kind:`".into())
    } else {
        None
    };
    Problem {
        path: path.to_string(),
        message,
        hint,
        unknown_field,
    }
}

/// serde_yaml appends " at line L column C"; a diagnostic shows the place itself.
pub(crate) fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message.to_string(),
    }
}

fn did_you_mean(given: &str, choices: &[&str]) -> Option<String> {
    let nearest = nearest(given, choices)?;
    let close = edit_distance(given, nearest) <= (given.len() / 3).max(2);
    close.then(|| format!("did you mean `{nearest}`?"))
}

/// The text between `prefix`'s backtick and the next one.
fn quoted_after<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    Some(&rest[..rest.find('`')?])
}

/// The `a`, `b` list after "expected one of" (or "expected").
fn quoted_list(message: &str) -> Vec<&str> {
    let Some(cut) = message.find("expected") else {
        return Vec::new();
    };
    message[cut..].split('`').skip(1).step_by(2).collect()
}

/// ("given", [choices]) of serde's "unknown variant `given`, expected one of `a`, `b`".
fn unknown_variant(message: &str) -> Option<(&str, Vec<&str>)> {
    let given = quoted_after(message, "unknown variant `")?;
    Some((given, quoted_list(message)))
}

/// What serde expected, from "invalid type: …, expected X" (or "invalid value").
fn expected(message: &str) -> Option<&str> {
    if !(message.starts_with("invalid type") || message.starts_with("invalid value")) {
        return None;
    }
    let cut = message.rfind("expected ")?;
    Some(&message[cut + "expected ".len()..])
}

/// A value of the type serde names (a stand-in that lets the rest be checked).
fn stand_in_for(expected: &str) -> Option<Value> {
    let integer = [
        "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
    ];
    let word = expected.trim_start_matches("a ").trim_start_matches("an ");
    Some(match word {
        w if w.starts_with("string") || w.starts_with("char") => Value::from(""),
        w if integer.iter().any(|t| w.starts_with(t)) || w.contains("integer") => Value::from(1),
        w if w.starts_with("f32") || w.starts_with("f64") || w.contains("float") => {
            Value::from(1.0)
        }
        w if w.starts_with("boolean") || w.starts_with("bool") => Value::from(false),
        w if w.starts_with("sequence") || w.starts_with("list") => Value::Sequence(Vec::new()),
        w if w.starts_with("map") || w.starts_with("struct") => {
            Value::Mapping(serde_yaml::Mapping::new())
        }
        _ => return None,
    })
}

fn nearest<'a>(given: &str, choices: &[&'a str]) -> Option<&'a str> {
    choices
        .iter()
        .copied()
        .min_by_key(|choice| edit_distance(given, choice))
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Whether `path` is `prefix` or inside it.
pub(crate) fn within(path: &str, prefix: &str) -> bool {
    path == prefix
        || prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// `sinks[0].url` → Key(sinks), Index(0), Key(url); `None` for a path not in this form.
fn segments(path: &str) -> Option<Vec<Segment<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Segment::Key(key));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let close = stripped.find(']')?;
            out.push(Segment::Index(stripped[..close].parse().ok()?));
            rest = &stripped[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

fn get<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    segments(path)?
        .into_iter()
        .try_fold(value, |value, segment| match segment {
            Segment::Key(key) => value.get(key),
            Segment::Index(index) => value.get(index),
        })
}

fn get_mut<'v>(value: &'v mut Value, path: &str) -> Option<&'v mut Value> {
    segments(path)?
        .into_iter()
        .try_fold(value, |value, segment| match segment {
            Segment::Key(key) => value.get_mut(key),
            Segment::Index(index) => value.get_mut(index),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_choice_and_close_enough_hints() {
        assert_eq!(edit_distance("ngnix_combined", "nginx_combined"), 2);
        let formats = ["nginx_combined", "apache_common", "json", "raw"];
        assert_eq!(nearest("ngnix_combined", &formats), Some("nginx_combined"));
        assert_eq!(
            did_you_mean("ngnix_combined", &formats).as_deref(),
            Some("did you mean `nginx_combined`?")
        );
        assert_eq!(did_you_mean("xml", &["nginx_combined", "parquet"]), None);
    }

    #[test]
    fn paths_navigate_maps_and_lists() {
        let document: Value =
            serde_yaml::from_str("sinks:\n  - kind: stdout\n    url: x\n").unwrap();
        assert_eq!(
            get(&document, "sinks[0].url").and_then(Value::as_str),
            Some("x")
        );
        assert!(get(&document, "sinks[1]").is_none());
        assert!(get(&document, "sinks[x]").is_none());
        assert!(within("sinks[0].url", "sinks[0]") && !within("sinks[01]", "sinks[0]"));
    }

    #[test]
    fn stand_ins_have_the_type_serde_expected() {
        assert_eq!(
            expected("invalid type: string \"many\", expected u32"),
            Some("u32")
        );
        assert_eq!(stand_in_for("u32"), Some(Value::from(1)));
        assert_eq!(stand_in_for("a boolean"), Some(Value::from(false)));
        assert_eq!(stand_in_for("a string"), Some(Value::from("")));
        assert_eq!(stand_in_for("something else"), None);
    }
}
