//! The frame reader's bounds, over an in-memory connection.

use std::sync::Arc;

use prometheus::IntGauge;
use tokio::io::{AsyncWriteExt, DuplexStream};

use super::*;

const MIB: usize = 1 << 20;

fn pool(capacity: usize) -> (Arc<RequestMemoryPool>, IntGauge) {
    let used = IntGauge::new("used", "used").unwrap();
    (RequestMemoryPool::new(Some(capacity), used.clone()), used)
}

fn bounds(pool: &RequestMemoryPool, body_timeout: Duration) -> FrameBounds<'_> {
    FrameBounds {
        max_frame: 100 * MIB,
        pool,
        idle: Duration::from_secs(60),
        body_timeout,
    }
}

async fn send_prefix(client: &mut DuplexStream, size: usize, body: &[u8]) {
    client
        .write_all(&(size as i32).to_be_bytes())
        .await
        .unwrap();
    client.write_all(body).await.unwrap();
}

async fn wait_for(used: &IntGauge, bytes: i64) {
    for _ in 0..500 {
        if used.get() == bytes {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the pool holds {} bytes, not {bytes}", used.get());
}

#[tokio::test]
async fn a_trickling_sender_holds_only_what_it_sent_and_is_closed_when_it_stalls() {
    let (pool, used) = pool(16 * MIB);
    let (mut client, mut server) = tokio::io::duplex(8 * MIB);
    send_prefix(&mut client, 10 * MIB, &[7u8; 100]).await;
    let reading = tokio::spawn(async move {
        let bounds = bounds(&pool, Duration::from_millis(300));
        read_frame(&mut server, &bounds).await.map(|_| ())
    });
    // Its probation's 64 KiB, not the 10 MiB declared.
    wait_for(&used, PROBATION_BYTES as i64).await;
    client.write_all(&[7u8; 100]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(used.get(), PROBATION_BYTES as i64);
    let reason = reading.await.unwrap().expect_err("closed mid-frame");
    assert!(
        reason.contains("not complete after 300ms (200 bytes arrived)"),
        "{reason}"
    );
    assert_eq!(
        used.get(),
        0,
        "the stalled frame's bytes are back in the pool"
    );
}

#[tokio::test]
async fn past_probation_a_frame_waits_for_its_whole_size_holding_nothing_and_pool_waits_do_not_count(
) {
    let (pool, used) = pool(4 * MIB);
    let other = pool.reserve(2 * MIB).await;
    let (mut client, mut server) = tokio::io::duplex(8 * MIB);
    let reader_pool = Arc::clone(&pool);
    let reading = tokio::spawn(async move {
        let bounds = bounds(&reader_pool, Duration::from_millis(300));
        match read_frame(&mut server, &bounds).await {
            Ok(FrameRead::Frame(frame, held)) => Ok((frame.len(), held.bytes())),
            Ok(_) => Err("no frame".to_string()),
            Err(reason) => Err(reason),
        }
    });
    // 64 KiB and one byte of a 3 MiB frame: the rest is not free (2 MiB are held elsewhere),
    // so the frame gives its 64 KiB back and waits for all 3 MiB, longer than its reading time,
    // without being closed.
    send_prefix(&mut client, 3 * MIB, &vec![1u8; PROBATION_BYTES + 1]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    wait_for(&used, (2 * MIB) as i64).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!reading.is_finished());
    drop(other);
    wait_for(&used, (3 * MIB) as i64).await;
    client
        .write_all(&vec![2u8; 3 * MIB - PROBATION_BYTES - 1])
        .await
        .unwrap();
    assert_eq!(reading.await.unwrap().unwrap(), (3 * MIB, 3 * MIB));
}

#[tokio::test]
async fn silence_between_frames_is_idle_and_an_end_between_frames_is_a_close() {
    let (pool, _) = pool(MIB);
    let (client, mut server) = tokio::io::duplex(1024);
    let quiet = FrameBounds {
        idle: Duration::from_millis(50),
        ..bounds(&pool, Duration::from_secs(1))
    };
    assert!(matches!(
        read_frame(&mut server, &quiet).await,
        Ok(FrameRead::Idle)
    ));
    drop(client);
    assert!(matches!(
        read_frame(&mut server, &quiet).await,
        Ok(FrameRead::Closed)
    ));
    let (mut client, mut server) = tokio::io::duplex(1024);
    send_prefix(&mut client, 10, &[1, 2, 3]).await;
    drop(client);
    let reason = read_frame(&mut server, &quiet).await.err().unwrap();
    assert!(reason.contains("closed after 3 of 10 bytes"), "{reason}");
}
