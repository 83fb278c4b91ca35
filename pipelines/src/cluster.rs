//! The Kafka cluster a run uses: an embedded Weir broker (data in a local directory, on a free
//! loopback port) when a pipeline names no `bootstrap`, else the one it names. Topics the
//! pipelines need are created when missing.

use std::net::SocketAddr;
use std::path::Path;

use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use weir_broker::{Broker, BrokerConfig};
use weir_client::{create_topics, ClientSettings, TopicCreation, CLUSTER_TIMEOUT};

use crate::config::PipelineConfig;
use crate::error::{PipelineError, Result};

/// Starts the embedded broker; its address is `broker.local_addr()`.
pub async fn start_embedded(data_dir: &Path) -> Result<Broker> {
    let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let mut config = BrokerConfig::new(listen, data_dir.to_path_buf());
    // The only group members here are the run's own jobs, all started at once: Kafka's 3 s
    // wait for more members to join would only delay a windowed transform's start.
    config
        .set("group.initial.rebalance.delay.ms", "0")
        .map_err(|e| PipelineError::Stage {
            pipeline: "embedded broker".into(),
            message: e.to_string(),
        })?;
    let broker = Broker::start(config).await?;
    tracing::info!(address = %broker.local_addr(), data_dir = %data_dir.display(), "embedded broker started");
    Ok(broker)
}

/// A topic a pipeline needs.
struct TopicSpec {
    name: String,
    partitions: i32,
    replication_factor: i32,
    compacted: bool,
}

/// How a pipeline's transform runs, for the topics it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransformRun {
    /// No transform, or a stateless one the sinks run.
    InSinks,
    /// A job of its own writing rows to the job output topic.
    Job,
    /// A job emitting an updating aggregate's upserts: the job output topic is compacted.
    ChangesJob,
}

fn topics_of(config: &PipelineConfig, run: TransformRun) -> Vec<TopicSpec> {
    let replication_factor = config.topic.replication_factor.unwrap_or(-1);
    let spec = |name: String, partitions: i32, compacted: bool| TopicSpec {
        name,
        partitions,
        replication_factor,
        compacted,
    };
    let mut topics = vec![
        spec(config.topic_name(), config.topic_partitions(), false),
        spec(config.dead_letter_topic(), 1, false),
        spec(config.positions_topic(), 1, true),
    ];
    if run != TransformRun::InSinks {
        topics.push(spec(
            config.job_output_topic(),
            config.topic_partitions(),
            run == TransformRun::ChangesJob,
        ));
        topics.push(spec(config.late_topic(), 1, false));
    }
    for stream in config.transform.iter().flat_map(|t| &t.streams) {
        topics.push(spec(stream.topic.clone(), config.topic_partitions(), false));
    }
    // A table is read whole by every copy of the job: one partition is enough.
    for table in config.transform.iter().flat_map(|t| &t.tables) {
        topics.push(spec(table.topic.clone(), 1, true));
    }
    topics
}

/// Creates the pipeline's topics that do not exist yet (existing ones are kept as they are).
pub async fn ensure_topics(
    config: &PipelineConfig,
    client: &ClientSettings,
    run: TransformRun,
) -> Result<()> {
    let name = &config.name;
    let admin: AdminClient<DefaultClientContext> = client
        .config(&[])
        .create()
        .map_err(PipelineError::kafka(name, "creating the admin client"))?;
    let specs = topics_of(config, run);
    let topics: Vec<NewTopic> = specs
        .iter()
        .map(|spec| {
            let topic = NewTopic::new(
                &spec.name,
                spec.partitions,
                TopicReplication::Fixed(spec.replication_factor),
            );
            if spec.compacted {
                topic.set("cleanup.policy", "compact")
            } else {
                topic
            }
        })
        .collect();
    let creations = create_topics(&admin, &topics, CLUSTER_TIMEOUT)
        .await
        .map_err(|error| PipelineError::Stage {
            pipeline: name.clone(),
            message: error.to_string(),
        })?;
    for creation in creations {
        match creation {
            TopicCreation::Created(topic) => tracing::info!(pipeline = %name, %topic, "topic created"),
            TopicCreation::Existed(topic) => {
                // (a topic of one partition can have no fewer: no metadata request for it)
                let spec = specs.iter().find(|spec| spec.name == topic && spec.partitions > 1);
                if let Some(spec) = spec {
                    // A metadata request blocks; runs are on the multi-threaded runtime.
                    tokio::task::block_in_place(|| warn_if_fewer_partitions(name, &admin, spec));
                }
            }
        }
    }
    Ok(())
}

/// An existing topic is kept as it is; one with fewer partitions than the pipeline asks for
/// (made by hand, or auto-created by a client before the pipeline ran) limits how many copies
/// share the work, which a user would otherwise only see as idle copies.
fn warn_if_fewer_partitions(
    pipeline: &str,
    admin: &AdminClient<DefaultClientContext>,
    spec: &TopicSpec,
) {
    let metadata = match admin
        .inner()
        .fetch_metadata(Some(&spec.name), CLUSTER_TIMEOUT)
    {
        Ok(metadata) => metadata,
        Err(error) => {
            tracing::debug!(pipeline, topic = %spec.name, %error, "describing an existing topic");
            return;
        }
    };
    let Some(existing) = metadata.topics().iter().find(|t| t.name() == spec.name) else {
        return;
    };
    let partitions = existing.partitions().len();
    if partitions < spec.partitions as usize {
        tracing::warn!(
            pipeline,
            topic = %spec.name,
            partitions,
            configured = spec.partitions,
            "topic exists with fewer partitions than configured; keeping it (add partitions \
             with kafka-topics.sh --alter --partitions, or delete it before the first run)"
        );
    }
}
