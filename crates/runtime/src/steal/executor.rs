//! The work-stealing executor's shared state: admission queues, sleeping, and a request's start and end.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer};
use tailor_core::{Dissolve, StealAdmission, StealPolicy};

use super::board::Board;
use super::worker::{Task, Worker};
use crate::handle::{panic_text, RequestError, Timing};
use crate::metrics::Metrics;
use crate::runtime::SubmitError;

/// A request's root task, type-erased: `run` runs it on the worker that admitted it,
/// `resolve` hands the result to the submitter once the bookkeeping is done.
pub(crate) trait Root: Send {
    fn run(&mut self, worker: &Worker) -> Result<(), RequestError>;
    fn resolve(self: Box<Self>, result: Result<(), RequestError>, timing: Option<Timing>);
}

/// An arrived request that no worker has started.
pub(crate) struct Pending {
    pub(crate) arrival: Instant,
    pub(crate) measured: bool,
    pub(crate) work_ns: Option<u64>,
    pub(crate) root: Box<dyn Root>,
}

/// How long a sleeping worker waits before looking again even without a wake-up: a
/// fork does not take the sleep lock, so its wake-up can be missed; this bounds the cost.
const SLEEP_BACKSTOP: Duration = Duration::from_millis(1);

pub(crate) struct Shared {
    pub(crate) policy: StealPolicy,
    /// How a marked request's parallelism dissolves.
    pub(crate) dissolve: Dissolve,
    pub(crate) board: Board,
    pub(crate) stealers: Box<[Stealer<Task>]>,
    /// The global FIFO of arrived, unadmitted requests (§3).
    fifo: Injector<Pending>,
    /// Per-worker queues of requests pushed to that worker (random-admit).
    inboxes: Box<[Injector<Pending>]>,
    /// Tasks a helping join stole from a request other than its own (the victim moved
    /// on between the check and the steal); idle workers take them first.
    returned: Injector<Task>,
    pub(crate) metrics: Metrics,
    /// Requests marked not stealable (tail-control) or serialized at admission
    /// (clairvoyant).
    pub(crate) serialized: AtomicU64,
    waiting: AtomicUsize,
    queue_bound: usize,
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    sleep_cv: Condvar,
    pub(crate) accepting: AtomicBool,
    pub(crate) stopping: AtomicBool,
    pub(crate) cancelling: AtomicBool,
    /// Signalled when the last active request departs.
    idle: (Mutex<()>, Condvar),
    epoch: Instant,
    pub(crate) seed: u64,
    next_push: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        policy: StealPolicy,
        dissolve: Dissolve,
        stealers: Vec<Stealer<Task>>,
        queue_bound: usize,
        seed: u64,
    ) -> Shared {
        let workers = stealers.len();
        Shared {
            policy,
            dissolve,
            board: Board::new(workers),
            stealers: stealers.into(),
            fifo: Injector::new(),
            inboxes: (0..workers).map(|_| Injector::new()).collect(),
            returned: Injector::new(),
            metrics: Metrics::new(workers),
            serialized: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            queue_bound,
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            sleep_cv: Condvar::new(),
            accepting: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            cancelling: AtomicBool::new(false),
            idle: (Mutex::new(()), Condvar::new()),
            epoch: Instant::now(),
            seed,
            next_push: AtomicU64::new(0),
        }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn ns_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Enters an arrived request: into the global FIFO, or for random-admit onto a
    /// random worker. The active count rises first, so a drain that saw no active
    /// request also finds new submissions refused.
    pub(crate) fn submit(&self, pending: Pending) -> Result<(), (SubmitError, Pending)> {
        self.board.arrive();
        if !self.accepting.load(Ordering::SeqCst) {
            self.refuse();
            return Err((SubmitError::ShuttingDown, pending));
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue_bound {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            self.refuse();
            return Err((SubmitError::QueueFull, pending));
        }
        self.metrics.load.fetch_add(1, Ordering::Relaxed);
        match self.policy.admission() {
            StealAdmission::RandomAdmit => {
                let n = self.next_push.fetch_add(1, Ordering::Relaxed);
                let pick = splitmix(self.seed ^ n) % self.inboxes.len() as u64;
                self.inboxes[pick as usize].push(pending);
            }
            _ => self.fifo.push(pending),
        }
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.wake_one();
        }
        Ok(())
    }

    fn refuse(&self) {
        self.board.depart();
        self.metrics.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the next request to start: from the FIFO, or this worker's inbox. While
    /// cancelling, requests taken are resolved as cancelled instead.
    pub(crate) fn admit(&self, worker: &Worker) -> Option<Pending> {
        let queue = match self.policy.admission() {
            StealAdmission::RandomAdmit => &self.inboxes[worker.index],
            _ => &self.fifo,
        };
        self.take_from(queue)
    }

    /// Random-admit: takes a request pushed to another worker.
    pub(crate) fn steal_inbox(&self, worker: &Worker) -> Option<Pending> {
        let n = self.inboxes.len();
        let first = worker.random(n);
        (0..n)
            .map(|i| (first + i) % n)
            .filter(|&v| v != worker.index)
            .find_map(|v| self.take_from(&self.inboxes[v]))
    }

    fn take_from(&self, queue: &Injector<Pending>) -> Option<Pending> {
        loop {
            match queue.steal() {
                Steal::Success(pending) => {
                    self.waiting.fetch_sub(1, Ordering::AcqRel);
                    if self.cancelling.load(Ordering::Acquire) {
                        self.cancel(pending);
                        continue;
                    }
                    return Some(pending);
                }
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    fn cancel(&self, pending: Pending) {
        self.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
        self.depart();
        pending.root.resolve(Err(RequestError::Cancelled), None);
    }

    fn depart(&self) {
        self.metrics.load.fetch_sub(1, Ordering::Relaxed);
        self.board.depart();
        if self.board.active() == 0 {
            let _guard = self.idle.0.lock().unwrap_or_else(|e| e.into_inner());
            self.idle.1.notify_all();
        }
    }

    /// Hands back a task that a helping join may not run nested.
    pub(crate) fn return_task(&self, task: Task) {
        self.returned.push(task);
        if self.has_sleepers() {
            self.wake_one();
        }
    }

    /// A returned task, if any.
    pub(crate) fn take_returned(&self) -> Option<Task> {
        loop {
            match self.returned.steal() {
                Steal::Success(task) => return Some(task),
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        !self.fifo.is_empty() || self.inboxes.iter().any(|q| !q.is_empty())
    }

    pub(crate) fn metrics_serialized(&self, marked: usize) {
        self.serialized.fetch_add(marked as u64, Ordering::Relaxed);
    }

    /// Runs a request's root on `worker`, then ends it: the worker's time is flushed, the
    /// slot freed, the metrics counted, and only then is the handle resolved.
    pub(crate) fn run_request(&self, worker: &Worker, pending: Pending) {
        let Pending {
            arrival,
            measured,
            work_ns,
            mut root,
        } = pending;
        let work_ms = work_ns.map(|ns| ns as f64 / 1e6);
        let stealable = !(self.policy.is_clairvoyant()
            && self.policy.serializes(self.board.active(), 0.0, work_ms));
        if !stealable {
            self.metrics_serialized(1);
        }
        let generation = worker.next_generation();
        let key = self
            .board
            .begin(worker.index, generation, work_ns, stealable);
        let start = Instant::now();
        self.board.enter(worker.index, key, self.ns_at(start));
        self.metrics.threads_in_use.fetch_add(1, Ordering::Relaxed);
        worker.begin_root(key);
        // `Root::run` catches the service's panics itself; this catch is the backstop
        // that keeps the worker alive and the bookkeeping whole if anything escapes.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| root.run(worker)))
            .unwrap_or_else(|p| Err(RequestError::Panicked(panic_text(&*p))));
        worker.end_root();
        let finish = Instant::now();
        self.board.leave(worker.index, self.ns_at(finish));
        let ended = self.board.end(worker.index);
        self.metrics.threads_in_use.fetch_sub(1, Ordering::Relaxed);
        let wall_ns = finish.duration_since(start).as_nanos() as f64;
        let max_degree = (ended.workers as usize).clamp(1, self.stealers.len());
        let timing = Timing {
            arrival,
            start,
            finish,
            max_degree,
            mean_degree: if wall_ns > 0.0 {
                (ended.processed_ns as f64 / wall_ns).max(1.0)
            } else {
                1.0
            },
            boosted: false,
        };
        let m = &self.metrics;
        match &result {
            Ok(()) => {
                m.completed.fetch_add(1, Ordering::Relaxed);
                m.degrees[max_degree - 1].fetch_add(1, Ordering::Relaxed);
                if measured {
                    m.latency
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record(timing.latency_ms());
                }
            }
            Err(RequestError::Cancelled) => {
                m.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            Err(RequestError::Panicked(_)) => {
                m.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.depart();
        root.resolve(result, Some(timing));
    }

    // ---- Sleeping ----

    pub(crate) fn has_sleepers(&self) -> bool {
        self.sleepers.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn wake_one(&self) {
        let _guard = self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleep_cv.notify_one();
    }

    pub(crate) fn wake_all(&self) {
        let _guard = self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleep_cv.notify_all();
    }

    /// Puts an idle worker to sleep until a submission or a fork wakes it, unless it can
    /// see work (checked after announcing itself, so a submission cannot slip between).
    pub(crate) fn sleep(&self, worker: &Worker) {
        let guard = self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if !self.stopping.load(Ordering::Acquire) && !self.visible_work(worker) {
            let _ = self.sleep_cv.wait_timeout(guard, SLEEP_BACKSTOP);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    fn visible_work(&self, worker: &Worker) -> bool {
        let admissible = match self.policy.admission() {
            StealAdmission::RandomAdmit => self.inboxes.iter().any(|q| !q.is_empty()),
            _ => !self.fifo.is_empty(),
        };
        admissible
            || !self.returned.is_empty()
            || worker.has_local_work()
            || self
                .stealers
                .iter()
                .enumerate()
                .any(|(v, s)| v != worker.index && !s.is_empty() && self.board.stealable_from(v))
    }

    /// Blocks until no request is active.
    pub(crate) fn wait_idle(&self) {
        let mut guard = self.idle.0.lock().unwrap_or_else(|e| e.into_inner());
        while self.board.active() > 0 {
            guard = self
                .idle
                .1
                .wait_timeout(guard, Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
