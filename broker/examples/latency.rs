//! Produce and end-to-end latency at a fixed offered rate, with librdkafka (rdkafka), for
//! `scripts/bench/latency.sh`: one producer (acks=all, linger.ms=5 unless told) sends 100-byte
//! messages at RATE msgs/s to partition 0 of TOPIC (an empty topic), each carrying its send
//! time; a consumer in the same process reads them (librdkafka's default fetch settings) and
//! notes when each arrives. Produce latency = send → delivery report; end-to-end = send → the
//! consumer has it.
//!
//! Usage: `latency BOOTSTRAP TOPIC RATE COUNT [LINGER_MS]` (linger 5 ms by default) — prints
//! one line:
//! `produce p50_ms p99_ms max_ms e2e p50_ms p99_ms max_ms messages N`.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

type Failure = Box<dyn std::error::Error + Send + Sync>;

const MESSAGE_BYTES: usize = 100;
/// How long the consumer may take to see the last message once all are acknowledged.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Send time (µs since `start`) in the first 8 bytes of each payload.
fn sent_micros(payload: Option<&[u8]>) -> Option<u64> {
    let bytes: [u8; 8] = payload?.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

struct Acknowledged {
    start: Instant,
    latencies_micros: Mutex<Vec<u64>>,
    failures: Mutex<u64>,
}

impl ClientContext for Acknowledged {}

impl ProducerContext for Acknowledged {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let now = self.start.elapsed().as_micros() as u64;
        match result {
            Ok(message) => {
                if let Some(sent) = sent_micros(message.payload()) {
                    let mut latencies = self.latencies_micros.lock().expect("lock");
                    latencies.push(now.saturating_sub(sent));
                }
            }
            Err(_) => *self.failures.lock().expect("lock") += 1,
        }
    }
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (bootstrap, topic, rate, count, linger_ms) = match args.as_slice() {
        [bootstrap, topic, rate, count] => (bootstrap, topic, rate, count, "5"),
        [bootstrap, topic, rate, count, linger_ms] => {
            (bootstrap, topic, rate, count, &linger_ms[..])
        }
        _ => return Err("usage: latency BOOTSTRAP TOPIC RATE COUNT [LINGER_MS]".into()),
    };
    let rate: u64 = rate.parse()?;
    let count: u64 = count.parse()?;
    if rate == 0 || count == 0 {
        return Err("RATE and COUNT must be positive".into());
    }
    let start = Instant::now();
    let consumer = consume(bootstrap, topic, count, start)?;
    let (mut acknowledged, failures) = produce(bootstrap, topic, rate, count, linger_ms, start)?;
    let mut end_to_end = consumer.join().map_err(|_| "the consumer panicked")??;
    if failures > 0 || acknowledged.len() as u64 != count || end_to_end.len() as u64 != count {
        return Err(format!(
            "{} of {count} acknowledged ({failures} failed), {} consumed",
            acknowledged.len(),
            end_to_end.len()
        )
        .into());
    }
    let [p50, p99, max] = percentiles(&mut acknowledged);
    let [e50, e99, emax] = percentiles(&mut end_to_end);
    println!("produce {p50:.2} {p99:.2} {max:.2} e2e {e50:.2} {e99:.2} {emax:.2} messages {count}");
    Ok(())
}

/// p50, p99 and max in milliseconds.
fn percentiles(micros: &mut [u64]) -> [f64; 3] {
    micros.sort_unstable();
    let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)] as f64;
    [at(0.5) / 1000.0, at(0.99) / 1000.0, at(1.0) / 1000.0]
}

/// Starts the consumer (assigned partition 0 from the beginning) and polls it for up to a
/// second first, so it has connected and found its offset before anything is produced and the
/// first messages are not measured against its start.
fn consume(
    bootstrap: &str,
    topic: &str,
    count: u64,
    start: Instant,
) -> Result<thread::JoinHandle<Result<Vec<u64>, Failure>>, Failure> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "latency-bench")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    assignment.add_partition_offset(topic, 0, Offset::Beginning)?;
    consumer.assign(&assignment)?;
    let _ = consumer.poll(Duration::from_secs(1));
    Ok(thread::spawn(move || {
        let mut latencies = Vec::with_capacity(count as usize);
        let mut last_seen = Instant::now();
        while (latencies.len() as u64) < count {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(message)) => {
                    let now = start.elapsed().as_micros() as u64;
                    let sent = sent_micros(message.payload()).ok_or("a foreign message")?;
                    latencies.push(now.saturating_sub(sent));
                    last_seen = Instant::now();
                }
                Some(Err(error)) => return Err(error.into()),
                None if last_seen.elapsed() > DRAIN_TIMEOUT => break,
                None => {}
            }
        }
        Ok(latencies)
    }))
}

/// Sends `count` messages at `rate` msgs/s (in 1 ms steps: a message is sent once its
/// scheduled time has come, each stamped when it is handed to the client) and waits for every
/// delivery report; returns the produce latencies (µs) and how many deliveries failed.
fn produce(
    bootstrap: &str,
    topic: &str,
    rate: u64,
    count: u64,
    linger_ms: &str,
    start: Instant,
) -> Result<(Vec<u64>, u64), Failure> {
    let context = Acknowledged {
        start,
        latencies_micros: Mutex::new(Vec::with_capacity(count as usize)),
        failures: Mutex::new(0),
    };
    // Its own thread serves delivery reports as they come, so pacing sleeps do not delay them.
    let producer: ThreadedProducer<Acknowledged> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("linger.ms", linger_ms)
        .create_with_context(context)?;
    let began = Instant::now();
    let mut payload = [b'x'; MESSAGE_BYTES];
    for sent in 0..count {
        let due = began + Duration::from_micros(sent * 1_000_000 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            // Whole milliseconds: what is due by then goes out together, without spinning.
            thread::sleep(wait.max(Duration::from_millis(1)));
        }
        let now = start.elapsed().as_micros() as u64;
        payload[..8].copy_from_slice(&now.to_be_bytes());
        let mut record: BaseRecord<(), [u8]> =
            BaseRecord::to(topic).partition(0).payload(&payload[..]);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    thread::sleep(Duration::from_millis(1));
                }
                Err((error, _)) => return Err(error.into()),
            }
        }
    }
    producer.flush(Duration::from_secs(30))?;
    let context = producer.context();
    let failures = *context.failures.lock().expect("lock");
    let latencies = std::mem::take(&mut *context.latencies_micros.lock().expect("lock"));
    Ok((latencies, failures))
}
