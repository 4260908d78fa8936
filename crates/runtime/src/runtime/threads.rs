//! What a pool thread does: start a request, help one, finish one, and under FM's core
//! guard hand its core on (docs/guard.md).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use tailor_core::{helpers_granted, start_threads};

use super::{Role, Shared, Ticket};
use crate::handle::{RequestError, Timing};
use crate::request::{Core, Work};
use crate::served::ServedRequest;

/// The timing of a request that never started.
pub(super) fn timing_now(core: &Core, now: Instant) -> Timing {
    Timing {
        arrival: core.arrival,
        start: now,
        finish: now,
        max_degree: 0,
        mean_degree: 0.0,
        boosted: false,
    }
}

/// An ordinary pool thread: starts requests and helps running ones.
pub(super) fn ordinary_loop(s: &Arc<Shared>, rx: &Receiver<Ticket>) {
    ORDINARY.with(|o| o.set(true));
    loop {
        // A request this thread admitted when its last one finished starts here, without
        // a round trip through the channel.
        if let Some((work, after_exit)) = NEXT.with(|n| n.borrow_mut().take()) {
            s.start(&work, after_exit);
            continue;
        }
        match rx.recv() {
            Ok(Ticket::Start(work, after_exit)) => s.start(&work, after_exit),
            Ok(Ticket::Help(work)) => s.help(&work),
            Ok(Ticket::Stop) | Err(_) => return,
        }
    }
}

thread_local! {
    /// Whether this thread is an ordinary pool thread.
    static ORDINARY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The next request for this ordinary pool thread to start.
    static NEXT: std::cell::RefCell<Option<(Arc<dyn Work>, bool)>> =
        const { std::cell::RefCell::new(None) };
}

impl Shared {
    /// Requests waiting for admission now: FM's delay and the bounded queue, or the
    /// core guard's queue.
    pub(super) fn waiting(&self) -> usize {
        self.admitter.waiting() + self.gate.as_ref().map_or(0, |g| g.waiting())
    }

    /// Sends a request to be started by a pool thread.
    pub(super) fn dispatch(&self, work: Arc<dyn Work>, after_exit: bool) {
        let _ = self.ordinary.send(Ticket::Start(work, after_exit));
    }

    /// A request leaves the system.
    pub(super) fn leave(&self) {
        if self.metrics.load.fetch_sub(1, Ordering::AcqRel) == 1 {
            let (lock, idle) = &self.idle;
            let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            idle.notify_all();
        }
    }

    /// Starts a request on the calling pool thread at the policy's degree; under the core
    /// guard, then every request its core is handed to.
    pub(super) fn start(self: &Arc<Self>, work: &Arc<dyn Work>, after_exit: bool) {
        if self.gate.is_none() {
            return self.start_unguarded(work, after_exit);
        }
        let mut next = Some(work.clone());
        let mut after_exit = after_exit;
        while let Some(work) = next.take() {
            next = self.start_guarded(&work, after_exit);
            // A request handed a core waited for it: it starts as FM's admit-on-exit does.
            after_exit = true;
        }
    }

    /// Joins a request as a helper; under the guard, the thread then hands its core on.
    fn help(self: &Arc<Self>, work: &Arc<dyn Work>) {
        if self.gate.is_none() {
            let _ = work_on(self, work, Role::Helper);
            return;
        }
        let core = work.core();
        // Joined before the ticket is taken off, so threads + pending never dips.
        core.threads.fetch_add(1, Ordering::AcqRel);
        core.pending.fetch_sub(1, Ordering::AcqRel);
        let next = match work_on(self, work, Role::Helper) {
            Exit::Yielded(next) => Some(next),
            Exit::Left => self.hand_on(),
        };
        if let Some(next) = next {
            self.start(&next, true);
        }
    }

    /// Under the guard: the calling thread holds a core and leaves its request; the core
    /// goes to the oldest waiting request, returned for the thread to start, or is freed.
    fn hand_on(&self) -> Option<Arc<dyn Work>> {
        self.gate.as_ref().and_then(|gate| gate.release())
    }

    /// Under the guard: starts `work` on the calling thread, which holds a core, with the
    /// helpers the guard allows ([`start_threads`]); returns the request the thread's core
    /// goes to when it leaves this one.
    fn start_guarded(
        self: &Arc<Self>,
        work: &Arc<dyn Work>,
        after_exit: bool,
    ) -> Option<Arc<dyn Work>> {
        let gate = self.gate.as_ref().expect("guarded");
        let core = work.core();
        *core.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let load = self.metrics.load.load(Ordering::Acquire);
        let degree = if after_exit {
            1
        } else {
            let hint = core.demand_hint_ms.unwrap_or(0.0);
            self.policy.load().start_degree(load, hint).max(1)
        };
        core.wanted.store(degree, Ordering::Release);
        if core.units == 0 {
            core.set_degree(1);
            self.finish(work);
            return self.hand_on();
        }
        core.threads.store(1, Ordering::Release);
        let units = core.units;
        let threads = gate.start(|free, waiting| start_threads(degree, units, free, waiting));
        core.pending.store(threads - 1, Ordering::Release);
        core.set_degree(threads);
        for _ in 1..threads {
            let _ = self.ordinary.send(Ticket::Help(work.clone()));
        }
        match work_on(self, work, Role::Main) {
            Exit::Yielded(next) => Some(next),
            Exit::Left => self.hand_on(),
        }
    }

    /// Under the guard, at a self-scheduling point: the policy's degree for the request
    /// now, and the helpers the guard allows toward it ([`helpers_granted`]).
    fn raise_guarded(&self, work: &Arc<dyn Work>, executed_ms: f64) {
        let gate = self.gate.as_ref().expect("guarded");
        let core = work.core();
        let load = self.metrics.load.load(Ordering::Acquire);
        let wanted =
            self.policy
                .load()
                .degree(load, executed_ms, core.wanted.load(Ordering::Acquire));
        core.wanted.store(wanted, Ordering::Release);
        let n = gate.grant(|free, waiting| {
            helpers_granted(
                wanted,
                core.threads.load(Ordering::Acquire),
                core.pending.load(Ordering::Acquire),
                core.unclaimed(),
                free,
                waiting,
            )
        });
        if n == 0 {
            return;
        }
        core.pending.fetch_add(n, Ordering::AcqRel);
        core.adjust_degree(n as isize);
        for _ in 0..n {
            let _ = self.ordinary.send(Ticket::Help(work.clone()));
        }
    }

    /// Starts a request on the calling pool thread at the policy's degree (no guard).
    fn start_unguarded(self: &Arc<Self>, work: &Arc<dyn Work>, after_exit: bool) {
        let core = work.core();
        *core.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let load = self.metrics.load.load(Ordering::Acquire);
        let degree = if after_exit {
            1
        } else {
            let hint = core.demand_hint_ms.unwrap_or(0.0);
            self.policy.load().start_degree(load, hint).max(1)
        };
        if core.units == 0 {
            core.set_degree(1);
            self.finish(work);
            return;
        }
        if !self.raise(work, 0, degree) {
            let _ = work_on(self, work, Role::Main);
        }
    }

    /// Raises a request from `current` to `wanted` threads. At the maximum degree of a
    /// boosting policy it waits for a boost slot, which [`Shared::fill_boost`] gives to
    /// the oldest waiting request; if it gets one now it moves to the boost pool.
    /// Otherwise it gets ordinary helpers. Returns whether the request moved to the
    /// boost pool (the caller then leaves it).
    fn raise(&self, work: &Arc<dyn Work>, current: usize, wanted: usize) -> bool {
        let core = work.core();
        core.set_degree(wanted);
        if self.boosts && self.policy.load().boost(wanted, 0, usize::MAX) {
            let mut waiting = self.boost_waiting.lock().unwrap_or_else(|e| e.into_inner());
            waiting.push(work.clone());
            self.fill_boost(&mut waiting);
            if core.boosted.load(Ordering::Acquire) {
                return true;
            }
        }
        // The request keeps its current threads (at least the caller) and gets helpers.
        // If it is boosted later, they leave it between units.
        for _ in current.max(1)..wanted {
            let _ = self.ordinary.send(Ticket::Help(work.clone()));
        }
        false
    }

    /// Selective thread priority boosting (FM paper §4.1-4.2): while the boosted threads
    /// stay fewer than the cores, the oldest waiting request (by arrival) moves to the
    /// boost pool. Called with the waiting list locked, when a request joins it and when
    /// a boosted request leaves.
    fn fill_boost(&self, waiting: &mut Vec<Arc<dyn Work>>) {
        loop {
            let Some(i) = (0..waiting.len())
                .min_by_key(|&i| (waiting[i].core().arrival, waiting[i].core().id))
            else {
                return;
            };
            let degree = waiting[i].core().degree.load(Ordering::Acquire);
            let boosted = &self.metrics.boosted_threads;
            if !self
                .policy
                .load()
                .boost(degree, boosted.load(Ordering::Acquire), self.config.cores)
            {
                return;
            }
            let work = waiting.swap_remove(i);
            boosted.fetch_add(degree, Ordering::AcqRel);
            work.core().boosted.store(true, Ordering::Release);
            for _ in 0..degree {
                let _ = self.boost.send(Some(work.clone()));
            }
        }
    }

    /// A finishing request leaves the boost waiting list, or gives its boost slots back
    /// to the oldest waiting request. Returns whether it was boosted.
    fn leave_boost(&self, core: &Core) -> bool {
        if !self.boosts {
            return false;
        }
        let mut waiting = self.boost_waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.retain(|w| w.core().id != core.id);
        let boosted = core.boosted.load(Ordering::Acquire);
        if boosted {
            self.metrics
                .boosted_threads
                .fetch_sub(core.degree.load(Ordering::Acquire), Ordering::AcqRel);
            self.fill_boost(&mut waiting);
        }
        boosted
    }

    /// Finishes a request: merge, record, resolve the handle, admit the next.
    fn finish(&self, work: &Arc<dyn Work>) {
        let core = work.core();
        let failure = core.take_failure();
        let max_degree = core.max_degree.load(Ordering::Acquire).max(1);
        let boosted = self.leave_boost(core);
        let stop = || self.cancelling.load(Ordering::Acquire) || work.cancelled();
        // Counted and profiled before the handle resolves: whoever waits on it sees it.
        let record = |timing: &Timing, failure: Option<&RequestError>| {
            let counter = match failure {
                None => &self.metrics.completed,
                Some(RequestError::Cancelled) => &self.metrics.cancelled,
                Some(RequestError::Panicked(_)) => &self.metrics.failed,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            if failure.is_none() && self.served.on() && core.is_timed() {
                let (units_ms, merge_ms) = core.parts_ms();
                self.served.push(ServedRequest {
                    arrival: core.arrival,
                    units_ms,
                    merge_ms,
                    max_degree,
                    latency_ms: timing.latency_ms(),
                });
            }
            let top = self.metrics.degrees.len();
            self.metrics.degrees[max_degree.min(top) - 1].fetch_add(1, Ordering::Relaxed);
            if core.measured {
                self.metrics
                    .latency
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .record(timing.latency_ms());
            }
        };
        work.complete(
            failure,
            &|finish| Timing {
                arrival: core.arrival,
                start: core.started_at(),
                finish,
                max_degree,
                mean_degree: core.mean_degree(finish),
                boosted,
            },
            &stop,
            &record,
        );
        // Under the guard the admitter only delays; cores are handed on by the threads.
        let next = if self.gate.is_none() {
            self.admitter.exit()
        } else {
            None
        };
        if let Some((next, after_exit)) = next {
            // An ordinary pool thread starts the next request itself once it is done
            // here; others hand it to the pool.
            if ORDINARY.with(|o| o.get()) && NEXT.with(|n| n.borrow().is_none()) {
                NEXT.with(|n| *n.borrow_mut() = Some((next, after_exit)));
            } else {
                self.dispatch(next, after_exit);
            }
        }
        self.leave();
    }
}

/// How a thread's work on a request ended.
pub(super) enum Exit {
    /// It left: no unit was left to claim, the request finished, failed or was
    /// cancelled, or it moved to the boost pool.
    Left,
    /// Under the core guard, a helper gave its core to this waiting request between
    /// units, and starts it.
    Yielded(Arc<dyn Work>),
}

/// A thread's work on one request: claim units until none are left (or, for an ordinary
/// thread, until the request moves to the boost pool). The main thread re-examines the
/// degree every quantum between units. Under the core guard a helper also gives its core
/// to a waiting request between units, and the thread counts itself off the request when
/// it leaves.
pub(super) fn work_on(s: &Arc<Shared>, work: &Arc<dyn Work>, role: Role) -> Exit {
    let core = work.core();
    let in_use = s.metrics.threads_in_use.fetch_add(1, Ordering::AcqRel) + 1;
    s.metrics
        .peak_threads_in_use
        .fetch_max(in_use, Ordering::AcqRel);
    let quantum = Duration::from_secs_f64(s.config.quantum_ms / 1000.0);
    let started = core.started_at();
    let mut next_check = started + quantum;
    let self_schedules = role == Role::Main && s.config.policy.self_schedules();
    let guard = s.gate.as_ref();
    let mut joined = false;
    let mut exit = Exit::Left;
    loop {
        // An injected stall holds the thread here, before the tests below, so that what
        // happened during it (a cancel, a boost) is seen before the next unit.
        s.stall.pass();
        // A cancelling shutdown, or a submitter that cancelled this request: skip the
        // units left (the merge sees the same test).
        if s.cancelling.load(Ordering::Acquire) || work.cancelled() {
            let skipped = core.fail(RequestError::Cancelled);
            if core.add_done(skipped) {
                s.finish(work);
            }
            break;
        }
        if role != Role::Boost && core.boosted.load(Ordering::Acquire) {
            break;
        }
        // Under the guard a waiting request takes a helper's core between units.
        if role == Role::Helper && joined {
            if let Some(next) = guard.and_then(|g| g.yield_core()) {
                exit = Exit::Yielded(next);
                break;
            }
        }
        let Some(i) = core.claim() else { break };
        let result = if joined {
            work.run_unit(i)
        } else {
            joined = true;
            work.join().and_then(|()| work.run_unit(i))
        };
        match result {
            Ok(()) => {
                if core.add_done(1) {
                    s.finish(work);
                    break;
                }
            }
            Err(message) => {
                let skipped = core.fail(RequestError::Panicked(message));
                if core.add_done(1 + skipped) {
                    s.finish(work);
                }
                break;
            }
        }
        if self_schedules {
            let now = Instant::now();
            if now >= next_check {
                let executed = now.duration_since(started);
                if guard.is_some() {
                    s.raise_guarded(work, executed.as_secs_f64() * 1000.0);
                } else {
                    let current = core.degree.load(Ordering::Acquire);
                    let load = s.metrics.load.load(Ordering::Acquire);
                    let wanted =
                        s.policy
                            .load()
                            .degree(load, executed.as_secs_f64() * 1000.0, current);
                    if wanted > current && s.raise(work, current, wanted) {
                        break; // it moved to the boost pool
                    }
                }
                let ticks = (executed.as_secs_f64() / quantum.as_secs_f64()).floor() + 1.0;
                next_check = started + quantum.mul_f64(ticks);
            }
        }
    }
    if guard.is_some() {
        core.threads.fetch_sub(1, Ordering::AcqRel);
        core.adjust_degree(-1);
    }
    s.metrics.threads_in_use.fetch_sub(1, Ordering::AcqRel);
    exit
}
