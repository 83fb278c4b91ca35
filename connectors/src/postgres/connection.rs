//! A connection to the database, TLS as the URL's `sslmode` asks.

/// How to reach the database: tokio-postgres' settings and the TLS connector for the URL's
/// `sslmode`.
pub struct Connection {
    pub config: tokio_postgres::Config,
    pub(super) connector: tokio_postgres_rustls::MakeRustlsConnect,
}

impl Connection {
    /// Connects, and drives the connection on a task of its own.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        let (client, driver) = self.config.connect(self.connector.clone()).await?;
        tokio::spawn(async move {
            if let Err(error) = driver.await {
                tracing::debug!(%error, "PostgreSQL connection ended");
            }
        });
        Ok(client)
    }
}
