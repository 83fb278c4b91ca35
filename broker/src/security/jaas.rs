//! Kafka's `sasl.jaas.config` values, as a server.properties carries them
//! (`listener.name.<listener>.<mechanism>.sasl.jaas.config`):
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
//! ```
//!
//! One or more login modules, each a class name, a control flag and `key=value` options
//! (values quoted, with `\` escapes, or bare words), ended by `;`. Weir reads the three Kafka
//! modules it serves — PLAIN's, SCRAM's and OAUTHBEARER's — and refuses any other class.

use std::collections::BTreeMap;

pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
const KNOWN_MODULES: &[&str] = &[
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    OAUTHBEARER_LOGIN_MODULE,
];
const FLAGS: &[&str] = &["required", "requisite", "sufficient", "optional"];
/// Bound on one config value: far above any real JAAS entry.
const MAX_JAAS_BYTES: usize = 1 << 20;

/// One login module of a JAAS config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    pub options: BTreeMap<String, String>,
}

impl LoginModule {
    /// PlainLoginModule's users: every `user_<name>` option.
    pub fn plain_users(&self) -> BTreeMap<String, String> {
        self.options
            .iter()
            .filter_map(|(key, value)| {
                Some((key.strip_prefix("user_")?.to_string(), value.clone()))
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sasl.jaas.config: {0}")]
pub struct JaasError(String);

/// Parses a `sasl.jaas.config` value into its login modules.
pub fn parse(text: &str) -> Result<Vec<LoginModule>, JaasError> {
    if text.len() > MAX_JAAS_BYTES {
        return Err(JaasError(format!(
            "{} bytes is over {MAX_JAAS_BYTES}",
            text.len()
        )));
    }
    let mut tokens = Tokens::new(text);
    let mut modules = Vec::new();
    while let Some(class) = tokens.next()? {
        let class = class.word()?;
        if !KNOWN_MODULES.contains(&class.as_str()) {
            return Err(JaasError(format!(
                "login module {class} is not one Weir serves (PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule)"
            )));
        }
        let flag = tokens
            .next()?
            .ok_or_else(|| JaasError(format!("{class} has no control flag")))?
            .word()?;
        if !FLAGS.contains(&flag.to_ascii_lowercase().as_str()) {
            return Err(JaasError(format!(
                "{class}: {flag:?} is not a control flag ({})",
                FLAGS.join(", ")
            )));
        }
        let mut options = BTreeMap::new();
        loop {
            match tokens.next()? {
                None => {
                    return Err(JaasError(format!(
                        "{class}: the entry does not end with ';'"
                    )))
                }
                Some(Token::End) => break,
                Some(Token::Word(key)) => {
                    let value = match tokens.next()? {
                        Some(Token::Equals) => tokens
                            .next()?
                            .ok_or_else(|| {
                                JaasError(format!("{class}: option {key} has no value"))
                            })?
                            .value()?,
                        _ => return Err(JaasError(format!("{class}: option {key} has no '='"))),
                    };
                    options.insert(key, value);
                }
                Some(other) => return Err(JaasError(format!("{class}: unexpected {other:?}"))),
            }
        }
        modules.push(LoginModule { class, options });
    }
    if modules.is_empty() {
        return Err(JaasError("no login module".into()));
    }
    Ok(modules)
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    End,
}

impl Token {
    fn word(self) -> Result<String, JaasError> {
        match self {
            Token::Word(word) => Ok(word),
            other => Err(JaasError(format!("expected a name, found {other:?}"))),
        }
    }

    fn value(self) -> Result<String, JaasError> {
        match self {
            Token::Word(value) | Token::Quoted(value) => Ok(value),
            other => Err(JaasError(format!("expected a value, found {other:?}"))),
        }
    }
}

struct Tokens<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens {
            chars: text.chars().peekable(),
        }
    }

    fn next(&mut self) -> Result<Option<Token>, JaasError> {
        while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(first) = self.chars.next() else {
            return Ok(None);
        };
        match first {
            ';' => Ok(Some(Token::End)),
            '=' => Ok(Some(Token::Equals)),
            '"' => self.quoted().map(|q| Some(Token::Quoted(q))),
            _ => {
                let mut word = String::from(first);
                while let Some(c) = self
                    .chars
                    .next_if(|c| !c.is_whitespace() && !matches!(c, ';' | '=' | '"'))
                {
                    word.push(c);
                }
                Ok(Some(Token::Word(word)))
            }
        }
    }

    fn quoted(&mut self) -> Result<String, JaasError> {
        let mut value = String::new();
        loop {
            match self.chars.next() {
                None => return Err(JaasError("a quoted value is not closed".into())),
                Some('"') => return Ok(value),
                Some('\\') => match self.chars.next() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some(other) => value.push(other),
                    None => return Err(JaasError("a quoted value is not closed".into())),
                },
                Some(c) => value.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_plain_entry_with_its_users() {
        let modules = parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \n username=\"admin\" \
             password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"al\\\"ice;=\";",
        )
        .unwrap();
        assert_eq!(modules.len(), 1);
        assert_eq!(modules[0].class, PLAIN_LOGIN_MODULE);
        assert_eq!(modules[0].options["username"], "admin");
        let users = modules[0].plain_users();
        assert_eq!(users["admin"], "admin-secret");
        assert_eq!(users["alice"], "al\"ice;=");
        assert_eq!(users.len(), 2);
    }

    #[test]
    fn bare_values_and_several_modules() {
        let modules = parse(&format!(
            "{SCRAM_LOGIN_MODULE} required username=broker password=pw; {PLAIN_LOGIN_MODULE} optional;"
        ))
        .unwrap();
        assert_eq!(modules[0].options["password"], "pw");
        assert_eq!(modules[1].class, PLAIN_LOGIN_MODULE);
    }

    #[test]
    fn malformed_entries_say_what_is_wrong() {
        for (text, says) in [
            ("", "no login module"),
            ("com.example.Kerberos required;", "not one Weir serves"),
            (PLAIN_LOGIN_MODULE, "no control flag"),
            (
                &format!("{PLAIN_LOGIN_MODULE} always;"),
                "not a control flag",
            ),
            (
                &format!("{PLAIN_LOGIN_MODULE} required user_a=\"x\""),
                "does not end",
            ),
            (
                &format!("{PLAIN_LOGIN_MODULE} required user_a;"),
                "has no '='",
            ),
            (
                &format!("{PLAIN_LOGIN_MODULE} required user_a=\"x;"),
                "not closed",
            ),
            (
                &format!("{PLAIN_LOGIN_MODULE} required user_a=;"),
                "expected a value",
            ),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }
}
