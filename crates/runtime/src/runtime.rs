//! The runtime: pooled threads that run requests as the policy says.
//!
//! `threads.rs` holds what a pool thread does: start a request, help one, finish one, and
//! under FM's core guard (`crate::guard`, docs/guard.md) hand its core on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use crossbeam_channel::{unbounded, Sender};
use tailor_core::{Admission, Job, Noise, Policy};

use crate::admission::{Admitter, Decision};
use crate::guard::{Gate, Refusal};
use crate::handle::{oneshot, Handle, RequestError};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::noise::StallGate;
use crate::priority::{set_current_nice, set_current_realtime, BoostMode};
use crate::request::{Core, Request, Work};
use crate::served::{ServedLog, ServedRequest};

mod threads;
use threads::{ordinary_loop, timing_now, work_on};

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
    /// highest degree (pool policies), the cores (FM under the core guard), or twice the
    /// cores times the highest degree (FM without it).
    pub threads: Option<usize>,
    /// FM's core guard (docs/guard.md): request threads never outnumber the cores, helpers
    /// go only where a core is free and a unit is left, and a backlog runs sequentially.
    /// On by default; off gives the FM paper's runtime (§4.2), whose threads may exceed
    /// the cores. Policies with a worker pool ignore it.
    pub guard: bool,
    /// Requests that may wait for admission; beyond it submissions are refused.
    pub queue_bound: usize,
    /// How boosting sets priorities; `None` finds out what the process may do.
    pub boost_mode: Option<BoostMode>,
    /// Injected stalls and their seed (docs/fanout.md): every thread waits at its next
    /// unit boundary while one lasts. `None`: no stalls.
    pub noise: Option<(Noise, u64)>,
    /// How many of the last served requests [`Runtime::served`] keeps, with each unit's
    /// time and the merge's (issue 41's continuous profile; 0 keeps none and times
    /// nothing). The work-stealing policies keep none.
    pub profile_window: usize,
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
            guard: true,
            profile_window: DEFAULT_PROFILE_WINDOW,
        }
    }

    /// Whether the core guard applies: FM (no worker pool) with the guard on.
    pub fn guarded(&self) -> bool {
        self.guard && !self.policy.uses_worker_pool()
    }
}

/// Why [`Runtime::set_policy`] refused a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicySwapError {
    /// It runs another way than the running one.
    #[error("{new} cannot replace {running}: it runs another way (worker pool, self-scheduling or boosting)")]
    Kind {
        /// The policy started with.
        running: String,
        /// The one refused.
        new: String,
    },
    /// It needs a higher degree than the pool was sized for.
    #[error("a policy of maximum degree {new} cannot replace one of {running}: the pool was sized for {running}")]
    Degree {
        /// The started policy's maximum degree.
        running: usize,
        /// The refused one's.
        new: usize,
    },
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

/// [`RuntimeConfig::profile_window`]'s default: enough requests for a p99 of the profile
/// and a plan (the FM paper planned from 4,000 Lucene queries, §6.1), at about 100 bytes
/// each plus 8 per unit.
pub const DEFAULT_PROFILE_WINDOW: usize = 4096;

pub(crate) struct Shared {
    config: RuntimeConfig,
    /// The policy in force: `config.policy` at start, then whatever
    /// [`Runtime::set_policy`] swapped in.
    pub(crate) policy: Arc<ArcSwap<Policy>>,
    /// Policies swapped in, and when the one in force began.
    swaps: AtomicU64,
    since: Mutex<Instant>,
    metrics: Metrics,
    /// The last served requests' parts.
    pub(crate) served: ServedLog,
    admitter: Admitter,
    ordinary: Sender<Ticket>,
    /// The boost pool's tickets: a request to join, or `None` to exit.
    boost: Sender<Option<Arc<dyn Work>>>,
    /// Whether the policy boosts some requests (looked up once; never under the guard).
    boosts: bool,
    /// FM's core guard, when on: a token per core and the requests waiting for one.
    gate: Option<Gate<Arc<dyn Work>>>,
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
///
/// ```
/// use tailor_runtime::{job_fn, Policy, Runtime, RuntimeConfig, Shutdown};
///
/// let runtime = Runtime::start(RuntimeConfig::new(2, Policy::Fix { degree: 2 })).unwrap();
/// let job = job_fn(2, |unit| unit + 1, |parts: Vec<usize>| parts.iter().sum::<usize>());
/// let done = runtime.submit(job).unwrap().wait().unwrap();
/// assert_eq!(done.output, 3);
/// assert!(done.timing.max_degree <= 2);
/// // The served request's parts, the raw material of a live profile.
/// assert_eq!(runtime.served().len(), 1);
/// // Another policy of the same kind may be swapped in while running, but none that
/// // needs more threads than the pool was sized for.
/// assert!(runtime.set_policy(Policy::Fix { degree: 1 }).is_ok());
/// assert!(runtime.set_policy(Policy::Fix { degree: 4 }).is_err());
/// runtime.shutdown(Shutdown::Drain);
/// ```
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
        let guarded = config.guarded();
        let threads = config
            .threads
            .unwrap_or(if config.policy.uses_worker_pool() {
                workers * max_degree
            } else if guarded {
                // Every working thread holds a core, and so does every ticket on its way.
                config.cores
            } else {
                2 * config.cores * max_degree
            });
        if threads == 0 {
            return Err(StartError::BadConfig("threads must be at least 1".into()));
        }
        // Under the guard no request thread waits for a core, so priorities decide nothing
        // among them: there is no boosting.
        let boosts = !guarded && config.policy.boost(max_degree, 0, config.cores);
        let boost_mode = config.boost_mode.unwrap_or_else(BoostMode::detect);
        let (ordinary_tx, ordinary_rx) = unbounded();
        let (boost_tx, boost_rx) = unbounded();
        let policy = Arc::new(ArcSwap::from_pointee(config.policy.clone()));
        let shared = Arc::new(Shared {
            metrics: Metrics::new(max_degree),
            served: ServedLog::new(config.profile_window),
            admitter: Admitter::new(policy.clone(), workers, config.queue_bound),
            policy,
            swaps: AtomicU64::new(0),
            since: Mutex::new(Instant::now()),
            ordinary: ordinary_tx,
            boost: boost_tx,
            boosts: !guarded && config.policy.boosts(),
            gate: guarded.then(|| Gate::new(config.cores, config.queue_bound)),
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
                            let _ = work_on(&shared, &work, Role::Boost);
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
                    s.admitter.release_delayed(|work| match &s.gate {
                        Some(gate) => {
                            if let Some(work) = gate.admit_delayed(work) {
                                s.dispatch(work, false);
                            }
                        }
                        None => s.dispatch(work, false),
                    });
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

    /// The policy it runs now.
    pub fn policy(&self) -> Arc<Policy> {
        self.shared.policy.load_full()
    }

    /// The self-scheduling quantum in ms, fixed at start ([`RuntimeConfig::quantum_ms`]).
    pub fn quantum_ms(&self) -> f64 {
        self.shared.config.quantum_ms
    }

    /// Swaps in `policy` for every decision from now on: requests running keep their
    /// threads and take the new policy's decisions at their next quantum. This goes beyond
    /// the FM paper, whose table is planned offline once (issue 41's re-planning). The new
    /// policy must run the way the old one does (a worker pool or not, self-scheduling,
    /// boosting) and need no higher degree, since the pool was sized at start.
    pub fn set_policy(&self, policy: Policy) -> Result<(), PolicySwapError> {
        let start = &self.shared.config.policy;
        let same_kind = policy.uses_worker_pool() == start.uses_worker_pool()
            && policy.self_schedules() == start.self_schedules()
            && policy.boosts() == start.boosts();
        if !same_kind {
            return Err(PolicySwapError::Kind {
                running: start.name(),
                new: policy.name(),
            });
        }
        if policy.max_degree() > start.max_degree() {
            return Err(PolicySwapError::Degree {
                running: start.max_degree(),
                new: policy.max_degree(),
            });
        }
        self.shared.policy.store(Arc::new(policy));
        self.shared.swaps.fetch_add(1, Ordering::AcqRel);
        *self.shared.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        Ok(())
    }

    /// Policies swapped in so far, and how long the one in force has been.
    pub fn policy_swaps(&self) -> (u64, Duration) {
        let since = *self.shared.since.lock().unwrap_or_else(|e| e.into_inner());
        (self.shared.swaps.load(Ordering::Acquire), since.elapsed())
    }

    /// The last served requests ([`RuntimeConfig::profile_window`] of them), oldest
    /// first, with each one's unit and merge times: the raw material of a profile
    /// (`tailor_bench::projected_profile`, `GET /profile`).
    pub fn served(&self) -> Vec<ServedRequest> {
        self.shared.served.snapshot()
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
        let core = if s.served.on() { core.timed() } else { core };
        let (handle, completer) = oneshot();
        let work: Arc<dyn Work> = Arc::new(Request::new(core, job, completer));
        let load = s.metrics.load.fetch_add(1, Ordering::AcqRel) + 1;
        let decision = match &s.gate {
            Some(gate) => match s.policy.load().admission(load) {
                // FM's delay v0 is kept; a released request then waits for a core.
                Admission::Delay(_) => s.admitter.submit(&work, load),
                // Under the guard a request starts whenever a core is free and none
                // waits; one the table would admit only on an exit starts at degree 1.
                admission => match gate.arrive(work.clone()) {
                    Ok(Some(_)) => Decision::Start {
                        after_exit: admission == Admission::OnExit,
                    },
                    Ok(None) => Decision::Wait,
                    Err(Refusal::Full) => Decision::Full,
                    Err(Refusal::Closed) => Decision::Closed,
                },
            },
            None => s.admitter.submit(&work, load),
        };
        match decision {
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

    /// Requests waiting for admission now (FM's delay, the worker pool's queue and, under
    /// the core guard, the requests waiting for a core): [`MetricsSnapshot::waiting`]
    /// without the rest of the snapshot.
    pub fn waiting(&self) -> usize {
        self.shared.waiting()
    }

    /// How many requests may wait for admission ([`RuntimeConfig::queue_bound`]);
    /// beyond it [`submit`](Runtime::submit) refuses with [`SubmitError::QueueFull`].
    pub fn queue_bound(&self) -> usize {
        self.shared.config.queue_bound
    }

    /// The live metrics.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot(self.shared.waiting())
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
        if let Some(gate) = &s.gate {
            gate.stop_accepting();
        }
        // No stall outlasts the stop.
        s.stall.stop();
        if how == Shutdown::Cancel {
            let mut waiting = s.admitter.take_waiting();
            if let Some(gate) = &s.gate {
                waiting.extend(gate.take_waiting());
            }
            for work in waiting {
                s.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
                work.complete(
                    Some(RequestError::Cancelled),
                    &|now| timing_now(work.core(), now),
                    &|| true,
                    &|_, _| {},
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
            metrics: s.metrics.snapshot(s.waiting()),
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
