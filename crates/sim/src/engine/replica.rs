//! One server of a fan-out simulation: the general engine driven from outside, its
//! requests injected, cancelled and collected by a front end, and stalled at times.

use tailor_core::RequestDemand;

use super::{Engine, State, Step};
use crate::config::SimConfig;
use crate::measure::Measurements;
use crate::time::SimTime;

/// A request on a replica: its slot, and its tag so that a slot reused by a later request
/// is never cancelled in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    slot: usize,
    tag: usize,
}

/// A simulated server: `cfg`'s cores, policy and thread model. Its own arrivals and demand
/// are not used; its front end injects every request. Calls come in time order.
pub(crate) struct Replica<'c> {
    engine: Engine<'c>,
}

impl<'c> Replica<'c> {
    pub(crate) fn new(cfg: &'c SimConfig) -> Self {
        let mut engine = Engine::new(
            cfg,
            None,
            tailor_core::seeded_rng(0),
            Measurements::default(),
        );
        engine.finished = Some(Vec::new());
        Replica { engine }
    }

    /// When it next changes by itself: a completion or a self-scheduling point.
    pub(crate) fn next_time(&mut self) -> Option<SimTime> {
        self.engine.next_step().map(Step::time)
    }

    /// Takes its next step of its own; requests it completes go to `done` as (tag,
    /// finish).
    pub(crate) fn step(&mut self, done: &mut Vec<(usize, SimTime)>) {
        if let Some(step) = self.engine.next_step() {
            self.engine.take(step);
            self.engine.settle();
        }
        done.append(self.engine.finished.as_mut().expect("a replica collects"));
    }

    /// Request `tag` arrives at `t` with demand `d`.
    pub(crate) fn inject(&mut self, t: SimTime, tag: usize, d: RequestDemand) -> Ticket {
        let e = &mut self.engine;
        e.advance(t);
        let slot = e.admit_slot(tag, t, d);
        e.arrive(slot);
        e.settle();
        Ticket { slot, tag }
    }

    /// Cancels a request at `t` unless it has finished; whether it was still there. A
    /// running request frees its threads at once (it stops at its next unit boundary,
    /// which the model does not resolve).
    pub(crate) fn cancel(&mut self, t: SimTime, ticket: Ticket) -> bool {
        let e = &mut self.engine;
        let slot = ticket.slot;
        let (index, state, boosted) = {
            let r = &e.reqs[slot];
            (r.index, r.state, r.boosted)
        };
        if index != ticket.tag {
            return false;
        }
        match state {
            State::Done | State::Cancelled => return false,
            State::Running => {
                e.advance(t);
                // Its completion-heap entry goes stale with the version `stop_running` bumps.
                e.classes[usize::from(boosted)].stale += 1;
                e.stop_running(slot);
                e.vacate(slot);
            }
            State::Waiting => {
                e.advance(t);
                e.load -= 1;
                if let Some(at) = e.queue.iter().position(|&id| id == slot) {
                    e.queue.remove(at);
                    e.reqs[slot].state = State::Done;
                    e.free.push(slot);
                } else {
                    // Waiting out an FM admission delay: its event frees the slot.
                    e.reqs[slot].state = State::Cancelled;
                }
                e.load_changed();
            }
        }
        e.settle();
        true
    }

    /// Stalls it from `t` to `until`: its requests make no progress meanwhile, as when a
    /// server pauses for garbage collection or a noisy neighbour.
    pub(crate) fn stall(&mut self, t: SimTime, until: SimTime) {
        let e = &mut self.engine;
        e.advance(t);
        e.frozen_until = e.frozen_until.max(until);
    }

    /// CPU time its requests have used, in core x ms.
    pub(crate) fn cpu_time(&self) -> f64 {
        self.engine.measured.cpu_time
    }

    /// Thread time its requests have had, in thread x ms.
    pub(crate) fn thread_time(&self) -> f64 {
        self.engine.measured.thread_time
    }
}
