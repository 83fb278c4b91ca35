//! The `http` source's stage: the endpoint serves until the run stops; each request's lines are
//! parsed by the source's format (lines that do not parse go to the dead-letter topic with the
//! reason) and produced with an idempotent, acks=all producer; the answer waits for every
//! acknowledgement.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use weir_client::ClientSettings;
use weir_connectors::http::{HttpSourceConfig, IngestReport, IngestTarget};
use weir_connectors::weblog::LogFormat;

use crate::config::PipelineConfig;
use crate::error::{PipelineError, Result};
use crate::ingest::ERROR_HEADER;
use crate::metrics::PipelineMetrics;

/// How long a request waits for the cluster's acknowledgements before answering 503.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

struct TopicTarget {
    pipeline: String,
    format: LogFormat,
    topic: String,
    dead_letter_topic: String,
    producer: FutureProducer,
    metrics: Arc<PipelineMetrics>,
}

#[async_trait::async_trait]
impl IngestTarget for TopicTarget {
    async fn ingest(&self, lines: Vec<&[u8]>) -> Result<IngestReport, String> {
        let mut value = Vec::new();
        let mut deliveries = Vec::with_capacity(lines.len());
        let mut report = IngestReport {
            accepted: 0,
            dead_letters: 0,
        };
        for line in &lines {
            value.clear();
            let text = String::from_utf8_lossy(line);
            let delivery = match self.format.parse_into(&text, &mut value) {
                Ok(()) => {
                    report.accepted += 1;
                    self.producer
                        .send_result(FutureRecord::<[u8], [u8]>::to(&self.topic).payload(&value))
                }
                Err(error) => {
                    report.dead_letters += 1;
                    let reason = error.to_string();
                    let headers = OwnedHeaders::new().insert(Header {
                        key: ERROR_HEADER,
                        value: Some(reason.as_bytes()),
                    });
                    self.producer.send_result(
                        FutureRecord::<[u8], [u8]>::to(&self.dead_letter_topic)
                            .payload(*line)
                            .headers(headers),
                    )
                }
            };
            deliveries.push(delivery.map_err(|(error, _)| error.to_string())?);
        }
        for result in join_all(deliveries).await {
            match result {
                Ok(Ok(_)) => {}
                Ok(Err((error, _))) => return Err(error.to_string()),
                Err(_) => return Err("the producer went away".into()),
            }
        }
        let labels = [self.pipeline.as_str()];
        self.metrics
            .source_records
            .with_label_values(&labels)
            .inc_by(lines.len() as u64);
        self.metrics
            .records_produced
            .with_label_values(&labels)
            .inc_by(report.accepted as u64);
        self.metrics
            .parse_errors
            .with_label_values(&labels)
            .inc_by(report.dead_letters as u64);
        Ok(report)
    }
}

/// Serves the endpoint until `stop`.
pub async fn serve(
    config: PipelineConfig,
    source: HttpSourceConfig,
    client: ClientSettings,
    metrics: Arc<PipelineMetrics>,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let name = config.name.clone();
    let delivery_timeout_ms = DELIVERY_TIMEOUT.as_millis().to_string();
    let producer: FutureProducer = client
        .config(&[
            ("enable.idempotence", "true"),
            ("acks", "all"),
            ("linger.ms", "2"),
            ("message.timeout.ms", &delivery_timeout_ms),
        ])
        .create()
        .map_err(PipelineError::kafka(&name, "creating the producer"))?;
    let target = Arc::new(TopicTarget {
        pipeline: name.clone(),
        format: source.format,
        topic: config.topic_name(),
        dead_letter_topic: config.dead_letter_topic(),
        producer,
        metrics,
    });
    let listener = tokio::net::TcpListener::bind(&source.listen)
        .await
        .map_err(|e| PipelineError::Stage {
            pipeline: name.clone(),
            message: format!("cannot listen on {}: {e}", source.listen),
        })?;
    tracing::info!(pipeline = %name, address = %source.listen, "http source listening on /ingest/{name}");
    let shutdown = async move {
        while !stop.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    weir_connectors::http::serve(&name, &source, target, listener, shutdown)
        .await
        .map_err(|message| PipelineError::Stage {
            pipeline: name,
            message: format!("http source: {message}"),
        })
}
