//! `${NAME}` (an environment variable; `${NAME:-default}` when unset or empty) and
//! `${file:PATH}` (a secret file's content, trailing newline removed) in a pipeline file's
//! text, before it is parsed. `$$` is a literal `$`. An unset variable without a default is an
//! error at its line and column, never an empty string.

use crate::locate::Location;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpolationError {
    pub location: Location,
    pub message: String,
}

/// `text` with every reference replaced; `lookup` gives environment variables.
pub fn interpolate(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, InterpolationError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut consumed = 0;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let at = consumed + dollar;
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            consumed = at + 2;
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            consumed = at + 1;
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err(error(text, at, "`${` without a closing `}`".into()));
        };
        let reference = &body[..end];
        out.push_str(&resolve(reference, &lookup).map_err(|message| error(text, at, message))?);
        consumed = at + 2 + end + 1;
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(reference: &str, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    if let Some(path) = reference.strip_prefix("file:") {
        return std::fs::read_to_string(path.trim())
            .map(|secret| secret.trim_end_matches(['\n', '\r']).to_string())
            .map_err(|e| format!("cannot read the secret file {}: {e}", path.trim()));
    }
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(format!(
            "`${{{reference}}}` is not ${{NAME}}, ${{NAME:-default}} or ${{file:PATH}}"
        ));
    }
    match (lookup(name).filter(|v| !v.is_empty()), default) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(format!(
            "environment variable {name} is not set (use ${{{name}:-default}} for a default)"
        )),
    }
}

fn error(text: &str, byte: usize, message: String) -> InterpolationError {
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    InterpolationError {
        location: Location {
            line,
            column: before[line_start..].chars().count() + 1,
        },
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "PGPASSWORD" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_defaults_files_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "from-file\n").unwrap();
        let text = format!(
            "a: ${{PGPASSWORD}}\nb: ${{MISSING:-fallback}}\nc: ${{EMPTY:-x}}\nd: ${{file:{}}}\ne: $$5 and $HOME\n",
            secret.display()
        );
        assert_eq!(
            interpolate(&text, env).unwrap(),
            "a: s3cret\nb: fallback\nc: x\nd: from-file\ne: $5 and $HOME\n"
        );
    }

    #[test]
    fn unset_variables_and_bad_references_point_at_themselves() {
        let error = interpolate("a: 1\nb: x ${NOPE}\n", env).unwrap_err();
        assert_eq!(error.location, Location { line: 2, column: 6 });
        assert!(
            error.message.contains("NOPE is not set"),
            "{}",
            error.message
        );
        assert!(interpolate("a: ${1X}", env)
            .unwrap_err()
            .message
            .contains("is not ${NAME}"));
        assert!(interpolate("a: ${OPEN", env)
            .unwrap_err()
            .message
            .contains("closing"));
        assert!(interpolate("a: ${file:/nonexistent/x}", env)
            .unwrap_err()
            .message
            .contains("secret file"));
    }
}
