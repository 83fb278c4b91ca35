//! The `stdout` sink's YAML settings (none yet).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StdoutSinkConfig {}

#[cfg(feature = "runtime")]
impl crate::connector::SinkConnector for StdoutSinkConfig {
    fn applies_changes(&self) -> bool {
        true
    }

    fn open(
        &self,
        _target: &crate::connector::SinkTarget<'_>,
    ) -> Result<Box<dyn crate::sink::Sink>, crate::ConnectorError> {
        Ok(Box::new(super::StdoutSink::new(self.clone())))
    }
}
