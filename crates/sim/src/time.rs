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

/// A fluid model the event loop of [`run_fluid`] drives: the work-stealing model
/// (`steal.rs`) and the heterogeneous-core model (`hetero.rs`).
pub(crate) trait Fluid {
    /// When the running requests next change (a core leaves, work ends), if ever.
    fn next_change(&self) -> Option<f64>;
    /// Moves time to `t`, every running request progressing.
    fn advance(&mut self, t: f64);
    /// Applies the changes due now.
    fn apply_changes(&mut self);
    /// Request `index` arrives at `arrival` with `demand`.
    fn on_arrival(&mut self, index: usize, arrival: f64, demand: tailor_core::RequestDemand);
    /// After every event: the policy's decisions, and the trace.
    fn after_event(&mut self);
}

/// Runs `sim` until every arrival has come and every request has finished: the next
/// state change or the next arrival, whichever is first (a change within `eps` of an
/// arrival goes first), each arrival's demand drawn in arrival order from `demand_rng`.
pub(crate) fn run_fluid(
    sim: &mut impl Fluid,
    arrivals: impl Iterator<Item = f64>,
    demand: &tailor_core::DemandModel,
    demand_rng: &mut tailor_core::Rng,
    eps: f64,
) {
    let mut upcoming = arrivals.enumerate().peekable();
    loop {
        let next_arrival = upcoming.peek().map(|&(_, t)| t);
        let change_first = match (sim.next_change(), next_arrival) {
            (None, None) => break,
            (Some(t), a) => a.is_none_or(|a| t <= a + eps),
            (None, Some(_)) => false,
        };
        if change_first {
            let t = sim.next_change().expect("a change is next");
            sim.advance(t);
            sim.apply_changes();
        } else {
            let (index, arrival) = upcoming.next().expect("an arrival is next");
            sim.advance(arrival);
            sim.on_arrival(index, arrival, demand.sample(demand_rng));
        }
        sim.after_event();
    }
}
