//! The dynamic-broker-configs section of the differential scenario: a cluster-wide default and a
//! per-broker value set with IncrementalAlterConfigs and AlterConfigs (as `kafka-configs.sh
//! --entity-type brokers [--entity-default] --alter` does), read back with every source and
//! synonym, their effect on a topic without overrides (its describe, and a produce only the new
//! `message.max.bytes` admits), and the refusals: static configs, bad values, bad broker names.
//! Everything set is deleted again at the end, so later sections see the defaults.

use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use serde_json::{json, Value};

use crate::{batch, text, Scenario};

const BROKER_RESOURCE: i8 = 4;
const TOPIC_RESOURCE: i8 = 2;
/// The broker both brokers under test run as (`node.id=1`).
const NODE: &str = "1";
/// The cluster-wide default resource (kafka-configs.sh `--entity-default`).
const DEFAULT: &str = "";

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;

/// Broker configs compared: none is set statically on either broker under test.
const BROKER_KEYS: &[&str] = &[
    "compression.type",
    "log.cleaner.backoff.ms",
    "log.cleanup.policy",
    "log.flush.interval.ms",
    "log.retention.hours",
    "log.retention.ms",
    "log.segment.bytes",
    "max.connections",
    "message.max.bytes",
    "producer.id.expiration.ms",
    "socket.request.max.bytes",
    "unclean.leader.election.enable",
];

/// A topic's configs whose defaults the dynamic configs above change.
const TOPIC_KEYS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "max.message.bytes",
    "retention.ms",
];

/// One IncrementalAlterConfigs change: (name, operation, value).
type Change = (&'static str, i8, Option<&'static str>);

impl Scenario {
    pub(crate) async fn broker_configs_section(&mut self) -> anyhow::Result<()> {
        let step = self
            .describe_resource(BROKER_RESOURCE, NODE, BROKER_KEYS)
            .await?;
        self.note("broker_configs/describe_node/before", step);
        let step = self
            .describe_resource(BROKER_RESOURCE, DEFAULT, BROKER_KEYS)
            .await?;
        self.note("broker_configs/describe_default/before", step);

        self.refusals().await?;

        let default_changes: &[Change] = &[
            ("log.retention.ms", SET, Some("7200000")),
            ("message.max.bytes", SET, Some("2000000")),
        ];
        let step = self.alter_broker(DEFAULT, default_changes, true).await?;
        self.note("broker_configs/default/validate_only", step);
        let step = self
            .describe_resource(BROKER_RESOURCE, DEFAULT, BROKER_KEYS)
            .await?;
        self.note("broker_configs/default/after_validate_only", step);
        let step = self.alter_broker(DEFAULT, default_changes, false).await?;
        self.note("broker_configs/default/set", step);
        let node_changes: &[Change] = &[
            ("message.max.bytes", SET, Some("3000000")),
            ("log.cleanup.policy", APPEND, Some("compact")),
            ("compression.type", SET, Some("gzip")),
        ];
        let step = self.alter_broker(NODE, node_changes, false).await?;
        self.note("broker_configs/node/set", step);
        self.wait_for_value(NODE, "message.max.bytes", Some("3000000"))
            .await?;
        for (label, resource) in [("default", DEFAULT), ("node", NODE)] {
            let step = self
                .describe_resource(BROKER_RESOURCE, resource, BROKER_KEYS)
                .await?;
            self.note(&format!("broker_configs/describe_{label}/after_set"), step);
        }

        let topic = self.topic("compat-dynamic-broker-configs");
        let step = self.create_topic(&topic, 1, 1, &[]).await?;
        self.note("broker_configs/topic/create", step);
        self.wait_ready(&topic).await?;
        let step = self
            .describe_resource(TOPIC_RESOURCE, &topic, TOPIC_KEYS)
            .await?;
        self.note("broker_configs/topic/describe", step);
        // 2.5 MB in one keyed record: over the static default, under the node's 3,000,000.
        let large = "x".repeat(2_500_000);
        let records = batch(&[(Some("k"), &large, 1_700_000_000_000)], Compression::None);
        let step = self.produce(&topic, 0, -1, records.clone()).await?;
        self.note("broker_configs/topic/produce_under_node_limit", step);

        // AlterConfigs replaces the node's whole set: only message.max.bytes is left.
        let step = self
            .alter_broker_whole(NODE, &[("message.max.bytes", "2200000")])
            .await?;
        self.note("broker_configs/node/alter_whole", step);
        self.wait_for_value(NODE, "message.max.bytes", Some("2200000"))
            .await?;
        let step = self
            .describe_resource(BROKER_RESOURCE, NODE, BROKER_KEYS)
            .await?;
        self.note("broker_configs/describe_node/after_alter_whole", step);
        let step = self.produce(&topic, 0, -1, records).await?;
        self.note("broker_configs/topic/produce_over_node_limit", step);

        let step = self
            .alter_broker(NODE, &[("message.max.bytes", DELETE, None)], false)
            .await?;
        self.note("broker_configs/node/delete", step);
        let step = self
            .alter_broker(
                DEFAULT,
                &[
                    ("log.retention.ms", DELETE, None),
                    ("message.max.bytes", DELETE, None),
                ],
                false,
            )
            .await?;
        self.note("broker_configs/default/delete", step);
        self.wait_for_value(NODE, "message.max.bytes", Some("1048588"))
            .await?;
        let step = self
            .describe_resource(TOPIC_RESOURCE, &topic, TOPIC_KEYS)
            .await?;
        self.note("broker_configs/topic/describe_after_delete", step);
        // APPEND to a list the topic does not set starts from the config's default (KIP-339).
        let append = &[("cleanup.policy", APPEND, Some("compact"))];
        let step = self.alter(TOPIC_RESOURCE, &topic, append, false).await?;
        self.note("broker_configs/topic/append_without_override", step);
        let mut step = Value::Null;
        for _ in 0..50 {
            step = self
                .describe_resource(TOPIC_RESOURCE, &topic, TOPIC_KEYS)
                .await?;
            if step["configs"]["cleanup.policy"]["source"] == json!(1) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.note("broker_configs/topic/describe_after_append", step);
        let step = self
            .describe_resource(BROKER_RESOURCE, DEFAULT, BROKER_KEYS)
            .await?;
        self.note("broker_configs/describe_default/after_delete", step);
        Ok(())
    }

    /// Changes refused whole: a static config, values out of range or of the wrong type, a list
    /// operation on a config that is not a list, names that are not broker ids.
    async fn refusals(&mut self) -> anyhow::Result<()> {
        let cases: &[(&str, &str, &[Change])] = &[
            (
                "static",
                NODE,
                &[("socket.request.max.bytes", SET, Some("1048576"))],
            ),
            (
                "static_with_dynamic",
                DEFAULT,
                &[
                    ("log.retention.ms", SET, Some("1000")),
                    ("log.retention.hours", SET, Some("1")),
                ],
            ),
            (
                "not_a_number",
                NODE,
                &[("log.retention.ms", SET, Some("abc"))],
            ),
            (
                "below_minimum",
                NODE,
                &[("message.max.bytes", SET, Some("-5"))],
            ),
            (
                "not_a_choice",
                DEFAULT,
                &[("log.message.timestamp.type", SET, Some("Bogus"))],
            ),
            (
                "bad_level",
                NODE,
                &[("compression.zstd.level", SET, Some("99"))],
            ),
            (
                "set_without_value",
                NODE,
                &[("log.retention.ms", SET, None)],
            ),
            (
                "not_a_broker_id",
                "broker-one",
                &[("log.retention.ms", SET, Some("1000"))],
            ),
        ];
        for (label, resource, changes) in cases {
            let step = self.alter_broker(resource, changes, false).await?;
            self.note(&format!("broker_configs/refused/{label}"), step);
        }
        let step = self
            .describe_resource(BROKER_RESOURCE, "broker-one", &["log.retention.ms"])
            .await?;
        self.note("broker_configs/refused/describe_not_a_broker_id", step);
        let step = self
            .describe_resource(BROKER_RESOURCE, NODE, BROKER_KEYS)
            .await?;
        self.note("broker_configs/refused/describe_node_after", step);
        Ok(())
    }

    /// DescribeConfigs with synonyms, limited to `keys` (configs only one broker has are left
    /// out, so a resource listing "everything set" compares on those keys).
    async fn describe_resource(
        &mut self,
        resource_type: i8,
        resource: &str,
        keys: &[&str],
    ) -> anyhow::Result<Value> {
        let request = DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(text(resource))
                    .with_configuration_keys(None),
            ]);
        let response = self.client.call(4, &request).await?;
        let result = &response.results[0];
        let configs: serde_json::Map<String, Value> = result
            .configs
            .iter()
            .filter(|config| keys.contains(&config.name.as_str()))
            .map(|config| {
                let synonyms: Vec<Value> = config
                    .synonyms
                    .iter()
                    .map(|s| json!([s.name.as_str(), s.value.as_deref(), s.source]))
                    .collect();
                let described = json!({
                    "value": config.value.as_deref(),
                    "source": config.config_source,
                    "read_only": config.read_only,
                    "type": config.config_type,
                    "synonyms": synonyms,
                });
                (config.name.to_string(), described)
            })
            .collect();
        Ok(json!({"error": result.error_code, "configs": configs}))
    }

    async fn alter_broker(
        &mut self,
        resource: &str,
        changes: &[Change],
        validate_only: bool,
    ) -> anyhow::Result<Value> {
        self.alter(BROKER_RESOURCE, resource, changes, validate_only)
            .await
    }

    async fn alter(
        &mut self,
        resource_type: i8,
        resource: &str,
        changes: &[Change],
        validate_only: bool,
    ) -> anyhow::Result<Value> {
        let configs = changes
            .iter()
            .map(|(name, operation, value)| {
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(text(name))
                    .with_config_operation(*operation)
                    .with_value(value.map(text))
            })
            .collect();
        let request = IncrementalAlterConfigsRequest::default()
            .with_validate_only(validate_only)
            .with_resources(vec![
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(text(resource))
                    .with_configs(configs),
            ]);
        let response = self.client.call(1, &request).await?;
        Ok(json!({"error": response.responses[0].error_code}))
    }

    /// AlterConfigs (the older API): the resource's whole dynamic set becomes `configs`.
    async fn alter_broker_whole(
        &mut self,
        resource: &str,
        configs: &[(&str, &str)],
    ) -> anyhow::Result<Value> {
        let configs = configs
            .iter()
            .map(|(name, value)| {
                alter_configs_request::AlterableConfig::default()
                    .with_name(text(name))
                    .with_value(Some(text(value)))
            })
            .collect();
        let request = AlterConfigsRequest::default().with_resources(vec![
            alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(BROKER_RESOURCE)
                .with_resource_name(text(resource))
                .with_configs(configs),
        ]);
        let response = self.client.call(2, &request).await?;
        Ok(json!({"error": response.responses[0].error_code}))
    }

    /// Waits until the broker describes `name` with `value` (Kafka applies a change once its
    /// metadata record is replayed, a moment after answering).
    async fn wait_for_value(
        &mut self,
        resource: &str,
        name: &str,
        value: Option<&str>,
    ) -> anyhow::Result<()> {
        for _ in 0..50 {
            let step = self
                .describe_resource(BROKER_RESOURCE, resource, &[name])
                .await?;
            if step["configs"][name]["value"] == json!(value) {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        anyhow::bail!("broker {resource:?} never described {name}={value:?}")
    }
}
