//! The runtime: pooled threads that run requests as the policy says.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use tailor_core::{Job, Noise, Policy};

use crate::admission::{Admitter, Decision};
use crate::handle::{oneshot, Handle, RequestError, Timing};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::noise::StallGate;
use crate::priority::{set_current_nice, set_current_realtime, BoostMode};
use crate::request::{Core, Request, Work};

/// How a runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The cores the policy plans for; boosted threads stay fewer than this.
    pub cores: usize,
    /// The policy: the same decision code the simulator runs.
    pub policy: Policy,
    /// How often a request re-examines its degree, in ms (FM paper §4.2: 5 ms).
    pub quantum_ms: f64,
    /// Requests running at once for policies with a worker pool (all but FM); default:
    /// one per core.
    pub workers: Option<usize>,
    /// Ordinary pool threads; default: enough for every running request at the policy's
    /// highest degree (pool policies) or twice the cores times the highest degree (FM).
    pub threads: Option<usize>,
    /// Requests that may wait for admission; beyond it submissions are refused.
    pub queue_bound: usize,
    /// How boosting sets priorities; `None` finds out what the process may do.
    pub boost_mode: Option<BoostMode>,
    /// Injected stalls and their seed (docs/fanout.md): every thread waits at its next
    /// unit boundary while one lasts. `None`: no stalls.
    pub noise: Option<(Noise, u64)>,
}

impl RuntimeConfig {
    /// A configuration with the defaults: 5 ms quantum, 100,000 waiting requests.
    pub fn new(cores: usize, policy: Policy) -> RuntimeConfig {
        RuntimeConfig {
            cores,
            policy,
            quantum_ms: 5.0,
            workers: None,
            threads: None,
            queue_bound: 100_000,
            boost_mode: None,
            noise: None,
        }
    }
}

/// Why a runtime could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    /// A setting is out of range.
    #[error("{0}")]
    BadConfig(String),
    /// The operating system refused a thread.
    #[error("cannot start a thread: {0}")]
    Thread(String),
}

/// Why a submission was refused; the request will not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The admission queue is at its bound.
    #[error("the admission queue is full")]
    QueueFull,
    /// The runtime is shutting down.
    #[error("the runtime is shutting down")]
    ShuttingDown,
}

/// How `shutdown` treats requests not yet finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Refuse new requests, then finish every accepted one.
    Drain,
    /// Refuse new requests and cancel every unfinished one (their handles resolve with
    /// `RequestError::Cancelled`).
    Cancel,
}

/// What a shutdown did.
#[derive(Debug, Clone, PartialEq)]
pub struct ShutdownReport {
    /// The metrics at the end: every accepted request is completed, failed or cancelled.
    pub metrics: MetricsSnapshot,
}

/// Who a thread is to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Started it and re-examines its degree every quantum.
    Main,
    /// An ordinary thread added to it.
    Helper,
    /// A boost-pool thread.
    Boost,
}

enum Ticket {
    /// Start a request; `true` if it was admitted on an exit.
    Start(Arc<dyn Work>, bool),
    /// Join a running request.
    Help(Arc<dyn Work>),
    /// Exit the thread.
    Stop,
}

pub(crate) struct Shared {
    config: RuntimeConfig,
    metrics: Metrics,
    admitter: Admitter,
    ordinary: Sender<Ticket>,
    /// The boost pool's tickets: a request to join, or `None` to exit.
    boost: Sender<Option<Arc<dyn Work>>>,
    /// Whether the policy boosts some requests (looked up once).
    boosts: bool,
    /// Running requests at the maximum degree that wait for a boost slot. Boost slots are
    /// taken and given back only under this lock.
    boost_waiting: Mutex<Vec<Arc<dyn Work>>>,
    /// Set by a cancelling shutdown: threads skip the remaining units of every request.
    cancelling: AtomicBool,
    next_id: AtomicU64,
    /// Signalled when the load falls to zero.
    idle: (Mutex<()>, Condvar),
    boost_mode: BoostMode,
    /// Injected stalls (none unless configured).
    stall: StallGate,
}

/// A running tailor runtime. Submit requests with [`Runtime::submit`]; stop it with
/// [`Runtime::shutdown`] (dropping it drains).
pub struct Runtime {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Runtime {
    /// Starts the pool, the boost pool (for policies that boost) and, for FM, the admission
    /// thread that releases delayed requests.
    pub fn start(config: RuntimeConfig) -> Result<Runtime, StartError> {
        if config.cores == 0 {
            return Err(StartError::BadConfig("cores must be at least 1".into()));
        }
        if !(config.quantum_ms.is_finite() && config.quantum_ms >= 0.001) {
            return Err(StartError::BadConfig(format!(
                "the quantum must be at least 0.001 ms, found {}",
                config.quantum_ms
            )));
        }
        let max_degree = config.policy.max_degree().max(1);
        let workers = config.workers.unwrap_or(config.cores).max(1);
        let threads = config
            .threads
            .unwrap_or(if config.policy.uses_worker_pool() {
                workers * max_degree
            } else {
                2 * config.cores * max_degree
            });
        if threads == 0 {
            return Err(StartError::BadConfig("threads must be at least 1".into()));
        }
        let boosts = config.policy.boost(max_degree, 0, config.cores);
        let boost_mode = config.boost_mode.unwrap_or_else(BoostMode::detect);
        let (ordinary_tx, ordinary_rx) = unbounded();
        let (boost_tx, boost_rx) = unbounded();
        let shared = Arc::new(Shared {
            metrics: Metrics::new(max_degree),
            admitter: Admitter::new(config.policy.clone(), workers, config.queue_bound),
            ordinary: ordinary_tx,
            boost: boost_tx,
            boosts: config.policy.boosts(),
            boost_waiting: Mutex::new(Vec::new()),
            cancelling: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            idle: (Mutex::new(()), Condvar::new()),
            boost_mode,
            stall: StallGate::new(),
            config,
        });
        let (ordinary_nice, boosted_nice) = boost_mode.nice_values();
        let mut handles = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| StartError::Thread(e.to_string()))
        };
        for i in 0..threads {
            let (shared, rx) = (shared.clone(), ordinary_rx.clone());
            handles.push(spawn(
                format!("tailor-{i}"),
                Box::new(move || {
                    if let Some(nice) = ordinary_nice {
                        set_current_nice(nice);
                    }
                    ordinary_loop(&shared, &rx);
                }),
            )?);
        }
        if boosts {
            // Boosted threads stay fewer than the cores, so cores - 1 threads suffice.
            for i in 0..shared.config.cores.saturating_sub(1).max(1) {
                let (shared, rx) = (shared.clone(), boost_rx.clone());
                handles.push(spawn(
                    format!("tailor-boost-{i}"),
                    Box::new(move || {
                        if let Some(nice) = boosted_nice {
                            set_current_nice(nice);
                        }
                        if let Some(priority) = boost_mode.realtime_boost() {
                            set_current_realtime(priority);
                        }
                        while let Ok(Some(work)) = rx.recv() {
                            work_on(&shared, &work, Role::Boost);
                        }
                    }),
                )?);
            }
        }
        if let Some((noise, seed)) = shared.config.noise {
            let s = shared.clone();
            handles.push(spawn(
                "tailor-noise".into(),
                Box::new(move || s.stall.run(noise, seed)),
            )?);
        }
        if !shared.config.policy.uses_worker_pool() {
            let s = shared.clone();
            handles.push(spawn(
                "tailor-admission".into(),
                Box::new(move || {
                    // Under a real-time class it releases delayed requests above every
                    // request thread, boosted or not.
                    if let Some(priority) = boost_mode.realtime_boost() {
                        set_current_realtime(priority + 1);
                    }
                    s.admitter.release_delayed(|work| s.dispatch(work, false));
                }),
            )?);
        }
        Ok(Runtime {
            shared,
            threads: handles,
        })
    }

    /// How boosting sets priorities here (worth printing at start-up).
    pub fn boost_mode(&self) -> BoostMode {
        self.shared.boost_mode
    }

    /// The policy it runs.
    pub fn policy(&self) -> &Policy {
        &self.shared.config.policy
    }

    /// Injected stalls begun so far ([`RuntimeConfig::noise`]).
    pub fn stalls(&self) -> u64 {
        self.shared.stall.stalls.load(Ordering::Relaxed)
    }

    /// Submits a request arriving now.
    pub fn submit<J: Job>(&self, job: J) -> Result<Handle<J::Output>, SubmitError> {
        self.submit_at(job, Instant::now(), true)
    }

    /// Submits a request whose latency counts from `arrival` (a load generator's
    /// intended arrival time), into the latency histogram only if `measured`.
    pub fn submit_at<J: Job>(
        &self,
        job: J,
        arrival: Instant,
        measured: bool,
    ) -> Result<Handle<J::Output>, SubmitError> {
        let s = &self.shared;
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let core = Core::new(id, job.units(), arrival, measured, job.demand_hint_ms());
        let (handle, completer) = oneshot();
        let work: Arc<dyn Work> = Arc::new(Request::new(core, job, completer));
        let load = s.metrics.load.fetch_add(1, Ordering::AcqRel) + 1;
        match s.admitter.submit(&work, load) {
            Decision::Start { after_exit } => s.dispatch(work, after_exit),
            Decision::Wait => {}
            refused @ (Decision::Full | Decision::Closed) => {
                s.leave();
                s.metrics.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(if matches!(refused, Decision::Full) {
                    SubmitError::QueueFull
                } else {
                    SubmitError::ShuttingDown
                });
            }
        }
        Ok(handle)
    }

    /// The live metrics.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot(self.shared.admitter.waiting())
    }

    /// Stops the runtime, draining or cancelling what is unfinished, and waits for its
    /// threads. Every accepted request ends completed, failed or cancelled.
    pub fn shutdown(mut self, how: Shutdown) -> ShutdownReport {
        self.stop(how)
    }

    /// Refuses new requests and cancels every unfinished one: waiting requests resolve as
    /// cancelled now, running ones at their next unit boundary. It does not wait; a
    /// later [`shutdown`](Runtime::shutdown) does. A server calls this when its drain
    /// deadline has passed.
    pub fn cancel_unfinished(&self) {
        self.begin_stop(Shutdown::Cancel);
    }

    fn begin_stop(&self, how: Shutdown) {
        let s = &self.shared;
        s.admitter.stop_accepting();
        // No stall outlasts the stop.
        s.stall.stop();
        if how == Shutdown::Cancel {
            for work in s.admitter.take_waiting() {
                s.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
                work.complete(
                    Some(RequestError::Cancelled),
                    &|now| timing_now(work.core(), now),
                    &|| true,
                );
                s.leave();
            }
            // Running and dispatched requests skip their remaining units at the next
            // unit boundary and resolve as cancelled.
            s.cancelling.store(true, Ordering::Release);
        }
    }

    fn stop(&mut self, how: Shutdown) -> ShutdownReport {
        self.begin_stop(how);
        let s = &self.shared;
        // Wait until every accepted request has left the system.
        let (lock, idle) = &s.idle;
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        while s.metrics.load.load(Ordering::Acquire) > 0 {
            guard = idle
                .wait_timeout(guard, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(guard);
        s.admitter.close();
        // One exit ticket per thread; each thread takes one and leaves.
        for _ in 0..self.threads.len() {
            let _ = s.ordinary.send(Ticket::Stop);
            let _ = s.boost.send(None);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        ShutdownReport {
            metrics: s.metrics.snapshot(s.admitter.waiting()),
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop(Shutdown::Drain);
        }
    }
}

/// The timing of a request that never started.
fn timing_now(core: &Core, now: Instant) -> Timing {
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
fn ordinary_loop(s: &Arc<Shared>, rx: &Receiver<Ticket>) {
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
            Ok(Ticket::Help(work)) => work_on(s, &work, Role::Helper),
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
    /// Sends a request to be started by a pool thread.
    fn dispatch(&self, work: Arc<dyn Work>, after_exit: bool) {
        let _ = self.ordinary.send(Ticket::Start(work, after_exit));
    }

    /// A request leaves the system.
    fn leave(&self) {
        if self.metrics.load.fetch_sub(1, Ordering::AcqRel) == 1 {
            let (lock, idle) = &self.idle;
            let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            idle.notify_all();
        }
    }

    /// Starts a request on the calling pool thread at the policy's degree.
    fn start(self: &Arc<Self>, work: &Arc<dyn Work>, after_exit: bool) {
        let core = work.core();
        *core.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let load = self.metrics.load.load(Ordering::Acquire);
        let degree = if after_exit {
            1
        } else {
            let hint = core.demand_hint_ms.unwrap_or(0.0);
            self.config.policy.start_degree(load, hint).max(1)
        };
        if core.units == 0 {
            core.set_degree(1);
            self.finish(work);
            return;
        }
        if !self.raise(work, 0, degree) {
            work_on(self, work, Role::Main);
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
        if self.boosts && self.config.policy.boost(wanted, 0, usize::MAX) {
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
                .config
                .policy
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

    /// Finishes a request: merge, resolve the handle, record, admit the next.
    fn finish(&self, work: &Arc<dyn Work>) {
        let core = work.core();
        let failure = core.take_failure();
        let max_degree = core.max_degree.load(Ordering::Acquire).max(1);
        let boosted = self.leave_boost(core);
        let stop = || self.cancelling.load(Ordering::Acquire) || work.cancelled();
        let (timing, failure) = work.complete(
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
        );
        let counter = match &failure {
            None => &self.metrics.completed,
            Some(RequestError::Cancelled) => &self.metrics.cancelled,
            Some(RequestError::Panicked(_)) => &self.metrics.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let top = self.metrics.degrees.len();
        self.metrics.degrees[max_degree.min(top) - 1].fetch_add(1, Ordering::Relaxed);
        if core.measured {
            self.metrics
                .latency
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(timing.latency_ms());
        }
        if let Some((next, after_exit)) = self.admitter.exit() {
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

/// A thread's work on one request: claim units until none are left (or, for an ordinary
/// thread, until the request moves to the boost pool). The main thread re-examines the
/// degree every quantum between units.
fn work_on(s: &Arc<Shared>, work: &Arc<dyn Work>, role: Role) {
    let core = work.core();
    s.metrics.threads_in_use.fetch_add(1, Ordering::AcqRel);
    let quantum = Duration::from_secs_f64(s.config.quantum_ms / 1000.0);
    let started = core.started_at();
    let mut next_check = started + quantum;
    let self_schedules = role == Role::Main && s.config.policy.self_schedules();
    let mut joined = false;
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
                let current = core.degree.load(Ordering::Acquire);
                let load = s.metrics.load.load(Ordering::Acquire);
                let wanted = s
                    .config
                    .policy
                    .degree(load, executed.as_secs_f64() * 1000.0, current);
                if wanted > current && s.raise(work, current, wanted) {
                    break; // it moved to the boost pool
                }
                let ticks = (executed.as_secs_f64() / quantum.as_secs_f64()).floor() + 1.0;
                next_check = started + quantum.mul_f64(ticks);
            }
        }
    }
    s.metrics.threads_in_use.fetch_sub(1, Ordering::AcqRel);
}
