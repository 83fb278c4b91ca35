use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

fn config() -> BrokerConfig {
    BrokerConfig::new("127.0.0.1:0".parse().unwrap(), PathBuf::from("/tmp/x"))
}

#[test]
fn unknown_broker_property_is_rejected() {
    let error = config().set("log.retention.hourz", "1").unwrap_err();
    assert_eq!(
        error,
        ConfigError::Unknown {
            name: "log.retention.hourz".into()
        }
    );
}

#[test]
fn retention_precedence_follows_kafka() {
    let mut broker = config();
    let empty = BTreeMap::new();
    assert_eq!(broker.log_config(&empty).retention_ms, 168 * 3_600_000);
    broker.set("log.retention.hours", "1").unwrap();
    assert_eq!(broker.log_config(&empty).retention_ms, 3_600_000);
    broker.set("log.retention.minutes", "2").unwrap();
    assert_eq!(broker.log_config(&empty).retention_ms, 120_000);
    broker.set("log.retention.ms", "5").unwrap();
    assert_eq!(broker.log_config(&empty).retention_ms, 5);
    let overrides = BTreeMap::from([("retention.ms".to_string(), "7".to_string())]);
    assert_eq!(broker.log_config(&overrides).retention_ms, 7);
}

#[test]
fn bad_values_are_rejected_with_reason() {
    let mut broker = config();
    assert!(broker.set("num.partitions", "0").is_err());
    assert!(broker.set("num.partitions", "x").is_err());
    assert!(broker.set("auto.create.topics.enable", "yes").is_err());
    assert!(validate_topic_config("message.timestamp.type", "Wall").is_err());
    assert!(validate_topic_config("no.such.config", "1").is_err());
    validate_topic_config("message.timestamp.type", "LogAppendTime").unwrap();
}

#[test]
fn quorum_role_follows_the_voters_unless_process_roles_says_otherwise() {
    let mut broker = config();
    broker
        .set("controller.quorum.voters", "1@h:9093,2@h:9193")
        .unwrap();
    broker.set("node.id", "2").unwrap();
    assert_eq!(broker.quorum_role(), Ok(QuorumRole::Voter));
    broker.set("node.id", "4").unwrap();
    assert_eq!(broker.quorum_role(), Ok(QuorumRole::Observer));
    broker.set("process.roles", "broker").unwrap();
    assert_eq!(broker.quorum_role(), Ok(QuorumRole::Observer));
    broker.set("process.roles", "controller, broker").unwrap();
    assert!(
        broker.quorum_role().is_err(),
        "a controller must be a voter"
    );
    broker.set("node.id", "1").unwrap();
    assert_eq!(broker.quorum_role(), Ok(QuorumRole::Voter));
    broker.set("process.roles", "broker").unwrap();
    assert!(
        broker.quorum_role().is_err(),
        "a listed voter must be a controller"
    );
    assert!(broker.set("process.roles", "controller").is_err());
    assert!(broker.set("process.roles", "broker,zookeeper").is_err());
}

fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

#[test]
fn dynamic_layers_win_over_static_and_defaults_most_specific_first() {
    let mut broker = config();
    broker.set("message.max.bytes", "1500000").unwrap();
    broker.set("log.retention.hours", "24").unwrap();
    let layered = broker.with_dynamic(DynamicConfigs {
        broker: configs(&[("message.max.bytes", "3000000")]),
        cluster_default: configs(&[
            ("message.max.bytes", "2000000"),
            ("log.retention.ms", "7200000"),
        ]),
    });
    assert_eq!(
        layered.lookup("message.max.bytes"),
        Some(("3000000", ConfigSource::DynamicBroker))
    );
    assert_eq!(
        layered.lookup("log.retention.ms"),
        Some(("7200000", ConfigSource::DynamicDefault))
    );
    assert_eq!(
        layered.lookup("log.retention.hours"),
        Some(("24", ConfigSource::Static))
    );
    assert_eq!(
        layered.lookup("log.segment.bytes"),
        Some(("1073741824", ConfigSource::Default))
    );
    assert_eq!(layered.lookup("log.retention.minutes"), None);
    // Kafka's synonyms: every layer's value of the setting, most specific first.
    let named = |synonyms: Vec<(String, String, ConfigSource)>| -> Vec<(String, ConfigSource)> {
        synonyms.into_iter().map(|(n, _, s)| (n, s)).collect()
    };
    assert_eq!(
        named(layered.synonyms("message.max.bytes")),
        vec![
            ("message.max.bytes".into(), ConfigSource::DynamicBroker),
            ("message.max.bytes".into(), ConfigSource::DynamicDefault),
            ("message.max.bytes".into(), ConfigSource::Static),
            ("message.max.bytes".into(), ConfigSource::Default),
        ]
    );
    assert_eq!(
        named(layered.synonyms("log.retention.ms")),
        vec![
            ("log.retention.ms".into(), ConfigSource::DynamicDefault),
            ("log.retention.hours".into(), ConfigSource::Static),
            ("log.retention.hours".into(), ConfigSource::Default),
        ]
    );
    // Entries before the first naming the property itself are left out, as Kafka does.
    assert_eq!(broker.synonyms("log.retention.ms"), vec![]);
    let empty = BTreeMap::new();
    let topic = layered.log_config(&empty);
    assert_eq!(topic.max_message_bytes, 3_000_000);
    assert_eq!(topic.retention_ms, 7_200_000);
    assert_eq!(broker.log_config(&empty).retention_ms, 24 * 3_600_000);
    assert_eq!(broker.log_config(&empty).max_message_bytes, 1_500_000);
}

#[test]
fn a_dynamic_change_names_every_static_property_and_checks_values() {
    assert_eq!(
        validate_dynamic(&configs(&[
            ("log.retention.ms", "1000"),
            ("socket.request.max.bytes", "1"),
            ("num.partitions", "3"),
        ])),
        Err(ConfigError::NotDynamic {
            names: vec!["num.partitions".into(), "socket.request.max.bytes".into()]
        })
    );
    assert_eq!(
        ConfigError::NotDynamic {
            names: vec!["log.retention.minutes".into()]
        }
        .to_string(),
        "Cannot update these configs dynamically: [log.retention.minutes]"
    );
    assert!(matches!(
        validate_dynamic(&configs(&[("log.retention.msx", "1")])),
        Err(ConfigError::Unknown { .. })
    ));
    for (name, value) in [
        ("log.retention.ms", "abc"),
        ("message.max.bytes", "-5"),
        ("compression.zstd.level", "99"),
        ("log.cleanup.policy", "delete,archive"),
        ("max.connections.per.ip.overrides", "no-count"),
    ] {
        assert!(
            matches!(
                validate_dynamic(&configs(&[(name, value)])),
                Err(ConfigError::InvalidValue { .. })
            ),
            "{name}={value} was accepted"
        );
    }
    validate_dynamic(&configs(&[
        ("log.cleanup.policy", "delete,compact"),
        ("max.connections.per.ip.overrides", "10.0.0.1:5"),
        ("unclean.leader.election.enable", "true"),
    ]))
    .unwrap();
    let zero_per_ip = config().with_dynamic(DynamicConfigs {
        broker: configs(&[("max.connections.per.ip", "0")]),
        cluster_default: BTreeMap::new(),
    });
    assert!(validate_combined(&zero_per_ip).is_err());
}

#[test]
fn broker_resources_are_the_default_or_a_broker_id() {
    assert_eq!(
        BrokerResource::parse(""),
        Ok(BrokerResource::ClusterDefault)
    );
    assert_eq!(BrokerResource::parse("3"), Ok(BrokerResource::Broker(3)));
    assert!(BrokerResource::parse("broker-one").is_err());
    assert!(BrokerResource::parse("-1").is_err());
    assert_eq!(BrokerResource::Broker(3).name(), "3");
    assert_eq!(BrokerResource::ClusterDefault.name(), "");
}

#[test]
fn a_live_config_publishes_only_changed_layers() {
    let live = LiveConfig::new(config());
    let mut watcher = live.watch();
    let layers = DynamicConfigs {
        broker: configs(&[("log.cleaner.backoff.ms", "10")]),
        cluster_default: BTreeMap::new(),
    };
    assert!(live.set_dynamic(layers.clone()));
    assert!(watcher.has_changed().unwrap());
    watcher.borrow_and_update();
    assert_eq!(live.current().long("log.cleaner.backoff.ms"), Some(10));
    assert!(!live.set_dynamic(layers));
    assert!(!watcher.has_changed().unwrap());
}

#[test]
fn named_listeners_give_the_client_inter_broker_and_controller_listeners() {
    let mut broker = config();
    let only = broker.client_listeners().unwrap();
    assert_eq!(only.len(), 1, "--listen alone is one PLAINTEXT listener");
    assert_eq!(only[0].name, "PLAINTEXT");
    assert_eq!(broker.controller_address(), Ok(None));
    broker
        .set(
            "listeners",
            "CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
        )
        .unwrap();
    broker
        .set(
            "listener.security.protocol.map",
            "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
        )
        .unwrap();
    broker
        .set("controller.listener.names", "controller")
        .unwrap();
    let names: Vec<String> = broker
        .client_listeners()
        .unwrap()
        .into_iter()
        .map(|listener| listener.name)
        .collect();
    assert_eq!(names, ["CLIENT", "REPLICATION"]);
    assert_eq!(broker.inter_broker_listener().unwrap().name, "CLIENT");
    broker
        .set("inter.broker.listener.name", "replication")
        .unwrap();
    assert_eq!(broker.inter_broker_listener().unwrap().name, "REPLICATION");
    assert_eq!(
        broker.controller_address(),
        Ok(Some("127.0.0.1:9093".parse().unwrap()))
    );
    assert!(broker.set("listeners", "CLIENT:9092").is_err());
    assert!(broker
        .set("listener.security.protocol.map", "CLIENT:QUIC")
        .is_err());
}

#[test]
fn security_inter_broker_protocol_names_the_inter_broker_listener_as_in_kafka() {
    let mut broker = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), "/tmp".into());
    broker
        .set(
            "listeners",
            "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094",
        )
        .unwrap();
    broker
        .set(
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,SSL:SSL",
        )
        .unwrap();
    assert_eq!(broker.inter_broker_listener().unwrap().name, "PLAINTEXT");
    broker.set("security.inter.broker.protocol", "SSL").unwrap();
    assert_eq!(broker.inter_broker_listener().unwrap().name, "SSL");
    broker.set("inter.broker.listener.name", "SSL").unwrap();
    let both = broker.inter_broker_listener().unwrap_err().to_string();
    assert!(both.contains("only one of"), "{both}");
    let mut lone = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), "/tmp".into());
    lone.set("security.inter.broker.protocol", "SASL_SSL")
        .unwrap();
    assert!(
        lone.inter_broker_listener().is_err(),
        "no listener is named SASL_SSL"
    );
    assert!(lone.set("security.inter.broker.protocol", "QUIC").is_err());
}
