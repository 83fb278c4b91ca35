//! The `http` source: `POST /ingest/<pipeline>` with NDJSON or plain lines. A request is
//! answered 200 only after every record it carried is durably acknowledged by the cluster;
//! 400 with the line number when a JSON line is not an object (nothing of that request is
//! kept); 413 over `max_body_bytes`; 429 with `Retry-After` when more than
//! `max_pending_bytes` are being written (backpressure); 503 with `Retry-After` when the
//! cluster does not acknowledge. Delivery is at-least-once: a client that retries after a lost
//! answer sends its lines again.

mod config;
mod source;

pub use config::HttpSourceConfig;
pub use source::{router, IngestReport, IngestTarget};
