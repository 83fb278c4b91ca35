//! The Common/Combined Log Format family (nginx's default `combined`, Apache's `common` and
//! `combined`), parsed by hand: one pass, no regex, fields borrowed from the line unless an
//! escape had to be undone.

use std::borrow::Cow;

use serde::Serialize;

use super::clock::parse_clf_time;
use super::ParseError;

/// One access-log line, as the JSON object it becomes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessLogEntry<'a> {
    /// Milliseconds since the epoch (UTC).
    pub timestamp: i64,
    pub remote_addr: &'a str,
    pub remote_user: Option<Cow<'a, str>>,
    pub method: Option<Cow<'a, str>>,
    pub path: Option<Cow<'a, str>>,
    pub query: Option<Cow<'a, str>>,
    pub protocol: Option<Cow<'a, str>>,
    pub status: u16,
    pub bytes: u64,
    pub referrer: Option<Cow<'a, str>>,
    pub user_agent: Option<Cow<'a, str>>,
    /// Seconds (nginx's `$request_time`), when the line carries it.
    pub request_time: Option<f64>,
}

struct Cursor<'a> {
    line: &'a str,
    position: usize,
}

impl<'a> AccessLogEntry<'a> {
    /// Parses a CLF line; `combined` expects referrer and user agent after the size (a line
    /// that ends before them is accepted with both null).
    pub fn parse(line: &'a str, combined: bool) -> Result<Self, ParseError> {
        let mut cursor = Cursor { line, position: 0 };
        let remote_addr = cursor.token("remote address")?;
        cursor.token("ident")?;
        let remote_user = dash_is_none(cursor.token("user")?);
        let time = cursor.bracketed("time")?;
        let timestamp = parse_clf_time(time).map_err(|reason| cursor.error_before(time, reason))?;
        let request = cursor.quoted("request")?;
        let status = cursor.status()?;
        let bytes = cursor.bytes()?;
        let mut entry = AccessLogEntry {
            timestamp,
            remote_addr,
            remote_user: remote_user.map(Cow::Borrowed),
            method: None,
            path: None,
            query: None,
            protocol: None,
            status,
            bytes,
            referrer: None,
            user_agent: None,
            request_time: None,
        };
        entry.set_request(request);
        if combined && !cursor.at_end() {
            entry.referrer = empty_or_dash_is_none(cursor.quoted("referrer")?);
            entry.user_agent = empty_or_dash_is_none(cursor.quoted("user agent")?);
            if !cursor.at_end() {
                entry.request_time = Some(cursor.request_time()?);
            }
        }
        cursor.expect_end()?;
        Ok(entry)
    }

    /// `METHOD TARGET PROTOCOL` (or `METHOD TARGET`); anything else is kept whole as the path.
    fn set_request(&mut self, request: Cow<'a, str>) {
        if request.is_empty() || request == "-" {
            return;
        }
        let parts: Vec<&str> = request.split(' ').filter(|p| !p.is_empty()).collect();
        let is_method = |m: &str| !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase());
        let (method, target, protocol) = match parts.as_slice() {
            [m, t, p] if is_method(m) && p.starts_with("HTTP/") => (*m, *t, Some(*p)),
            [m, t] if is_method(m) => (*m, *t, None),
            _ => {
                self.path = Some(Cow::Owned(request.into_owned()));
                return;
            }
        };
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        self.method = Some(Cow::Owned(method.to_string()));
        self.path = Some(Cow::Owned(path.to_string()));
        self.query = query.map(|q| Cow::Owned(q.to_string()));
        self.protocol = protocol.map(|p| Cow::Owned(p.to_string()));
    }
}

fn dash_is_none(field: &str) -> Option<&str> {
    (field != "-").then_some(field)
}

fn empty_or_dash_is_none(field: Cow<'_, str>) -> Option<Cow<'_, str>> {
    (!field.is_empty() && field != "-").then_some(field)
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.line[self.position..]
    }

    fn at_end(&self) -> bool {
        self.rest().trim_end().is_empty()
    }

    fn error(&self, reason: impl Into<String>) -> ParseError {
        ParseError {
            reason: reason.into(),
            column: self.line[..self.position].chars().count() + 1,
        }
    }

    /// An error pointing at `field`, a slice of the line already consumed.
    fn error_before(&self, field: &str, reason: String) -> ParseError {
        let start = field.as_ptr() as usize - self.line.as_ptr() as usize;
        ParseError {
            reason,
            column: self.line[..start].chars().count() + 1,
        }
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.position += rest.len() - rest.trim_start_matches(' ').len();
    }

    /// The next space-separated token.
    fn token(&mut self, what: &str) -> Result<&'a str, ParseError> {
        self.skip_spaces();
        let rest = self.rest();
        let length = rest.find(' ').unwrap_or(rest.len());
        if length == 0 {
            return Err(self.error(format!("line ends before the {what}")));
        }
        self.position += length;
        Ok(&rest[..length])
    }

    fn bracketed(&mut self, what: &str) -> Result<&'a str, ParseError> {
        self.skip_spaces();
        let rest = self.rest();
        if !rest.starts_with('[') {
            return Err(self.error(format!("expected '[' before the {what}")));
        }
        let Some(end) = rest.find(']') else {
            return Err(self.error(format!("the {what} has no closing ']'")));
        };
        self.position += end + 1;
        Ok(&rest[1..end])
    }

    /// A double-quoted field; `\"`, `\\` and `\xHH` escapes are undone.
    fn quoted(&mut self, what: &str) -> Result<Cow<'a, str>, ParseError> {
        self.skip_spaces();
        let rest = self.rest();
        if !rest.starts_with('"') {
            return Err(self.error(format!("expected '\"' before the {what}")));
        }
        let bytes = rest.as_bytes();
        let mut index = 1;
        let mut escaped = false;
        while index < bytes.len() {
            match bytes[index] {
                b'\\' if index + 1 < bytes.len() => {
                    escaped = true;
                    index += 2;
                }
                b'"' => {
                    let inner = &rest[1..index];
                    self.position += index + 1;
                    return Ok(if escaped {
                        Cow::Owned(unescape(inner))
                    } else {
                        Cow::Borrowed(inner)
                    });
                }
                _ => index += 1,
            }
        }
        Err(self.error(format!("the {what} has no closing '\"'")))
    }

    fn status(&mut self) -> Result<u16, ParseError> {
        let token = self.token("status")?;
        match token.parse::<u16>() {
            Ok(status) if (100..=999).contains(&status) && token.len() == 3 => Ok(status),
            _ => Err(self.error_before(token, format!("status '{token}' is not a 3-digit code"))),
        }
    }

    fn bytes(&mut self) -> Result<u64, ParseError> {
        let token = self.token("size")?;
        if token == "-" {
            return Ok(0);
        }
        token
            .parse::<u64>()
            .map_err(|_| self.error_before(token, format!("size '{token}' is not a number")))
    }

    fn request_time(&mut self) -> Result<f64, ParseError> {
        self.skip_spaces();
        let start = self.position;
        let token = if self.rest().starts_with('"') {
            self.quoted("request time")?
        } else {
            Cow::Borrowed(self.token("request time")?)
        };
        match token.parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(seconds),
            _ => Err(ParseError {
                reason: format!("'{token}' after the user agent is not a request time"),
                column: self.line[..start].chars().count() + 1,
            }),
        }
    }

    fn expect_end(&mut self) -> Result<(), ParseError> {
        self.skip_spaces();
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error(format!(
                "unexpected text '{}'",
                truncate(self.rest().trim(), 40)
            )))
        }
    }
}

fn truncate(text: &str, characters: usize) -> Cow<'_, str> {
    match text.char_indices().nth(characters) {
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

/// Undoes `\"`, `\\` and `\xHH` (nginx escapes `"` and non-printable bytes so); other
/// backslashes are kept as they are. Bytes that do not form UTF-8 become U+FFFD.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' && index + 1 < bytes.len() {
            match bytes[index + 1] {
                b'"' | b'\\' => {
                    out.push(bytes[index + 1]);
                    index += 2;
                    continue;
                }
                b'x' if index + 4 <= bytes.len() => {
                    let digits = (hex_digit(bytes[index + 2]), hex_digit(bytes[index + 3]));
                    if let (Some(high), Some(low)) = digits {
                        out.push(high << 4 | low);
                        index += 4;
                        continue;
                    }
                }
                _ => {}
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn hex_digit(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}
