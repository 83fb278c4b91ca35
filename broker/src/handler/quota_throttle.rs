//! Client quotas at the request level (`crate::quota`): a Produce is charged its records' bytes
//! against the `producer_byte_rate` that applies to the connection's user and client id, a Fetch
//! from a consumer its answer's records against `consumer_byte_rate` (followers' fetches are
//! not charged, as in Kafka). Over the quota, the response carries `throttle_time_ms` and the
//! connection is muted for as long (`RequestOrigin::mute_for`): nothing is dropped or refused.

use kafka_protocol::messages::{FetchResponse, ProduceRequest, ResponseKind};

use crate::context::BrokerContext;
use crate::handler::request::{HandlerOutput, RequestOrigin};
use crate::quota::throttle::SensorKey;
use crate::quota::QuotaKey;

/// The throttle a Produce earns (and mutes the connection for).
pub fn produce(
    context: &BrokerContext,
    origin: &RequestOrigin<'_>,
    request: &ProduceRequest,
) -> i32 {
    if context.quotas.is_empty() {
        return 0;
    }
    let bytes: usize = request
        .topic_data
        .iter()
        .flat_map(|topic| &topic.partition_data)
        .filter_map(|partition| partition.records.as_ref().map(|records| records.len()))
        .sum();
    charge(context, origin, QuotaKey::ProducerByteRate, bytes)
}

/// The throttle a consumer's Fetch answer earns (and mutes the connection for).
pub fn fetch(context: &BrokerContext, origin: &RequestOrigin<'_>, response: &FetchResponse) -> i32 {
    if context.quotas.is_empty() {
        return 0;
    }
    let bytes: usize = response
        .responses
        .iter()
        .flat_map(|topic| &topic.partitions)
        .filter_map(|partition| partition.records.as_ref().map(|records| records.len()))
        .sum();
    charge(context, origin, QuotaKey::ConsumerByteRate, bytes)
}

fn charge(context: &BrokerContext, origin: &RequestOrigin<'_>, key: QuotaKey, bytes: usize) -> i32 {
    let user = origin.principal.name.as_str();
    let Some((entity, quota)) = context.quotas.applying(user, origin.client_id, key) else {
        return 0;
    };
    let sensor = SensorKey {
        user: entity.user.is_some().then(|| user.to_string()),
        client_id: entity
            .client_id
            .is_some()
            .then(|| origin.client_id.to_string()),
        key,
    };
    let now_ms = context.clock.now_ms();
    let throttle_ms = context
        .quota_sensors
        .record(sensor, bytes as f64, quota, now_ms);
    let throttle_ms = i32::try_from(throttle_ms).unwrap_or(i32::MAX);
    if throttle_ms > 0 {
        origin.mute_for(throttle_ms as u64);
        context
            .metrics
            .throttled_requests
            .with_label_values(&[key.name()])
            .inc();
    }
    throttle_ms
}

/// A Produce's output with its throttle in the response (when one is sent).
pub fn with_produce_throttle(output: HandlerOutput, throttle_ms: i32) -> HandlerOutput {
    if throttle_ms == 0 {
        return output;
    }
    let stamp = move |mut response: ResponseKind| {
        if let ResponseKind::Produce(produce) = &mut response {
            produce.throttle_time_ms = produce.throttle_time_ms.max(throttle_ms);
        }
        response
    };
    match output {
        HandlerOutput::Ready(response) => HandlerOutput::Ready(Box::new(stamp(*response))),
        HandlerOutput::Deferred(response) => {
            HandlerOutput::Deferred(Box::pin(async move { stamp(response.await) }))
        }
        other => other,
    }
}
