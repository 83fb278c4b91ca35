//! Which windows an event time falls in.

use datafusion::common::{plan_err, Result};

/// The most windows one row may fall in (`size / slide` of a hopping window): bounds the work
/// and state one record can cause.
pub const MAX_WINDOWS_PER_ROW: i64 = 1000;

/// The windows a query groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// Tumbling or hopping: fixed bounds, known from a record's time alone.
    Fixed(WindowSpec),
    /// Sessions of a key, ending `gap_ms` after their last record (`crate::aggregate::session`).
    Session { gap_ms: i64 },
    /// No window: an updating aggregate, each group's current values re-emitted whenever they
    /// change (`crate::aggregate::updates`).
    Updating,
}

impl Windows {
    pub fn session(gap_ms: i64) -> Result<Self> {
        if gap_ms <= 0 {
            return plan_err!("a session gap must be positive");
        }
        Ok(Windows::Session { gap_ms })
    }
}

/// Windows aligned to the Unix epoch: `[start, start + size)`, starting every `slide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSpec {
    pub size_ms: i64,
    pub slide_ms: i64,
}

impl WindowSpec {
    /// Back-to-back windows of `size_ms`.
    pub fn tumble(size_ms: i64) -> Result<Self> {
        Self::hop(size_ms, size_ms)
    }

    /// Windows of `size_ms` starting every `slide_ms` (a row falls in `size / slide` of them).
    pub fn hop(slide_ms: i64, size_ms: i64) -> Result<Self> {
        if slide_ms <= 0 || size_ms <= 0 {
            return plan_err!("window size and slide must be positive");
        }
        if slide_ms > size_ms {
            return plan_err!(
                "a hopping window's slide ({slide_ms} ms) cannot exceed its size ({size_ms} ms)"
            );
        }
        if size_ms / slide_ms > MAX_WINDOWS_PER_ROW {
            return plan_err!(
                "a hopping window of {size_ms} ms sliding by {slide_ms} ms puts each row in more \
                 than {MAX_WINDOWS_PER_ROW} windows"
            );
        }
        Ok(WindowSpec { size_ms, slide_ms })
    }

    /// The start of the latest window holding `time_ms`.
    pub fn last_start(&self, time_ms: i64) -> i64 {
        time_ms - time_ms.rem_euclid(self.slide_ms)
    }

    /// The starts of every window holding `time_ms`, oldest first.
    pub fn starts(&self, time_ms: i64) -> impl Iterator<Item = i64> {
        let last = self.last_start(time_ms);
        let slide = self.slide_ms;
        // Windows starting after `time_ms - size` hold it.
        let count = (self.size_ms - 1 - (time_ms - last)) / slide + 1;
        let first = last - (count - 1) * slide;
        (0..count).map(move |i| first + i * slide)
    }

    /// Where the window starting at `start_ms` ends (exclusive).
    pub fn end(&self, start_ms: i64) -> i64 {
        start_ms.saturating_add(self.size_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(spec: WindowSpec, time: i64) -> Vec<i64> {
        spec.starts(time).collect()
    }

    #[test]
    fn tumbling_windows_hold_each_time_once() {
        let spec = WindowSpec::tumble(60_000).unwrap();
        assert_eq!(starts(spec, 0), [0]);
        assert_eq!(starts(spec, 59_999), [0]);
        assert_eq!(starts(spec, 60_000), [60_000]);
        assert_eq!(starts(spec, -1), [-60_000]);
    }

    #[test]
    fn hopping_windows_hold_each_time_size_over_slide_times() {
        let spec = WindowSpec::hop(10, 30).unwrap();
        assert_eq!(starts(spec, 25), [0, 10, 20]);
        assert_eq!(starts(spec, 30), [10, 20, 30]);
        assert_eq!(starts(spec, 29), [0, 10, 20]);
        // A size that is not a multiple of the slide.
        let spec = WindowSpec::hop(10, 25).unwrap();
        assert_eq!(starts(spec, 24), [0, 10, 20]);
        assert_eq!(starts(spec, 25), [10, 20]);
        for time in -100..100 {
            for start in starts(spec, time) {
                assert!(start <= time && time < spec.end(start), "{time} in {start}");
            }
        }
    }

    #[test]
    fn bad_windows_are_refused() {
        assert!(WindowSpec::hop(20, 10).is_err());
        assert!(WindowSpec::hop(0, 10).is_err());
        assert!(WindowSpec::hop(1, 10_000).is_err());
    }
}
