//! `${NAME}` (an environment variable; `${NAME:-default}` when unset or empty) and
//! `${file:PATH}` (a secret file's content, trailing newline removed) in a pipeline file's
//! text, before it is parsed. `$$` is a literal `$`. An unset variable without a default is an
//! error at its line and column, never an empty string. Values come from an [`Environment`]
//! (the process's, or a test's); a secret file is at most [`MAX_SECRET_FILE_BYTES`] and the
//! text after interpolation at most [`MAX_INTERPOLATED_BYTES`].

use std::io::Read;
use std::path::Path;

use crate::locate::Location;

/// The most a `${file:PATH}` secret may hold (certificates and keys are a few KiB).
pub const MAX_SECRET_FILE_BYTES: u64 = 1024 * 1024;
/// The most a pipeline file's text may grow to once its references are replaced.
pub const MAX_INTERPOLATED_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpolationError {
    pub location: Location,
    pub message: String,
}

/// Where `${NAME}` and `${file:PATH}` get their values.
pub trait Environment {
    /// An environment variable, `None` when unset.
    fn variable(&self, name: &str) -> Option<String>;
    /// A secret file's whole content, or why it cannot be read.
    fn secret_file(&self, path: &str) -> Result<String, String>;
}

/// The process's environment variables and files.
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn variable(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn secret_file(&self, path: &str) -> Result<String, String> {
        read_bounded(Path::new(path), MAX_SECRET_FILE_BYTES).map_err(|e| e.to_string())
    }
}

/// Why a file's text was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("larger than {max_bytes} bytes")]
    TooLarge { max_bytes: u64 },
}

/// A file's text, refused once it passes `max_bytes` (never read past `max_bytes + 1`: a device
/// that never ends is refused, not read until memory runs out).
pub(crate) fn read_bounded(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(max_bytes + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { max_bytes });
    }
    Ok(text)
}

/// `text` with every reference replaced by its value in `environment`.
pub fn interpolate(
    text: &str,
    environment: &impl Environment,
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
        let value = resolve(reference, environment).map_err(|message| error(text, at, message))?;
        if out.len() + value.len() > MAX_INTERPOLATED_BYTES {
            let message = format!(
                "the file grows past {MAX_INTERPOLATED_BYTES} bytes once its references are replaced"
            );
            return Err(error(text, at, message));
        }
        out.push_str(&value);
        consumed = at + 2 + end + 1;
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(reference: &str, environment: &impl Environment) -> Result<String, String> {
    if let Some(path) = reference.strip_prefix("file:") {
        let path = path.trim();
        return environment
            .secret_file(path)
            .map(|secret| secret.trim_end_matches(['\n', '\r']).to_string())
            .map_err(|e| format!("cannot read the secret file {path}: {e}"));
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
    match (
        environment.variable(name).filter(|v| !v.is_empty()),
        default,
    ) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(format!(
            "environment variable {name} is not set (use ${{{name}:-default}} for a default)"
        )),
    }
}

fn error(text: &str, byte: usize, message: String) -> InterpolationError {
    InterpolationError {
        location: Location::at_byte(text, byte),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two variables; files from the disk, as the process reads them.
    struct TestEnvironment;

    impl Environment for TestEnvironment {
        fn variable(&self, name: &str) -> Option<String> {
            match name {
                "PGPASSWORD" => Some("s3cret".into()),
                "EMPTY" => Some(String::new()),
                _ => None,
            }
        }

        fn secret_file(&self, path: &str) -> Result<String, String> {
            ProcessEnvironment.secret_file(path)
        }
    }

    const ENV: &TestEnvironment = &TestEnvironment;

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
            interpolate(&text, ENV).unwrap(),
            "a: s3cret\nb: fallback\nc: x\nd: from-file\ne: $5 and $HOME\n"
        );
    }

    #[test]
    fn unset_variables_and_bad_references_point_at_themselves() {
        let error = interpolate("a: 1\nb: x ${NOPE}\n", ENV).unwrap_err();
        assert_eq!(error.location, Location { line: 2, column: 6 });
        assert!(
            error.message.contains("NOPE is not set"),
            "{}",
            error.message
        );
        assert!(interpolate("a: ${1X}", ENV)
            .unwrap_err()
            .message
            .contains("is not ${NAME}"));
        assert!(interpolate("a: ${OPEN", ENV)
            .unwrap_err()
            .message
            .contains("closing"));
        assert!(interpolate("a: ${file:/nonexistent/x}", ENV)
            .unwrap_err()
            .message
            .contains("secret file"));
    }

    #[test]
    fn secret_files_and_the_interpolated_text_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_SECRET_FILE_BYTES as usize + 1]).unwrap();
        let error = interpolate(&format!("a: ${{file:{}}}", big.display()), ENV).unwrap_err();
        assert!(error.message.contains("larger than"), "{}", error.message);
        // A device that never ends is refused at the bound, not read until memory runs out.
        let error = interpolate("a: ${file:/dev/zero}", ENV).unwrap_err();
        assert!(error.message.contains("larger than"), "{}", error.message);

        let secret = dir.path().join("secret");
        std::fs::write(&secret, vec![b'y'; MAX_SECRET_FILE_BYTES as usize]).unwrap();
        let reference = format!("${{file:{}}}\n", secret.display());
        // As many secrets as the bound holds, but the newlines between them push the last over.
        let copies = MAX_INTERPOLATED_BYTES / MAX_SECRET_FILE_BYTES as usize;
        let error = interpolate(&reference.repeat(copies), ENV).unwrap_err();
        assert!(error.message.contains("grows past"), "{}", error.message);
        assert_eq!(
            error.location.line, copies,
            "the reference that crossed the bound"
        );
        assert!(interpolate(&reference.repeat(copies - 1), ENV).is_ok());
    }
}
