//! Reading what stream jobs committed: every read_committed record of a topic's partitions.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// A committed record: its key and value (None: a tombstone).
pub(crate) type Record = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The committed records of `topic` in each partition's order, read until `complete` says they
/// are (asked whenever nothing arrived for a moment) or `timeout` passed.
#[allow(dead_code)] // not every test binary reads records
pub(crate) fn records_until(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    timeout: Duration,
    complete: impl Fn(&[Record]) -> bool,
) -> Vec<Record> {
    let consumer = assigned(bootstrap, topic, partitions);
    let mut records = Vec::new();
    let deadline = Instant::now() + timeout;
    let mut asked = 0;
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => records.push((
                message.key().map(<[u8]>::to_vec),
                message.payload().map(<[u8]>::to_vec),
            )),
            Some(Err(error)) => eprintln!("oracle read: {error}"),
            None if records.len() > asked => {
                asked = records.len();
                if complete(&records) {
                    break;
                }
            }
            None => {}
        }
    }
    records
}

fn assigned(bootstrap: &str, topic: &str, partitions: i32) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "oracle")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    consumer
}

/// The committed values of `topic`, once at least `want` arrived and nothing more came for 3 s
/// (or `timeout` passed).
#[allow(dead_code)] // not every test binary reads values
pub(crate) fn values(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    want: usize,
    timeout: Duration,
) -> Vec<Vec<u8>> {
    let consumer = assigned(bootstrap, topic, partitions);
    let mut values = Vec::new();
    let deadline = Instant::now() + timeout;
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                values.push(message.payload().unwrap_or_default().to_vec());
                quiet_since = Instant::now();
            }
            Some(Err(error)) => eprintln!("oracle read: {error}"),
            None if values.len() >= want && quiet_since.elapsed() > Duration::from_secs(3) => break,
            None => {}
        }
    }
    values
}
