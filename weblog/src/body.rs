//! HTTP ingest bodies: NDJSON or plain lines, split as the `http` source takes them.

use super::LogFormat;

/// Why a body was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("{lines} lines is more than max_lines ({max_lines})")]
    TooManyLines { lines: usize, max_lines: usize },
    /// `line N: …` for the first line that is not a JSON object.
    #[error("{0}")]
    BadJsonLine(String),
}

/// The lines of `body`: split at `\n`, a trailing `\r` cut, blank lines left out. More than
/// `max_lines` lines (blank ones included) is refused before anything is parsed; with
/// `LogFormat::Json` every non-blank line must be a JSON object.
pub fn body_lines(
    body: &[u8],
    format: LogFormat,
    max_lines: usize,
) -> Result<Vec<&[u8]>, BodyError> {
    let lines = body.split(|b| *b == b'\n').count();
    if lines > max_lines {
        return Err(BodyError::TooManyLines { lines, max_lines });
    }
    let lines: Vec<&[u8]> = body
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect();
    if format == LogFormat::Json {
        if let Some(problem) = first_bad_json_line(&lines) {
            return Err(BodyError::BadJsonLine(problem));
        }
    }
    Ok(lines
        .into_iter()
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect())
}

/// `line N: …` for the first line that is not a JSON object (blank lines are skipped).
fn first_bad_json_line(lines: &[&[u8]]) -> Option<String> {
    for (index, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = String::from_utf8_lossy(line);
        let mut out = Vec::new();
        if let Err(error) = LogFormat::Json.parse_into(&text, &mut out) {
            return Some(format!("line {}: {error}", index + 1));
        }
    }
    None
}
