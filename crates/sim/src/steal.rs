//! A model of the work-stealing executor with per-core pieces: steal-first, admit-first, random-admit and tail-control.
//!
//! # The model (documented in docs/tail-control.md, "Simulator")
//!
//! - **Cores.** m identical cores; each is idle, on a piece of one request's parallel-for,
//!   or running one request's merge. A core is never shared.
//! - **Requests.** A request of work W with serial fraction f (`amdahl:F`; 0 otherwise)
//!   is a parallel-for of (1 - f) W cut into units of `unit_ms`, followed by f W on one
//!   core (the merge), as `StealRuntime::submit_job` runs a `Job`.
//! - **Pieces.** The core that admits a request holds its whole range. A thief takes half
//!   of the unstarted units of a random victim's piece (the oldest task on a TBB deque is
//!   about half of what its owner has left), and each core drains its own piece at one
//!   work-ms per ms. A core whose piece ends leaves the request and looks for work; the
//!   core whose piece ends last runs the merge.
//! - **Finding work** (Fig. 5a): a core looking for work first runs the pileup check if
//!   the policy has one, then gets work by the admission order: *steal* as above,
//!   skipping requests that are marked; *admit* starts the head of the global FIFO (or,
//!   for random-admit, of its own queue, and failing that of a random other core's).
//! - **Pileup checks** run at every event, as a real runtime's thieves check all the
//!   time inside a parallel-for, and the moment a running request's processed time
//!   passes the threshold for the current load is itself an event. Processed time is
//!   exact: the integral of the request's cores (Fig. 5's estimate without staleness).
//!   The clairvoyant variant tests the true work, at admission and at every check.
//! - **Dissolving a marked request** ([`Dissolve`]): `prompt` (§4.1's model, the
//!   default) gathers its pieces on one of its cores at once and frees the others;
//!   `lazy` (TBB's) only stops thieves, and its cores leave as their pieces end.
//!
//! - **Sleeping cores** ([`Sleep`], optional): an idle core spins for `spin_ms` and then
//!   sleeps; a sleeping core is woken when work it could take appears (one per visible
//!   item: a waiting request or a stealable piece) and takes `wake_ms` to start looking,
//!   as the executor's workers spin, yield and then wait on a condition variable. Without
//!   it an idle core takes work the instant it appears.
//! - **Host speed** ([`SpeedTrace`], optional): the work scale a live run measured,
//!   window by window; every busy core drains `1 / scale` work-ms per ms, and each
//!   change of scale is an event. Processed time stays wall time, as the executor's
//!   time stamps measure it.
//!
//! - **Joins** ([`Joins`]): by default a core leaves a request as soon as its piece
//!   ends. `Joins::Held` models tailor's executor instead: a core waits for every piece
//!   stolen from it (its stack holds those joins), meanwhile stealing only from its own
//!   request while it is stealable; the root waits for all and runs the merge
//!   (`joins.rs`). Waiting cores count as on the request, in processed time too, as
//!   the executor's workers do until they leave.
//!
//! Steal overheads, the cost of the check itself and the wait for the next unit boundary
//! before a core leaves a marked request are not modelled.

use std::collections::VecDeque;

use tailor_core::{
    workload_rngs, Dissolve, RequestDemand, SpeedTrace, Speedup, StealAdmission, StealPolicy,
};

use crate::config::{SimConfig, SimError};
use crate::joins::{JoinTree, Joins, StealSize};
use crate::measure::{finish, Measurements};
use crate::report::{push_trace_point, RequestRecord, SimOutput, TracePoint};
use crate::time::{run_fluid, Fluid};

/// Work below this (ms) counts as done; times are compared with the same tolerance.
const EPS: f64 = 1e-9;

/// How far past a threshold crossing its event lands, so that the check sees processed
/// time strictly above the threshold (ms).
const CROSSING_MS: f64 = 1e-7;

/// A work-stealing simulation: the shared settings (whose `policy` and `workers` are not
/// used), the work-stealing policy, the parallel-for's grain and how marked requests
/// dissolve.
#[derive(Debug, Clone)]
pub struct StealSimConfig {
    /// Cores, demand, arrivals, rps, requests, seed, target, warm-up, trace, records.
    pub base: SimConfig,
    /// The admission policy and tail-control's table.
    pub policy: StealPolicy,
    /// The length of one unit of a request's parallel-for, ms (the grain). The synthetic
    /// workload's units are 0.25 ms.
    pub unit_ms: f64,
    /// How a marked request's parallelism dissolves.
    pub dissolve: Dissolve,
    /// How idle cores sleep and wake; `None`: they never sleep.
    pub sleep: Option<Sleep>,
    /// The host's work scale over time (a live run's, replayed): a core drains
    /// `1 / scale` work-ms per ms; `None`: one work-ms per ms.
    pub speed: Option<SpeedTrace>,
    /// Whether a core whose piece ends waits for the pieces stolen from it.
    pub joins: Joins,
    /// How much of a victim's piece a thief takes.
    pub steal_size: StealSize,
}

/// How an idle core sleeps: it spins for `spin_ms` after its last work, then sleeps, and
/// a sleeping core woken by new work takes `wake_ms` before it looks for it (a condition
/// variable's wake-up on the machine being modelled).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sleep {
    /// How long an idle core spins before it sleeps, ms.
    pub spin_ms: f64,
    /// How long a sleeping core takes to wake once work appears, ms.
    pub wake_ms: f64,
}

#[derive(Debug, Clone)]
struct Req {
    index: usize,
    arrival: f64,
    start: f64,
    work: f64,
    /// Serial work (the merge), ms.
    serial: f64,
    /// Cores on it now (holding a piece, or running its merge).
    cores: usize,
    /// Cores holding a piece of its parallel-for.
    pieces: usize,
    /// Whether a core runs its merge.
    merging: bool,
    max_cores: usize,
    /// Core-ms spent on it.
    processed: f64,
    stealable: bool,
}

/// What a core is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Core {
    /// Idle since the given time (ms): spinning, then asleep if the model has sleep.
    Idle { since: f64 },
    /// Woken, with the wake-up time left (ms); it then looks for work.
    Waking { left: f64 },
    /// A piece of a request's parallel-for, with its work left (ms).
    Piece { slot: usize, left: f64 },
    /// A request's merge, with its work left (ms).
    Merge { slot: usize, left: f64 },
    /// Held joins: its piece's units are done, and it waits for pieces stolen from it.
    Joining { slot: usize },
}

impl Core {
    fn slot(self) -> Option<usize> {
        match self {
            Core::Idle { .. } | Core::Waking { .. } => None,
            Core::Piece { slot, .. } | Core::Merge { slot, .. } | Core::Joining { slot } => {
                Some(slot)
            }
        }
    }

    /// The time until what the core is doing ends: a piece, a merge or a wake-up.
    fn left(self) -> Option<f64> {
        match self {
            Core::Idle { .. } | Core::Joining { .. } => None,
            Core::Piece { left, .. } | Core::Merge { left, .. } | Core::Waking { left } => {
                Some(left)
            }
        }
    }
}

struct Sim<'a> {
    cfg: &'a StealSimConfig,
    now: f64,
    core: Vec<Core>,
    reqs: Vec<Req>,
    free_slots: Vec<usize>,
    fifo: VecDeque<(Req, f64)>,
    inboxes: Vec<VecDeque<(Req, f64)>>,
    /// Arrived and unfinished requests (the load q).
    active: usize,
    /// State of the victim and queue choices' generator.
    rng: u64,
    /// Requests serialized: marked by a check, or at admission (clairvoyant).
    serialized: u64,
    m: Measurements,
    trace: Vec<TracePoint>,
    /// Held joins: the frames of every core.
    tree: JoinTree,
    /// `StealSize::LastSplit`: the work each core's piece offers to thieves (ms).
    offer: Vec<f64>,
}

/// Runs a work-stealing simulation.
pub fn simulate_steal(cfg: &StealSimConfig) -> Result<SimOutput, SimError> {
    let base = &cfg.base;
    base.validate()?;
    if !(cfg.unit_ms.is_finite() && cfg.unit_ms >= 0.0) {
        return Err(SimError::BadArgument {
            name: "--unit-time",
            reason: format!("must be zero or positive, found {}", cfg.unit_ms),
        });
    }
    if let Some(sleep) = cfg.sleep {
        for (name, value) in [("--spin", sleep.spin_ms), ("--wake", sleep.wake_ms)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(SimError::BadArgument {
                    name,
                    reason: format!("must be zero or positive, found {value}"),
                });
            }
        }
    }
    let count = base.request_count();
    let (arrival_rng, mut demand_rng) = workload_rngs(base.seed);
    let arrivals = base.arrivals.stream(base.rps, count, arrival_rng)?;
    let mut sim = Sim {
        cfg,
        now: 0.0,
        // Every core starts idle long ago: asleep, if the model has sleep.
        core: vec![
            Core::Idle {
                since: f64::NEG_INFINITY
            };
            base.cores
        ],
        reqs: Vec::new(),
        free_slots: Vec::new(),
        fifo: VecDeque::new(),
        inboxes: vec![VecDeque::new(); base.cores],
        active: 0,
        rng: base.seed ^ 0x5743_414C,
        serialized: 0,
        m: Measurements::with_max_degree(base, base.cores),
        trace: Vec::new(),
        tree: JoinTree::new(base.cores),
        offer: vec![0.0; base.cores],
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
        let req = Req {
            index,
            arrival,
            start: arrival,
            work: demand.work_ms,
            serial: serial_fraction * demand.work_ms,
            cores: 0,
            pieces: 0,
            merging: false,
            max_cores: 0,
            processed: 0.0,
            stealable: true,
        };
        self.arrive(req, (1.0 - serial_fraction) * demand.work_ms);
    }

    fn after_event(&mut self) {
        self.check_pileup_phase();
        self.schedule();
        self.record_trace();
    }
}

impl Sim<'_> {
    /// When the next piece or merge ends, or a running request's processed time passes
    /// the threshold for the current load.
    fn next_change(&self) -> Option<f64> {
        let rate = self.rate();
        let ends = self
            .core
            .iter()
            .filter_map(|c| match c {
                Core::Waking { left } => Some(*left),
                _ => c.left().map(|work| work / rate),
            })
            .reduce(f64::min);
        // A change of speed matters only while some core is busy.
        let speed_change = self
            .cfg
            .speed
            .as_ref()
            .filter(|_| ends.is_some())
            .and_then(|s| s.next_change_after(self.now))
            .map(|t| t - self.now);
        [ends, self.next_crossing(), speed_change]
            .into_iter()
            .flatten()
            .reduce(f64::min)
            .map(|dt| self.now + dt)
    }

    /// Work-ms a busy core drains per ms now.
    fn rate(&self) -> f64 {
        self.cfg
            .speed
            .as_ref()
            .map_or(1.0, |s| 1.0 / s.scale_at(self.now))
    }

    /// The time until a stealable running request's processed time passes its threshold
    /// at the current load, for tail-control (the clairvoyant rule does not depend on
    /// processed time).
    fn next_crossing(&self) -> Option<f64> {
        let policy = &self.cfg.policy;
        if !policy.checks_pileup() || policy.is_clairvoyant() || self.active == 0 {
            return None;
        }
        let threshold = policy.table()?.threshold_ms(self.active);
        self.reqs
            .iter()
            .filter(|r| r.cores > 0 && r.stealable && r.processed <= threshold)
            .map(|r| (threshold - r.processed) / r.cores as f64 + CROSSING_MS)
            .reduce(f64::min)
    }

    /// Moves time to `t`: every busy core drains its piece or merge.
    fn advance(&mut self, t: f64) {
        let dt = (t - self.now).max(0.0);
        let work = dt * self.rate();
        let mut busy = 0usize;
        let mut waiting = 0usize;
        for c in self.core.iter_mut() {
            match c {
                Core::Piece { slot, left } | Core::Merge { slot, left } => {
                    *left -= work;
                    self.reqs[*slot].processed += dt;
                    busy += 1;
                }
                Core::Waking { left } => *left -= dt,
                Core::Joining { slot } => {
                    self.reqs[*slot].processed += dt;
                    waiting += 1;
                }
                Core::Idle { .. } => {}
            }
        }
        self.m.cpu_time += busy as f64 * dt;
        self.m.thread_time += (busy + waiting) as f64 * dt;
        self.now = t;
    }

    /// Applies the pieces and merges that ended now.
    fn settle(&mut self) {
        for c in 0..self.core.len() {
            match self.core[c] {
                Core::Piece { slot, left } if left <= EPS && self.cfg.joins == Joins::Held => {
                    self.reqs[slot].pieces -= 1;
                    self.piece_ended_held(c, slot);
                }
                Core::Piece { slot, left } if left <= EPS => {
                    let r = &mut self.reqs[slot];
                    r.pieces -= 1;
                    // The last piece to end: this core runs the merge.
                    let last = r.pieces == 0;
                    self.merge_or_leave(c, slot, last);
                }
                Core::Merge { slot, left } if left <= EPS => self.leave(c, slot),
                // Awake: it looks for work now, spinning.
                Core::Waking { left } if left <= EPS => {
                    self.core[c] = Core::Idle { since: self.now }
                }
                _ => {}
            }
        }
    }

    /// Held joins: core `c`'s piece of request `slot` has run its units. It waits, and
    /// every core whose last frame finished leaves (the root runs the merge first).
    fn piece_ended_held(&mut self, c: usize, slot: usize) {
        self.core[c] = Core::Joining { slot };
        let core = &self.core;
        let released = self
            .tree
            .piece_ended(c, |p| matches!(core[p], Core::Joining { .. }));
        for (c, root) in released {
            self.merge_or_leave(c, slot, root);
        }
    }

    /// Core `c` is done with its part of request `slot`: it runs the merge if it is
    /// `the_one` to and the request has one not yet started, and leaves otherwise.
    fn merge_or_leave(&mut self, c: usize, slot: usize, the_one: bool) {
        let r = &mut self.reqs[slot];
        if the_one && r.serial > EPS && !r.merging {
            r.merging = true;
            self.core[c] = Core::Merge {
                slot,
                left: r.serial,
            };
        } else {
            self.leave(c, slot);
        }
    }

    /// Core `c` leaves request `slot`; the request completes when its last core leaves
    /// with its work done.
    fn leave(&mut self, c: usize, slot: usize) {
        self.core[c] = Core::Idle { since: self.now };
        let r = &mut self.reqs[slot];
        r.cores -= 1;
        if r.cores == 0 {
            self.complete(slot);
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

    fn arrive(&mut self, req: Req, parallel: f64) {
        self.active += 1;
        match self.cfg.policy.admission() {
            StealAdmission::RandomAdmit => {
                let c = self.random(self.core.len());
                self.inboxes[c].push_back((req, parallel));
            }
            _ => self.fifo.push_back((req, parallel)),
        }
    }

    /// Every awake idle core, in a random order, looks for work until none finds any;
    /// then, with sleep modelled, sleeping cores are woken for the work still visible.
    fn schedule(&mut self) {
        let n = self.core.len();
        let first = self.random(n);
        let mut found = true;
        while found {
            found = false;
            for i in 0..n {
                let c = (first + i) % n;
                if let Core::Joining { slot } = self.core[c] {
                    if self.steal(c, Some(slot)) {
                        found = true;
                    }
                } else if self.awake(c) && self.find_work(c) {
                    found = true;
                }
            }
        }
        self.wake_sleepers();
    }

    /// Whether core `c` is idle and not asleep: still spinning, or sleep not modelled.
    fn awake(&self, c: usize) -> bool {
        match (self.core[c], self.cfg.sleep) {
            (Core::Idle { .. }, None) => true,
            (Core::Idle { since }, Some(sleep)) => self.now - since <= sleep.spin_ms + EPS,
            _ => false,
        }
    }

    /// Wakes one sleeping core for each item of visible work (a waiting request, or a
    /// piece a thief could split) that no core is already waking for, as a submission
    /// or a fork wakes one sleeper in the executor.
    fn wake_sleepers(&mut self) {
        let Some(sleep) = self.cfg.sleep else {
            return;
        };
        let n = self.core.len();
        let asleep: Vec<usize> = (0..n)
            .filter(|&c| matches!(self.core[c], Core::Idle { .. }) && !self.awake(c))
            .collect();
        if asleep.is_empty() {
            return;
        }
        let waking = (0..n)
            .filter(|&c| matches!(self.core[c], Core::Waking { .. }))
            .count();
        let waiting = match self.cfg.policy.admission() {
            StealAdmission::RandomAdmit => self.inboxes.iter().map(VecDeque::len).sum(),
            _ => self.fifo.len(),
        };
        let pieces = (0..n).filter(|&v| self.steal_take(v).is_some()).count();
        let mut wake = (waiting + pieces).saturating_sub(waking).min(asleep.len());
        let start = self.random(asleep.len());
        for i in 0..asleep.len() {
            if wake == 0 {
                break;
            }
            self.core[asleep[(start + i) % asleep.len()]] = Core::Waking {
                left: sleep.wake_ms,
            };
            wake -= 1;
        }
    }

    /// Fig. 5a lines 23-30 for idle core `c`; returns whether it found work.
    fn find_work(&mut self, c: usize) -> bool {
        self.check_pileup_phase();
        match self.cfg.policy.admission() {
            StealAdmission::StealFirst => self.steal(c, None) || self.admit_from_fifo(c),
            StealAdmission::AdmitFirst => self.admit_from_fifo(c) || self.steal(c, None),
            StealAdmission::RandomAdmit => {
                self.admit_from_inbox(c, c) || self.steal(c, None) || {
                    let n = self.core.len();
                    let first = self.random(n);
                    (0..n)
                        .map(|i| (first + i) % n)
                        .any(|v| v != c && self.admit_from_inbox(v, c))
                }
            }
        }
    }

    /// Fig. 5b: marks every running request that passes the threshold for the current
    /// load, and dissolves it as configured.
    fn check_pileup_phase(&mut self) {
        let policy = &self.cfg.policy;
        if !policy.checks_pileup() {
            return;
        }
        let active = self.active;
        let mut marked = Vec::new();
        for (slot, r) in self.reqs.iter_mut().enumerate() {
            if r.cores > 0 && r.stealable && policy.serializes(active, r.processed, Some(r.work)) {
                r.stealable = false;
                marked.push(slot);
            }
        }
        self.serialized += marked.len() as u64;
        if self.cfg.dissolve == Dissolve::Prompt {
            for slot in marked {
                self.gather(slot);
            }
        }
    }

    /// Prompt dissolving: the pieces of request `slot` go to the first core that holds
    /// one, and the others leave it. With held joins they go to the request's root
    /// (whose stack holds the request: the executor's owner), and every other core on
    /// the request leaves.
    fn gather(&mut self, slot: usize) {
        if self.cfg.joins == Joins::Held {
            self.gather_on_root(slot);
            return;
        }
        let holders: Vec<usize> = (0..self.core.len())
            .filter(|&c| matches!(self.core[c], Core::Piece { slot: s, .. } if s == slot))
            .collect();
        let Some((&keeper, others)) = holders.split_first() else {
            return;
        };
        let mut handed_back = 0.0;
        for &c in others {
            if let Core::Piece { left, .. } = self.core[c] {
                handed_back += left;
            }
            self.core[c] = Core::Idle { since: self.now };
        }
        if let Core::Piece { left, .. } = &mut self.core[keeper] {
            *left += handed_back;
        }
        self.offer[keeper] = 0.0;
        let r = &mut self.reqs[slot];
        r.cores -= others.len();
        r.pieces -= others.len();
    }

    fn gather_on_root(&mut self, slot: usize) {
        let on: Vec<usize> = (0..self.core.len())
            .filter(|&c| matches!(self.core[c], Core::Piece { slot: s, .. } | Core::Joining { slot: s } if s == slot))
            .collect();
        let Some(&root) = on.iter().find(|&&c| self.tree.is_root(c)) else {
            return;
        };
        let mut left = 0.0;
        for &c in &on {
            if let Core::Piece { left: l, .. } = self.core[c] {
                left += l;
            }
            if c != root {
                self.core[c] = Core::Idle { since: self.now };
                self.tree.clear(c);
            }
        }
        self.core[root] = Core::Piece { slot, left };
        self.offer[root] = 0.0;
        self.tree.gathered(root);
        let r = &mut self.reqs[slot];
        r.cores = 1;
        r.pieces = 1;
    }

    /// What a piece of `left` ms offers thieves when it splits (lazy binary splitting):
    /// of its n units not started (the one under way excluded when `running`), the last
    /// n/2 rounded up, if n is at least 2.
    fn split_offer(&self, left: f64, running: bool) -> f64 {
        let unit = self.cfg.unit_ms;
        if unit <= 0.0 {
            return left / 2.0;
        }
        let n = ((left / unit) - 1e-9).ceil().max(0.0) - if running { 1.0 } else { 0.0 };
        if n >= 2.0 {
            (n / 2.0).ceil() * unit
        } else {
            0.0
        }
    }

    /// What a thief would take from core `v`'s piece, if the piece belongs to a
    /// stealable request: half of its unstarted units if it has at least two
    /// (`StealSize::HalfNow`), or its offer (`StealSize::LastSplit`; once the victim
    /// has run into its offer, the half it would offer now).
    fn steal_take(&self, v: usize) -> Option<f64> {
        let unit = self.cfg.unit_ms;
        let Core::Piece { slot, left } = self.core[v] else {
            return None;
        };
        if !self.reqs[slot].stealable {
            return None;
        }
        if self.cfg.steal_size == StealSize::LastSplit {
            let offer = self.offer[v];
            let take = if offer > EPS && offer < left - EPS {
                offer
            } else {
                self.split_offer(left, true)
            };
            return (take > EPS).then_some(take);
        }
        let take = if unit > 0.0 {
            // The unit under way is not stealable; half of the rest, rounded down.
            let unstarted = ((left / unit) - 1e-9).ceil().max(1.0) - 1.0;
            (unstarted / 2.0).floor() * unit
        } else {
            left / 2.0
        };
        (take > EPS).then_some(take)
    }

    /// Takes half of the unstarted units of a random victim core's piece, among pieces
    /// of stealable requests (of request `only`, if given: a waiting join helping) that
    /// have at least two unstarted units.
    fn steal(&mut self, c: usize, only: Option<usize>) -> bool {
        let victims: Vec<usize> = (0..self.core.len())
            .filter(|&v| {
                self.steal_take(v).is_some()
                    && only.is_none_or(|slot| self.core[v].slot() == Some(slot))
            })
            .collect();
        if victims.is_empty() {
            return false;
        }
        let v = victims[self.random(victims.len())];
        let take = self.steal_take(v).expect("a victim");
        let Core::Piece { slot, left } = &mut self.core[v] else {
            unreachable!("a victim holds a piece");
        };
        *left -= take;
        let (slot, kept) = (*slot, *left);
        self.core[c] = Core::Piece { slot, left: take };
        // Both deques are empty now: each core splits what it holds.
        self.offer[v] = self.split_offer(kept, true);
        self.offer[c] = self.split_offer(take, false);
        let r = &mut self.reqs[slot];
        if only.is_none() {
            r.cores += 1;
        }
        r.pieces += 1;
        r.max_cores = r.max_cores.max(r.cores);
        if self.cfg.joins == Joins::Held {
            self.tree.stolen(c, v);
        }
        true
    }

    fn admit_from_fifo(&mut self, c: usize) -> bool {
        match self.fifo.pop_front() {
            Some((req, parallel)) => {
                self.start(c, req, parallel);
                true
            }
            None => false,
        }
    }

    fn admit_from_inbox(&mut self, from: usize, c: usize) -> bool {
        match self.inboxes[from].pop_front() {
            Some((req, parallel)) => {
                self.start(c, req, parallel);
                true
            }
            None => false,
        }
    }

    /// Core `c` starts `req` (its root), holding its whole parallel-for. The clairvoyant
    /// variant serializes a large request from the start.
    fn start(&mut self, c: usize, mut req: Req, parallel: f64) {
        req.start = self.now;
        let policy = &self.cfg.policy;
        req.stealable =
            !(policy.is_clairvoyant() && policy.serializes(self.active, 0.0, Some(req.work)));
        if !req.stealable {
            self.serialized += 1;
        }
        let core = if parallel > EPS {
            req.pieces = 1;
            Core::Piece {
                slot: 0,
                left: parallel,
            }
        } else if req.serial > EPS {
            req.merging = true;
            Core::Merge {
                slot: 0,
                left: req.serial,
            }
        } else {
            // No work: it completes at once.
            let slot = self.store(req);
            self.complete(slot);
            return;
        };
        req.cores = 1;
        req.max_cores = 1;
        if self.cfg.joins == Joins::Held && matches!(core, Core::Piece { .. }) {
            self.tree.admit(c);
        }
        let slot = self.store(req);
        self.core[c] = match core {
            Core::Piece { left, .. } => {
                self.offer[c] = self.split_offer(left, false);
                Core::Piece { slot, left }
            }
            Core::Merge { left, .. } => Core::Merge { slot, left },
            idle => idle,
        };
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
        let busy = self.core.iter().filter(|c| c.slot().is_some()).count();
        let running = self.reqs.iter().filter(|r| r.cores > 0).count();
        let point = TracePoint {
            time_ms: self.now,
            in_system: self.active,
            running,
            threads: busy,
            boosted_threads: 0,
        };
        push_trace_point(&mut self.trace, point, EPS);
    }
}
