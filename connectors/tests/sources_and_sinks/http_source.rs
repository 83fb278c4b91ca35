//! The HTTP endpoint's answers, with a target the test controls: 200 after the write, 400 with
//! the line number, 413, 404, 429 and 503 with Retry-After.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use weir_connectors::http::{HttpSourceConfig, IngestReport, IngestTarget};
use weir_connectors::weblog::LogFormat;

/// Writes nothing; waits for a permit per request; fails when told to.
struct Target {
    permits: Arc<Semaphore>,
    fail: bool,
}

#[async_trait::async_trait]
impl IngestTarget for Target {
    async fn ingest(&self, lines: Vec<&[u8]>) -> Result<IngestReport, String> {
        let _permit = self.permits.acquire().await.map_err(|e| e.to_string())?;
        if self.fail {
            return Err("all brokers are down".into());
        }
        Ok(IngestReport {
            accepted: lines.len(),
            dead_letters: 0,
        })
    }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

async fn post(port: u16, path: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    Answer {
        status: head[9..12].parse().unwrap(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// Serves pipeline `events` with `config` on a free port.
async fn serve(config: HttpSourceConfig, target: Target) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let shutdown = std::future::pending();
        weir_connectors::http::serve("events", &config, Arc::new(target), listener, shutdown)
            .await
            .unwrap()
    });
    port
}

fn config(max_body_bytes: usize, max_pending_bytes: usize) -> HttpSourceConfig {
    let mut config = HttpSourceConfig::new("127.0.0.1:0", LogFormat::Json);
    config.max_body_bytes = max_body_bytes;
    config.max_pending_bytes = max_pending_bytes;
    config.retry_after_seconds = 2;
    config
}

#[tokio::test]
async fn answers_say_what_happened() {
    let port = serve(
        config(1000, 1000),
        Target {
            permits: Arc::new(Semaphore::new(100)),
            fail: false,
        },
    )
    .await;
    let ok = post(port, "/ingest/events", b"{\"a\": 1}\r\n\n{\"a\": 2}\n").await;
    assert_eq!(
        (ok.status, ok.body.as_str()),
        (200, r#"{"accepted":2,"dead_letters":0}"#)
    );
    let bad = post(port, "/ingest/events", b"{\"a\": 1}\n\n{\"a\": }\n").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("line 3: invalid JSON"), "{}", bad.body);
    let not_object = post(port, "/ingest/events", b"[1, 2]\n").await;
    assert!(
        not_object.body.contains("line 1: not a JSON object"),
        "{}",
        not_object.body
    );
    assert_eq!(
        post(port, "/ingest/events", &vec![b' '; 1001]).await.status,
        413
    );
    assert_eq!(post(port, "/ingest/other", b"{}").await.status, 404);
}

#[tokio::test]
async fn backpressure_is_429_with_retry_after() {
    let permits = Arc::new(Semaphore::new(0));
    let port = serve(
        config(1000, 1500),
        Target {
            permits: Arc::clone(&permits),
            fail: false,
        },
    )
    .await;
    let body = format!("{{\"pad\": \"{}\"}}", "x".repeat(900));
    let held = {
        let body = body.clone();
        tokio::spawn(async move { post(port, "/ingest/events", body.as_bytes()).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let refused = post(port, "/ingest/events", body.as_bytes()).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(
        refused.head.to_lowercase().contains("retry-after: 2"),
        "{}",
        refused.head
    );
    permits.add_permits(10);
    assert_eq!(held.await.unwrap().status, 200);
    // The held request's bytes were given back: the same request now goes through.
    assert_eq!(
        post(port, "/ingest/events", body.as_bytes()).await.status,
        200
    );
}

#[tokio::test]
async fn an_unacknowledged_write_is_503_with_retry_after() {
    let port = serve(
        config(1000, 1000),
        Target {
            permits: Arc::new(Semaphore::new(10)),
            fail: true,
        },
    )
    .await;
    let answer = post(port, "/ingest/events", b"{\"a\": 1}\n").await;
    assert_eq!(answer.status, 503);
    assert!(
        answer.head.to_lowercase().contains("retry-after: 2"),
        "{}",
        answer.head
    );
    assert!(
        answer.body.contains("all brokers are down"),
        "{}",
        answer.body
    );
}

fn open_target() -> Target {
    Target {
        permits: Arc::new(Semaphore::new(100)),
        fail: false,
    }
}

#[tokio::test]
async fn too_many_lines_and_announced_oversize_bodies_are_413_before_reading() {
    let mut limited = config(1000, 1000);
    limited.max_lines = 3;
    let port = serve(limited, open_target()).await;
    assert_eq!(
        post(port, "/ingest/events", b"{}\n{}\n{}").await.status,
        200
    );
    let many = post(port, "/ingest/events", b"{}\n{}\n{}\n{}").await;
    assert_eq!(many.status, 413, "{}", many.body);
    assert!(many.body.contains("max_lines"), "{}", many.body);

    // A Content-Length over max_body_bytes is answered without sending the body.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = "POST /ingest/events HTTP/1.1\r\nHost: test\r\nContent-Length: 5000000000\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 12];
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_exact(&mut answer),
    )
    .await
    .expect("answered before the body was sent")
    .unwrap();
    assert_eq!(&answer[9..12], b"413");
}

#[tokio::test]
async fn the_listener_bounds_connections_and_closes_silent_ones() {
    let mut bounded = config(1000, 1000);
    bounded.max_connections = 1;
    bounded.read_timeout_seconds = 1;
    let port = serve(bounded, open_target()).await;
    // A client stalls in its headers and holds the only connection.
    let mut stalled = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stalled
        .write_all(b"POST /ingest/events HTTP/1.1\r\nHo")
        .await
        .unwrap();
    let waiting = tokio::spawn(async move { post(port, "/ingest/events", b"{}").await });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "a second connection was served at max_connections=1"
    );
    // After a second of silence the stalled connection is closed, and the waiting one served.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stalled.read_to_end(&mut rest),
    )
    .await;
    assert!(closed.is_ok(), "the silent connection was not closed");
    let served = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the waiting connection was served once a slot was free")
        .unwrap();
    assert_eq!(served.status, 200);
}

#[tokio::test]
async fn slow_bodies_hold_only_what_they_sent_and_are_cut_off_whole() {
    // Seven chunked bodies could each be max_body_bytes: reserved up front, two would fill
    // max_pending_bytes and turn every other request into 429.
    let mut bounded = config(1 << 20, 2 << 20);
    bounded.read_timeout_seconds = 2;
    let port = serve(bounded, open_target()).await;
    let mut slow = Vec::new();
    for _ in 0..7 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(
                b"POST /ingest/events HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n",
            )
            .await
            .unwrap();
        slow.push(tokio::spawn(async move {
            // A chunk of one line every 300 ms: never silent for the listener's timer, never
            // done within the body's deadline.
            let started = std::time::Instant::now();
            let mut answer = Vec::new();
            loop {
                if stream.write_all(b"3\r\n{}\n\r\n").await.is_err() {
                    break;
                }
                let mut byte = [0u8; 1];
                match tokio::time::timeout(
                    std::time::Duration::from_millis(300),
                    stream.read(&mut byte),
                )
                .await
                {
                    Ok(Ok(0)) | Ok(Err(_)) => break,
                    Ok(Ok(_)) => {
                        answer.push(byte[0]);
                        let _ = stream.read_to_end(&mut answer).await;
                        break;
                    }
                    Err(_) => {}
                }
            }
            (
                started.elapsed(),
                String::from_utf8_lossy(&answer).into_owned(),
            )
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let body = format!("{{\"pad\": \"{}\"}}", "x".repeat(900));
    let beside = post(port, "/ingest/events", body.as_bytes()).await;
    assert_eq!(beside.status, 200, "{}", beside.body);
    for client in slow {
        let (after, answer) = client.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(
            after >= std::time::Duration::from_secs(2) && after < std::time::Duration::from_secs(5),
            "cut off after {after:?}"
        );
    }
}
