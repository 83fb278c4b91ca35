//! Rates over Kafka's sample windows and the throttle a request earns over its quota.
//!
//! As Kafka's `Rate` does: the rate is what was recorded in the last `samples` windows of
//! `window_ms`, divided by the time they span (at least `samples - 1` whole windows, so that a
//! first burst is not measured over a few milliseconds). Over the quota, the throttle is the time
//! the recorded amount needs to fall back to it: `(rate - quota) / quota × span`
//! (`QuotaUtils.throttleTime`), at most `samples × window_ms`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::entity::QuotaKey;

/// Whose rate is measured: the user and client id of the quota's entity that applies (a default
/// quota applies to each user or client id on its own, as Kafka's does).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SensorKey {
    pub user: Option<String>,
    pub client_id: Option<String>,
    pub key: QuotaKey,
}

/// Every sensor of a broker.
pub struct QuotaSensors {
    window_ms: i64,
    samples: usize,
    rates: Mutex<HashMap<SensorKey, Rate>>,
}

/// Recorded amounts per window: (window start, amount), oldest first.
#[derive(Default)]
struct Rate {
    windows: VecDeque<(i64, f64)>,
}

/// Bound on sensors kept: beyond it, the idlest are forgotten (a client id per request cannot
/// grow the map without bound).
const MOST_SENSORS: usize = 100_000;

impl QuotaSensors {
    /// `quota.window.num` windows of `quota.window.size.seconds` (Kafka: 11 of 1 s).
    pub fn new(window_ms: i64, samples: usize) -> QuotaSensors {
        QuotaSensors {
            window_ms: window_ms.max(1),
            samples: samples.max(2),
            rates: Mutex::new(HashMap::new()),
        }
    }

    /// Records `amount` for `sensor` at `now_ms`; the throttle in ms when the rate is now over
    /// `quota` (per second), else 0.
    pub fn record(&self, sensor: SensorKey, amount: f64, quota: f64, now_ms: i64) -> u64 {
        let mut rates = self.rates.lock().unwrap_or_else(|p| p.into_inner());
        if rates.len() >= MOST_SENSORS && !rates.contains_key(&sensor) {
            let span = self.window_ms * self.samples as i64;
            rates.retain(|_, rate| {
                rate.windows
                    .back()
                    .is_some_and(|(start, _)| now_ms - start < span)
            });
        }
        let rate = rates.entry(sensor).or_default();
        rate.record(amount, now_ms, self.window_ms, self.samples);
        let (total, span_ms) = rate.total_and_span(now_ms, self.window_ms, self.samples);
        let per_second = total * 1000.0 / span_ms as f64;
        if per_second <= quota || quota <= 0.0 {
            return 0;
        }
        let throttle = (per_second - quota) / quota * span_ms as f64;
        (throttle.round() as u64).min((self.window_ms * self.samples as i64) as u64)
    }
}

impl Rate {
    fn record(&mut self, amount: f64, now_ms: i64, window_ms: i64, samples: usize) {
        while self
            .windows
            .front()
            .is_some_and(|(start, _)| now_ms - start >= window_ms * samples as i64)
        {
            self.windows.pop_front();
        }
        match self.windows.back_mut() {
            Some((start, total)) if now_ms - *start < window_ms => *total += amount,
            _ => {
                self.windows.push_back((now_ms, amount));
                if self.windows.len() > samples {
                    self.windows.pop_front();
                }
            }
        }
    }

    /// What the windows hold and the time they span (at least `samples - 1` whole windows).
    fn total_and_span(&self, now_ms: i64, window_ms: i64, samples: usize) -> (f64, i64) {
        let total = self.windows.iter().map(|(_, amount)| amount).sum();
        let oldest = self.windows.front().map_or(now_ms, |(start, _)| *start);
        let span = (now_ms - oldest).max(window_ms * (samples as i64 - 1));
        (total, span.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sensor() -> SensorKey {
        SensorKey {
            user: None,
            client_id: Some("app".into()),
            key: QuotaKey::ProducerByteRate,
        }
    }

    #[test]
    fn within_the_quota_nothing_is_throttled_and_over_it_the_wait_brings_the_rate_back() {
        let sensors = QuotaSensors::new(1000, 11);
        // 1,000 bytes/s allowed: 10,000 bytes over the first 10 s (the minimum span) is exactly it.
        assert_eq!(sensors.record(sensor(), 10_000.0, 1000.0, 0), 0);
        // 5,000 more: 15,000 over 10 s is 1,500/s, half over: 5 s of throttle.
        assert_eq!(sensors.record(sensor(), 5_000.0, 1000.0, 100), 5_000);
        // After that wait, the same client within its quota again.
        assert_eq!(sensors.record(sensor(), 0.0, 1000.0, 15_100), 0);
    }

    #[test]
    fn old_windows_are_forgotten_and_the_throttle_is_bounded() {
        let sensors = QuotaSensors::new(1000, 11);
        assert_eq!(
            sensors.record(sensor(), 1e9, 1000.0, 0),
            11_000,
            "at most 11 windows"
        );
        // 11 windows later the burst no longer counts.
        assert_eq!(sensors.record(sensor(), 10.0, 1000.0, 11_000), 0);
        let other = SensorKey {
            client_id: Some("other".into()),
            ..sensor()
        };
        assert_eq!(
            sensors.record(other, 10.0, 1000.0, 11_000),
            0,
            "sensors are separate"
        );
    }
}
