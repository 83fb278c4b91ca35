//! Whether a cluster can be used with the user's settings, and if not, why in words the user
//! can act on. librdkafka reports a refused login or an untrusted certificate only through its
//! error callback and then keeps retrying, so a plain metadata request just times out; here the
//! callback's reports are collected while asking, and the first that explains the failure is
//! returned at once with what to change. The topics named are described too, so a principal
//! without Describe on them is told which ACL is missing.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;

use crate::settings::ClientSettings;

/// How long one metadata attempt may take before the collected reports are looked at.
const ATTEMPT: Duration = Duration::from_millis(500);
/// Events served between two attempts.
const EVENTS_PER_ATTEMPT: usize = 16;
/// How long a bootstrap address may take to accept a TCP connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Reports kept (librdkafka repeats itself on every reconnection).
const MAX_REPORTS: usize = 100;

/// Why a cluster cannot be used, with the fix when the reason is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unreached {
    pub message: String,
    pub hint: Option<String>,
}

/// librdkafka's error reports while reaching (a producer's: a consumer's poll drops their text).
#[derive(Default)]
struct Reports(Mutex<Vec<String>>);

impl Reports {
    fn push(&self, report: String) {
        if let Ok(mut reports) = self.0.lock() {
            if reports.len() < MAX_REPORTS {
                reports.push(report);
            }
        }
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl ClientContext for Reports {
    fn error(&self, error: KafkaError, reason: &str) {
        self.push(format!("{error}: {reason}"));
    }

    /// Some causes (a plaintext client at a TLS listener) are only logged.
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            self.push(format!("{facility}: {message}"));
        }
    }
}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();
    fn delivery(&self, _result: &DeliveryResult<'_>, _opaque: ()) {}
}

/// The fix for a report, when the report says what is wrong.
fn explained(report: &str) -> Option<Unreached> {
    let hint = if report.contains("SASL authentication error")
        || report.contains("Authentication failed")
    {
        "the cluster refused the login: check sasl.username and sasl.password (and sasl.mechanism)"
    } else if report.contains("certificate verify failed") {
        "the broker's certificate is not signed by a CA you trust (or does not name the host): \
         set ssl.ca.location to the CA that signed it"
    } else if report.contains("SSL handshake failed") {
        "TLS failed: the listener may not speak TLS (check security.protocol and the port)"
    } else if report.contains("Disconnected while requesting ApiVersion")
        || report.contains("Disconnected: verify that security.protocol")
    {
        "the broker closed the connection at once: the listener may expect TLS or SASL — check \
         security.protocol (and the port)"
    } else {
        return None;
    };
    Some(Unreached {
        message: report.to_string(),
        hint: Some(hint.to_string()),
    })
}

impl ClientSettings {
    /// Whether the cluster answers a metadata request for `topics` (all topics when empty)
    /// within `timeout` (blocking), the principal allowed to describe each.
    pub fn reach_for(&self, topics: &[&str], timeout: Duration) -> Result<(), Unreached> {
        // A producer's metadata request would create the topics it names (librdkafka asks
        // for auto-creation by default), with the broker's default partition count, before
        // the pipeline creates them as configured.
        let client: BaseProducer<Reports> = self
            .config(&[])
            .set("allow.auto.create.topics", "false")
            .create_with_context(Reports::default())
            .map_err(|error| Unreached {
                message: format!("creating a client: {error}"),
                hint: None,
            })?;
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            let attempt = ATTEMPT.min(deadline.saturating_duration_since(Instant::now()));
            if attempt.is_zero() {
                break;
            }
            let topic = topics.first().copied();
            match client.client().fetch_metadata(topic, attempt) {
                Ok(metadata) => return described(&metadata, topics, &client, attempt),
                Err(error) => last_error = Some(error),
            }
            // The error callback is served by polling (one event a call).
            for _ in 0..EVENTS_PER_ATTEMPT {
                client.poll(Duration::ZERO);
            }
            let reports = client.context().all();
            if let Some(unreached) = reports.iter().find_map(|report| explained(report)) {
                return Err(unreached);
            }
            if reports
                .iter()
                .any(|report| report.contains("AllBrokersDown"))
            {
                // Every broker failed without saying why: only the port can tell more.
                return Err(self.unexplained());
            }
        }
        let reports = client.context().all();
        Err(Unreached {
            message: match (last_error, reports.last()) {
                (_, Some(report)) => format!("no answer within {timeout:?}: {report}"),
                (Some(error), None) => format!("no answer within {timeout:?}: {error}"),
                (None, None) => format!("no answer within {timeout:?}"),
            },
            hint: None,
        })
    }
}

impl ClientSettings {
    /// Every broker is down and librdkafka said no more: whether anything listens at the
    /// bootstrap addresses tells a wrong address from a listener the client cannot speak to.
    fn unexplained(&self) -> Unreached {
        let listening = self.bootstrap.split(',').any(|address| {
            use std::net::ToSocketAddrs;
            address
                .trim()
                .to_socket_addrs()
                .map(|mut addresses| {
                    addresses
                        .any(|a| std::net::TcpStream::connect_timeout(&a, PROBE_TIMEOUT).is_ok())
                })
                .unwrap_or(false)
        });
        if listening {
            Unreached {
                message: format!("{} accepts connections but closes them", self.bootstrap),
                hint: Some(
                    "the listener expects another security.protocol (plaintext, ssl, \
                     sasl_plaintext, sasl_ssl): match the listener at that port"
                        .into(),
                ),
            }
        } else {
            Unreached {
                message: format!("nothing accepts connections at {}", self.bootstrap),
                hint: Some("check the bootstrap host names and ports".into()),
            }
        }
    }
}

/// Metadata came back: each named topic described, or the reason it was not.
fn described(
    first: &rdkafka::metadata::Metadata,
    topics: &[&str],
    client: &BaseProducer<Reports>,
    timeout: Duration,
) -> Result<(), Unreached> {
    let mut answers = vec![topic_error(first, topics.first().copied())];
    for topic in topics.iter().skip(1) {
        let metadata = client
            .client()
            .fetch_metadata(Some(topic), timeout)
            .map_err(|error| Unreached {
                message: format!("describing topic {topic}: {error}"),
                hint: None,
            })?;
        answers.push(topic_error(&metadata, Some(topic)));
    }
    for (topic, error) in topics.iter().zip(answers) {
        match error {
            None | Some(RDKafkaErrorCode::UnknownTopicOrPartition) => {}
            Some(RDKafkaErrorCode::TopicAuthorizationFailed) => {
                return Err(Unreached {
                    message: format!("not authorized to describe topic {topic}"),
                    hint: Some(format!(
                        "grant the pipeline's principal access to it, e.g. kafka-acls.sh --add \
                         --allow-principal User:<name> --operation All --topic {topic}"
                    )),
                })
            }
            Some(code) => {
                return Err(Unreached {
                    message: format!("describing topic {topic}: {code}"),
                    hint: None,
                })
            }
        }
    }
    Ok(())
}

fn topic_error(
    metadata: &rdkafka::metadata::Metadata,
    topic: Option<&str>,
) -> Option<RDKafkaErrorCode> {
    let topic = topic?;
    metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .and_then(|t| t.error())
        .map(RDKafkaErrorCode::from)
}

#[cfg(test)]
mod tests;
