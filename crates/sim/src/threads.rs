//! The charged model: the runtime's threads at unit granularity, priced by a machine's
//! calibration (`tailor_core::Calibration`, docs/calibration.md).
//!
//! The fluid engine (`engine.rs`) is the FM paper's model: a request at degree d progresses
//! at s(d) and is charged d or s(d) threads (Haque et al., ASPLOS 2015, §4.1, Eq. 1-2).
//! This engine instead follows what tailor's runtime (`tailor_runtime`) does, thread by
//! thread:
//!
//! - a request is `units` units of equal work plus a serial merge, its serial fraction
//!   fitted to its own speedup curve (`tailor_core::serial_fraction`); its threads claim
//!   units one at a time, a thread that finds none left leaves, and the thread that
//!   finishes the last unit runs the merge, so a degree-d request holds
//!   min(d, units left) threads and one for its merge;
//! - a thread handed a request (a start ticket or a help ticket) waits in a first-in,
//!   first-out channel, as the runtime's tickets do; each ticket wakes one pool thread
//!   after a hand-off delay, exponential with the calibrated mean at the runnable threads
//!   per core averaged over the last [`BUSY_WINDOW_MS`], and the thread that wakes takes
//!   the oldest ticket; the thread that raises a degree pays the calibrated cost per
//!   ticket it sends before its next unit;
//! - runnable threads share the cores by weight (`cpu.rs`), and all work runs slower by
//!   the calibrated slowdown at the current busy cores;
//! - admission, self-scheduling at the first thread's unit boundaries once a quantum has
//!   passed, boosting (the boost pool and its slots) and the worker pool are the
//!   runtime's, as is FM's core guard (`tailor_core::helpers_granted`, docs/guard.md):
//!   a core per working thread or ticket, helpers only where a core is free and a unit is
//!   left, a backlog run sequentially, a helper's core given to a waiting request at its
//!   next unit boundary, and a freed core handed straight to the oldest waiting request.
//!
//! Progress uses one virtual clock per weight class, as in `engine.rs`, at unit
//! granularity: every event costs O(log threads).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::RngExt;
use tailor_core::{
    helpers_granted, seeded_rng, serial_fraction, start_threads, Admission, ArrivalStream,
    Calibration, Policy, Rng,
};

use crate::config::SimConfig;
use crate::cpu::{nice_weight, shares};
use crate::measure::Measurements;
use crate::queue::EventQueue;
use crate::report::{RequestRecord, TracePoint};
use crate::time::SimTime;

/// The window of the runnable threads the hand-off delay is read at, ms. A calibration
/// measures the delay against a run's time-averaged busy threads (`mean_threads`), so the
/// model reads it at an average too, not at each instant's count (chosen by hand: long
/// beside a hand-off, short beside a 2-second run).
const BUSY_WINDOW_MS: f64 = 20.0;

/// Salt separating the hand-off delays' stream from the workload's streams of a seed.
const HANDOFF_SALT: u64 = 0x6861_6e64_6f66_6621;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Main,
    Helper,
    Boost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Handed a request, not running yet (no core, no heap entry).
    Handoff,
    /// The sender's cost of the help tickets it just sent, before its next unit.
    Setup,
    Unit,
    Merge,
}

#[derive(Debug, Clone)]
struct Thread {
    req: usize,
    role: Role,
    phase: Phase,
    /// 0 ordinary, 1 boosted.
    class: usize,
    /// For a thread in hand-off: the request starts with `after_exit` (Main only).
    after_exit: bool,
}

#[derive(Debug, Clone, Default)]
struct Req {
    index: usize,
    arrival: f64,
    work: f64,
    units: usize,
    unit_work: f64,
    merge_work: f64,
    next_unit: usize,
    done_units: usize,
    start: f64,
    /// The policy's degree (never falls).
    wanted: usize,
    /// Threads on it now, and helpers sent to it not yet joined.
    threads: usize,
    pending: usize,
    /// The degree the records count: the policy's degree, or under the guard the
    /// threads plus pending helpers.
    degree: usize,
    max_degree: usize,
    degree_since: f64,
    degree_time: f64,
    boosted: bool,
    /// The time of its first thread's next self-scheduling point.
    next_check: f64,
    /// Whether its merge is done (its slot is reused once no thread or ticket is left).
    finished: bool,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// A pool thread woke for a ticket of class 0 (ordinary) or 1 (boost): it takes the
    /// oldest ticket waiting in that class's channel.
    Woke(usize),
    /// A request's FM admission delay v0 has passed.
    DelayedStart(usize),
}

#[derive(Default)]
struct Class {
    clock: f64,
    /// Each thread's progress per ms.
    rate: f64,
    share: f64,
    threads: usize,
    /// (virtual finish, thread), earliest first.
    heap: BinaryHeap<Reverse<(Key, usize)>>,
}

/// A virtual finish, ordered totally (never NaN: work and rates are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Key(f64);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

struct Sim<'c> {
    cfg: &'c SimConfig,
    cal: &'c Calibration,
    policy: &'c Policy,
    guarded: bool,
    boosts: bool,
    self_schedules: bool,
    /// The degree the serial fractions are fitted over.
    fit_degree: usize,
    now: f64,
    events: EventQueue<Event>,
    handoff_rng: Rng,
    demand_rng: Rng,
    reqs: Vec<Req>,
    free_reqs: Vec<usize>,
    threads: Vec<Thread>,
    free_threads: Vec<usize>,
    classes: [Class; 2],
    weights: [f64; 2],
    /// Requests in the system (the policies' load).
    load: usize,
    /// Worker-pool and unguarded-FM admission: requests started and not finished.
    running: usize,
    /// Waiting for a worker, an exit, or under the guard a core.
    queue: VecDeque<(usize, bool)>,
    /// Requests waiting out FM's v0.
    delayed: usize,
    /// Under the guard: cores no thread or ticket holds.
    free_cores: usize,
    /// Boosting: requests at the maximum degree waiting for a slot, and boosted threads.
    boost_waiting: Vec<usize>,
    boosted_threads: usize,
    /// The tickets sent and not yet taken, oldest first, per class: the runtime's
    /// first-in, first-out channels (ordinary and boost).
    channels: [VecDeque<usize>; 2],
    /// The runnable threads averaged over the last [`BUSY_WINDOW_MS`] or so (an
    /// exponential moving average): the busy threads the hand-off delay is read at.
    busy_average: f64,
    measured: Measurements,
    trace: Vec<TracePoint>,
}

/// Runs `cfg` under the charged model of `cal`.
pub(crate) fn run(
    cfg: &SimConfig,
    cal: &Calibration,
    mut arrivals: ArrivalStream,
    demand_rng: Rng,
) -> (Measurements, Vec<TracePoint>) {
    let guarded = cfg.guard && !cfg.policy.uses_worker_pool();
    let mut sim = Sim {
        cfg,
        cal,
        policy: &cfg.policy,
        guarded,
        boosts: !guarded && cfg.policy.boosts(),
        self_schedules: cfg.policy.self_schedules(),
        fit_degree: cfg
            .demand
            .known_degrees()
            .unwrap_or(cfg.policy.max_degree())
            .max(2),
        now: 0.0,
        events: EventQueue::new(),
        handoff_rng: seeded_rng(cfg.seed ^ HANDOFF_SALT),
        demand_rng,
        reqs: Vec::new(),
        free_reqs: Vec::new(),
        threads: Vec::new(),
        free_threads: Vec::new(),
        classes: [Class::default(), Class::default()],
        weights: [nice_weight(0), nice_weight(cfg.boost_nice)],
        load: 0,
        running: 0,
        queue: VecDeque::new(),
        delayed: 0,
        free_cores: cfg.cores,
        boost_waiting: Vec::new(),
        boosted_threads: 0,
        channels: [VecDeque::new(), VecDeque::new()],
        busy_average: 0.0,
        measured: Measurements::new(cfg),
        trace: Vec::new(),
    };
    sim.update_rates();
    let mut upcoming = arrivals.next();
    let mut index = 0;
    loop {
        let completion = sim.next_completion();
        let event = sim.events.peek_time().map(SimTime::ms);
        // Ties: completions, then events, then arrivals.
        let mut step = completion.map(|(t, c)| (t, 0, c));
        if let Some(e) = event {
            if step.is_none_or(|(t, _, _)| e < t) {
                step = Some((e, 1, 0));
            }
        }
        if let Some(a) = upcoming {
            if step.is_none_or(|(t, _, _)| a < t) {
                step = Some((a, 2, 0));
            }
        }
        let Some((t, kind, class)) = step else { break };
        sim.advance(t);
        match kind {
            0 => sim.complete(class),
            1 => {
                let (_, e) = sim.events.pop().expect("peeked");
                match e {
                    Event::Woke(class) => {
                        let tid = sim.channels[class]
                            .pop_front()
                            .expect("a ticket per wake-up");
                        sim.handed_off(tid);
                    }
                    Event::DelayedStart(r) => {
                        sim.delayed -= 1;
                        sim.admit(r, false);
                    }
                }
            }
            _ => {
                upcoming = arrivals.next();
                sim.arrive(index, t);
                index += 1;
            }
        }
        sim.update_rates();
        if cfg.trace {
            sim.record_trace();
        }
    }
    (sim.measured, sim.trace)
}

impl Sim<'_> {
    fn runnable(&self) -> usize {
        self.classes[0].threads + self.classes[1].threads
    }

    /// The shares and rates for the threads runnable now.
    fn update_rates(&mut self) {
        let (n0, n1) = (self.classes[0].threads, self.classes[1].threads);
        let m = self.cfg.cores as f64;
        let (s0, s1) = shares(m, n0 as f64, n1 as f64, self.weights[0], self.weights[1]);
        let busy = ((n0 + n1) as f64).min(m) / m;
        let slow = self.cal.slowdown_at(busy);
        for (c, s) in [(0, s0), (1, s1)] {
            self.classes[c].share = s;
            self.classes[c].rate = s / slow;
        }
    }

    fn advance(&mut self, t: f64) {
        let dt = t - self.now;
        if dt > 0.0 {
            let n = self.runnable() as f64;
            self.busy_average += (n - self.busy_average) * (1.0 - (-dt / BUSY_WINDOW_MS).exp());
            for c in &mut self.classes {
                c.clock += c.rate * dt;
                self.measured.thread_time += c.threads as f64 * dt;
                self.measured.cpu_time += c.threads as f64 * c.share * dt;
            }
            self.now = t;
        }
    }

    fn next_completion(&self) -> Option<(f64, usize)> {
        let mut best: Option<(f64, usize)> = None;
        for (i, c) in self.classes.iter().enumerate() {
            if let Some(Reverse((Key(v), _))) = c.heap.peek() {
                let t = self.now + ((v - c.clock) / c.rate).max(0.0);
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, i));
                }
            }
        }
        best
    }

    /// Puts thread `tid` on `work` ms of its phase.
    fn run_phase(&mut self, tid: usize, phase: Phase, work: f64) {
        self.threads[tid].phase = phase;
        let c = &mut self.classes[self.threads[tid].class];
        c.heap.push(Reverse((Key(c.clock + work), tid)));
    }

    fn complete(&mut self, class: usize) {
        let Reverse((_, tid)) = self.classes[class].heap.pop().expect("peeked");
        let r = self.threads[tid].req;
        match self.threads[tid].phase {
            Phase::Setup => self.claim(tid),
            Phase::Unit => {
                self.reqs[r].done_units += 1;
                if self.reqs[r].done_units == self.reqs[r].units {
                    let w = self.reqs[r].merge_work;
                    self.run_phase(tid, Phase::Merge, w);
                } else {
                    self.unit_boundary(tid);
                }
            }
            Phase::Merge => {
                self.finish(r);
                self.leave(tid, true);
            }
            Phase::Handoff => unreachable!("a thread in hand-off has no heap entry"),
        }
    }

    // ---------------------------------------------------------------- threads

    /// Hands request `r` to a new thread in `role`; it runs after the hand-off delay,
    /// which begins `lag` ms from now (the sender's earlier tickets).
    fn hand_off(&mut self, r: usize, role: Role, after_exit: bool) {
        self.hand_off_after(r, role, after_exit, 0.0);
    }

    fn hand_off_after(&mut self, r: usize, role: Role, after_exit: bool, lag: f64) {
        let thread = Thread {
            req: r,
            role,
            phase: Phase::Handoff,
            class: usize::from(role == Role::Boost),
            after_exit,
        };
        let tid = match self.free_threads.pop() {
            Some(t) => {
                self.threads[t] = thread;
                t
            }
            None => {
                self.threads.push(thread);
                self.threads.len() - 1
            }
        };
        let per_core = self.busy_average / self.cfg.cores as f64;
        let mean = self.cal.dispatch_at(per_core);
        let delay = if mean > 0.0 {
            let u: f64 = self.handoff_rng.random();
            -mean * (1.0 - u).ln()
        } else {
            0.0
        };
        // Tickets wait in a first-in, first-out channel; each wakes one sleeping pool
        // thread, and whichever thread wakes first takes the oldest ticket: a start sent
        // behind another request's help tickets waits for as many wake-ups.
        let class = self.threads[tid].class;
        self.channels[class].push_back(tid);
        self.events
            .push(SimTime::from_ms(self.now + lag + delay), Event::Woke(class));
    }

    fn handed_off(&mut self, tid: usize) {
        let (r, role, class) = {
            let t = &self.threads[tid];
            (t.req, t.role, t.class)
        };
        self.classes[class].threads += 1;
        match role {
            Role::Main => {
                let after_exit = self.threads[tid].after_exit;
                self.start_on(tid, r, after_exit);
            }
            Role::Helper => {
                let q = &mut self.reqs[r];
                q.pending -= 1;
                q.threads += 1;
                self.claim(tid);
            }
            Role::Boost => {
                let q = &mut self.reqs[r];
                q.pending -= 1;
                q.threads += 1;
                self.claim(tid);
            }
        }
    }

    /// Thread `tid` (runnable) claims its request's next unit, or leaves.
    fn claim(&mut self, tid: usize) {
        let r = self.threads[tid].req;
        let q = &mut self.reqs[r];
        if q.next_unit < q.units {
            q.next_unit += 1;
            let w = q.unit_work;
            self.run_phase(tid, Phase::Unit, w);
        } else {
            self.leave(tid, false);
        }
    }

    /// Between units: the first thread's self-scheduling point, a boosted request's
    /// ordinary threads leaving, a guarded helper giving its core away; then a claim.
    fn unit_boundary(&mut self, tid: usize) {
        let (r, role) = (self.threads[tid].req, self.threads[tid].role);
        let mut sent = 0;
        if role == Role::Main && self.self_schedules && self.now >= self.reqs[r].next_check {
            sent = self.check(r);
        }
        if role != Role::Boost && self.reqs[r].boosted {
            return self.leave(tid, false);
        }
        if self.guarded && role == Role::Helper {
            if let Some((next, _)) = self.queue.pop_front() {
                self.off_request(tid);
                return self.start_on(tid, next, true);
            }
        }
        self.after_sending(tid, sent);
    }

    /// Sends `n` help tickets for request `r`: the k-th is handed off once the sender
    /// has paid k helper costs.
    fn send_helpers(&mut self, r: usize, n: usize) -> usize {
        let cost = self.cal.helper_cost_ms;
        for k in 0..n {
            self.reqs[r].pending += 1;
            self.hand_off_after(r, Role::Helper, false, (k + 1) as f64 * cost);
        }
        n
    }

    /// Thread `tid` pays for the `sent` tickets it sent (the runtime's send loop runs on
    /// the raising thread), then claims its next unit.
    fn after_sending(&mut self, tid: usize, sent: usize) {
        let cost = sent as f64 * self.cal.helper_cost_ms;
        if cost > 0.0 {
            self.run_phase(tid, Phase::Setup, cost);
        } else {
            self.claim(tid);
        }
    }

    /// Thread `tid` stops working on its request (it stays runnable).
    fn off_request(&mut self, tid: usize) {
        let r = self.threads[tid].req;
        self.reqs[r].threads -= 1;
        if self.guarded {
            self.set_degree(r, self.reqs[r].degree.saturating_sub(1));
        }
        self.maybe_free(r);
    }

    /// Reuses a finished request's slot once no thread or ticket refers to it.
    fn maybe_free(&mut self, r: usize) {
        let q = &self.reqs[r];
        if q.finished && q.threads == 0 && q.pending == 0 {
            self.free_reqs.push(r);
        }
    }

    /// Thread `tid` leaves its request; under the guard its core goes to the oldest
    /// waiting request, which it starts, and otherwise the thread is done. A finishing
    /// thread of a pool policy starts the next queued request itself (`finish`).
    fn leave(&mut self, tid: usize, finished: bool) {
        self.off_request(tid);
        if self.guarded {
            if let Some((next, _)) = self.queue.pop_front() {
                return self.start_on(tid, next, true);
            }
            self.free_cores += 1;
        } else if finished {
            if let Some((next, after_exit)) = self.queue.pop_front() {
                self.running += 1;
                // An ordinary thread starts it itself; a boost thread hands it on.
                if self.threads[tid].role != Role::Boost {
                    return self.start_on(tid, next, after_exit);
                }
                self.hand_off(next, Role::Main, after_exit);
            }
        }
        let class = self.threads[tid].class;
        self.classes[class].threads -= 1;
        self.free_threads.push(tid);
    }

    // ---------------------------------------------------------------- requests

    fn arrive(&mut self, index: usize, at: f64) {
        let d = self.cfg.demand.sample(&mut self.demand_rng);
        let serial = serial_fraction(&d.speedup, self.cal.units, self.fit_degree);
        let (units, unit_work) = self.cal.units.split((1.0 - serial) * d.work_ms);
        let req = Req {
            index,
            arrival: at,
            work: d.work_ms,
            units,
            unit_work,
            merge_work: d.work_ms - units as f64 * unit_work,
            ..Req::default()
        };
        let r = match self.free_reqs.pop() {
            Some(r) => {
                self.reqs[r] = req;
                r
            }
            None => {
                self.reqs.push(req);
                self.reqs.len() - 1
            }
        };
        self.load += 1;
        if self.policy.uses_worker_pool() {
            if self.running < self.cfg.worker_count() {
                self.running += 1;
                self.hand_off(r, Role::Main, false);
            } else {
                self.queue.push_back((r, false));
            }
            return;
        }
        match self.policy.admission(self.load) {
            Admission::Delay(ms) => {
                self.delayed += 1;
                self.events
                    .push(SimTime::from_ms(self.now + ms), Event::DelayedStart(r));
            }
            Admission::OnExit if !self.guarded => {
                // With nothing running or about to run, no exit would ever come.
                if self.running == 0 && self.delayed == 0 {
                    self.running += 1;
                    self.hand_off(r, Role::Main, true);
                } else {
                    self.queue.push_back((r, true));
                }
            }
            admission => self.admit(r, admission == Admission::OnExit),
        }
    }

    /// FM admits request `r` now: under the guard it takes a free core or waits for
    /// one; otherwise it is handed to a thread.
    fn admit(&mut self, r: usize, after_exit: bool) {
        if self.guarded {
            if self.queue.is_empty() && self.free_cores > 0 {
                self.free_cores -= 1;
                self.hand_off(r, Role::Main, after_exit);
            } else {
                self.queue.push_back((r, true));
            }
        } else {
            self.running += 1;
            self.hand_off(r, Role::Main, after_exit);
        }
    }

    /// Thread `tid` (runnable; under the guard holding a core) starts request `r` as its
    /// first thread.
    fn start_on(&mut self, tid: usize, r: usize, after_exit: bool) {
        let (now, load) = (self.now, self.load);
        {
            let t = &mut self.threads[tid];
            t.req = r;
            t.role = Role::Main;
        }
        let q = &mut self.reqs[r];
        q.start = now;
        q.degree_since = now;
        q.threads = 1;
        q.next_check = now + self.cfg.quantum_ms;
        let degree = if after_exit {
            1
        } else {
            self.policy.start_degree(load, q.work).max(1)
        };
        q.wanted = degree;
        if q.units == 0 {
            // Nothing to share: its first thread runs the merge.
            self.set_degree(r, 1);
            let w = self.reqs[r].merge_work;
            return self.run_phase(tid, Phase::Merge, w);
        }
        if self.guarded {
            let total = start_threads(degree, q.units, self.free_cores, self.queue.len());
            self.free_cores -= total - 1;
            self.set_degree(r, total);
            let sent = self.send_helpers(r, total - 1);
            self.after_sending(tid, sent);
        } else {
            self.set_degree(r, 0);
            let (boosted, sent) = self.raise(r, 0, degree);
            if boosted {
                // Boosted at once: its boost threads run it; this one leaves.
                return self.leave(tid, false);
            }
            self.after_sending(tid, sent);
        }
    }

    /// The first thread's self-scheduling point (FM paper §4.2); returns the help
    /// tickets it sent.
    fn check(&mut self, r: usize) -> usize {
        let q = &self.reqs[r];
        let executed = self.now - q.start;
        let q_ms = self.cfg.quantum_ms;
        let next = q.start + q_ms * ((executed / q_ms).floor() + 1.0);
        if self.guarded {
            let wanted = self.policy.degree(self.load, executed, q.wanted);
            let n = helpers_granted(
                wanted,
                q.threads,
                q.pending,
                q.units - q.next_unit,
                self.free_cores,
                self.queue.len(),
            );
            let q = &mut self.reqs[r];
            q.wanted = wanted;
            q.next_check = next;
            self.free_cores -= n;
            self.set_degree(r, self.reqs[r].degree + n);
            self.send_helpers(r, n)
        } else {
            let current = q.degree;
            let wanted = self.policy.degree(self.load, executed, current);
            self.reqs[r].next_check = next;
            if wanted > current {
                // A boosted request's first thread leaves at the boundary (caller).
                self.raise(r, current, wanted).1
            } else {
                0
            }
        }
    }

    /// Unguarded: raises request `r` from `current` to `wanted` threads, as the runtime
    /// does: at a boosting policy's maximum degree it waits for a boost slot (moving to
    /// the boost pool if it gets one: returns true); otherwise helpers are sent, whether
    /// or not units are left. Also returns the help tickets sent.
    fn raise(&mut self, r: usize, current: usize, wanted: usize) -> (bool, usize) {
        self.set_degree(r, wanted);
        if self.boosts && self.policy.boost(wanted, 0, usize::MAX) {
            self.boost_waiting.push(r);
            self.fill_boost();
            if self.reqs[r].boosted {
                return (true, 0);
            }
        }
        let n = wanted.saturating_sub(current.max(1));
        (false, self.send_helpers(r, n))
    }

    /// Selective boosting (FM paper §4.1-4.2): while the boosted threads stay fewer than
    /// the cores, the oldest waiting request moves to the boost pool.
    fn fill_boost(&mut self) {
        while let Some(i) =
            (0..self.boost_waiting.len()).min_by_key(|&i| self.reqs[self.boost_waiting[i]].index)
        {
            let r = self.boost_waiting[i];
            let degree = self.reqs[r].degree;
            if !self
                .policy
                .boost(degree, self.boosted_threads, self.cfg.cores)
            {
                return;
            }
            self.boost_waiting.swap_remove(i);
            self.boosted_threads += degree;
            self.reqs[r].boosted = true;
            self.reqs[r].pending += degree;
            for _ in 0..degree {
                self.hand_off(r, Role::Boost, false);
            }
        }
    }

    fn set_degree(&mut self, r: usize, degree: usize) {
        let now = self.now;
        let q = &mut self.reqs[r];
        q.degree_time += q.degree as f64 * (now - q.degree_since);
        q.degree_since = now;
        q.degree = degree;
        q.max_degree = q.max_degree.max(degree);
    }

    /// Request `r`'s merge is done: it leaves the system.
    fn finish(&mut self, r: usize) {
        let now = self.now;
        self.set_degree(r, self.reqs[r].degree);
        self.load -= 1;
        if self.boosts {
            self.boost_waiting.retain(|&w| w != r);
            if self.reqs[r].boosted {
                self.boosted_threads -= self.reqs[r].degree;
                self.fill_boost();
            }
        }
        if !self.guarded {
            self.running -= 1;
        }
        let q = &self.reqs[r];
        let mean_degree = if now > q.start {
            q.degree_time / (now - q.start)
        } else {
            q.max_degree.max(1) as f64
        };
        self.measured.file(
            q.index,
            RequestRecord {
                request: q.index + 1,
                arrival_ms: q.arrival,
                start_ms: q.start,
                finish_ms: now,
                work_ms: q.work,
                max_degree: q.max_degree.max(1),
                mean_degree,
                boosted: q.boosted,
            },
        );
        self.reqs[r].finished = true;
    }

    fn record_trace(&mut self) {
        let point = TracePoint {
            time_ms: self.now,
            in_system: self.load,
            running: self.load - self.queue.len() - self.delayed,
            threads: self.runnable(),
            boosted_threads: self.classes[1].threads,
        };
        match self.trace.last_mut() {
            Some(last) if last.time_ms == point.time_ms => *last = point,
            Some(last)
                if (
                    last.in_system,
                    last.running,
                    last.threads,
                    last.boosted_threads,
                ) == (
                    point.in_system,
                    point.running,
                    point.threads,
                    point.boosted_threads,
                ) => {}
            _ => self.trace.push(point),
        }
    }
}
