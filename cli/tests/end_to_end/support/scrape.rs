//! Reading a process's Prometheus `/metrics` in tests.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The response to `GET /metrics`, or None while nothing answers.
pub(crate) fn get_metrics(addr: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: test\r\n\r\n")
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// The value of the first sample whose line starts with `prefix` (a name, with labels or not).
pub(crate) fn metric(text: &str, prefix: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    line.rsplit(' ').next()?.parse().ok()
}
