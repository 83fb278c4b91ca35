//! The `postgres` sink: rows copied into a table (binary COPY) in batches, with the input
//! offsets they cover upserted into `weir_offsets` in the same database transaction. On open
//! the sink reads its offsets back, so a replay after a crash starts exactly after the last
//! committed row. The table is created from the rows' Arrow schema when absent, or checked
//! against it (every column present with a type the values fit). A database that goes away
//! is retried with backoff, the uncommitted batch kept in memory: nothing is lost, and a
//! commit whose outcome was unknown is recognised by its offsets and not repeated.
//!
//! Several copies of a pipeline may write one table, each its own partitions of the input:
//! a commit checks and moves only its partitions' rows of `weir_offsets`, under row locks, and
//! a writer that finds them moved by another is fenced (its rows are not committed).
//!
//! TLS is libpq's: `sslmode`, `sslrootcert`, `sslcert`, `sslkey` in the URL ([`tls`]).

#[cfg(feature = "runtime")]
mod cell;
mod config;
#[cfg(feature = "runtime")]
mod connection;
#[cfg(feature = "runtime")]
mod schema;
#[cfg(feature = "runtime")]
mod sink;
#[cfg(feature = "runtime")]
pub mod tls;

pub use config::PostgresSinkConfig;
#[cfg(feature = "runtime")]
pub use connection::Connection;
#[cfg(feature = "runtime")]
pub use sink::PostgresSink;
