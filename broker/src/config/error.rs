//! What is wrong with a configuration property.

/// A configuration property that is unknown or has a bad value.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("unknown configuration property '{name}'")]
    Unknown { name: String },
    #[error("invalid value '{value}' for '{name}': {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    #[error("configuration '{name}' is not supported yet: {reason}")]
    Unsupported { name: String, reason: String },
    /// A listener that would let connections proving nothing reach the controllers, or be
    /// super users, from beyond loopback (`security::anonymous_reach`).
    #[error("listener {listener}: {reason}")]
    OpenToAnonymous { listener: String, reason: String },
    /// Static broker properties in a dynamic change (Kafka's wording).
    #[error("Cannot update these configs dynamically: [{}]", names.join(", "))]
    NotDynamic { names: Vec<String> },
}
