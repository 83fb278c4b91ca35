//! A private network for cluster process tests: one network namespace per node, each joined to
//! a bridge in this (the test's) namespace by a veth pair, so a node can be cut off from every
//! other node and from the clients by taking its link down — its sockets stay open and its
//! packets vanish, as in a real partition — or from the other nodes only (blackhole routes),
//! the clients still reaching it. Needs root (`ip netns`); everything is removed on drop.

use std::process::Command;

pub(crate) struct PrivateNetwork {
    prefix: String,
    subnet: String,
    nodes: Vec<u32>,
}

/// Runs `ip ARGS`, panicking with its complaint on failure.
fn ip(args: &[&str]) {
    let output = Command::new("ip")
        .args(args)
        .output()
        .expect("the ip command runs (iproute2)");
    assert!(
        output.status.success(),
        "ip {}: {} (this test needs root for network namespaces)",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

impl PrivateNetwork {
    /// Namespaces for `nodes` on a fresh subnet; the bridge (this namespace) takes `.254`.
    pub(crate) fn create(nodes: &[u32]) -> PrivateNetwork {
        let tag = std::process::id() % 1000;
        let network = PrivateNetwork {
            prefix: format!("weir{tag}"),
            subnet: format!("10.123.{}", tag % 250),
            nodes: nodes.to_vec(),
        };
        network.remove(); // Leftovers of an earlier run with the same tag.
        let bridge = network.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&[
            "addr",
            "add",
            &format!("{}.254/24", network.subnet),
            "dev",
            &bridge,
        ]);
        ip(&["link", "set", &bridge, "up"]);
        for &node in nodes {
            let (namespace, outside) = (network.namespace(node), network.link(node));
            ip(&["netns", "add", &namespace]);
            ip(&[
                "link", "add", &outside, "type", "veth", "peer", "name", "eth0", "netns",
                &namespace,
            ]);
            ip(&["link", "set", &outside, "master", &bridge]);
            ip(&["link", "set", &outside, "up"]);
            let inside = ["netns", "exec", namespace.as_str(), "ip"];
            let address = format!("{}/24", network.host(node));
            ip(&[&inside[..], &["addr", "add", &address, "dev", "eth0"]].concat());
            ip(&[&inside[..], &["link", "set", "eth0", "up"]].concat());
            ip(&[&inside[..], &["link", "set", "lo", "up"]].concat());
        }
        network
    }

    pub(crate) fn namespace(&self, node: u32) -> String {
        format!("{}-n{node}", self.prefix)
    }

    /// The node's address inside its namespace.
    pub(crate) fn host(&self, node: u32) -> String {
        format!("{}.{node}", self.subnet)
    }

    fn bridge(&self) -> String {
        format!("{}br", self.prefix)
    }

    /// The bridge's end of the node's veth pair.
    fn link(&self, node: u32) -> String {
        format!("{}v{node}", self.prefix)
    }

    /// Cuts `node` off from everyone (`false` heals it).
    pub(crate) fn isolate(&self, node: u32, isolated: bool) {
        let state = if isolated { "down" } else { "up" };
        ip(&["link", "set", &self.link(node), state]);
    }

    /// Separates `node` from the other nodes only (`false` heals it): blackhole routes on both
    /// sides drop what they send each other, while clients in this namespace still reach it.
    pub(crate) fn separate(&self, node: u32, separated: bool) {
        let action = if separated { "add" } else { "del" };
        for &peer in self.nodes.iter().filter(|peer| **peer != node) {
            for (from, to) in [(node, peer), (peer, node)] {
                let namespace = self.namespace(from);
                let destination = format!("{}/32", self.host(to));
                ip(&[
                    "netns",
                    "exec",
                    &namespace,
                    "ip",
                    "route",
                    action,
                    "blackhole",
                    &destination,
                ]);
            }
        }
    }

    fn remove(&self) {
        for &node in &self.nodes {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.namespace(node)])
                .output();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .output();
    }
}

impl Drop for PrivateNetwork {
    fn drop(&mut self) {
        self.remove();
    }
}
