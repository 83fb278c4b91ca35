//! Who may POST: bearer tokens (`Authorization: Bearer <token>`, one token a line of
//! `bearer_tokens_file`) and basic users (`Authorization: Basic …`, `user:password` lines of
//! `basic_users_file`). Blank lines and lines starting with `#` are skipped. The files are read
//! at start-up and again when they change (looked at no more than once a second), so a rotated
//! Secret takes effect without a restart; a file that cannot be read then keeps the previous
//! credentials and logs why. Only SHA-256 digests of the credentials are kept in memory, and a
//! request's digest is compared to them, so the time a comparison takes says nothing useful
//! about a token.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use axum::http::{header, HeaderMap};
use base64::Engine;

use super::config::HttpAuthConfig;

const RECHECK_INTERVAL: Duration = Duration::from_secs(1);

type Digest = [u8; 32];

fn digest(bytes: &[u8]) -> Digest {
    let mut out = [0; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref());
    out
}

/// Why a request is refused: the body's `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal(pub(super) String);

/// A credentials file and the digests of its lines.
#[derive(Debug)]
struct Followed {
    path: String,
    state: Mutex<FileState>,
}

#[derive(Debug)]
struct FileState {
    digests: Vec<Digest>,
    modified: Option<SystemTime>,
    checked_at: Instant,
}

impl Followed {
    fn load(path: &str, what: &str) -> Result<Self, String> {
        let digests = read_digests(path, what)?;
        Ok(Followed {
            path: path.to_string(),
            state: Mutex::new(FileState {
                digests,
                modified: modified(path),
                checked_at: Instant::now(),
            }),
        })
    }

    fn contains(&self, candidate: &Digest, what: &str) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        if state.checked_at.elapsed() >= RECHECK_INTERVAL {
            state.checked_at = Instant::now();
            let now_modified = modified(&self.path);
            if now_modified != state.modified {
                match read_digests(&self.path, what) {
                    Ok(digests) => {
                        tracing::info!(path = %self.path, "http source: {what} reloaded");
                        state.digests = digests;
                        state.modified = now_modified;
                    }
                    Err(error) => tracing::warn!(%error, "http source: the previous {what} stay"),
                }
            }
        }
        state.digests.iter().any(|known| known == candidate)
    }
}

fn modified(path: &str) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read_digests(path: &str, what: &str) -> Result<Vec<Digest>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read it: {e}"))?;
    let mut digests = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if what == "basic users" && !line.contains(':') {
            return Err(format!("{path}:{}: not user:password", number + 1));
        }
        digests.push(digest(line.as_bytes()));
    }
    if digests.is_empty() {
        return Err(format!("{path}: holds no {what}"));
    }
    Ok(digests)
}

/// The endpoint's credentials check.
#[derive(Debug)]
pub(super) struct Authenticator {
    tokens: Option<Followed>,
    users: Option<Followed>,
}

impl Authenticator {
    /// Reads the files now: an error is a configuration error to report at start-up.
    pub(super) fn load(config: &HttpAuthConfig) -> Result<Self, String> {
        let load = |path: &Option<String>, what| path.as_deref().map(|p| Followed::load(p, what));
        Ok(Authenticator {
            tokens: load(&config.bearer_tokens_file, "bearer tokens").transpose()?,
            users: load(&config.basic_users_file, "basic users").transpose()?,
        })
    }

    /// The `WWW-Authenticate` challenges of a 401 answer.
    pub(super) fn challenges(&self) -> Vec<&'static str> {
        let mut challenges = Vec::new();
        if self.tokens.is_some() {
            challenges.push("Bearer realm=\"weir\"");
        }
        if self.users.is_some() {
            challenges.push("Basic realm=\"weir\", charset=\"UTF-8\"");
        }
        challenges
    }

    /// Whether the request's `Authorization` names a known token or user.
    pub(super) fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(Refusal(format!(
                "authentication required: send an Authorization header ({})",
                self.schemes()
            )));
        };
        let value = value.to_str().unwrap_or("");
        let (scheme, credentials) = value.split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            let Some(tokens) = &self.tokens else {
                return Err(self.unsupported("Bearer"));
            };
            if tokens.contains(&digest(credentials.as_bytes()), "bearer tokens") {
                return Ok(());
            }
            return Err(Refusal("the bearer token is not accepted".into()));
        }
        if scheme.eq_ignore_ascii_case("basic") {
            let Some(users) = &self.users else {
                return Err(self.unsupported("Basic"));
            };
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(credentials)
                .map_err(|_| Refusal("the Basic credentials are not base64".into()))?;
            if users.contains(&digest(&decoded), "basic users") {
                return Ok(());
            }
            return Err(Refusal("wrong user name or password".into()));
        }
        Err(self.unsupported(scheme))
    }

    fn schemes(&self) -> String {
        let mut schemes = Vec::new();
        if self.tokens.is_some() {
            schemes.push("Bearer <token>");
        }
        if self.users.is_some() {
            schemes.push("Basic <base64 user:password>");
        }
        schemes.join(" or ")
    }

    fn unsupported(&self, scheme: &str) -> Refusal {
        Refusal(format!(
            "authorization scheme '{scheme}' is not accepted here: use {}",
            self.schemes()
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn tokens_and_users_from_files_and_their_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens");
        let users = dir.path().join("users");
        std::fs::write(&tokens, "# ingest tokens\nfirst-token\n\n  second-token \n").unwrap();
        std::fs::write(&users, "alice:alice-secret\n").unwrap();
        let authenticator = Authenticator::load(&HttpAuthConfig {
            bearer_tokens_file: Some(tokens.to_str().unwrap().into()),
            basic_users_file: Some(users.to_str().unwrap().into()),
        })
        .unwrap();
        let check = |value: Option<&str>| authenticator.check(&headers(value));
        check(Some("Bearer first-token")).unwrap();
        check(Some("bearer second-token")).unwrap();
        let alice = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:alice-secret")
        );
        check(Some(&alice)).unwrap();
        assert!(check(None)
            .unwrap_err()
            .0
            .contains("Bearer <token> or Basic"));
        assert_eq!(
            check(Some("Bearer nope")).unwrap_err().0,
            "the bearer token is not accepted"
        );
        let wrong = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:wrong")
        );
        assert_eq!(
            check(Some(&wrong)).unwrap_err().0,
            "wrong user name or password"
        );
        assert!(check(Some("Digest x"))
            .unwrap_err()
            .0
            .contains("'Digest' is not accepted"));
        assert!(
            check(Some("# ingest tokens")).is_err(),
            "comments are not tokens"
        );

        // A rotation: the old token goes, the new one works; a broken file keeps the last set.
        std::fs::write(&tokens, "third-token\n").unwrap();
        let force_recheck = || {
            let mut state = authenticator.tokens.as_ref().unwrap().state.lock().unwrap();
            state.checked_at -= RECHECK_INTERVAL;
            state.modified = None;
        };
        force_recheck();
        check(Some("Bearer third-token")).unwrap();
        assert!(check(Some("Bearer first-token")).is_err());
        std::fs::write(&tokens, "\n").unwrap();
        force_recheck();
        check(Some("Bearer third-token")).unwrap();
    }

    #[test]
    fn files_that_cannot_serve_are_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users");
        std::fs::write(&users, "alice\n").unwrap();
        let error = Authenticator::load(&HttpAuthConfig {
            bearer_tokens_file: None,
            basic_users_file: Some(users.to_str().unwrap().into()),
        })
        .unwrap_err();
        assert!(error.ends_with(":1: not user:password"), "{error}");
        let error = Authenticator::load(&HttpAuthConfig {
            bearer_tokens_file: Some("/nonexistent/tokens".into()),
            basic_users_file: None,
        })
        .unwrap_err();
        assert!(
            error.contains("/nonexistent/tokens: cannot read it"),
            "{error}"
        );
    }
}
