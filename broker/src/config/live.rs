//! The configuration a running broker reads. Readers take a snapshot ([`LiveConfig::current`])
//! that stays consistent while they use it; a dynamic config change installs a whole new
//! snapshot. Subsystems holding settings derived from the configuration (connection limits)
//! watch for new snapshots ([`LiveConfig::watch`]).

use std::sync::Arc;

use tokio::sync::watch;

use super::{BrokerConfig, DynamicConfigs};

/// A shared handle on the broker's current configuration; clones see the same one.
#[derive(Clone)]
pub struct LiveConfig {
    current: Arc<watch::Sender<Arc<BrokerConfig>>>,
}

impl LiveConfig {
    pub fn new(config: BrokerConfig) -> Self {
        LiveConfig {
            current: Arc::new(watch::Sender::new(Arc::new(config))),
        }
    }

    /// The configuration as it is now.
    pub fn current(&self) -> Arc<BrokerConfig> {
        Arc::clone(&self.current.borrow())
    }

    /// Installs other dynamic layers; false (and nothing published) when they are the ones in
    /// effect.
    pub fn set_dynamic(&self, dynamic: DynamicConfigs) -> bool {
        self.current.send_if_modified(|config| {
            if *config.dynamic() == dynamic {
                return false;
            }
            *config = Arc::new(config.with_dynamic(dynamic));
            true
        })
    }

    /// Sees every configuration installed from now on.
    pub fn watch(&self) -> watch::Receiver<Arc<BrokerConfig>> {
        self.current.subscribe()
    }
}
