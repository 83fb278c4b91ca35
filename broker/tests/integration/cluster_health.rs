//! The HTTP probes a deployment checks (Kubernetes' liveness and readiness): `/health` answers
//! while the process serves; `/ready` only once the broker is registered with the controller,
//! caught up with the metadata and unfenced — so a broker whose quorum cannot form is live but
//! not ready, and says why.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cluster::TestCluster;
use crate::common::*;

/// `GET path` on `addr`: (status code, body).
async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.0\r\nHost: probe\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_brokers_become_ready_once_registered_and_caught_up() {
    let cluster = TestCluster::start(3).await;
    for (node_id, broker) in &cluster.brokers {
        let addr = broker.metrics_addr().expect("metrics listener");
        assert_eq!(http_get(addr, "/health").await.0, 200);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = http_get(addr, "/ready").await;
            if status == 200 {
                assert_eq!(body, "ready\n");
                break;
            }
            assert_eq!(status, 503, "{body}");
            assert!(body.starts_with("not ready: "), "{body}");
            assert!(
                tokio::time::Instant::now() < deadline,
                "broker {node_id} never ready: {body}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_a_quorum_is_live_but_not_ready() {
    init_logging();
    let dir = tempfile::tempdir().unwrap();
    // Voter 2 never starts: node 1 alone is no majority, so no controller is ever elected.
    let absent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let absent_port = absent.local_addr().unwrap().port();
    drop(absent);
    let own = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let own_port = own.local_addr().unwrap().port();
    drop(own);
    let voters = format!("1@127.0.0.1:{own_port},2@127.0.0.1:{absent_port}");
    let mut broker_config = config(
        dir.path(),
        &[("node.id", "1"), ("controller.quorum.voters", &voters)],
    );
    broker_config.controller_listen = Some(format!("127.0.0.1:{own_port}").parse().unwrap());
    broker_config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let broker = weir_broker::Broker::start(broker_config)
        .await
        .expect("starts");
    let addr = broker.metrics_addr().expect("metrics listener");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(http_get(addr, "/health").await, (200, "ok\n".to_string()));
    let (status, body) = http_get(addr, "/ready").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("not registered"), "{body}");

    // A broker running alone is ready as soon as it serves.
    let alone_dir = tempfile::tempdir().unwrap();
    let mut alone = config(alone_dir.path(), &[]);
    alone.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let alone = weir_broker::Broker::start(alone).await.expect("starts");
    let addr = alone.metrics_addr().expect("metrics listener");
    assert_eq!(http_get(addr, "/ready").await, (200, "ready\n".to_string()));
}
