//! Who a connection speaks for: Kafka's `KafkaPrincipal`, `User:<name>`. A SASL login names
//! its user; a PLAINTEXT connection, and a TLS one without a client certificate, is
//! `User:ANONYMOUS` (so `super.users=User:ANONYMOUS` makes a loopback PLAINTEXT listener an
//! admin path, as on Kafka).

/// A principal as Kafka writes it: `<type>:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

pub const USER_TYPE: &str = "User";
pub const ANONYMOUS_NAME: &str = "ANONYMOUS";

impl KafkaPrincipal {
    pub fn user(name: impl Into<String>) -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    pub fn anonymous() -> KafkaPrincipal {
        Self::user(ANONYMOUS_NAME)
    }

    /// `User:alice`; `None` without the type's colon or with an empty type or name.
    pub fn parse(text: &str) -> Option<KafkaPrincipal> {
        let (principal_type, name) = text.split_once(':')?;
        (!principal_type.is_empty() && !name.is_empty()).then(|| KafkaPrincipal {
            principal_type: principal_type.to_string(),
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_print_and_parse_as_kafka_writes_them() {
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
        assert_eq!(
            KafkaPrincipal::parse("User:CN=a,O=b"),
            Some(KafkaPrincipal::user("CN=a,O=b"))
        );
        assert_eq!(KafkaPrincipal::parse("alice"), None);
        assert_eq!(KafkaPrincipal::parse("User:"), None);
    }
}
