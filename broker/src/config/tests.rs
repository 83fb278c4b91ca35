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
