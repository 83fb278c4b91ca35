//! Limits on what connections can make the broker hold: `max.connections` (the listener waits),
//! `max.connections.per.ip` with overrides (closed on arrival), the `queued.max.request.bytes`
//! pool (a frame waits for pool bytes instead of being allocated; a slow sender holds 64 KiB, not
//! what it declares) and requests' decoded size (charged to the pool, bounded per request), while
//! real clients keep being served.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiVersionsRequest, OffsetFetchRequest};
use rdkafka::Offset;

use crate::common;
use crate::raw::RawClient;

const QUIET: Duration = Duration::from_millis(700);
/// What a frame must have sent before the broker reserves the rest of it.
const PROBATION: usize = 64 * 1024;

/// A connection the broker serves: it answers ApiVersions.
async fn served(addr: SocketAddr) -> RawClient {
    let mut client = RawClient::connect(addr).await;
    let response = client.call(3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);
    client
}

/// Connects until the broker serves a new connection (it notices a closed one asynchronously).
async fn eventually_served(addr: SocketAddr) -> RawClient {
    for _ in 0..100 {
        let mut client = RawClient::connect(addr).await;
        let (_, body) = client.encode(3, &ApiVersionsRequest::default());
        client.send_frame(&body).await;
        if client.read_frame().await.is_some() {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no new connection was served after one closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_per_address_limit_are_closed_on_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("max.connections.per.ip", "2")]).await;
    let addr = broker.local_addr();
    let first = served(addr).await;
    let _second = served(addr).await;
    let mut third = RawClient::connect(addr).await;
    assert!(third.is_closed().await, "a third connection from 127.0.0.1");
    let refused = broker
        .context()
        .metrics
        .connections_refused_total
        .with_label_values(&["per_ip"])
        .get();
    assert_eq!(refused, 1);
    drop(first);
    let _again = eventually_served(addr).await;
    broker.shutdown().await.unwrap();

    // An override raises the limit for one address.
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(
        dir.path(),
        &[
            ("max.connections.per.ip", "1"),
            ("max.connections.per.ip.overrides", "127.0.0.1:3"),
        ],
    )
    .await;
    let addr = broker.local_addr();
    let _held = [served(addr).await, served(addr).await, served(addr).await];
    let mut fourth = RawClient::connect(addr).await;
    assert!(
        fourth.is_closed().await,
        "a fourth connection over the override"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_connections_a_new_connection_waits_for_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("max.connections", "2")]).await;
    let addr = broker.local_addr();
    let first = served(addr).await;
    let _second = served(addr).await;
    // The third connects (the kernel's backlog) but is not served while two are open.
    let mut third = RawClient::connect(addr).await;
    let (_, body) = third.encode(3, &ApiVersionsRequest::default());
    third.send_frame(&body).await;
    assert!(
        !third.answers_within(QUIET).await,
        "a third connection was served at max.connections=2"
    );
    drop(first);
    assert!(
        third.read_frame().await.is_some(),
        "the waiting connection was not served once a slot was free"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_waits_for_pool_bytes_instead_of_being_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let one_mib = 1 << 20;
    let broker = common::start(
        dir.path(),
        &[
            ("socket.request.max.bytes", "1048576"),
            ("queued.max.request.bytes", "1048576"),
        ],
    )
    .await;
    let addr = broker.local_addr();
    let metrics = &broker.context().metrics;
    assert_eq!(metrics.request_memory_capacity_bytes.get(), one_mib);

    // One connection announces a whole-pool frame and sends its first 64 KiB (after which the
    // rest is reserved) and a little more.
    let mut hog = RawClient::connect(addr).await;
    hog.send_raw(&(one_mib as i32).to_be_bytes()).await;
    hog.send_raw(&[0u8; PROBATION + 100]).await;
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while metrics.request_memory_used_bytes.get() != one_mib {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pool never reserved"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another connection's small request waits for the pool.
    let mut waiting = RawClient::connect(addr).await;
    let (_, body) = waiting.encode(3, &ApiVersionsRequest::default());
    waiting.send_frame(&body).await;
    assert!(
        !waiting.answers_within(QUIET).await,
        "a request was read while the pool was exhausted"
    );
    // The hog's frame completes (garbage: its connection is closed) and the pool frees.
    hog.send_raw(&vec![0xffu8; one_mib as usize - PROBATION - 100])
        .await;
    assert!(hog.is_closed().await);
    assert!(
        waiting.read_frame().await.is_some(),
        "the waiting request was not answered once the pool had room"
    );
    assert_eq!(metrics.request_memory_used_bytes.get(), 0);
    broker.shutdown().await.unwrap();
}

/// ApiVersions followed by `padding` bytes the broker reads and ignores: a large valid request.
async fn padded_requests_until(addr: SocketAddr, padding: usize, stop: Arc<AtomicBool>) -> usize {
    let mut client = RawClient::connect(addr).await;
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        let (_, mut body) = client.encode(3, &ApiVersionsRequest::default());
        body.resize(body.len() + padding, 0);
        client.send_frame(&body).await;
        client.read_frame().await.expect("padded request answered");
        answered += 1;
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_large_requests_stays_within_the_pool_while_clients_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let pool_bytes: i64 = 4 << 20;
    let broker = common::start(
        dir.path(),
        &[
            ("socket.request.max.bytes", "1048576"),
            ("queued.max.request.bytes", &pool_bytes.to_string()),
        ],
    )
    .await;
    let addr = broker.local_addr();
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "under-flood", 1, &[]).await;

    let stop = Arc::new(AtomicBool::new(false));
    let most_used = Arc::new(AtomicI64::new(0));
    let sampler = {
        let (stop, most_used) = (Arc::clone(&stop), Arc::clone(&most_used));
        let used = broker.context().metrics.request_memory_used_bytes.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                most_used.fetch_max(used.get(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    let flooders: Vec<_> = (0..12)
        .map(|_| tokio::spawn(padded_requests_until(addr, 1_000_000, Arc::clone(&stop))))
        .collect();

    let producer = common::producer(&bootstrap, &[]);
    let values: Vec<String> = (0..200).map(|i| format!("record-{i}")).collect();
    common::produce_values(&producer, "under-flood", 0, &values).await;
    let consumed = common::consume(&bootstrap, "under-flood", 0, Offset::Beginning, 200).await;
    assert_eq!(common::payloads(&consumed), values);

    stop.store(true, Ordering::Relaxed);
    let mut answered = 0;
    for flooder in flooders {
        answered += flooder.await.unwrap();
    }
    sampler.await.unwrap();
    assert!(answered >= 12, "every flooding connection was answered");
    let most_used = most_used.load(Ordering::Relaxed);
    assert!(
        most_used > 1_000_000 && most_used <= pool_bytes,
        "request bytes held peaked at {most_used} (pool {pool_bytes})"
    );
    broker.shutdown().await.unwrap();
}

/// Senders that each declare a 90 MiB frame and then send one byte a second.
fn trickling_senders(
    addr: SocketAddr,
    count: usize,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..count)
        .map(|_| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut slow = RawClient::connect(addr).await;
                slow.send_raw(&(90i32 << 20).to_be_bytes()).await;
                while !stop.load(Ordering::Relaxed) {
                    slow.send_raw(&[0]).await;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_senders_of_large_frames_hold_64_kib_each_and_delay_no_client() {
    let dir = tempfile::tempdir().unwrap();
    // The defaults: 100 MiB frames, a 256 MiB pool (which four 90 MiB frames would exhaust).
    let broker = common::start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "beside-slow-senders", 1, &[]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let slow = trickling_senders(addr, 4, Arc::clone(&stop));
    let used = broker.context().metrics.request_memory_used_bytes.clone();
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while used.get() < 4 * PROBATION as i64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slow senders never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let producer = common::producer(&bootstrap, &[]);
    let values: Vec<String> = (0..100).map(|i| format!("record-{i}")).collect();
    common::produce_values(&producer, "beside-slow-senders", 0, &values).await;
    let consumed =
        common::consume(&bootstrap, "beside-slow-senders", 0, Offset::Beginning, 100).await;
    assert_eq!(common::payloads(&consumed), values);
    let held = used.get();
    assert!(
        held >= 4 * PROBATION as i64 && held < 5 * PROBATION as i64,
        "the four slow senders hold their probation (and the clients a request in flight), \
         not the 360 MiB they declared: {held} bytes"
    );
    stop.store(true, Ordering::Relaxed);
    for sender in slow {
        sender.await.unwrap();
    }
    broker.shutdown().await.unwrap();
}

/// An OffsetFetch v8 of `groups` groups named `name(i)`, as raw bytes (header and body).
fn offset_fetch_of_groups(
    client: &mut RawClient,
    groups: u32,
    name: impl Fn(u32) -> String,
) -> Vec<u8> {
    use bytes::BufMut;
    let (_, mut body) = client.encode(8, &OffsetFetchRequest::default());
    // The default body ends with an empty groups array (compact: 1), require_stable, no tags.
    body.truncate(body.len() - 3);
    let mut count = groups as u64 + 1;
    while count >= 0x80 {
        body.put_u8((count as u8 & 0x7f) | 0x80);
        count >>= 7;
    }
    body.put_u8(count as u8);
    for group in 0..groups {
        let name = name(group);
        // A compact string (length + 1), topics null (compact array: 0), no tagged fields.
        body.put_u8(name.len() as u8 + 1);
        body.put_slice(name.as_bytes());
        body.put_slice(&[0, 0]);
    }
    body.put_slice(&[0, 0]);
    body.to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_would_hold_gigabytes_once_decoded_is_refused_and_the_pool_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    // 10 million empty groups: 30 MB on the wire, 1.2 GB as decoded structs.
    let mut hostile = RawClient::connect(addr).await;
    let body = offset_fetch_of_groups(&mut hostile, 10_000_000, |_| String::new());
    assert!(body.len() > 30_000_000);
    hostile.send_frame(&body).await;
    assert!(hostile.is_closed().await, "the request is refused");
    let used = &broker.context().metrics.request_memory_used_bytes;
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while used.get() != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pool holds {} bytes",
            used.get()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    served(addr).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_request_holds_once_decoded_waits_for_pool_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let two_mib = 2 << 20;
    let broker = common::start(
        dir.path(),
        &[
            ("socket.request.max.bytes", &two_mib.to_string()),
            ("queued.max.request.bytes", &two_mib.to_string()),
        ],
    )
    .await;
    let addr = broker.local_addr();
    let used = broker.context().metrics.request_memory_used_bytes.clone();
    // A frame of 1.5 MiB, past its probation: the pool keeps 0.5 MiB free.
    let hog_bytes = 3 << 19;
    let mut hog = RawClient::connect(addr).await;
    hog.send_raw(&(hog_bytes as i32).to_be_bytes()).await;
    hog.send_raw(&vec![0u8; PROBATION + 1]).await;
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while used.get() != hog_bytes as i64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pool never reserved"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // 10,000 groups named like real ones: a 130 KB frame that fits, 1.2 MB once decoded that
    // does not.
    let mut waiting = RawClient::connect(addr).await;
    let body = offset_fetch_of_groups(&mut waiting, 10_000, |g| format!("group-{g}"));
    assert!(body.len() < 200_000);
    waiting.send_frame(&body).await;
    assert!(
        !waiting.answers_within(QUIET).await,
        "a request was decoded into more than the pool had free"
    );
    hog.send_raw(&vec![0xffu8; hog_bytes - PROBATION - 1]).await;
    assert!(hog.is_closed().await);
    let frame = waiting
        .read_frame()
        .await
        .expect("answered once the pool had room");
    let (_, response) = RawClient::decode::<OffsetFetchRequest>(8, frame);
    assert_eq!(response.groups.len(), 10_000);
    broker.shutdown().await.unwrap();
}
