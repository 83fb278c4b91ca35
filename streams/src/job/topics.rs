//! A windowed job's internal topics, created when missing with as many partitions as the input
//! (the changelog compacted; the repartition topic without time retention, purged instead:
//! `job::purge`), and checked when present.

use std::time::Duration;

use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use weir_client::{create_topics, TopicCreation, CLUSTER_TIMEOUT};

use crate::error::{Result, StreamsError};
use crate::io::topic_reader;
use crate::job::purge::NO_TIME_RETENTION;
use crate::job::JobConfig;

/// The number of partitions of the input topic, once the internal topics exist with as many.
pub(super) fn ensure(config: &JobConfig, runtime: &tokio::runtime::Runtime) -> Result<i32> {
    let reader = topic_reader::consumer(&config.client)?;
    let input_partitions =
        topic_reader::partitions(&reader, config.input(), CLUSTER_TIMEOUT)?.len() as i32;
    let repartition = config.repartition_topic();
    let changelog = config.changelog_topic();
    let topics = [
        NewTopic::new(&repartition, input_partitions, TopicReplication::Fixed(-1))
            .set(NO_TIME_RETENTION.0, NO_TIME_RETENTION.1),
        NewTopic::new(&changelog, input_partitions, TopicReplication::Fixed(-1))
            .set("cleanup.policy", "compact"),
    ];
    create(config, runtime, &topics, "internal topic created")?;
    for topic in [&repartition, &changelog] {
        let partitions = wait_for(&reader, topic)?;
        if partitions != input_partitions {
            return Err(StreamsError::Config(format!(
                "{topic} has {partitions} partitions, the input {} has {input_partitions}: \
                 partitions were added to the input; a windowed job's internal topics must match it",
                config.input()
            )));
        }
    }
    Ok(input_partitions)
}

/// Creates `topics` (logging `created` for each one made; one that exists already is fine).
pub(super) fn create(
    config: &JobConfig,
    runtime: &tokio::runtime::Runtime,
    topics: &[NewTopic],
    created: &str,
) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = config
        .client
        .config(&[])
        .create()
        .map_err(StreamsError::kafka("creating the admin client"))?;
    let creations = runtime.block_on(create_topics(&admin, topics, CLUSTER_TIMEOUT))?;
    for creation in creations {
        if let TopicCreation::Created(topic) = creation {
            tracing::info!(job = %config.name, %topic, "{created}");
        }
    }
    Ok(())
}

/// The partition count of a topic just created (metadata may lag for a moment).
pub(super) fn wait_for(reader: &topic_reader::Reader, topic: &str) -> Result<i32> {
    let mut attempts = 0;
    loop {
        match topic_reader::partitions(reader, topic, CLUSTER_TIMEOUT) {
            Ok(partitions) => return Ok(partitions.len() as i32),
            Err(error) if attempts == 50 => return Err(error),
            Err(_) => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
