//! Sequential requests on heterogeneous cores: Adaptive Slow-to-Fast (EETL, RTL, EE), Oblivious, RC, fixed thresholds and Reactive.
//!
//! # The model (docs/as2f.md)
//!
//! - **Cores** come in types of speed s and peak dynamic power p ([`CoreSet`]). A request
//!   runs on one core at a time and does s work-ms per ms there; work is in ms on a
//!   speed-1 core. A core runs one request; a request with no core waits (Algorithm 2's
//!   low priority: it gets no cycles while every core is busy).
//! - **Placement** is [`as2f_moves`] for the threshold policies, asked at every arrival,
//!   completion and threshold crossing, so self-scheduling has no period here (the
//!   dissertation's requests check periodically). A migration costs nothing.
//! - **Age** is time since arrival, for both ordering and thresholds.
//! - **Control** (EETL, Reactive): every `window` completions the p99 of the last
//!   `window` completed requests and the load estimate (arrivals since the last epoch over
//!   its length) go to the controller, which sets the thresholds for the next epoch.
//! - **Energy**: each type's busy core-ms times its busy power (dynamic plus an equal
//!   share of the chip's static power; idle cores are power-gated), divided by the
//!   requests ([`CoreSet::energy`]).

use tailor_core::{
    as2f_moves, oblivious_moves, rc_moves, workload_rngs, CoreSet, EnergySummary, HeteroPolicy,
    Placed, RcRequest, RequestDemand, ThresholdControl, AGE_TOLERANCE_MS,
};

use crate::config::{SimConfig, SimError};
use crate::measure::{finish, Measurements};
use crate::report::{push_trace_point, RequestRecord, SimOutput, TracePoint};
use crate::time::{run_fluid, Fluid};

/// Times closer than this (ms) are equal.
const EPS: f64 = 1e-9;

/// A heterogeneous-core simulation: the shared settings (whose `policy`, `cores` and
/// `workers` are not used), the cores and the policy.
#[derive(Debug, Clone)]
pub struct HeteroSimConfig {
    /// Demand, arrivals, rps, requests, seed, target, warm-up, trace, records.
    pub base: SimConfig,
    /// The cores by type.
    pub cores: CoreSet,
    /// The policy.
    pub policy: HeteroPolicy,
    /// For identifying the plant (`tailor plan eetl`): thresholds for each control epoch
    /// of this many requests, in order, the last held; overrides the policy's.
    pub open_loop: Option<(usize, Vec<Vec<f64>>)>,
}

#[derive(Debug, Clone)]
struct Req {
    index: usize,
    arrival: f64,
    start: Option<f64>,
    work: f64,
    left: f64,
    core: Option<usize>,
    migrations: u32,
}

struct Sim<'a> {
    cfg: &'a HeteroSimConfig,
    now: f64,
    /// Each core's type and request slot.
    core_type: Vec<usize>,
    core_req: Vec<Option<usize>>,
    reqs: Vec<Req>,
    free_slots: Vec<usize>,
    /// Slots of the requests in the system, oldest first.
    active: Vec<usize>,
    /// The thresholds and their control; `None` for Oblivious and RC.
    control: Option<ThresholdControl>,
    busy_ms: Vec<f64>,
    migrations: u64,
    rng: u64,
    m: Measurements,
    trace: Vec<TracePoint>,
}

/// Runs a heterogeneous-core simulation.
pub fn simulate_hetero(cfg: &HeteroSimConfig) -> Result<SimOutput, SimError> {
    let base = &cfg.base;
    SimConfig {
        capacity: Some(cfg.cores.capacity()),
        ..base.clone()
    }
    .validate()?;
    let n_types = cfg.cores.types().len();
    let bad = |reason: String| SimError::BadArgument {
        name: "--policy",
        reason,
    };
    if matches!(cfg.policy, HeteroPolicy::RcHetero(_)) && n_types < 2 {
        return Err(bad("rc-hetero needs at least two core types".into()));
    }
    let control = ThresholdControl::new(&cfg.policy, &cfg.cores, cfg.open_loop.clone())
        .map_err(|e| bad(format!("{e} (--cores {})", cfg.cores.spec())))?;
    let core_type: Vec<usize> = cfg.cores.core_types();
    let count = base.request_count();
    let (arrival_rng, mut demand_rng) = workload_rngs(base.seed);
    let arrivals = base.arrivals.stream(base.rps, count, arrival_rng)?;
    let mut sim = Sim {
        cfg,
        now: 0.0,
        core_req: vec![None; core_type.len()],
        core_type,
        reqs: Vec::new(),
        free_slots: Vec::new(),
        active: Vec::new(),
        control,
        busy_ms: vec![0.0; n_types],
        migrations: 0,
        rng: base.seed ^ 0x4845_5445,
        m: Measurements::with_max_degree(base, 1),
        trace: Vec::new(),
    };
    run_fluid(&mut sim, arrivals, &base.demand, &mut demand_rng, EPS);
    let completed = sim.m.completed.max(1) as f64;
    let energy = cfg.cores.energy(&sim.busy_ms);
    let dynamic = cfg.cores.dynamic_energy(&sim.busy_ms);
    let busy: f64 = sim.busy_ms.iter().sum();
    let mean_work = base.demand.mean_work_ms();
    let baseline = cfg.cores.busy_power(0) * mean_work / cfg.cores.types()[0].speed;
    let migrations = sim.migrations as f64 / completed;
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
    let mut out = finish(base, sim.m, sim.trace);
    let s = &mut out.summary;
    s.policy = cfg.policy.name();
    s.cores = cfg.cores.total();
    s.mean_threads = s.cpu_utilization * cfg.cores.total() as f64;
    s.energy = Some(EnergySummary {
        per_request: energy / completed,
        normalized: if baseline > 0.0 {
            energy / completed / baseline
        } else {
            0.0
        },
        baseline: "the mean request run alone on a slowest core".into(),
        dynamic_per_request: dynamic / completed,
        busy_share,
    });
    s.migrations_per_request = Some(migrations);
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
        self.complete_done();
    }

    fn on_arrival(&mut self, index: usize, arrival: f64, demand: RequestDemand) {
        let work = demand.work_ms;
        self.arrive(Req {
            index,
            arrival,
            start: None,
            work,
            left: work,
            core: None,
            migrations: 0,
        });
    }

    fn after_event(&mut self) {
        self.schedule();
        self.record_trace();
    }
}

impl Sim<'_> {
    fn speed(&self, core: usize) -> f64 {
        self.cfg.cores.types()[self.core_type[core]].speed
    }

    fn free_per_type(&self) -> Vec<usize> {
        let mut free = vec![0; self.cfg.cores.types().len()];
        for (c, r) in self.core_req.iter().enumerate() {
            if r.is_none() {
                free[self.core_type[c]] += 1;
            }
        }
        free
    }

    /// The next completion, or the next threshold crossing that a free core could act on.
    fn next_change(&self) -> Option<f64> {
        let mut next: Option<f64> = None;
        let mut consider = |t: f64| next = Some(next.map_or(t, |n: f64| n.min(t)));
        for (c, r) in self.core_req.iter().enumerate() {
            if let Some(slot) = r {
                consider(self.now + self.reqs[*slot].left / self.speed(c));
            }
        }
        if let Some(th) = self.control.as_ref().map(ThresholdControl::thresholds) {
            let free = self.free_per_type();
            for &slot in &self.active {
                let r = &self.reqs[slot];
                let from = r.core.map_or(0, |c| self.core_type[c] + 1);
                for k in from.max(1)..free.len() {
                    let t = r.arrival + th[k - 1];
                    if free[k] > 0 && t.is_finite() && t > self.now + AGE_TOLERANCE_MS {
                        consider(t);
                        break;
                    }
                }
            }
        }
        next
    }

    fn advance(&mut self, t: f64) {
        let dt = (t - self.now).max(0.0);
        for c in 0..self.core_req.len() {
            if let Some(slot) = self.core_req[c] {
                let s = self.speed(c);
                self.reqs[slot].left -= s * dt;
                self.busy_ms[self.core_type[c]] += dt;
                self.m.cpu_time += dt;
            }
        }
        self.now = t;
    }

    fn complete_done(&mut self) {
        for c in 0..self.core_req.len() {
            let Some(slot) = self.core_req[c] else {
                continue;
            };
            // Done once the time left is below what `now` can resolve.
            let left_ms = self.reqs[slot].left / self.speed(c);
            if left_ms > EPS * self.reqs[slot].work.max(1.0).max(self.now) {
                continue;
            }
            self.core_req[c] = None;
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
        self.migrations += u64::from(r.migrations);
        self.active.retain(|&s| s != slot);
        self.free_slots.push(slot);
        if let Some(c) = &mut self.control {
            c.on_completion(self.now, latency);
        }
    }

    fn arrive(&mut self, req: Req) {
        if let Some(c) = &mut self.control {
            c.on_arrival(req.arrival);
        }
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
        self.active.push(slot);
    }

    /// Applies the policy's placement decisions for the current state.
    fn schedule(&mut self) {
        match &self.cfg.policy {
            HeteroPolicy::Oblivious => self.schedule_oblivious(),
            HeteroPolicy::RcHetero(long) => self.schedule_rc(*long),
            _ => self.schedule_as2f(),
        }
    }

    fn schedule_as2f(&mut self) {
        let th = self
            .control
            .as_ref()
            .map(ThresholdControl::thresholds)
            .expect("threshold policy");
        let placed: Vec<Placed> = self
            .active
            .iter()
            .map(|&s| Placed {
                age_ms: self.now - self.reqs[s].arrival,
                core_type: self.reqs[s].core.map(|c| self.core_type[c]),
            })
            .collect();
        let moves = as2f_moves(th, self.cfg.cores.counts(), &self.free_per_type(), &placed);
        for mv in moves {
            let slot = self.active[mv.request];
            self.place(slot, mv.to);
        }
    }

    /// Puts `slot` on a free core of type `to`, leaving its old core.
    fn place(&mut self, slot: usize, to: usize) {
        let core = (0..self.core_req.len())
            .find(|&c| self.core_req[c].is_none() && self.core_type[c] == to)
            .expect("the placement had a free core");
        self.put(slot, core);
    }

    fn put(&mut self, slot: usize, core: usize) {
        if let Some(old) = self.reqs[slot].core {
            self.core_req[old] = None;
            self.reqs[slot].migrations += 1;
        }
        self.core_req[core] = Some(slot);
        let r = &mut self.reqs[slot];
        r.core = Some(core);
        r.start.get_or_insert(self.now);
    }

    /// Oblivious ([`oblivious_moves`]): a random core for each new request, another
    /// free one if it is busy; no migration after.
    fn schedule_oblivious(&mut self) {
        let busy: Vec<bool> = self.core_req.iter().map(Option::is_some).collect();
        let waiting: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&s| self.reqs[s].core.is_none())
            .collect();
        let moves = oblivious_moves(&busy, &waiting, &mut |n| self.random(n));
        for (slot, core) in moves {
            self.put(slot, core);
        }
    }

    /// RC ([`rc_moves`]): long requests (work at least `long`) take the fastest cores.
    fn schedule_rc(&mut self, long: f64) {
        let requests: Vec<RcRequest> = self
            .active
            .iter()
            .map(|&s| RcRequest {
                core_type: self.reqs[s].core.map(|c| self.core_type[c]),
                long: self.reqs[s].work >= long,
            })
            .collect();
        for mv in rc_moves(&self.free_per_type(), &requests) {
            let slot = self.active[mv.request];
            self.place(slot, mv.to);
        }
    }

    fn random(&mut self, n: usize) -> usize {
        tailor_core::splitmix_below(&mut self.rng, n)
    }

    fn record_trace(&mut self) {
        if !self.cfg.base.trace {
            return;
        }
        let busy = self.core_req.iter().filter(|c| c.is_some()).count();
        let point = TracePoint {
            time_ms: self.now,
            in_system: self.active.len(),
            running: busy,
            threads: busy,
            boosted_threads: 0,
        };
        push_trace_point(&mut self.trace, point, EPS);
    }
}
