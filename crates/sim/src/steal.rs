//! A fluid model of the work-stealing executor: steal-first, admit-first, random-admit and tail-control.
//!
//! # The model (documented in docs/tail-control.md, "Simulator")
//!
//! - **Cores.** m identical cores; each is idle or on one request. A core is never shared.
//! - **Requests.** A request of work W with serial fraction f (`amdahl:F`; 0 otherwise)
//!   is a parallel-for of (1 - f) W cut into units of `unit_ms`, followed by f W on the
//!   core that started it (the merge), as `StealRuntime::submit_job` runs a `Job`. With
//!   k cores on it, its parallel part drains at k work-ms per ms.
//! - **Stealing.** A core looking for work (Fig. 5a) first runs the pileup check if the
//!   policy has one, then gets work by the admission order: *steal* joins a request
//!   that still has more unclaimed units than cores on it, chosen as a random victim core
//!   among the cores on such requests, skipping marked ones; *admit* starts the head of
//!   the global FIFO (or, for random-admit, of its own queue, and failing that of a
//!   random other core's queue).
//! - **Leaving.** Cores never leave a request while it has units for them: when its
//!   unclaimed units drop below its cores, one core leaves (at (p - (k - 1) u) / k from
//!   now, p the parallel work left) and looks for work. This is the lazy dissolving of
//!   §4.2: marking a request only stops cores from joining it.
//! - **Processed time** is exact: the integral of the request's cores (Fig. 5's estimate
//!   without staleness). The clairvoyant variant tests the true work at admission and at
//!   every check.
//! - **Scheduling points** are when a core becomes free, and arrivals (idle cores look
//!   at once, as spinning thieves do).
//!
//! Steal overheads and the cost of the check itself are not modelled.

use std::collections::VecDeque;

use tailor_core::{workload_rngs, RequestDemand, Speedup, StealAdmission, StealPolicy};

use crate::config::{SimConfig, SimError};
use crate::measure::{finish, Measurements};
use crate::report::{RequestRecord, SimOutput, TracePoint};
use crate::time::{run_fluid, Fluid};

/// Work below this (ms) counts as done; times are compared with the same tolerance.
const EPS: f64 = 1e-9;

/// A work-stealing simulation: the shared settings (whose `policy` and `workers` are not
/// used), the work-stealing policy, and the parallel-for's grain.
#[derive(Debug, Clone)]
pub struct StealSimConfig {
    /// Cores, demand, arrivals, rps, requests, seed, target, warm-up, trace, records.
    pub base: SimConfig,
    /// The admission policy and tail-control's table.
    pub policy: StealPolicy,
    /// The length of one unit of a request's parallel-for, ms (the grain). The synthetic
    /// workload's units are 0.25 ms.
    pub unit_ms: f64,
}

#[derive(Debug, Clone)]
struct Req {
    index: usize,
    arrival: f64,
    start: f64,
    work: f64,
    /// Parallel work left, ms.
    parallel: f64,
    /// Serial work left (the merge), ms.
    serial: f64,
    /// Cores on it now.
    cores: usize,
    max_cores: usize,
    /// Core-ms spent on it.
    processed: f64,
    stealable: bool,
}

struct Sim<'a> {
    cfg: &'a StealSimConfig,
    now: f64,
    /// What each core is on: a request slot, or none.
    core: Vec<Option<usize>>,
    reqs: Vec<Req>,
    free_slots: Vec<usize>,
    fifo: VecDeque<Req>,
    inboxes: Vec<VecDeque<Req>>,
    /// Arrived and unfinished requests (the load q).
    active: usize,
    /// State of the victim and queue choices' generator.
    rng: u64,
    /// Requests serialized: marked by a check, or at admission (clairvoyant).
    serialized: u64,
    m: Measurements,
    trace: Vec<TracePoint>,
}

/// Runs a work-stealing simulation.
pub fn simulate_steal(cfg: &StealSimConfig) -> Result<SimOutput, SimError> {
    let base = &cfg.base;
    base.validate()?;
    if !(cfg.unit_ms.is_finite() && cfg.unit_ms >= 0.0) {
        return Err(SimError::BadArgument {
            name: "--unit-ms",
            reason: format!("must be zero or positive, found {}", cfg.unit_ms),
        });
    }
    let count = base.request_count();
    let (arrival_rng, mut demand_rng) = workload_rngs(base.seed);
    let arrivals = base.arrivals.stream(base.rps, count, arrival_rng)?;
    let mut sim = Sim {
        cfg,
        now: 0.0,
        core: vec![None; base.cores],
        reqs: Vec::new(),
        free_slots: Vec::new(),
        fifo: VecDeque::new(),
        inboxes: vec![VecDeque::new(); base.cores],
        active: 0,
        rng: base.seed ^ 0x5743_414C,
        serialized: 0,
        m: Measurements::with_max_degree(base, base.cores),
        trace: Vec::new(),
    };
    run_fluid(&mut sim, arrivals, &base.demand, &mut demand_rng, EPS);
    let serialized = sim.serialized;
    let mut out = finish(base, sim.m, sim.trace);
    out.summary.policy = cfg.policy.name().into();
    out.summary.serialized = Some(serialized);
    Ok(out)
}

impl Fluid for Sim<'_> {
    fn next_change(&self) -> Option<f64> {
        Sim::next_change(self)
    }

    fn advance(&mut self, t: f64) {
        Sim::advance(self, t);
    }

    fn apply_changes(&mut self) {
        self.settle();
    }

    fn on_arrival(&mut self, index: usize, arrival: f64, demand: RequestDemand) {
        let serial_fraction = match demand.speedup {
            Speedup::Amdahl { serial_fraction } => serial_fraction,
            _ => 0.0,
        };
        self.arrive(Req {
            index,
            arrival,
            start: arrival,
            work: demand.work_ms,
            parallel: (1.0 - serial_fraction) * demand.work_ms,
            serial: serial_fraction * demand.work_ms,
            cores: 0,
            max_cores: 0,
            processed: 0.0,
            stealable: true,
        });
    }

    fn after_event(&mut self) {
        self.schedule();
        self.record_trace();
    }
}

impl Sim<'_> {
    /// When the next running request changes: a core leaves, its parallel part ends, or
    /// it finishes.
    fn next_change(&self) -> Option<f64> {
        let unit = self.cfg.unit_ms;
        self.running()
            .map(|r| {
                let k = r.cores as f64;
                if r.parallel > EPS {
                    if r.cores > 1 {
                        ((r.parallel - (k - 1.0) * unit) / k).max(0.0)
                    } else {
                        r.parallel
                    }
                } else {
                    r.serial
                }
            })
            .reduce(f64::min)
            .map(|dt| self.now + dt)
    }

    fn running(&self) -> impl Iterator<Item = &Req> {
        self.reqs.iter().filter(|r| r.cores > 0)
    }

    /// Moves time to `t`: every running request progresses.
    fn advance(&mut self, t: f64) {
        let dt = (t - self.now).max(0.0);
        let mut busy = 0usize;
        for r in self.reqs.iter_mut().filter(|r| r.cores > 0) {
            busy += r.cores;
            let k = r.cores as f64;
            if r.parallel > EPS {
                r.parallel -= k * dt;
            } else {
                r.serial -= dt;
            }
            r.processed += k * dt;
        }
        self.m.cpu_time += busy as f64 * dt;
        self.m.thread_time += busy as f64 * dt;
        self.now = t;
    }

    /// Applies the changes due now: cores leave requests that ran short of units, and
    /// requests whose work is done complete.
    fn settle(&mut self) {
        let unit = self.cfg.unit_ms;
        for c in 0..self.core.len() {
            let Some(slot) = self.core[c] else { continue };
            let r = &mut self.reqs[slot];
            let done = r.parallel <= EPS && r.serial <= EPS;
            let short = r.cores > 1 && r.parallel <= (r.cores as f64 - 1.0) * unit + EPS;
            if done || short {
                r.cores -= 1;
                self.core[c] = None;
                if done && r.cores == 0 {
                    self.complete(slot);
                }
            }
        }
    }

    fn complete(&mut self, slot: usize) {
        let r = &self.reqs[slot];
        let elapsed = (self.now - r.start).max(EPS);
        let record = RequestRecord {
            request: r.index + 1,
            arrival_ms: r.arrival,
            start_ms: r.start,
            finish_ms: self.now,
            work_ms: r.work,
            max_degree: r.max_cores.max(1),
            mean_degree: if r.work > 0.0 {
                (r.processed / elapsed).max(1.0)
            } else {
                1.0
            },
            boosted: false,
        };
        self.m.file(r.index, record);
        self.active -= 1;
        self.free_slots.push(slot);
    }

    fn arrive(&mut self, req: Req) {
        self.active += 1;
        match self.cfg.policy.admission() {
            StealAdmission::RandomAdmit => {
                let c = self.random(self.core.len());
                self.inboxes[c].push_back(req);
            }
            _ => self.fifo.push_back(req),
        }
    }

    /// Every idle core, in a random order, looks for work until none finds any.
    fn schedule(&mut self) {
        let n = self.core.len();
        let first = self.random(n);
        let mut found = true;
        while found {
            found = false;
            for i in 0..n {
                let c = (first + i) % n;
                if self.core[c].is_none() && self.find_work(c) {
                    found = true;
                }
            }
        }
    }

    /// Fig. 5a lines 23-30 for idle core `c`; returns whether it found work.
    fn find_work(&mut self, c: usize) -> bool {
        self.check_pileup_phase();
        match self.cfg.policy.admission() {
            StealAdmission::StealFirst => self.steal(c) || self.admit_from_fifo(c),
            StealAdmission::AdmitFirst => self.admit_from_fifo(c) || self.steal(c),
            StealAdmission::RandomAdmit => {
                self.admit_from_inbox(c, c) || self.steal(c) || {
                    let n = self.core.len();
                    let first = self.random(n);
                    (0..n)
                        .map(|i| (first + i) % n)
                        .any(|v| v != c && self.admit_from_inbox(v, c))
                }
            }
        }
    }

    fn check_pileup_phase(&mut self) {
        let policy = &self.cfg.policy;
        if !policy.checks_pileup() {
            return;
        }
        let active = self.active;
        let serialized = &mut self.serialized;
        for r in self.reqs.iter_mut().filter(|r| r.cores > 0 && r.stealable) {
            if policy.serializes(active, r.processed, Some(r.work)) {
                r.stealable = false;
                *serialized += 1;
            }
        }
    }

    /// Joins a random victim core's request, among cores on stealable requests that
    /// have more unclaimed units than cores.
    fn steal(&mut self, c: usize) -> bool {
        let unit = self.cfg.unit_ms;
        let joinable = |r: &Req| {
            r.stealable
                && r.parallel > EPS
                && (unit <= 0.0 || r.parallel > r.cores as f64 * unit + EPS)
        };
        let victims: Vec<usize> = (0..self.core.len())
            .filter(|&v| self.core[v].is_some_and(|s| joinable(&self.reqs[s])))
            .collect();
        if victims.is_empty() {
            return false;
        }
        let pick = self.random(victims.len());
        let slot = self.core[victims[pick]].expect("a victim is busy");
        let r = &mut self.reqs[slot];
        r.cores += 1;
        r.max_cores = r.max_cores.max(r.cores);
        self.core[c] = Some(slot);
        true
    }

    fn admit_from_fifo(&mut self, c: usize) -> bool {
        match self.fifo.pop_front() {
            Some(req) => {
                self.start(c, req);
                true
            }
            None => false,
        }
    }

    fn admit_from_inbox(&mut self, from: usize, c: usize) -> bool {
        match self.inboxes[from].pop_front() {
            Some(req) => {
                self.start(c, req);
                true
            }
            None => false,
        }
    }

    /// Core `c` starts `req` (its root). The clairvoyant variant serializes a large
    /// request from the start.
    fn start(&mut self, c: usize, mut req: Req) {
        req.start = self.now;
        req.cores = 1;
        req.max_cores = 1;
        let policy = &self.cfg.policy;
        req.stealable =
            !(policy.is_clairvoyant() && policy.serializes(self.active, 0.0, Some(req.work)));
        if !req.stealable {
            self.serialized += 1;
        }
        if req.parallel <= EPS && req.serial <= EPS {
            // No work: it completes at once.
            req.cores = 0;
            let slot = self.store(req);
            self.complete(slot);
            return;
        }
        let slot = self.store(req);
        self.core[c] = Some(slot);
    }

    fn store(&mut self, req: Req) -> usize {
        match self.free_slots.pop() {
            Some(slot) => {
                self.reqs[slot] = req;
                slot
            }
            None => {
                self.reqs.push(req);
                self.reqs.len() - 1
            }
        }
    }

    fn random(&mut self, n: usize) -> usize {
        tailor_core::splitmix_below(&mut self.rng, n)
    }

    fn record_trace(&mut self) {
        if !self.cfg.base.trace {
            return;
        }
        let busy = self.core.iter().filter(|c| c.is_some()).count();
        let point = TracePoint {
            time_ms: self.now,
            in_system: self.active,
            running: self.running().count(),
            threads: busy,
            boosted_threads: 0,
        };
        match self.trace.last_mut() {
            Some(last) if (last.time_ms - point.time_ms).abs() <= EPS => *last = point,
            _ => self.trace.push(point),
        }
    }
}
