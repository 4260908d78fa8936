//! Sequential requests on DVFS cores (issue 42): slow-to-fast by P-state, Pegasus, schedutil and the top speed.
//!
//! # The model (docs/dvfs.md)
//!
//! - **Cores** are `count` alike, each at one of the P-states ([`DvfsCores`]); a core in
//!   state k does s_k work-ms per ms. A request runs on one core from start to end: first
//!   come, first served onto any idle core, no migration. A request with no core waits.
//! - **Speed changes.** Per-core policies (`eetl-dvfs`, `tl-dvfs`, `s2f-dvfs`, `max`) set
//!   a busy core's state from its request's age and the thresholds
//!   ([`pstate_for_age`]); an idle core keeps its state. All-core policies (`pegasus`,
//!   `schedutil`) set one state for every core. A change takes `transition_ms`, during
//!   which the core runs at the slower of the two speeds and draws the higher power; a
//!   change asked for during one waits for it to end.
//! - **Governors** act while requests are in the system: schedutil at every arrival,
//!   completion and 4 ms tick, on the largest PELT utilization of the cores, within its
//!   rate limit; Pegasus each [`PEGASUS_PERIOD_MS`].
//! - **Control** (`eetl-dvfs`): EETL's thresholds z · t*, one per faster state, moved
//!   each epoch exactly as on asymmetric cores ([`ThresholdControl::for_dvfs`]).
//! - **Energy**: each state's busy core-ms times its busy power (dynamic plus the static
//!   share its [`tailor_core::StaticRule`] gives; idle cores are power-gated), divided by
//!   the requests; `busy_share` is per P-state.

use std::collections::VecDeque;

use tailor_core::{
    pelt, pstate_for_age, schedutil_decide, schedutil_target, workload_rngs, DvfsCores, DvfsPolicy,
    EnergySummary, Pegasus, RequestDemand, Scope, ThresholdControl, AGE_TOLERANCE_MS,
    PEGASUS_PERIOD_MS,
};

use crate::config::{SimConfig, SimError};
use crate::measure::{finish, Measurements};
use crate::report::{push_trace_point, RequestRecord, SimOutput, TracePoint};
use crate::time::{run_fluid, Fluid};

/// Times closer than this (ms) are equal.
const EPS: f64 = 1e-9;
/// schedutil's tick while the system is busy, ms (HZ = 250).
pub const SCHEDUTIL_TICK_MS: f64 = 4.0;
/// A P-state change's default latency, ms (intel_pstate reports 20 µs).
pub const DEFAULT_TRANSITION_MS: f64 = 0.020;

/// A DVFS simulation: the shared settings (whose `policy`, `cores` and `workers` are not
/// used), the cores, the policy and the speed-change costs.
#[derive(Debug, Clone)]
pub struct DvfsSimConfig {
    /// Demand, arrivals, rps, requests, seed, target, warm-up, trace, records.
    pub base: SimConfig,
    /// The cores and their P-states.
    pub cores: DvfsCores,
    /// The policy.
    pub policy: DvfsPolicy,
    /// How long a P-state change takes, ms.
    pub transition_ms: f64,
    /// schedutil's least time between changes, ms.
    pub rate_limit_ms: f64,
    /// For identifying the plant (`tailor plan eetl --pstates`): thresholds for each
    /// control epoch of this many requests, in order, the last held; overrides the
    /// policy's.
    pub open_loop: Option<(usize, Vec<Vec<f64>>)>,
}

#[derive(Debug, Clone)]
struct Req {
    index: usize,
    arrival: f64,
    start: Option<f64>,
    work: f64,
    left: f64,
}

#[derive(Debug, Clone, Default)]
struct Core {
    req: Option<usize>,
    state: usize,
    /// The state being moved to, and when the move ends.
    transition: Option<(usize, f64)>,
    /// PELT utilization, frequency-invariant.
    util: f64,
}

enum Governor {
    None,
    Schedutil { last_change: f64 },
    Pegasus(Pegasus),
}

struct Sim<'a> {
    cfg: &'a DvfsSimConfig,
    now: f64,
    cores: Vec<Core>,
    reqs: Vec<Req>,
    free_slots: Vec<usize>,
    waiting: VecDeque<usize>,
    in_system: usize,
    control: Option<ThresholdControl>,
    governor: Governor,
    chip_state: usize,
    next_tick: f64,
    busy_ms: Vec<f64>,
    transitions: u64,
    m: Measurements,
    trace: Vec<TracePoint>,
}

/// Runs a DVFS simulation.
pub fn simulate_dvfs(cfg: &DvfsSimConfig) -> Result<SimOutput, SimError> {
    let base = &cfg.base;
    SimConfig {
        capacity: Some(cfg.cores.capacity()),
        ..base.clone()
    }
    .validate()?;
    let bad = |name: &'static str, reason: String| SimError::BadArgument { name, reason };
    for (name, v) in [
        ("--transition", cfg.transition_ms),
        ("--rate-limit", cfg.rate_limit_ms),
    ] {
        if !(v.is_finite() && (0.0..=1000.0).contains(&v)) {
            return Err(bad(name, format!("must be 0 to 1 s, found {} us", v * 1e3)));
        }
    }
    if cfg.cores.count == 0 {
        return Err(bad("--cores", "needs at least one core".into()));
    }
    let n_states = cfg.cores.pstates.states().len();
    if let DvfsPolicy::Fixed(t) = &cfg.policy {
        if t.len() + 1 != n_states {
            return Err(bad(
                "--policy",
                format!(
                    "{} has {} thresholds, but {n_states} P-states need {}",
                    cfg.policy.name(),
                    t.len(),
                    n_states - 1
                ),
            ));
        }
    }
    let control = match cfg.policy.thresholds_policy() {
        Some(p) => ThresholdControl::for_dvfs(&p, &cfg.cores, cfg.open_loop.clone())
            .map_err(|e| bad("--policy", e))?,
        None => None,
    };
    let governor = match &cfg.policy {
        DvfsPolicy::Schedutil => Governor::Schedutil {
            last_change: f64::NEG_INFINITY,
        },
        DvfsPolicy::Pegasus(t) => Governor::Pegasus(Pegasus::new(*t, &cfg.cores.pstates)),
        _ => Governor::None,
    };
    // Cores start where the policy puts a new request (Pegasus at full power,
    // schedutil at no utilization).
    let start = match &cfg.policy {
        DvfsPolicy::Max | DvfsPolicy::TlDvfs | DvfsPolicy::Pegasus(_) => n_states - 1,
        _ => 0,
    };
    let count = base.request_count();
    let (arrival_rng, mut demand_rng) = workload_rngs(base.seed);
    let arrivals = base.arrivals.stream(base.rps, count, arrival_rng)?;
    let mut sim = Sim {
        cfg,
        now: 0.0,
        cores: vec![
            Core {
                state: start,
                ..Core::default()
            };
            cfg.cores.count
        ],
        reqs: Vec::new(),
        free_slots: Vec::new(),
        waiting: VecDeque::new(),
        in_system: 0,
        control,
        governor,
        chip_state: start,
        next_tick: f64::NEG_INFINITY,
        busy_ms: vec![0.0; n_states],
        transitions: 0,
        m: Measurements::with_max_degree(base, 1),
        trace: Vec::new(),
    };
    run_fluid(&mut sim, arrivals, &base.demand, &mut demand_rng, EPS);
    let completed = sim.m.completed.max(1) as f64;
    let chip = &cfg.cores;
    let energy = chip.energy(&sim.busy_ms);
    let dynamic: f64 = sim
        .busy_ms
        .iter()
        .zip(chip.pstates.states())
        .map(|(b, s)| b * s.power)
        .sum();
    let busy: f64 = sim.busy_ms.iter().sum();
    let baseline = chip.busy_power(0) * base.demand.mean_work_ms() / chip.pstates.states()[0].speed;
    let epochs = sim
        .control
        .take()
        .map(ThresholdControl::into_epochs)
        .unwrap_or_default();
    let busy_share = sim
        .busy_ms
        .iter()
        .map(|b| if busy > 0.0 { b / busy } else { 0.0 })
        .collect();
    let transitions = sim.transitions as f64 / completed;
    let mut out = finish(base, sim.m, sim.trace);
    let s = &mut out.summary;
    s.policy = cfg.policy.name();
    s.cores = chip.count;
    s.mean_threads = s.cpu_utilization * chip.count as f64;
    s.energy = Some(EnergySummary {
        per_request: energy / completed,
        normalized: if baseline > 0.0 {
            energy / completed / baseline
        } else {
            0.0
        },
        baseline: "the mean request run alone in the slowest P-state".into(),
        dynamic_per_request: dynamic / completed,
        busy_share,
    });
    s.transitions_per_request = Some(transitions);
    s.epochs = epochs;
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
        self.end_transitions();
        self.complete_done();
    }

    fn on_arrival(&mut self, index: usize, arrival: f64, demand: RequestDemand) {
        if let Some(c) = &mut self.control {
            c.on_arrival(arrival);
        }
        let req = Req {
            index,
            arrival,
            start: None,
            work: demand.work_ms,
            left: demand.work_ms,
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.reqs[s] = req;
                s
            }
            None => {
                self.reqs.push(req);
                self.reqs.len() - 1
            }
        };
        self.waiting.push_back(slot);
        self.in_system += 1;
    }

    fn after_event(&mut self) {
        self.place();
        self.govern();
        self.set_states();
        self.record_trace();
    }
}

impl Sim<'_> {
    /// The speed a core runs at now: the slower of the two during a change.
    fn speed(&self, c: usize) -> f64 {
        let states = self.cfg.cores.pstates.states();
        let core = &self.cores[c];
        let s = states[core.state].speed;
        core.transition.map_or(s, |(to, _)| s.min(states[to].speed))
    }

    /// The state whose power a core draws now: the higher of the two during a change.
    fn power_state(&self, c: usize) -> usize {
        let core = &self.cores[c];
        core.transition
            .map_or(core.state, |(to, _)| core.state.max(to))
    }

    fn next_change(&self) -> Option<f64> {
        let mut next: Option<f64> = None;
        let mut consider = |t: f64| next = Some(next.map_or(t, |n: f64| n.min(t)));
        for (c, core) in self.cores.iter().enumerate() {
            if let Some(slot) = core.req {
                consider(self.now + self.reqs[slot].left / self.speed(c));
            }
            if let Some((_, done)) = core.transition {
                consider(done);
            }
        }
        if self.cfg.policy.scope() == Scope::PerCore {
            if let Some(th) = self.control.as_ref().map(ThresholdControl::thresholds) {
                for core in &self.cores {
                    let Some(slot) = core.req else { continue };
                    let arrival = self.reqs[slot].arrival;
                    let crossing = th
                        .iter()
                        .map(|t| arrival + t)
                        .find(|&t| t.is_finite() && t > self.now + AGE_TOLERANCE_MS);
                    if let Some(t) = crossing {
                        consider(t);
                    }
                }
            }
        }
        if self.in_system > 0 && !matches!(self.governor, Governor::None) {
            consider(self.next_tick.max(self.now));
        }
        next
    }

    fn advance(&mut self, t: f64) {
        let dt = (t - self.now).max(0.0);
        let top = self.cfg.cores.pstates.top().speed;
        for c in 0..self.cores.len() {
            let running = if let Some(slot) = self.cores[c].req {
                let s = self.speed(c);
                self.reqs[slot].left -= s * dt;
                let k = self.power_state(c);
                self.busy_ms[k] += dt;
                self.m.cpu_time += dt;
                s / top
            } else {
                0.0
            };
            let core = &mut self.cores[c];
            core.util = pelt(core.util, running, dt);
        }
        self.now = t;
    }

    fn end_transitions(&mut self) {
        for core in &mut self.cores {
            if let Some((to, done)) = core.transition {
                if done <= self.now + EPS {
                    core.state = to;
                    core.transition = None;
                }
            }
        }
    }

    fn complete_done(&mut self) {
        for c in 0..self.cores.len() {
            let Some(slot) = self.cores[c].req else {
                continue;
            };
            let left_ms = self.reqs[slot].left / self.speed(c);
            if left_ms > EPS * self.reqs[slot].work.max(1.0).max(self.now) {
                continue;
            }
            self.cores[c].req = None;
            self.complete(slot);
        }
    }

    fn complete(&mut self, slot: usize) {
        let r = &self.reqs[slot];
        let latency = self.now - r.arrival;
        self.m.file(
            r.index,
            RequestRecord {
                request: r.index + 1,
                arrival_ms: r.arrival,
                start_ms: r.start.unwrap_or(self.now),
                finish_ms: self.now,
                work_ms: r.work,
                max_degree: 1,
                mean_degree: 1.0,
                boosted: false,
            },
        );
        self.free_slots.push(slot);
        self.in_system -= 1;
        if let Some(c) = &mut self.control {
            c.on_completion(self.now, latency);
        }
        if let Governor::Pegasus(p) = &mut self.governor {
            p.on_completion(self.now, latency);
        }
    }

    /// First come, first served onto idle cores, preferring one already in (or moving
    /// to) the state the request will start in.
    fn place(&mut self) {
        while let Some(&slot) = self.waiting.front() {
            let want = self.wanted_state(self.now - self.reqs[slot].arrival);
            let idle = |c: &&Core| c.req.is_none();
            let target = |c: &Core| c.transition.map_or(c.state, |(to, _)| to);
            let Some(core) = self
                .cores
                .iter()
                .position(|c| idle(&c) && Some(target(c)) == want)
                .or_else(|| self.cores.iter().position(|c| c.req.is_none()))
            else {
                break;
            };
            self.waiting.pop_front();
            self.cores[core].req = Some(slot);
            self.reqs[slot].start = Some(self.now);
        }
    }

    /// The state a per-core policy wants for a request of this age (`None` for the
    /// all-core ones).
    fn wanted_state(&self, age_ms: f64) -> Option<usize> {
        let n = self.cfg.cores.pstates.states().len();
        match (&self.cfg.policy, &self.control) {
            (DvfsPolicy::Max, _) => Some(n - 1),
            (_, Some(c)) if self.cfg.policy.scope() == Scope::PerCore => {
                Some(pstate_for_age(age_ms, c.thresholds(), n))
            }
            _ => None,
        }
    }

    /// The all-core governors' decisions, at their ticks (schedutil also at every event).
    fn govern(&mut self) {
        let due = self.now + EPS >= self.next_tick;
        let cfg = self.cfg;
        let pstates = &cfg.cores.pstates;
        match &mut self.governor {
            Governor::None => {}
            Governor::Schedutil { last_change } => {
                let util = self.cores.iter().map(|c| c.util).fold(0.0, f64::max);
                let target = schedutil_target(pstates, util);
                let next = schedutil_decide(
                    self.chip_state,
                    target,
                    (self.now, *last_change),
                    cfg.rate_limit_ms,
                );
                if next != self.chip_state {
                    *last_change = self.now;
                    self.chip_state = next;
                }
                if due {
                    self.next_tick = self.now + SCHEDUTIL_TICK_MS;
                }
            }
            Governor::Pegasus(p) => {
                if due {
                    p.decide(self.now);
                    self.chip_state = p.state(pstates);
                    self.next_tick =
                        ((self.now / PEGASUS_PERIOD_MS).floor() + 1.0) * PEGASUS_PERIOD_MS;
                }
            }
        }
    }

    /// Starts each core's move to the state its policy wants, unless one is under way.
    fn set_states(&mut self) {
        let all_core = self.cfg.policy.scope() == Scope::AllCore;
        for c in 0..self.cores.len() {
            let want = if all_core {
                Some(self.chip_state)
            } else {
                self.cores[c]
                    .req
                    .and_then(|slot| self.wanted_state(self.now - self.reqs[slot].arrival))
            };
            let core = &mut self.cores[c];
            let Some(want) = want else { continue };
            if core.transition.is_some() || core.state == want {
                continue;
            }
            self.transitions += u64::from(core.req.is_some());
            if self.cfg.transition_ms > 0.0 {
                core.transition = Some((want, self.now + self.cfg.transition_ms));
            } else {
                core.state = want;
            }
        }
    }

    fn record_trace(&mut self) {
        if !self.cfg.base.trace {
            return;
        }
        let busy = self.cores.iter().filter(|c| c.req.is_some()).count();
        let point = TracePoint {
            time_ms: self.now,
            in_system: self.in_system,
            running: busy,
            threads: busy,
            boosted_threads: 0,
        };
        push_trace_point(&mut self.trace, point, EPS);
    }
}
