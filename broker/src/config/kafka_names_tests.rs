//! Every config name Apache Kafka 4.4 lists is known to Weir: taken (with effect), accepted
//! without effect (`kafka_only`, with the missing feature), or refused with the reason.

use super::kafka_only::{KAFKA_ONLY_BROKER, KAFKA_ONLY_TOPIC};
use super::properties::{
    broker_property_def, topic_config_def, BROKER_PROPERTIES, REFUSED_PROPERTIES, TOPIC_CONFIGS,
};

const KAFKA_CONFIGS: &str = include_str!("../../../compat/kafka/configs-4.4.tsv");
const COMPATIBILITY: &str = include_str!("../../../COMPATIBILITY.md");

/// (scope, name) of every config in Kafka's list.
fn kafka_configs() -> impl Iterator<Item = (&'static str, &'static str)> {
    KAFKA_CONFIGS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let mut fields = line.split('\t');
            (fields.next().unwrap(), fields.next().unwrap())
        })
}

#[test]
fn every_kafka_4_4_config_name_is_known() {
    let unknown: Vec<String> = kafka_configs()
        .filter(|(scope, name)| match *scope {
            "broker" => {
                broker_property_def(name).is_none()
                    && !REFUSED_PROPERTIES
                        .iter()
                        .any(|(refused, _)| refused == name)
            }
            _ => topic_config_def(name).is_none(),
        })
        .map(|(scope, name)| format!("{scope} {name}"))
        .collect();
    assert_eq!(
        kafka_configs().count(),
        387,
        "350 broker and 37 topic configs"
    );
    assert!(
        unknown.is_empty(),
        "{} unknown:\n{}",
        unknown.len(),
        unknown.join("\n")
    );
}

#[test]
fn kafka_only_configs_are_not_weirs_and_compatibility_md_names_each() {
    for only in KAFKA_ONLY_BROKER {
        let name = only.def.name;
        assert!(
            !BROKER_PROPERTIES.iter().any(|def| def.name == name),
            "{name} is Weir's too"
        );
        assert!(
            COMPATIBILITY.contains(&format!("`{name}`")),
            "COMPATIBILITY.md lacks {name}"
        );
    }
    for only in KAFKA_ONLY_TOPIC {
        let name = only.def.name;
        assert!(
            !TOPIC_CONFIGS.iter().any(|def| def.name == name),
            "{name} is Weir's too"
        );
        assert!(
            COMPATIBILITY.contains(&format!("`{name}`")),
            "COMPATIBILITY.md lacks {name}"
        );
    }
    for (name, _) in REFUSED_PROPERTIES {
        assert!(
            COMPATIBILITY.contains(&format!("`{name}`")),
            "COMPATIBILITY.md lacks {name}"
        );
    }
}
