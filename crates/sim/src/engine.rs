//! The event loop: arrivals, admission, self-scheduling, and completions under fair sharing.
//!
//! Between two events every rate is constant, so progress is tracked with one virtual
//! clock per weight class: V_c grows at the share x_c of a core that each thread of class
//! c gets. A request of class c at degree d does s(d) work per unit of V_c, so it finishes
//! when V_c reaches its virtual finish; each class keeps its requests in a heap by that
//! value. An event thus costs O(log n), and self-scheduling points are scheduled only
//! where the policy would change a degree (the first quantum tick at or after the
//! executed time returned by `Policy::next_increase_ms`), which gives the same run as
//! checking at every tick.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use tailor_core::{workload_rngs, Admission, ArrivalStream, Policy, RequestDemand, Speedup};

use crate::config::{SimConfig, SimError};
use crate::cpu::{nice_weight, shares};
use crate::fast;
use crate::measure::{finish, Measurements};
use crate::queue::EventQueue;
use crate::report::{RequestRecord, SimOutput, TracePoint};
use crate::time::SimTime;

mod replica;
pub(crate) use replica::{Replica, Ticket};

/// A completion this close (in ms) before or after another event counts as tied with it
/// and goes first; finish times computed in different ways differ by far less.
pub(crate) const TIE_MS: f64 = 1e-9;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
    /// Cancelled while waiting out an FM admission delay; its slot is freed when the
    /// delay's event comes.
    Cancelled,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// A request whose FM admission delay v0 has passed (its slot).
    DelayedStart(usize),
    /// A self-scheduling point: request, its check version, the quantum tick index.
    Check(usize, u32, u64),
}

/// One in-flight request's state, in a slot that is reused once it completes.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    /// Its place in arrival order, from 0.
    index: usize,
    pub(crate) arrival: SimTime,
    pub(crate) work: f64,
    speedup: Speedup,
    state: State,
    pub(crate) start: SimTime,
    pub(crate) finish: SimTime,
    pub(crate) degree: usize,
    pub(crate) max_degree: usize,
    pub(crate) boosted: bool,
    /// Virtual finish in its class's clock.
    vfinish: f64,
    /// Bumped whenever its completion-heap entry goes stale.
    version: u32,
    /// Bumped whenever its scheduled check event goes stale.
    check_version: u32,
    degree_since: SimTime,
    /// Integral of the degree over its execution, in degree x ms.
    pub(crate) degree_time: f64,
    /// Quantum tick index of its last self-scheduling point.
    last_tick: u64,
    /// Quantum tick index of its scheduled check, if any.
    next_tick: Option<u64>,
    /// Its index in `running`.
    slot: usize,
}

/// A weight class of threads: its virtual clock, share and requests by virtual finish.
#[derive(Debug, Default)]
struct Class {
    clock: f64,
    share: f64,
    threads: usize,
    /// The threads its requests keep busy (`threads` under the held-thread model; the
    /// sum of s(d) when threads leave out of units); the shares are computed from it.
    busy: f64,
    /// (virtual finish, slot, version); ties go to the lower slot, deterministically.
    heap: BinaryHeap<Reverse<(OrdF64, u32, u32)>>,
    /// Entries in `heap` superseded by a later one for the same request.
    stale: usize,
}

/// An f64 ordered totally, for heap keys.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    /// Plain float comparison: virtual finishes are never NaN (inputs are validated to
    /// be finite and positive), and this is cheaper than `total_cmp` on the hot path.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self.0 < other.0 {
            std::cmp::Ordering::Less
        } else if self.0 > other.0 {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }
}

pub(crate) struct Engine<'c> {
    cfg: &'c SimConfig,
    policy: &'c Policy,
    cores: f64,
    now: SimTime,
    events: EventQueue<Event>,
    /// Intended arrival times, drawn in order; the next one, and its index. A replica
    /// has none: its requests are injected.
    arrivals: Option<ArrivalStream>,
    upcoming: Option<f64>,
    next_arrival: usize,
    /// Draws each request's demand as it arrives.
    demand_rng: tailor_core::Rng,
    /// Slots of in-flight requests, and the free ones.
    reqs: Vec<Req>,
    free: Vec<usize>,
    /// Requests in the system: waiting or running (the policies' "load").
    load: usize,
    running: Vec<usize>,
    /// First come, first served: requests waiting for a worker or for an exit.
    queue: VecDeque<usize>,
    /// Requests waiting out an FM admission delay v0.
    delayed: usize,
    /// [ordinary, boosted]
    classes: [Class; 2],
    weights: [f64; 2],
    /// The busy threads the classes' shares were computed for.
    shares_for: (f64, f64),
    /// Whether the policy self-schedules (looked up once).
    self_schedules: bool,
    /// Whether the policy boosts some requests (looked up once).
    boosts: bool,
    /// The FM table row the current load maps to (self-scheduling depends on it).
    row_key: usize,
    trace: Vec<TracePoint>,
    measured: Measurements,
    /// Until when the replica is stalled (its requests make no progress).
    frozen_until: SimTime,
    /// A replica's completed requests, for its front end to collect: (tag, finish).
    finished: Option<Vec<(usize, SimTime)>>,
}

/// What the engine does next by itself: a completion in a class, or a scheduled event.
#[derive(Debug, Clone, Copy)]
enum Step {
    Completion(SimTime, usize),
    Event(SimTime),
}

impl Step {
    fn time(self) -> SimTime {
        match self {
            Step::Completion(t, _) | Step::Event(t) => t,
        }
    }

    /// Whether an arrival at `a` goes before this step: before a completion only when
    /// more than [`TIE_MS`] earlier, before an event at the same time.
    fn after_arrival_at(self, a: SimTime) -> bool {
        match self {
            Step::Completion(c, _) => a < c && c.ms() - a.ms() > TIE_MS,
            Step::Event(e) => a <= e,
        }
    }
}

/// Runs a simulation.
pub fn simulate(cfg: &SimConfig) -> Result<SimOutput, SimError> {
    cfg.validate()?;
    let count = cfg.request_count();
    let (arrival_rng, demand_rng) = workload_rngs(cfg.seed);
    let mut arrivals = cfg.arrivals.stream(cfg.rps, count, arrival_rng)?;
    if let Some(calibration) = &cfg.calibration {
        let (measured, trace) = crate::threads::run(cfg, calibration, arrivals, demand_rng);
        return Ok(finish(cfg, measured, trace));
    }
    if fast::applies(cfg) {
        return Ok(finish(
            cfg,
            fast::run(cfg, arrivals, demand_rng),
            Vec::new(),
        ));
    }
    let upcoming = arrivals.next();
    let mut engine = Engine::new(cfg, Some(arrivals), demand_rng, Measurements::new(cfg));
    engine.upcoming = upcoming;
    engine.run();
    Ok(finish(cfg, engine.measured, engine.trace))
}

impl<'c> Engine<'c> {
    fn new(
        cfg: &'c SimConfig,
        arrivals: Option<ArrivalStream>,
        demand_rng: tailor_core::Rng,
        measured: Measurements,
    ) -> Self {
        Engine {
            cfg,
            policy: &cfg.policy,
            cores: cfg.cores as f64,
            now: SimTime::ZERO,
            events: EventQueue::new(),
            arrivals,
            upcoming: None,
            next_arrival: 0,
            demand_rng,
            reqs: Vec::new(),
            free: Vec::new(),
            load: 0,
            running: Vec::new(),
            queue: VecDeque::new(),
            delayed: 0,
            classes: [Class::default(), Class::default()],
            weights: [nice_weight(0), nice_weight(cfg.boost_nice)],
            shares_for: (0.0, 0.0),
            self_schedules: cfg.policy.self_schedules(),
            boosts: cfg.policy.boosts(),
            row_key: 0,
            trace: Vec::new(),
            measured,
            frozen_until: SimTime::ZERO,
            finished: None,
        }
    }

    fn run(&mut self) {
        // At equal times: completions first, then arrivals, then other events in the
        // order they were scheduled; a completion within TIE_MS of the next arrival or
        // event counts as tied with it, so that rounding in how a finish time was
        // computed cannot reorder them.
        loop {
            let step = self.next_step();
            match (step, self.upcoming.map(SimTime::from_ms)) {
                (Some(step), Some(a)) if !step.after_arrival_at(a) => self.take(step),
                (Some(step), None) => self.take(step),
                (_, Some(t)) => {
                    self.advance(t);
                    let index = self.next_arrival;
                    self.next_arrival += 1;
                    self.upcoming = self.arrivals.as_mut().and_then(Iterator::next);
                    let d = self.cfg.demand.sample(&mut self.demand_rng);
                    let id = self.admit_slot(index, t, d);
                    self.arrive(id);
                }
                (None, None) => break,
            }
            self.settle();
        }
    }

    /// The engine's next step of its own, if any.
    fn next_step(&mut self) -> Option<Step> {
        let completion = self.next_completion();
        let event = self.events.peek_time();
        match (completion, event) {
            (Some((c, _)), Some(e)) if e < c && c.ms() - e.ms() > TIE_MS => Some(Step::Event(e)),
            (Some((c, class)), _) => Some(Step::Completion(c, class)),
            (None, Some(e)) => Some(Step::Event(e)),
            (None, None) => None,
        }
    }

    fn take(&mut self, step: Step) {
        match step {
            Step::Completion(t, class) => self.complete(t, class),
            Step::Event(_) => {
                let (t, event) = self.events.pop().expect("peeked");
                self.advance(t);
                self.handle(event);
            }
        }
    }

    /// After every step: the shares, and the trace.
    fn settle(&mut self) {
        self.update_shares();
        if self.cfg.trace {
            self.record_trace();
        }
    }

    /// The earliest completion: (time, class), dropping stale heap entries.
    fn next_completion(&mut self) -> Option<(SimTime, usize)> {
        let mut best: Option<(SimTime, usize)> = None;
        for c in 0..2 {
            let class = &mut self.classes[c];
            // Only superseded entries can be stale; skip the check when there are none.
            while class.stale > 0 {
                let Some(Reverse((_, id, version))) = class.heap.peek() else {
                    break;
                };
                let r = &self.reqs[*id as usize];
                if r.state == State::Running && r.version == *version {
                    break;
                }
                class.heap.pop();
                class.stale -= 1;
            }
            if let Some(Reverse((vfinish, ..))) = class.heap.peek() {
                let dt = ((vfinish.0 - class.clock) / class.share).max(0.0);
                let t = self.now.max(self.frozen_until) + dt;
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, c));
                }
            }
        }
        best
    }

    fn advance(&mut self, t: SimTime) {
        // A stalled replica's requests make no progress until it resumes.
        let dt = t - self.now.max(self.frozen_until);
        if t > self.now && dt > 0.0 {
            for class in self.classes.iter_mut().filter(|c| c.threads > 0) {
                let threads = class.busy;
                class.clock += class.share * dt;
                self.measured.thread_time += threads * dt;
                self.measured.cpu_time += threads * class.share * dt;
            }
        }
        if t > self.now {
            self.now = t;
        }
    }

    fn update_shares(&mut self) {
        let counts = (self.classes[0].busy, self.classes[1].busy);
        if counts == self.shares_for {
            return;
        }
        self.shares_for = counts;
        let (normal, boosted) = shares(
            self.cores,
            counts.0,
            counts.1,
            self.weights[0],
            self.weights[1],
        );
        self.classes[0].share = normal;
        self.classes[1].share = boosted;
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::DelayedStart(id) => {
                self.delayed -= 1;
                if self.reqs[id].state == State::Cancelled {
                    self.reqs[id].state = State::Done;
                    self.free.push(id);
                } else {
                    self.start(id, false);
                }
            }
            Event::Check(id, version, tick) => {
                let r = &self.reqs[id];
                if r.state == State::Running && r.check_version == version {
                    self.check(id, tick);
                }
            }
        }
    }

    /// Gives request `index`, arriving at `arrival` with demand `d`, a slot.
    fn admit_slot(&mut self, index: usize, arrival: SimTime, d: RequestDemand) -> usize {
        let id = self.free.pop().unwrap_or_else(|| {
            self.reqs.push(Req {
                index: 0,
                arrival: SimTime::ZERO,
                work: 0.0,
                speedup: Speedup::Linear,
                state: State::Done,
                start: SimTime::ZERO,
                finish: SimTime::ZERO,
                degree: 0,
                max_degree: 0,
                boosted: false,
                vfinish: 0.0,
                version: 0,
                check_version: 0,
                degree_since: SimTime::ZERO,
                degree_time: 0.0,
                last_tick: 0,
                next_tick: None,
                slot: 0,
            });
            self.reqs.len() - 1
        });
        // Versions keep growing across a slot's requests, so stale heap entries and
        // check events of its last request stay stale.
        let r = &mut self.reqs[id];
        r.index = index;
        r.arrival = arrival;
        r.work = d.work_ms;
        r.speedup = d.speedup;
        r.state = State::Waiting;
        r.max_degree = 0;
        r.boosted = false;
        r.version = r.version.wrapping_add(1);
        r.check_version = r.check_version.wrapping_add(1);
        r.degree_time = 0.0;
        r.last_tick = 0;
        r.next_tick = None;
        id
    }

    fn arrive(&mut self, id: usize) {
        self.load += 1;
        self.reqs[id].state = State::Waiting;
        if self.policy.uses_worker_pool() {
            if self.running.len() < self.cfg.worker_count() {
                self.start(id, false);
            } else {
                self.queue.push_back(id);
            }
        } else {
            match self.policy.admission(self.load) {
                Admission::Now => self.start(id, false),
                Admission::Delay(ms) => {
                    self.delayed += 1;
                    self.events.push(self.now + ms, Event::DelayedStart(id));
                }
                // With nothing running or about to run, no exit would ever come: start.
                Admission::OnExit if self.running.is_empty() && self.delayed == 0 => {
                    self.start(id, true)
                }
                Admission::OnExit => self.queue.push_back(id),
            }
        }
        self.load_changed();
    }

    /// Starts request `id`. One admitted on an exit starts at degree 1 and follows its
    /// row from there (shared/spec/formats.md, `admit_on_exit`).
    fn start(&mut self, id: usize, after_exit: bool) {
        let degree = if after_exit {
            1
        } else {
            self.policy.start_degree(self.load, self.reqs[id].work)
        };
        let r = &mut self.reqs[id];
        r.state = State::Running;
        r.start = self.now;
        r.degree_since = self.now;
        r.slot = self.running.len();
        self.running.push(id);
        let work = r.work;
        self.place(id, degree, false, work);
        self.fill_boost();
        if self.self_schedules {
            self.schedule_check(id);
        }
    }

    /// Selective thread priority boosting (FM paper §4.1-4.2): while the boosted threads
    /// stay fewer than the cores, boost the oldest running request that has reached the
    /// maximum degree and is not boosted yet. Engines call it whenever a request reaches
    /// the maximum degree or a boosted one leaves, so a freed slot goes to the oldest
    /// request waiting for one (§4.1: "we boost the oldest threads' priorities"), not
    /// to whichever request happens to reach the maximum degree next.
    fn fill_boost(&mut self) {
        if !self.boosts {
            return;
        }
        loop {
            let oldest = self
                .running
                .iter()
                .copied()
                .filter(|&id| {
                    let r = &self.reqs[id];
                    !r.boosted && self.policy.boost(r.degree, 0, usize::MAX)
                })
                .min_by_key(|&id| self.reqs[id].index);
            let Some(id) = oldest else { return };
            let degree = self.reqs[id].degree;
            if !self
                .policy
                .boost(degree, self.classes[1].threads, self.cfg.cores)
            {
                return;
            }
            let remaining = self.unplace(id);
            self.classes[0].stale += 1;
            self.place(id, degree, true, remaining);
        }
    }

    /// Puts request `id` at `degree` in its class with `remaining` work left.
    fn place(&mut self, id: usize, degree: usize, boosted: bool, remaining: f64) {
        let c = usize::from(boosted);
        let r = &mut self.reqs[id];
        r.degree = degree;
        r.max_degree = r.max_degree.max(degree);
        r.boosted = boosted;
        r.version = r.version.wrapping_add(1);
        r.vfinish = self.classes[c].clock + remaining / r.speedup.at(degree);
        let charge = self.cfg.thread_model.charge(degree, r.speedup.at(degree));
        self.classes[c].threads += degree;
        self.classes[c].busy += charge;
        self.classes[c]
            .heap
            .push(Reverse((OrdF64(r.vfinish), id as u32, r.version)));
    }

    /// Takes request `id` off its class, returning the work it has left.
    fn unplace(&mut self, id: usize) -> f64 {
        self.release(id);
        let r = &self.reqs[id];
        let c = usize::from(r.boosted);
        ((r.vfinish - self.classes[c].clock) * r.speedup.at(r.degree)).max(0.0)
    }

    /// Takes request `id`'s threads off its class and closes its degree interval.
    fn release(&mut self, id: usize) {
        let r = &mut self.reqs[id];
        r.degree_time += r.degree as f64 * (self.now - r.degree_since);
        r.degree_since = self.now;
        let charge = self
            .cfg
            .thread_model
            .charge(r.degree, r.speedup.at(r.degree));
        let class = &mut self.classes[usize::from(r.boosted)];
        class.threads -= r.degree;
        // No rounding residue is left once the class is empty.
        class.busy = if class.threads == 0 {
            0.0
        } else {
            class.busy - charge
        };
    }

    /// A self-scheduling point at quantum tick `tick` (FM paper §4.2).
    fn check(&mut self, id: usize, tick: u64) {
        let executed = tick as f64 * self.cfg.quantum_ms;
        let current = self.reqs[id].degree;
        self.reqs[id].last_tick = tick;
        self.reqs[id].next_tick = None;
        let wanted = self.policy.degree(self.load, executed, current);
        if wanted > current {
            let remaining = self.unplace(id);
            // Its entry in its current class is superseded by the one `place` adds.
            let boosted = self.reqs[id].boosted;
            self.classes[usize::from(boosted)].stale += 1;
            self.place(id, wanted, boosted, remaining);
            self.fill_boost();
        }
        self.schedule_check(id);
    }

    /// Schedules request `id`'s next self-scheduling point where its degree would rise
    /// under the current load, replacing any scheduled one.
    fn schedule_check(&mut self, id: usize) {
        let q = self.cfg.quantum_ms;
        let r = &self.reqs[id];
        // A point further than 2^52 ticks away (beyond f64's whole numbers) is never
        // reached; treating it as "no increase" keeps the tick arithmetic below exact.
        let Some(executed) = self
            .policy
            .next_increase_ms(self.load, r.degree)
            .filter(|&e| e / q < 4_503_599_627_370_496.0)
        else {
            let r = &mut self.reqs[id];
            if r.next_tick.take().is_some() {
                r.check_version = r.check_version.wrapping_add(1);
            }
            return;
        };
        // The first tick k with k * q >= executed, after the last point and not in the past.
        let mut k = (executed / q).ceil().max(0.0) as u64;
        while k > 0 && (k - 1) as f64 * q >= executed {
            k -= 1;
        }
        while (k as f64) * q < executed {
            k += 1;
        }
        let elapsed_ticks = ((self.now - r.start) / q - 1e-9).ceil().max(0.0) as u64;
        let k = k.max(r.last_tick + 1).max(elapsed_ticks);
        if r.next_tick == Some(k) {
            return;
        }
        let at = r.start + k as f64 * q;
        let r = &mut self.reqs[id];
        r.next_tick = Some(k);
        r.check_version = r.check_version.wrapping_add(1);
        self.events.push(at, Event::Check(id, r.check_version, k));
    }

    /// The load changed: requests self-scheduling by a load-indexed table may now need
    /// their degree raised at other points.
    fn load_changed(&mut self) {
        if !self.self_schedules {
            return;
        }
        let key = match self.policy {
            Policy::Fm { table, .. } => self.load.clamp(1, table.rows.len()),
            _ => 0,
        };
        if key == self.row_key {
            return;
        }
        self.row_key = key;
        for i in 0..self.running.len() {
            let id = self.running[i];
            self.schedule_check(id);
        }
    }

    fn complete(&mut self, t: SimTime, class: usize) {
        self.advance(t);
        let Reverse((_, id, _)) = self.classes[class].heap.pop().expect("peeked");
        let id = id as usize;
        self.reqs[id].finish = self.now;
        self.stop_running(id);
        self.record(id);
        self.vacate(id);
    }

    /// Takes running request `id` off the cores and out of the system.
    fn stop_running(&mut self, id: usize) {
        self.release(id);
        let r = &mut self.reqs[id];
        r.state = State::Done;
        r.version = r.version.wrapping_add(1);
        let slot = r.slot;
        self.running.swap_remove(slot);
        if slot < self.running.len() {
            let moved = self.running[slot];
            self.reqs[moved].slot = slot;
        }
        self.load -= 1;
    }

    /// Frees the slot of request `id`, which has left, and gives its place to others.
    fn vacate(&mut self, id: usize) {
        self.free.push(id);
        if self.reqs[id].boosted {
            self.fill_boost();
        }
        // A worker, or an exit, frees the head of the queue.
        if let Some(next) = self.queue.pop_front() {
            let after_exit = !self.policy.uses_worker_pool();
            self.start(next, after_exit);
        }
        self.load_changed();
    }

    fn record_trace(&mut self) {
        let point = TracePoint {
            time_ms: self.now.ms(),
            in_system: self.load,
            running: self.running.len(),
            threads: self.classes[0].threads + self.classes[1].threads,
            boosted_threads: self.classes[1].threads,
        };
        let same = self.trace.last().is_some_and(|p| {
            (p.in_system, p.running, p.threads, p.boosted_threads)
                == (
                    point.in_system,
                    point.running,
                    point.threads,
                    point.boosted_threads,
                )
        });
        if same {
            return;
        }
        // Events at the same instant leave one row: the state after the last of them.
        match self.trace.last_mut() {
            Some(last) if last.time_ms == point.time_ms => *last = point,
            _ => self.trace.push(point),
        }
    }

    /// Files a completed request's measurements.
    fn record(&mut self, id: usize) {
        let r = &self.reqs[id];
        if let Some(finished) = self.finished.as_mut() {
            finished.push((r.index, r.finish));
            return;
        }
        let mean_degree = if r.finish > r.start {
            r.degree_time / (r.finish - r.start)
        } else {
            r.max_degree as f64
        };
        self.measured.file(
            r.index,
            RequestRecord {
                request: r.index + 1,
                arrival_ms: r.arrival.ms(),
                start_ms: r.start.ms(),
                finish_ms: r.finish.ms(),
                work_ms: r.work,
                max_degree: r.max_degree,
                mean_degree,
                boosted: r.boosted,
            },
        );
    }
}
