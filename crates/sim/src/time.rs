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

/// A number in `0..n` from a seeded splitmix64 stream whose state is `state` (the
/// fluid models' victim, queue and core choices).
pub(crate) fn splitmix_below(state: &mut u64, n: usize) -> usize {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut x = *state;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((x ^ (x >> 31)) % n.max(1) as u64) as usize
}

/// What a fluid model's event loop does next.
pub(crate) enum Next {
    /// Advance to this time and apply the state changes due.
    Change(f64),
    /// Advance to this time and take the next arrival.
    Arrival(f64),
}

/// The next event of a fluid model: its next state change or the next arrival,
/// whichever is first (a change within `eps` of an arrival goes first); `None` when
/// neither is left.
pub(crate) fn next_event(change: Option<f64>, arrival: Option<f64>, eps: f64) -> Option<Next> {
    match (change, arrival) {
        (None, None) => None,
        (Some(t), a) if a.is_none_or(|a| t <= a + eps) => Some(Next::Change(t)),
        (_, Some(a)) => Some(Next::Arrival(a)),
        (Some(t), None) => Some(Next::Change(t)),
    }
}
