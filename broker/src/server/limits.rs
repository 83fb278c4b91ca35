//! What clients can make the broker hold: connections and request memory.
//!
//! - [`ConnectionLimits`]: `max.connections` (the listener stops accepting until a connection
//!   closes, as Kafka's acceptor waits for a slot) and `max.connections.per.ip` with
//!   `max.connections.per.ip.overrides` (a new connection over its address's limit is closed at
//!   once, as Kafka does). All three are dynamic broker configs.
//! - `queued.max.request.bytes`: one `crate::memory_pool::RequestMemoryPool` for the bytes of
//!   requests read and not yet handled, across all connections. A connection reserves a frame's
//!   size before allocating it and waits while the pool is exhausted, so memory stays near the
//!   pool's size whatever clients send. The reservation is given back when the handler returns
//!   (as Kafka releases a request's buffer after its API handler ran): a deferred response such
//!   as an `acks=all` Produce waiting for followers holds no pool bytes, so it cannot starve the
//!   follower fetches it waits for.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};

use crate::config::{BrokerConfig, ConfigError};

/// `max.connections` and the per-address limits of one listener. Dynamic configs change them
/// at run time ([`ConnectionLimits::reconfigure`]): connections already open stay, as in Kafka,
/// and new ones wait (or are refused) under the new limits.
pub(super) struct ConnectionLimits {
    state: Mutex<LimitState>,
    /// Woken when a slot is given back or `max.connections` grows.
    slot_freed: Notify,
}

struct LimitState {
    limits: Limits,
    /// Slots taken: connections open and the one the listener is about to accept.
    slots_taken: usize,
    open_per_ip: HashMap<IpAddr, usize>,
}

/// The limits as configured, override hosts resolved.
struct Limits {
    max_connections: usize,
    per_ip: usize,
    per_ip_overrides: HashMap<IpAddr, usize>,
}

impl Limits {
    /// From the broker's properties; overrides naming a host are resolved now, and a name that
    /// does not resolve is a configuration error (as in Kafka).
    fn from_config(config: &BrokerConfig) -> Result<Self, ConfigError> {
        let (per_ip, overrides) = config.max_connections_per_ip()?;
        let mut per_ip_overrides = HashMap::new();
        for (host, limit) in overrides {
            for address in resolve(&host)? {
                per_ip_overrides.insert(address, limit);
            }
        }
        Ok(Limits {
            max_connections: config.max_connections(),
            per_ip,
            per_ip_overrides,
        })
    }

    fn limit_for(&self, address: IpAddr) -> usize {
        self.per_ip_overrides
            .get(&address)
            .copied()
            .unwrap_or(self.per_ip)
    }
}

/// A `max.connections` slot, given back when dropped.
pub(super) struct ListenerSlot {
    limits: Arc<ConnectionLimits>,
}

/// A connection's place under the limits, given back when dropped.
pub(super) struct ConnectionSlot {
    slot: ListenerSlot,
    address: IpAddr,
}

/// A new connection from an address that already has its limit of connections.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{address} already has the configured maximum of {limit} connections")]
pub(super) struct TooManyConnections {
    pub(super) address: IpAddr,
    pub(super) limit: usize,
}

impl ConnectionLimits {
    pub(super) fn from_config(config: &BrokerConfig) -> Result<Arc<Self>, ConfigError> {
        Ok(Arc::new(ConnectionLimits {
            state: Mutex::new(LimitState {
                limits: Limits::from_config(config)?,
                slots_taken: 0,
                open_per_ip: HashMap::new(),
            }),
            slot_freed: Notify::new(),
        }))
    }

    /// Takes the limits of a new configuration (a dynamic config changed them).
    pub(super) fn reconfigure(&self, config: &BrokerConfig) -> Result<(), ConfigError> {
        let limits = Limits::from_config(config)?;
        self.lock().limits = limits;
        self.slot_freed.notify_waiters();
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until fewer than `max.connections` connections are open.
    pub(super) async fn wait_for_slot(self: &Arc<Self>) -> ListenerSlot {
        loop {
            let freed = self.slot_freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.slots_taken < state.limits.max_connections {
                    state.slots_taken += 1;
                    return ListenerSlot {
                        limits: Arc::clone(self),
                    };
                }
            }
            freed.await;
        }
    }

    /// Admits a connection from `address` holding `slot`, unless the address is at its limit.
    pub(super) fn admit(
        &self,
        slot: ListenerSlot,
        address: IpAddr,
    ) -> Result<ConnectionSlot, TooManyConnections> {
        let address = address.to_canonical();
        let mut state = self.lock();
        let limit = state.limits.limit_for(address);
        let count = state.open_per_ip.entry(address).or_insert(0);
        if *count >= limit {
            if *count == 0 {
                state.open_per_ip.remove(&address);
            }
            return Err(TooManyConnections { address, limit });
        }
        *count += 1;
        Ok(ConnectionSlot { slot, address })
    }
}

impl Drop for ListenerSlot {
    fn drop(&mut self) {
        self.limits.lock().slots_taken -= 1;
        self.limits.slot_freed.notify_waiters();
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut state = self.slot.limits.lock();
        if let Some(count) = state.open_per_ip.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                state.open_per_ip.remove(&self.address);
            }
        }
    }
}

/// Gives `limits` every configuration installed until shutdown (a dynamic change of
/// `max.connections` or the per-address limits). One that cannot be used (an override host
/// that does not resolve) is logged and the limits stay as they were.
pub(super) async fn follow_config(
    limits: Arc<ConnectionLimits>,
    mut configs: watch::Receiver<Arc<BrokerConfig>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            changed = configs.changed() => if changed.is_err() { return },
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
        let config = Arc::clone(&configs.borrow_and_update());
        if let Err(error) = limits.reconfigure(&config) {
            tracing::error!(%error, "connection limits unchanged");
        }
    }
}

fn resolve(host: &str) -> Result<Vec<IpAddr>, ConfigError> {
    if let Ok(address) = host.parse::<IpAddr>() {
        return Ok(vec![address.to_canonical()]);
    }
    let unresolved = |reason: String| ConfigError::InvalidValue {
        name: "max.connections.per.ip.overrides".into(),
        value: host.to_string(),
        reason,
    };
    let addresses: Vec<IpAddr> = (host, 0)
        .to_socket_addrs()
        .map_err(|e| unresolved(format!("cannot resolve the host: {e}")))?
        .map(|socket| socket.ip().to_canonical())
        .collect();
    if addresses.is_empty() {
        return Err(unresolved("the host resolves to no address".into()));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn config(properties: &[(&str, &str)]) -> BrokerConfig {
        let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), "/unused".into());
        for (name, value) in properties {
            config.set(name, value).unwrap();
        }
        config
    }

    #[tokio::test]
    async fn an_address_at_its_limit_is_refused_until_one_of_its_connections_closes() {
        let limits = ConnectionLimits::from_config(&config(&[
            ("max.connections.per.ip", "2"),
            ("max.connections.per.ip.overrides", "10.0.0.9:0,[::1]:1"),
        ]))
        .unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let first = limits.admit(limits.wait_for_slot().await, local).unwrap();
        let _second = limits.admit(limits.wait_for_slot().await, local).unwrap();
        let refused = limits.admit(limits.wait_for_slot().await, local);
        assert_eq!(
            refused.err(),
            Some(TooManyConnections {
                address: local,
                limit: 2
            })
        );
        drop(first);
        let _third = limits.admit(limits.wait_for_slot().await, local).unwrap();
        let banned: IpAddr = "10.0.0.9".parse().unwrap();
        assert!(limits.admit(limits.wait_for_slot().await, banned).is_err());
        let loopback6: IpAddr = "::1".parse().unwrap();
        let _one = limits
            .admit(limits.wait_for_slot().await, loopback6)
            .unwrap();
        assert!(limits
            .admit(limits.wait_for_slot().await, loopback6)
            .is_err());
        // An IPv4 client seen through an IPv6 socket counts as its IPv4 address.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(limits.admit(limits.wait_for_slot().await, mapped).is_err());
    }

    #[tokio::test]
    async fn the_listener_waits_for_a_slot_at_max_connections() {
        let limits = ConnectionLimits::from_config(&config(&[("max.connections", "1")])).unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let open = limits.admit(limits.wait_for_slot().await, local).unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(50), limits.wait_for_slot());
        assert!(waiting.await.is_err(), "a second slot was handed out");
        drop(open);
        let slot = tokio::time::timeout(Duration::from_secs(5), limits.wait_for_slot()).await;
        assert!(
            slot.is_ok(),
            "the closed connection's slot was not given back"
        );
    }

    #[tokio::test]
    async fn new_limits_apply_to_new_connections_and_keep_open_ones() {
        let limits = ConnectionLimits::from_config(&config(&[("max.connections", "1")])).unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let open = limits.admit(limits.wait_for_slot().await, local).unwrap();
        let waiting = tokio::spawn({
            let limits = Arc::clone(&limits);
            async move { limits.wait_for_slot().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a slot over max.connections=1");
        let raised = config(&[("max.connections", "2"), ("max.connections.per.ip", "1")]);
        limits.reconfigure(&raised).unwrap();
        let slot = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        let slot = slot
            .expect("raising max.connections woke the listener")
            .unwrap();
        // The open connection stays; a second from its address is over the new per-IP limit.
        assert_eq!(
            limits.admit(slot, local).err(),
            Some(TooManyConnections {
                address: local,
                limit: 1
            })
        );
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        let _other = limits.admit(limits.wait_for_slot().await, other).unwrap();
        let unresolvable =
            config(&[("max.connections.per.ip.overrides", "no-such-host.invalid:3")]);
        assert!(limits.reconfigure(&unresolvable).is_err());
        drop(open);
    }

    #[test]
    fn bad_limits_are_configuration_errors() {
        let mut broker = config(&[]);
        assert!(broker
            .set("max.connections.per.ip.overrides", "host-without-count")
            .is_err());
        assert!(broker
            .set("max.connections.per.ip.overrides", "localhost:many")
            .is_err());
        broker.set("max.connections.per.ip", "0").unwrap();
        assert!(ConnectionLimits::from_config(&broker).is_err());
        let unresolvable =
            config(&[("max.connections.per.ip.overrides", "no-such-host.invalid:3")]);
        assert!(ConnectionLimits::from_config(&unresolvable).is_err());
        let mut fresh = config(&[]);
        let refused = fresh.set("queued.max.requests", "500");
        assert!(matches!(refused, Err(ConfigError::Unsupported { .. })));
    }

    #[test]
    fn the_pool_is_never_smaller_than_the_largest_request() {
        assert_eq!(
            config(&[]).queued_max_request_bytes().unwrap(),
            Some(256 << 20)
        );
        let large = config(&[("socket.request.max.bytes", "536870912")]);
        assert_eq!(large.queued_max_request_bytes().unwrap(), Some(512 << 20));
        let small_pool = config(&[("queued.max.request.bytes", "1048576")]);
        assert!(small_pool.queued_max_request_bytes().is_err());
        let unbounded = config(&[("queued.max.request.bytes", "-1")]);
        assert_eq!(unbounded.queued_max_request_bytes().unwrap(), None);
    }
}
