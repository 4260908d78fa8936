//! The work-stealing executor for many concurrent requests, with tail-control (Li et al., PPoPP 2016).
//!
//! One worker thread per core, each with a crossbeam deque. A request is a root task that
//! forks and joins recursively ([`Worker::join`], [`Worker::parallel_for`]); an idle
//! worker steals the oldest task of a random victim. Arrived requests wait in a global
//! FIFO until a worker admits them, in the order the [`StealPolicy`] says (steal-first,
//! admit-first, or pushed to a random worker as TBB does). Tail-control adds Fig. 5's
//! bookkeeping ([`board`]): before stealing, and at every piece boundary of a
//! parallel-for, a worker marks requests whose processed time passes the threshold for
//! the current load as not stealable, and thieves skip them. By default the marked
//! request's parallelism then dissolves promptly ([`StealConfig::dissolve`],
//! `handback.rs`): the workers holding stolen parts of its parallel-for hand them back to
//! the worker that started it and leave at their next piece boundary; with lazy
//! dissolving they keep their parts, as in TBB, and leave as those run dry.
//!
//! Differences from the paper's TBB runtime, each documented in docs/tail-control.md:
//! a blocked join helps with tasks of its own request instead of leaving the request
//! (TBB and Cilk can suspend the continuation; safe Rust without stack switching
//! cannot), so a marked request keeps the workers already blocked in its joins until
//! those joins finish (a blocked join never steals from a marked request; only ranges of
//! a parallel-for can be handed back, so plain joins dissolve lazily). A forked half is
//! a boxed closure, so the half that may run elsewhere must be `'static` (`Arc` its
//! data).

mod board;
mod executor;
mod handback;
mod worker;

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_deque::Worker as Deque;
use tailor_core::{Dissolve, Job, StealPolicy};

use crate::handle::{oneshot, panic_text, Completer, Handle, RequestError, Timing};
use crate::metrics::MetricsSnapshot;
use crate::runtime::{Shutdown, ShutdownReport, StartError, SubmitError};
use executor::{Pending, Root, Shared};
pub use worker::Worker;

/// How a work-stealing executor is set up.
#[derive(Debug, Clone)]
pub struct StealConfig {
    /// Worker threads, one per core.
    pub cores: usize,
    /// Admission and serialization.
    pub policy: StealPolicy,
    /// Arrived requests that may wait for a worker; beyond it submissions are refused.
    pub queue_bound: usize,
    /// Seeds the victim choices and random-admit's worker choices.
    pub seed: u64,
    /// How a request marked by tail-control dissolves: `Prompt` (the default) makes the
    /// workers that stole parts of its parallel-for hand them back and leave at their
    /// next piece boundary; `Lazy` only stops further steals (TBB's behaviour).
    pub dissolve: Dissolve,
}

impl StealConfig {
    /// A configuration with the defaults: 100,000 waiting requests, seed 1.
    pub fn new(cores: usize, policy: StealPolicy) -> StealConfig {
        StealConfig {
            cores,
            policy,
            queue_bound: 100_000,
            seed: 1,
            dissolve: Dissolve::Prompt,
        }
    }
}

/// A running work-stealing executor. Submit requests with [`StealRuntime::submit`] (any
/// fork-join root) or [`StealRuntime::submit_job`] (a [`Job`]'s units as a parallel-for,
/// then its merge); stop it with [`StealRuntime::shutdown`] (dropping it drains).
pub struct StealRuntime {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl StealRuntime {
    /// Starts one worker thread per core.
    pub fn start(config: StealConfig) -> Result<StealRuntime, StartError> {
        if config.policy.table().is_some_and(|t| t.rows.is_empty()) {
            return Err(StartError::BadConfig(
                "the tail-control table has no rows".into(),
            ));
        }
        if !(1..=board::MAX_WORKERS).contains(&config.cores) {
            return Err(StartError::BadConfig(format!(
                "cores must be 1 to {}, found {}",
                board::MAX_WORKERS,
                config.cores
            )));
        }
        let deques: Vec<Deque<worker::Task>> =
            (0..config.cores).map(|_| Deque::new_lifo()).collect();
        let stealers = deques.iter().map(Deque::stealer).collect();
        let shared = Arc::new(Shared::new(
            config.policy,
            config.dissolve,
            stealers,
            config.queue_bound,
            config.seed,
        ));
        let mut threads = Vec::with_capacity(config.cores);
        for (index, deque) in deques.into_iter().enumerate() {
            let shared_here = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("tailor-steal-{index}"))
                .spawn(move || Worker::new(shared_here, index, deque).run_loop());
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    let runtime = StealRuntime { shared, threads };
                    runtime.stop(Shutdown::Drain);
                    return Err(StartError::Thread(e.to_string()));
                }
            }
        }
        Ok(StealRuntime { shared, threads })
    }

    /// The policy it runs.
    pub fn policy(&self) -> &StealPolicy {
        &self.shared.policy
    }

    /// Submits a fork-join request whose root is `root`, arriving now.
    pub fn submit<F, T>(&self, root: F) -> Result<Handle<T>, SubmitError>
    where
        F: FnOnce(&Worker) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_at(root, Instant::now(), true, None)
    }

    /// Submits a fork-join request whose latency counts from `arrival`, measured in the
    /// latency histogram if `measured`. `work_ms` is its true work, read only by
    /// tail-control-clairvoyant.
    pub fn submit_at<F, T>(
        &self,
        root: F,
        arrival: Instant,
        measured: bool,
        work_ms: Option<f64>,
    ) -> Result<Handle<T>, SubmitError>
    where
        F: FnOnce(&Worker) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.enter(move |w: &Worker| Ok(root(w)), arrival, measured, work_ms)
    }

    /// Submits a [`Job`]: its units run as a parallel-for of grain one unit, then its
    /// merge runs on the worker that started it. `on_join` runs once on each worker that
    /// takes part (up to 64 workers are told apart). Cancelling skips the units not yet
    /// begun and resolves the request as cancelled.
    pub fn submit_job<J: Job>(
        &self,
        job: J,
        arrival: Instant,
        measured: bool,
    ) -> Result<Handle<J::Output>, SubmitError> {
        let work_ms = job.demand_hint_ms();
        let root = move |w: &Worker| run_job(job, w).ok_or(RequestError::Cancelled);
        self.enter(root, arrival, measured, work_ms)
    }

    /// Queues a root (which returns its output, or why there is none) and hands back
    /// its handle.
    fn enter<F, T>(
        &self,
        root: F,
        arrival: Instant,
        measured: bool,
        work_ms: Option<f64>,
    ) -> Result<Handle<T>, SubmitError>
    where
        F: FnOnce(&Worker) -> Result<T, RequestError> + Send + 'static,
        T: Send + 'static,
    {
        let (handle, completer) = oneshot();
        let root: Box<dyn Root> = Box::new(FnRoot {
            root: Some(root),
            output: None,
            completer,
        });
        let work_ns = work_ms
            .filter(|w| w.is_finite() && *w >= 0.0)
            .map(|w| (w * 1e6) as u64);
        let pending = Pending {
            arrival,
            measured,
            work_ns,
            root,
        };
        // A refused request's completer is dropped with it; its handle was never given out.
        self.shared.submit(pending).map_err(|(why, _)| why)?;
        Ok(handle)
    }

    /// The live metrics (`boosted_threads` is always 0).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot(self.shared.waiting())
    }

    /// Requests serialized so far: marked by a pileup check (tail-control), or at
    /// admission (tail-control-clairvoyant).
    pub fn serialized(&self) -> u64 {
        self.shared.serialized.load(Ordering::Relaxed)
    }

    /// Refuses new requests and cancels unfinished ones: waiting requests resolve as
    /// cancelled, running `Job`s at their next unit. It does not wait.
    pub fn cancel_unfinished(&self) {
        self.shared.accepting.store(false, Ordering::SeqCst);
        self.shared.cancelling.store(true, Ordering::SeqCst);
        self.shared.wake_all();
    }

    /// Stops the executor, draining or cancelling what is unfinished, and waits for its
    /// threads. Every accepted request ends completed, failed or cancelled.
    pub fn shutdown(mut self, how: Shutdown) -> ShutdownReport {
        self.stop_inner(how)
    }

    fn stop(mut self, how: Shutdown) -> ShutdownReport {
        self.stop_inner(how)
    }

    fn stop_inner(&mut self, how: Shutdown) -> ShutdownReport {
        let s = &self.shared;
        s.accepting.store(false, Ordering::SeqCst);
        if how == Shutdown::Cancel {
            self.cancel_unfinished();
        }
        if !self.threads.is_empty() {
            s.wait_idle();
        }
        s.stopping.store(true, Ordering::SeqCst);
        s.wake_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        ShutdownReport {
            metrics: self.metrics(),
        }
    }
}

impl Drop for StealRuntime {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        if worker::on_a_worker() {
            // Dropped by a request running on one of its own workers: waiting here would
            // wait for this very request. Stop accepting, let the workers drain what
            // was accepted and exit on their own, and detach them.
            self.shared.accepting.store(false, Ordering::SeqCst);
            self.shared.stopping.store(true, Ordering::SeqCst);
            self.shared.wake_all();
            self.threads.clear();
            return;
        }
        self.stop_inner(Shutdown::Drain);
    }
}

/// A request's root: a closure that returns its output, or why there is none (a `Job`
/// cancelled mid-way). Everything that runs the service's code is inside the catch, so a
/// panic fails only this request.
struct FnRoot<F, T> {
    root: Option<F>,
    output: Option<T>,
    completer: Completer<T>,
}

impl<F, T> Root for FnRoot<F, T>
where
    F: FnOnce(&Worker) -> Result<T, RequestError> + Send + 'static,
    T: Send + 'static,
{
    fn run(&mut self, worker: &Worker) -> Result<(), RequestError> {
        let Some(root) = self.root.take() else {
            return Err(RequestError::Panicked("a root ran twice (a bug)".into()));
        };
        let output = catch_unwind(AssertUnwindSafe(|| root(worker)))
            .map_err(|p| RequestError::Panicked(panic_text(&*p)))??;
        self.output = Some(output);
        Ok(())
    }

    fn resolve(mut self: Box<Self>, result: Result<(), RequestError>, timing: Option<Timing>) {
        let result = result.and_then(|()| {
            self.output
                .take()
                .ok_or_else(|| RequestError::Panicked("no output (a bug)".into()))
        });
        self.completer.complete(result, timing);
    }
}

/// Runs a job's units as a parallel-for, then its merge; `None` if cancelled.
fn run_job<J: Job>(job: J, worker: &Worker) -> Option<J::Output> {
    {
        let job = Arc::new(job);
        let units = job.units();
        let parts: Arc<Vec<Mutex<Option<J::Part>>>> =
            Arc::new((0..units).map(|_| Mutex::new(None)).collect());
        let joined = Arc::new(AtomicU64::new(0));
        let skipped = Arc::new(AtomicBool::new(false));
        let body = {
            let (job, parts, skipped) = (job.clone(), parts.clone(), skipped.clone());
            Arc::new(move |range: Range<usize>, w: &Worker| {
                let bit = 1u64 << (w.index() % 64);
                if joined.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
                    job.on_join();
                }
                for i in range {
                    if w.is_cancelling() {
                        skipped.store(true, Ordering::Relaxed);
                        return;
                    }
                    let part = job.run(i);
                    *parts[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(part);
                }
            })
        };
        worker.parallel_for(0..units, 1, &body);
        if skipped.load(Ordering::Relaxed) {
            return None;
        }
        let parts: Option<Vec<J::Part>> = parts
            .iter()
            .map(|p| p.lock().unwrap_or_else(|e| e.into_inner()).take())
            .collect();
        parts.map(|parts| job.merge(parts))
    }
}
