//! The `postgres` sink's YAML settings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresSinkConfig {
    /// A libpq connection URL or key=value string, e.g.
    /// `postgres://weir@db.example:5432/analytics` (use `${PGPASSWORD}` or `password_file`
    /// rather than a password in the file).
    pub url: String,
    /// A file whose content (trailing newline removed) is the password.
    #[serde(default)]
    pub password_file: Option<String>,
    /// `table` or `schema.table`.
    pub table: String,
    /// Create the table from the rows' columns when it does not exist.
    #[serde(default = "default_true")]
    pub create_table: bool,
    /// A commit once this many rows are waiting…
    #[serde(default = "default_batch_rows")]
    pub batch_rows: usize,
    /// …or this long after the last one.
    #[serde(default = "default_commit_interval_ms")]
    pub commit_interval_ms: u64,
    /// First wait before retrying after the database went away; doubles up to the maximum.
    #[serde(default = "default_retry_backoff_ms")]
    pub retry_backoff_ms: u64,
    #[serde(default = "default_retry_backoff_max_ms")]
    pub retry_backoff_max_ms: u64,
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// An updating aggregate's rows: the column holding each row's key (the group's key as
    /// text), the table's primary key — a created table gets it, an existing one must have a
    /// unique index on it.
    #[serde(default = "default_key_column")]
    pub key_column: String,
}

fn default_key_column() -> String {
    "_key".into()
}

fn default_true() -> bool {
    true
}
fn default_batch_rows() -> usize {
    50_000
}
fn default_commit_interval_ms() -> u64 {
    1000
}
fn default_retry_backoff_ms() -> u64 {
    200
}
fn default_retry_backoff_max_ms() -> u64 {
    30_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}

impl PostgresSinkConfig {
    pub fn new(url: &str, table: &str) -> Self {
        PostgresSinkConfig {
            url: url.into(),
            password_file: None,
            table: table.into(),
            create_table: true,
            batch_rows: default_batch_rows(),
            commit_interval_ms: default_commit_interval_ms(),
            retry_backoff_ms: default_retry_backoff_ms(),
            retry_backoff_max_ms: default_retry_backoff_max_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            key_column: default_key_column(),
        }
    }

    /// What is wrong with `key_column` for rows of `rows`' columns: an updating aggregate's
    /// (`changes`) key goes in a column of its own, which must not be one of the rows'.
    #[cfg(feature = "runtime")]
    pub fn key_column_problem(
        &self,
        rows: &arrow::datatypes::Schema,
        changes: bool,
    ) -> Option<String> {
        (changes && rows.index_of(&self.key_column).is_ok()).then(|| {
            format!(
                "key_column: the rows have a column {} already; name the key column differently",
                self.key_column
            )
        })
    }

    #[cfg(feature = "runtime")]
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.key_column.trim().is_empty() {
            problems.push("key_column: must name a column".into());
        }
        match super::tls::split_tls_options(&self.url) {
            Err(problem) => problems.push(format!("url: {problem}")),
            Ok((rest, tls)) => {
                if let Err(error) = rest.parse::<tokio_postgres::Config>() {
                    problems.push(format!("url: not a PostgreSQL connection string: {error}"));
                }
                if let Err(problem) = tls.connector() {
                    problems.push(format!("url: {problem}"));
                }
            }
        }
        if let Err(problem) = super::schema::quote_table(&self.table) {
            problems.push(format!("table: {problem}"));
        }
        if self.batch_rows == 0 || self.commit_interval_ms == 0 || self.retry_backoff_ms == 0 {
            problems.push(
                "batch_rows, commit_interval_ms and retry_backoff_ms must be positive".into(),
            );
        }
        problems
    }

    /// The connection settings, with the password from `password_file` when given, and the TLS
    /// the URL's `sslmode` asks for (files read now, so a rotated certificate is picked up at
    /// the next connection).
    #[cfg(feature = "runtime")]
    pub fn connection(&self) -> Result<super::Connection, String> {
        let (rest, tls) = super::tls::split_tls_options(&self.url)
            .map_err(|problem| format!("url: {problem}"))?;
        let mut config: tokio_postgres::Config = rest
            .parse()
            .map_err(|e| format!("url: not a PostgreSQL connection string: {e}"))?;
        config.ssl_mode(tls.driver_mode());
        let connector = tls
            .connector()
            .map_err(|problem| format!("url: {problem}"))?;
        if let Some(path) = &self.password_file {
            let password =
                std::fs::read_to_string(path).map_err(|e| format!("password_file {path}: {e}"))?;
            config.password(password.trim_end_matches(['\n', '\r']));
        }
        config.connect_timeout(std::time::Duration::from_millis(self.connect_timeout_ms));
        if config.get_application_name().is_none() {
            config.application_name("weir");
        }
        Ok(super::Connection { config, connector })
    }
}

#[cfg(feature = "runtime")]
#[async_trait::async_trait]
impl crate::connector::SinkConnector for PostgresSinkConfig {
    fn applies_changes(&self) -> bool {
        true
    }

    fn problems(&self) -> Vec<String> {
        PostgresSinkConfig::problems(self)
    }

    fn rows_problems(&self, rows: &arrow::datatypes::Schema, changes: bool) -> Vec<String> {
        self.key_column_problem(rows, changes).into_iter().collect()
    }

    /// Keyed `<pipeline>/<table>` in `weir_offsets`.
    fn open(
        &self,
        target: &crate::connector::SinkTarget<'_>,
    ) -> Result<Box<dyn crate::sink::Sink>, crate::ConnectorError> {
        let sink_id = format!("{}/{}", target.pipeline, self.table);
        let sink = super::PostgresSink::new(self.clone(), &sink_id, target.topic)?;
        Ok(Box::new(sink))
    }

    async fn reach(
        &self,
        timeout: std::time::Duration,
    ) -> Result<(), crate::connector::Unreachable> {
        reach(self, timeout)
            .await
            .map_err(|message| crate::connector::Unreachable {
                field: "url",
                hint: hint(&message),
                message: format!("PostgreSQL does not answer: {message}"),
            })
    }
}

/// What to change when the refusal says what was wrong.
#[cfg(feature = "runtime")]
fn hint(message: &str) -> Option<String> {
    let hint = if message.contains("not valid for name") {
        "the server's certificate does not name the host in the URL: connect by a name it \
         carries, or use sslmode=verify-ca to check the chain only"
    } else if message.contains("invalid peer certificate") {
        "the server's certificate is not signed by a CA in sslrootcert (or has expired): name \
         the CA that signed it with sslrootcert=PATH"
    } else if message.contains("no encryption") {
        "the server accepts this user over TLS only: set sslmode=verify-full (or require) in the url"
    } else if message.contains("password authentication failed") {
        "wrong user or password: check the url's user and password_file (or ${PGPASSWORD})"
    } else if message.contains("client certificate") {
        "the server wants a client certificate: add sslcert=PATH and sslkey=PATH to the url"
    } else {
        return None;
    };
    Some(hint.to_string())
}

#[cfg(feature = "runtime")]
/// Connects once, within `timeout`; the server's own message when it refuses.
async fn reach(config: &PostgresSinkConfig, timeout: std::time::Duration) -> Result<(), String> {
    let mut connection = config.connection()?;
    connection.config.connect_timeout(timeout);
    match tokio::time::timeout(timeout, connection.connect()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(match error.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                use std::error::Error;
                error
                    .source()
                    .map_or(error.to_string(), |s| format!("{error}: {s}"))
            }
        }),
        Err(_) => Err(format!("no answer within {} s", timeout.as_secs())),
    }
}
