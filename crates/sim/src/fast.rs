//! A dedicated loop for runs in which no core is ever shared.
//!
//! When the policy never changes a degree (no self-scheduling, so no boosting either) and
//! its highest degree times the worker pool fits in the cores, every thread always has a
//! core to itself. A request's completion time is then fixed when it starts: its work
//! over s(d). This loop computes exactly what the general engine computes for such runs
//! (the tests check that both give the same results) with a plain first-come,
//! first-served multi-server queue, without weight classes or virtual clocks. SEQ with one
//! worker per core, the M/M/m setting, is the common case.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use tailor_core::{ArrivalStream, RequestDemand};

use crate::config::SimConfig;
use crate::engine::TIE_MS;
use crate::measure::Measurements;
use crate::report::RequestRecord;

/// Whether the dedicated loop gives the same run as the general engine for `cfg`.
pub(crate) fn applies(cfg: &SimConfig) -> bool {
    cfg.fast_path
        && !cfg.trace
        && !cfg.policy.self_schedules()
        && cfg.policy.uses_worker_pool()
        && cfg.policy.max_degree().saturating_mul(cfg.worker_count()) <= cfg.cores
}

/// A request between arrival and completion.
struct Slot {
    index: usize,
    arrival: f64,
    start: f64,
    finish: f64,
    degree: usize,
    demand: RequestDemand,
}

/// Runs the requests arriving at `arrivals` and returns their measurements.
pub(crate) fn run(
    cfg: &SimConfig,
    mut arrivals: ArrivalStream,
    mut demand_rng: tailor_core::Rng,
) -> Measurements {
    let mut m = Measurements::new(cfg);
    let workers = cfg.worker_count();
    // Capacities grow with use; a huge pool must not reserve memory up front.
    let mut slots: Vec<Slot> = Vec::with_capacity(workers.min(1024));
    let mut free: Vec<usize> = Vec::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    // Running requests by (finish time, slot), packed into one integer: ties go to the
    // lower slot.
    let mut running: BinaryHeap<Reverse<u128>> = BinaryHeap::with_capacity(workers.min(1024));
    let mut load = 0usize;
    let mut next = 0usize;
    let mut upcoming = arrivals.next();
    loop {
        let completion = running.peek().map(|Reverse(key)| unpack(*key).0);
        let arrival = upcoming;
        // Completions before arrivals at equal times (within TIE_MS), as in the
        // general engine.
        let complete_first = match (completion, arrival) {
            (Some(c), Some(a)) => c <= a + TIE_MS,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if complete_first {
            let Reverse(key) = running.pop().expect("peeked");
            let (now, id) = unpack(key);
            debug_assert_eq!(now, slots[id].finish);
            let s = &slots[id];
            m.file(
                s.index,
                RequestRecord {
                    request: s.index + 1,
                    arrival_ms: s.arrival,
                    start_ms: s.start,
                    finish_ms: now,
                    work_ms: s.demand.work_ms,
                    max_degree: s.degree,
                    mean_degree: s.degree as f64,
                    boosted: false,
                },
            );
            free.push(id);
            load -= 1;
            if let Some(waiting) = queue.pop_front() {
                let finish = start(cfg, &mut slots[waiting], now, load, &mut m);
                running.push(Reverse(pack(finish, waiting)));
            }
        } else {
            let now = arrival.expect("present");
            upcoming = arrivals.next();
            let demand = cfg.demand.sample(&mut demand_rng);
            let slot = Slot {
                index: next,
                arrival: now,
                start: 0.0,
                finish: 0.0,
                degree: 0,
                demand,
            };
            next += 1;
            let id = match free.pop() {
                Some(id) => {
                    slots[id] = slot;
                    id
                }
                None => {
                    slots.push(slot);
                    slots.len() - 1
                }
            };
            load += 1;
            if running.len() < workers {
                let finish = start(cfg, &mut slots[id], now, load, &mut m);
                running.push(Reverse(pack(finish, id)));
            } else {
                queue.push_back(id);
            }
        }
    }
    m
}

/// Starts a request at `now`: its degree from the policy, its threads' CPU in the totals.
/// Returns when it will finish.
fn start(cfg: &SimConfig, s: &mut Slot, now: f64, load: usize, m: &mut Measurements) -> f64 {
    s.start = now;
    s.degree = cfg.policy.start_degree(load, s.demand.work_ms);
    let busy = s.demand.work_ms / s.demand.speedup.at(s.degree);
    m.thread_time += s.degree as f64 * busy;
    m.cpu_time += s.degree as f64 * busy;
    s.finish = now + busy;
    s.finish
}

/// Packs a finish time and a slot into one key whose integer order is (time, slot) order:
/// for non-negative finite floats, the bit patterns increase with the values, and every
/// simulated time is non-negative and finite.
fn pack(finish_ms: f64, slot: usize) -> u128 {
    debug_assert!(finish_ms >= 0.0 && finish_ms.is_finite());
    (u128::from(finish_ms.to_bits()) << 64) | slot as u128
}

fn unpack(key: u128) -> (f64, usize) {
    (f64::from_bits((key >> 64) as u64), key as u64 as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_keys_order_by_time_then_slot() {
        let keys = [
            pack(0.0, 3),
            pack(0.0, 7),
            pack(1e-300, 0),
            pack(0.5, 2),
            pack(1.5, 1),
            pack(1e12, 0),
        ];
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(unpack(pack(42.25, 9)), (42.25, 9));
    }
}
