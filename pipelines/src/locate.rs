//! Where each key and value of a YAML document is (line, column), by path
//! (`pipelines[0].source.paths[1]`), so that every problem found after parsing — an unknown
//! field inside a tagged connector, a bad SQL query, an unreachable database — can point at
//! its place in the file.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Nesting beyond this many levels gets no locations.
const MAX_DEPTH: usize = 128;

/// 1-based line and column (in characters). Lines end as YAML's do: `\r\n`, `\r` or `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// Where byte `at` of `text` is (`text.len()` at most, and on a character boundary).
    pub fn at_byte(text: &str, at: usize) -> Location {
        let mut location = Location { line: 1, column: 1 };
        let mut after_carriage_return = false;
        for c in text[..at].chars() {
            match c {
                '\n' if after_carriage_return => {}
                '\n' | '\r' => {
                    location = Location {
                        line: location.line + 1,
                        column: 1,
                    }
                }
                _ => location.column += 1,
            }
            after_carriage_return = c == '\r';
        }
        location
    }

    /// Where `text` ends: its last line, after its last character.
    pub fn end_of(text: &str) -> Location {
        Location::at_byte(text, text.len())
    }

    /// This place, or `end` when it names a line after `end`'s (YAML parsers mark the end of a
    /// file without a final line break on the line after the last).
    pub fn within(self, end: Location) -> Location {
        if self.line > end.line {
            end
        } else {
            self
        }
    }
}

#[derive(Debug, Default)]
pub struct Locations {
    keys: HashMap<String, Location>,
    values: HashMap<String, Location>,
}

impl Locations {
    /// The locations of `text`'s first document, as far as it parses and nests at most
    /// `MAX_DEPTH` deep (serde_yaml refuses deeper documents anyway).
    pub fn of(text: &str) -> Self {
        let mut receiver = Receiver::default();
        let mut parser = Parser::new_from_str(text);
        // Event by event, not `Parser::load`: that recurses once per level of nesting, and a
        // hostile file nested thousands of levels deep overflowed the stack.
        while let Ok((event, mark)) = parser.next_token() {
            if matches!(event, Event::DocumentEnd | Event::StreamEnd) {
                break;
            }
            receiver.on_event(event, mark);
            if receiver.stack.len() > MAX_DEPTH {
                break;
            }
        }
        // An empty value at the end of a file without a final line break is marked on the
        // line after the last: it is shown where the file ends.
        let end = Location::end_of(text);
        let mut locations = receiver.locations;
        for location in locations
            .keys
            .values_mut()
            .chain(locations.values.values_mut())
        {
            *location = location.within(end);
        }
        locations
    }

    /// Where the value at `path` is; else its key; else the nearest enclosing value.
    pub fn value(&self, path: &str) -> Option<Location> {
        let mut path = path;
        loop {
            if let Some(location) = self.values.get(path).or_else(|| self.keys.get(path)) {
                return Some(*location);
            }
            path = parent(path)?;
        }
    }

    /// Where the key `name` is, directly under `path` or deeper (serde names unknown fields
    /// without their path inside tagged enums).
    pub fn key_under(&self, path: &str, name: &str) -> Option<Location> {
        let direct = join(path, name);
        if let Some(location) = self.keys.get(&direct) {
            return Some(*location);
        }
        let suffix = format!(".{name}");
        self.keys
            .iter()
            .filter(|(key, _)| {
                key.starts_with(path) && (key.ends_with(&suffix) || key.as_str() == name)
            })
            .map(|(_, location)| *location)
            .min_by_key(|location| (location.line, location.column))
    }
}

fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = path.rfind(['.', '[']).unwrap_or(0);
    Some(&path[..cut])
}

/// `key` under `parent` in the path notation of diagnostics (`sinks[0].url`).
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

enum Frame {
    Mapping { path: String, key: Option<String> },
    Sequence { path: String, index: usize },
}

#[derive(Default)]
struct Receiver {
    stack: Vec<Frame>,
    locations: Locations,
}

impl Receiver {
    /// The path of the value that comes next, or None when a mapping expects a key.
    fn next_value_path(&self) -> Option<String> {
        match self.stack.last() {
            None => Some(String::new()),
            Some(Frame::Mapping { key: None, .. }) => None,
            Some(Frame::Mapping {
                path,
                key: Some(key),
            }) => Some(join(path, key)),
            Some(Frame::Sequence { path, index }) => Some(format!("{path}[{index}]")),
        }
    }

    /// A value was completed: the parent moves on.
    fn advance(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Mapping { key, .. }) => *key = None,
            Some(Frame::Sequence { index, .. }) => *index += 1,
            None => {}
        }
    }
}

fn location(mark: Marker) -> Location {
    Location {
        line: mark.line(),
        column: mark.col() + 1,
    }
}

impl MarkedEventReceiver for Receiver {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, ..) => match self.next_value_path() {
                None => {
                    if let Some(Frame::Mapping { path, key }) = self.stack.last_mut() {
                        self.locations
                            .keys
                            .insert(join(path, &text), location(mark));
                        *key = Some(text);
                    }
                }
                Some(path) => {
                    self.locations.values.insert(path, location(mark));
                    self.advance();
                }
            },
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let Some(path) = self.next_value_path() else {
                    return;
                };
                self.locations.values.insert(path.clone(), location(mark));
                self.stack
                    .push(if matches!(event, Event::MappingStart(..)) {
                        Frame::Mapping { path, key: None }
                    } else {
                        Frame::Sequence { path, index: 0 }
                    });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.advance();
            }
            Event::Alias(_) => self.advance(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_as_yamls_do() {
        let at = |line, column| Location { line, column };
        let text = "a\nbé\r\nc\rd";
        assert_eq!(Location::at_byte(text, 0), at(1, 1));
        assert_eq!(Location::at_byte(text, 2), at(2, 1));
        assert_eq!(Location::at_byte(text, 5), at(2, 3), "é is one column");
        assert_eq!(Location::at_byte(text, 7), at(3, 1), "\\r\\n is one break");
        assert_eq!(Location::end_of(text), at(4, 2), "a lone \\r is a break");
        assert_eq!(Location::end_of(""), at(1, 1));
    }

    #[test]
    fn keys_and_values_by_path() {
        let text = "name: weblogs\nsource:\n  kind: file\n  paths:\n    - a.log\n    - b.log\nsinks:\n  - kind: parquet\n    path: out\n";
        let locations = Locations::of(text);
        assert_eq!(
            locations.value("name"),
            Some(Location { line: 1, column: 7 })
        );
        assert_eq!(
            locations.value("source.paths[1]"),
            Some(Location { line: 6, column: 7 })
        );
        assert_eq!(
            locations.value("sinks[0].path"),
            Some(Location {
                line: 9,
                column: 11
            })
        );
        assert_eq!(
            locations.key_under("sinks[0]", "path"),
            Some(Location { line: 9, column: 5 })
        );
        assert_eq!(
            locations.key_under("source", "kind"),
            Some(Location { line: 3, column: 3 })
        );
        // A path that is not there points at the nearest thing that is.
        assert_eq!(locations.value("sinks[0].table").map(|l| l.line), Some(8));
    }
}
