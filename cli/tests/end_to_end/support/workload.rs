//! The clients of the crash test (rdkafka): transactional writers that commit or abort, an
//! idempotent writer, and a reader of every partition. Each writer returns what it was told.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{
    BaseRecord, DefaultProducerContext, DeliveryResult, Producer, ProducerContext, ThreadedProducer,
};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::support::history::{Outcome, Read, Txn};
use crate::support::rng::Rng;

pub(crate) const TOPIC: &str = "crash-history";
const PARTITIONS: i32 = 3;
/// Long enough for a broker restart in the middle of an operation.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(20);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

fn client_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "300")
        .set("topic.metadata.refresh.interval.ms", "1000");
    config
}

/// A `ThreadedProducer` serves delivery reports itself: a transaction's flush waits for them.
type TxnProducer = ThreadedProducer<DefaultProducerContext>;

fn transactional_producer(bootstrap: &str, transactional_id: &str) -> Option<TxnProducer> {
    let producer: TxnProducer = client_config(bootstrap)
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", "20000")
        .set("message.timeout.ms", "20000")
        .set("linger.ms", "2")
        .create()
        .expect("transactional producer");
    // InitProducerId also finishes (aborts) whatever the previous incarnation left open.
    match producer.init_transactions(OPERATION_TIMEOUT) {
        Ok(()) => Some(producer),
        Err(e) => {
            eprintln!("{transactional_id}: init_transactions: {e}");
            std::thread::sleep(Duration::from_millis(100));
            None
        }
    }
}

/// Transactions of 1–4 records over the partitions, about one in four aborted, until `stop`.
/// After an error whose outcome is unknown the producer is replaced (same transactional id).
pub(crate) fn transactional_writer(
    bootstrap: &str,
    writer: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Vec<Txn> {
    let transactional_id = format!("crash-writer-{writer}");
    let mut rng = Rng::new(seed);
    let mut txns = Vec::new();
    let mut producer = None;
    let mut number = 0;
    while !stop.load(Ordering::SeqCst) {
        let Some(current) = producer
            .take()
            .or_else(|| transactional_producer(bootstrap, &transactional_id))
        else {
            continue;
        };
        number += 1;
        let writes: Vec<(i32, String)> = (0..rng.between(1, 5))
            .map(|i| {
                (
                    rng.between(0, PARTITIONS as u64) as i32,
                    format!("t{writer}-{number}-{i}"),
                )
            })
            .collect();
        let commit = rng.between(0, 4) != 0;
        let outcome = run_transaction(&current, &writes, commit);
        txns.push(Txn {
            writes,
            outcome,
            acked_offsets: Vec::new(),
        });
        if outcome != Outcome::Unknown {
            producer = Some(current);
        }
    }
    // A last incarnation ends whatever is still open, so that readers see everything decided.
    let deadline = Instant::now() + READ_TIMEOUT;
    while transactional_producer(bootstrap, &transactional_id).is_none() {
        assert!(
            Instant::now() < deadline,
            "{transactional_id}: InitProducerId keeps failing"
        );
    }
    txns
}

fn run_transaction(producer: &TxnProducer, writes: &[(i32, String)], commit: bool) -> Outcome {
    if let Err(e) = producer.begin_transaction() {
        eprintln!("begin_transaction: {e}");
        return Outcome::Unknown;
    }
    for (partition, value) in writes {
        let mut record = BaseRecord::to(TOPIC)
            .partition(*partition)
            .key(value)
            .payload(value);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(_), returned)) => {
                    record = returned;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err((e, _)) => {
                    eprintln!("send: {e}");
                    return Outcome::Unknown;
                }
            }
        }
    }
    if commit {
        for _ in 0..3 {
            match producer.commit_transaction(OPERATION_TIMEOUT) {
                Ok(()) => return Outcome::Committed,
                Err(KafkaError::Transaction(e)) if e.is_retriable() => {
                    eprintln!("commit_transaction (retriable): {e}");
                    continue;
                }
                Err(KafkaError::Transaction(e)) if e.txn_requires_abort() => {
                    eprintln!("commit_transaction (abort): {e}");
                    break;
                }
                Err(e) => {
                    eprintln!("commit_transaction: {e}");
                    return Outcome::Unknown;
                }
            }
        }
    }
    // Written before aborted: otherwise the client purges its queue and nothing reaches the log.
    if producer.flush(OPERATION_TIMEOUT).is_err() {
        return Outcome::Unknown;
    }
    for _ in 0..3 {
        match producer.abort_transaction(OPERATION_TIMEOUT) {
            Ok(()) => return Outcome::Aborted,
            Err(KafkaError::Transaction(e)) if e.is_retriable() => continue,
            Err(e) => {
                eprintln!("abort_transaction: {e}");
                return Outcome::Unknown;
            }
        }
    }
    Outcome::Unknown
}

/// Collects delivery reports: acknowledged offsets and failures.
struct Deliveries(Arc<Mutex<Vec<Txn>>>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let (message, outcome) = match result {
            Ok(message) => (message, Outcome::Committed),
            Err((_, message)) => (message, Outcome::Unknown),
        };
        let value = String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
        let partition = message.partition();
        // librdkafka acknowledges a batch implicitly, without an offset (-1001), when a later
        // batch of the same producer succeeds after this one's request failed uncertainly (a
        // connection cut by a killed leader): the write counts, its offset is unknown.
        let acked_offsets = match outcome {
            Outcome::Committed if message.offset() >= 0 => {
                vec![(partition, message.offset(), value.clone())]
            }
            _ => Vec::new(),
        };
        self.0.lock().unwrap().push(Txn {
            writes: vec![(partition, value)],
            outcome,
            acked_offsets,
        });
    }
}

/// Idempotent writes (acks=all) until `stop`; each delivery report is one "transaction".
pub(crate) fn idempotent_writer(bootstrap: &str, stop: &AtomicBool) -> Vec<Txn> {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let producer: ThreadedProducer<Deliveries> = client_config(bootstrap)
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .set("linger.ms", "5")
        .create_with_context(Deliveries(Arc::clone(&reports)))
        .expect("idempotent producer");
    let mut number = 0;
    while !stop.load(Ordering::SeqCst) {
        number += 1;
        let value = format!("i-{number}");
        let partition = number % PARTITIONS;
        let record = BaseRecord::to(TOPIC)
            .partition(partition)
            .key(&value)
            .payload(&value);
        if producer.send(record).is_err() {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        if number % 10 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    producer
        .flush(Duration::from_secs(90))
        .expect("every write reported");
    drop(producer);
    Arc::try_unwrap(reports)
        .expect("producer dropped")
        .into_inner()
        .unwrap()
}

/// Reads every partition from the start to its end (the high watermark, or the last stable
/// offset when `read_committed`), as they were when the read began.
pub(crate) fn read_all(bootstrap: &str, read_committed: bool) -> Read {
    let isolation = if read_committed {
        "read_committed"
    } else {
        "read_uncommitted"
    };
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", "crash-reader")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", isolation)
        .create()
        .expect("reader");
    let mut assignment = TopicPartitionList::new();
    let mut remaining = Vec::new();
    let deadline = Instant::now() + READ_TIMEOUT;
    for partition in 0..PARTITIONS {
        let (_, end) = loop {
            match consumer.fetch_watermarks(TOPIC, partition, OPERATION_TIMEOUT) {
                Ok(watermarks) => break watermarks,
                Err(e) => assert!(Instant::now() < deadline, "watermarks of {partition}: {e}"),
            }
        };
        if end > 0 {
            assignment
                .add_partition_offset(TOPIC, partition, Offset::Beginning)
                .unwrap();
            remaining.push((partition, end));
        }
    }
    consumer.assign(&assignment).expect("assign");
    let mut records = Vec::new();
    while !remaining.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{isolation} read did not reach the end of {remaining:?}"
        );
        let Some(result) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        match result {
            Ok(message) => {
                let value = String::from_utf8_lossy(message.payload().unwrap_or_default());
                let partition = message.partition();
                records.push((partition, message.offset(), value.into_owned()));
                if remaining
                    .iter()
                    .any(|&(p, end)| p == partition && message.offset() + 1 >= end)
                {
                    remaining.retain(|&(p, _)| p != partition);
                }
            }
            Err(KafkaError::PartitionEOF(partition)) => {
                let position = consumer
                    .position()
                    .ok()
                    .and_then(|list| list.find_partition(TOPIC, partition)?.offset().to_raw());
                if remaining
                    .iter()
                    .any(|&(p, end)| p == partition && position.is_some_and(|at| at >= end))
                {
                    remaining.retain(|&(p, _)| p != partition);
                }
            }
            Err(e) => eprintln!("read ({isolation}): {e}"),
        }
    }
    Read {
        read_committed,
        records,
    }
}
