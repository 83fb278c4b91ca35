//! Web-server log formats: a line in, a JSON object with typed columns out (or a reason).
//!
//! - `nginx_combined` / `apache_combined`: `host ident user [time] "request" status bytes
//!   "referrer" "user agent"`, optionally followed by nginx's `$request_time` (seconds).
//! - `apache_common`: the Common Log Format, the same without referrer and user agent.
//! - `json`: one JSON object per line, passed through as it is.
//! - `raw`: the line as text, unparsed.
//!
//! Real-world lines are tolerated: `-` for an absent user, referrer or user agent (null) and for
//! zero bytes (0), empty quoted fields, `\"` and nginx's `\x22` escapes inside quotes, IPv6
//! addresses, and request lines that are not `METHOD TARGET PROTOCOL` (a scanner's garbage, an
//! HTTP/0.9 request): the text goes to `path`, `method`/`protocol` stay null. Everything else
//! that does not fit is an error with the reason and the column where it went wrong.
//!
//! `body`: an HTTP ingest body split into lines (the `http` source's rules). Nothing here does
//! I/O, so the parsers are fuzzed on their own (`fuzz/fuzz_targets/log_line.rs`, `http_body.rs`).

mod access;
pub mod body;
mod clock;

use serde::Deserialize;

pub use access::AccessLogEntry;
pub use clock::{format_clf_time, parse_clf_time};

/// How the lines of a source are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    NginxCombined,
    ApacheCommon,
    ApacheCombined,
    Json,
    Raw,
}

/// Why a line was not parsed; `column` is 1-based, in characters of the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (at column {column})")]
pub struct ParseError {
    pub reason: String,
    pub column: usize,
}

/// The columns every parsed access-log line has, as a streams schema declaration
/// (`name:type,…`): what SQL transforms and sinks see.
pub const ACCESS_LOG_SCHEMA: &str = "timestamp:timestamp,remote_addr:string,remote_user:string,\
method:string,path:string,query:string,protocol:string,status:int,bytes:int,referrer:string,\
user_agent:string,request_time:float";

impl LogFormat {
    /// The declared schema of the parsed records; `None` where it depends on the data (JSON
    /// lines: inferred or declared by the pipeline) or the value is raw text.
    pub fn schema(self) -> Option<&'static str> {
        match self {
            LogFormat::NginxCombined | LogFormat::ApacheCommon | LogFormat::ApacheCombined => {
                Some(ACCESS_LOG_SCHEMA)
            }
            LogFormat::Json | LogFormat::Raw => None,
        }
    }

    /// True when parsed records are JSON objects (false: raw text).
    pub fn is_json(self) -> bool {
        self != LogFormat::Raw
    }

    /// Parses `line` (without its line terminator) and appends the record's value to `out`.
    /// On error `out` is left as it was.
    pub fn parse_into(self, line: &str, out: &mut Vec<u8>) -> Result<(), ParseError> {
        match self {
            LogFormat::Raw => {
                out.extend_from_slice(line.as_bytes());
                Ok(())
            }
            LogFormat::Json => parse_json_line(line, out),
            LogFormat::ApacheCommon => write_entry(AccessLogEntry::parse(line, false)?, out),
            LogFormat::NginxCombined | LogFormat::ApacheCombined => {
                write_entry(AccessLogEntry::parse(line, true)?, out)
            }
        }
    }
}

fn write_entry(entry: AccessLogEntry<'_>, out: &mut Vec<u8>) -> Result<(), ParseError> {
    serde_json::to_writer(out, &entry).map_err(|e| ParseError {
        reason: format!("cannot encode the record: {e}"),
        column: 1,
    })
}

fn parse_json_line(line: &str, out: &mut Vec<u8>) -> Result<(), ParseError> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return Err(ParseError {
            reason: "not a JSON object".into(),
            column: line.len() - line.trim_start().len() + 1,
        });
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(trimmed) {
        Ok(_) => {
            out.extend_from_slice(trimmed.as_bytes());
            Ok(())
        }
        Err(error) => Err(ParseError {
            reason: format!("invalid JSON: {error}"),
            column: error.column().max(1),
        }),
    }
}

#[cfg(test)]
mod tests;
