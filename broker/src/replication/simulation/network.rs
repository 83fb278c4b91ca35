//! The simulated network: messages in flight with a delivery time, delivered in a random order
//! among those due (so they reorder), dropped at random, and links cut and healed.

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::ResponseError;

use crate::cluster::controller::{ControllerError, Registration};
use crate::seeded_rng::SeededRng;

/// The controller's node id in the simulation (brokers are 1..).
pub(super) const CONTROLLER: i32 = 0;

#[derive(Debug, Clone)]
pub(super) enum Message {
    // Broker → controller.
    Register(Registration),
    Heartbeat {
        broker_epoch: i64,
    },
    AlterPartition {
        broker_epoch: i64,
        partition_epoch: i32,
        isr: Vec<i32>,
    },
    // Controller → broker.
    /// The broker epoch, and the metadata index the registration is at.
    Registered(Result<(i64, usize), ControllerError>),
    HeartbeatAnswer(Result<(), ControllerError>),
    AlterAnswer(Result<(), ControllerError>),
    /// The metadata log is committed up to `upto` records.
    Metadata {
        upto: usize,
    },
    // Follower ↔ leader.
    EpochQuery {
        leader_epoch: i32,
        epoch: i32,
    },
    EpochAnswer {
        leader_epoch: i32,
        answer: Result<(i32, i64), ResponseError>,
    },
    Fetch {
        leader_epoch: i32,
        fetch_offset: i64,
    },
    FetchAnswer {
        leader_epoch: i32,
        answer: Result<(Bytes, i64), ResponseError>,
    },
}

#[derive(Debug)]
pub(super) struct Envelope {
    pub from: i32,
    pub to: i32,
    /// The process of `to` it was sent to: a restarted broker never sees its predecessor's mail.
    pub to_incarnation: u64,
    pub deliver_at_ms: i64,
    pub message: Message,
}

#[derive(Default)]
pub(super) struct Network {
    in_flight: Vec<Envelope>,
    /// Links that carry nothing (either direction), as (smaller id, larger id).
    cut: BTreeSet<(i32, i32)>,
}

fn link(a: i32, b: i32) -> (i32, i32) {
    (a.min(b), a.max(b))
}

impl Network {
    pub(super) fn send(&mut self, envelope: Envelope) {
        if !self.cut.contains(&link(envelope.from, envelope.to)) {
            self.in_flight.push(envelope);
        }
    }

    /// A random message among those due now; one crossing a link cut meanwhile is lost.
    pub(super) fn take_due(&mut self, now_ms: i64, rng: &mut SeededRng) -> Option<Envelope> {
        let due: Vec<usize> = (0..self.in_flight.len())
            .filter(|&i| self.in_flight[i].deliver_at_ms <= now_ms)
            .collect();
        if due.is_empty() {
            return None;
        }
        let chosen = due[rng.below(due.len() as u64) as usize];
        let envelope = self.in_flight.swap_remove(chosen);
        (!self.cut.contains(&link(envelope.from, envelope.to))).then_some(envelope)
    }

    pub(super) fn drop_random(&mut self, rng: &mut SeededRng) {
        if !self.in_flight.is_empty() {
            let chosen = rng.below(self.in_flight.len() as u64) as usize;
            self.in_flight.swap_remove(chosen);
        }
    }

    pub(super) fn cut(&mut self, a: i32, b: i32) {
        self.cut.insert(link(a, b));
    }

    pub(super) fn heal(&mut self) {
        self.cut.clear();
    }
}
