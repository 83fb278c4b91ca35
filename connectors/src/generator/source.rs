//! The generator as a source: lines `next..`, paced when a rate is set.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::config::GeneratorSourceConfig;
use super::lines::AccessLogGenerator;
use crate::error::ConnectorError;
use crate::source::{PositionUpdate, Source, SourceRecord};

const POSITION_KEY: &str = "generator";

pub struct GeneratorSource {
    generator: AccessLogGenerator,
    count: Option<u64>,
    lines_per_second: Option<u64>,
    next: u64,
    moved: bool,
    started: Instant,
    first_of_run: u64,
}

impl GeneratorSource {
    pub fn new(config: GeneratorSourceConfig) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        Ok(GeneratorSource {
            generator: AccessLogGenerator {
                format: config.format,
                seed: config.seed,
                start_time_ms: config.start_time_ms,
                line_interval_ms: config.line_interval_ms,
                bad_line_every: config.bad_line_every,
            },
            count: config.count,
            lines_per_second: config.lines_per_second,
            next: 0,
            moved: false,
            started: Instant::now(),
            first_of_run: 0,
        })
    }

    /// How many lines may be made now without going over the rate.
    fn allowed(&self, wanted: u64) -> u64 {
        let remaining = self
            .count
            .map_or(wanted, |count| count.saturating_sub(self.next).min(wanted));
        match self.lines_per_second {
            None => remaining,
            Some(rate) => {
                let due = (self.started.elapsed().as_secs_f64() * rate as f64) as u64;
                remaining.min(due.saturating_sub(self.next - self.first_of_run))
            }
        }
    }
}

impl Source for GeneratorSource {
    fn restore(&mut self, positions: &HashMap<String, Vec<u8>>) -> Result<(), ConnectorError> {
        if let Some(value) = positions.get(POSITION_KEY) {
            let text = String::from_utf8_lossy(value);
            self.next = text.trim().parse().map_err(|_| ConnectorError::Position {
                key: POSITION_KEY.into(),
                reason: format!("'{text}' is not a line number"),
            })?;
        }
        self.first_of_run = self.next;
        self.started = Instant::now();
        Ok(())
    }

    fn poll(
        &mut self,
        max_records: usize,
        wait: Duration,
        out: &mut Vec<SourceRecord>,
    ) -> Result<(), ConnectorError> {
        let deadline = Instant::now() + wait;
        loop {
            let allowed = self.allowed(max_records as u64);
            if allowed > 0 {
                for _ in 0..allowed {
                    out.push(SourceRecord::value(
                        self.generator.line(self.next).into_bytes(),
                    ));
                    self.next += 1;
                }
                self.moved = true;
                return Ok(());
            }
            if self.finished() || Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(
                Duration::from_millis(5).min(deadline.saturating_duration_since(Instant::now())),
            );
        }
    }

    fn take_positions(&mut self) -> Result<Vec<PositionUpdate>, ConnectorError> {
        if !std::mem::take(&mut self.moved) {
            return Ok(Vec::new());
        }
        Ok(vec![PositionUpdate {
            key: POSITION_KEY.into(),
            value: Some(self.next.to_string().into_bytes()),
        }])
    }

    fn finished(&self) -> bool {
        self.count.is_some_and(|count| self.next >= count)
    }
}
