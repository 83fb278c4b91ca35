//! Producing with a bounded client queue, shared by every transactional writer of the
//! connectors and pipelines.

use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};

/// Pause when the client's send queue is full (bounded: `queue.buffering.max.messages`).
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(2);
/// Pause between looks at the records still in flight.
const DELIVERY_PAUSE: Duration = Duration::from_millis(1);

/// Sends `record`, waiting while the client's queue is full.
pub fn send_when_room<C>(
    producer: &ThreadedProducer<C>,
    mut record: BaseRecord<'_, [u8], [u8]>,
) -> Result<(), KafkaError>
where
    C: ProducerContext<DeliveryOpaque = ()>,
{
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                record = returned;
                std::thread::sleep(QUEUE_FULL_PAUSE);
            }
            Err((error, _)) => return Err(error),
        }
    }
}

/// Waits until every record sent is acknowledged, at most `timeout`. rust-rdkafka's
/// `commit_transaction` flushes in 100 ms polling steps; waiting here first keeps a commit from
/// costing 100 ms.
pub fn wait_for_deliveries<C: ProducerContext>(
    producer: &ThreadedProducer<C>,
    timeout: Duration,
) -> Result<(), KafkaError> {
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 {
        if Instant::now() > deadline {
            return Err(KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut));
        }
        std::thread::sleep(DELIVERY_PAUSE);
    }
    Ok(())
}
