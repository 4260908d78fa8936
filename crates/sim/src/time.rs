//! Simulated time: its own type, in milliseconds since the run began, never a wall clock.

use std::cmp::Ordering;
use std::ops::{Add, Sub};

/// A point in simulated time, in ms since the run began. Totally ordered, so it can key
/// the event queue.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SimTime(f64);

impl SimTime {
    /// The start of the run.
    pub const ZERO: SimTime = SimTime(0.0);

    /// The time `ms` after the start.
    pub fn from_ms(ms: f64) -> SimTime {
        SimTime(ms)
    }

    /// Milliseconds since the start.
    pub fn ms(self) -> f64 {
        self.0
    }
}

impl Eq for SimTime {}

impl PartialOrd for SimTime {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SimTime {
    /// Plain float comparison: simulated times are never NaN (every duration comes from
    /// validated, finite inputs), and this is cheaper than `total_cmp`.
    fn cmp(&self, other: &Self) -> Ordering {
        if self.0 < other.0 {
            Ordering::Less
        } else if self.0 > other.0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }
}

/// Later by a duration in ms.
impl Add<f64> for SimTime {
    type Output = SimTime;
    fn add(self, ms: f64) -> SimTime {
        SimTime(self.0 + ms)
    }
}

/// The duration between two times, in ms.
impl Sub for SimTime {
    type Output = f64;
    fn sub(self, earlier: SimTime) -> f64 {
        self.0 - earlier.0
    }
}
