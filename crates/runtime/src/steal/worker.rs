//! A work-stealing worker: its deque, Fig. 5a's loop, and fork-join with helping joins.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_deque::{Steal, Worker as Deque};
use crossbeam_utils::Backoff;
use tailor_core::{Dissolve, StealAdmission};

use super::board::Key;
use super::executor::{Pending, Shared};
use super::handback::HandBack;

/// The worker that called `parallel_for`, and the ranges its thieves hand back.
struct Owner {
    index: usize,
    handback: HandBack,
}

/// Failed rounds of looking for work, each ending in a yield, before an idle worker
/// sleeps (after crossbeam's `Backoff` has run out of spins).
const IDLE_ROUNDS_BEFORE_SLEEP: u32 = 32;

/// A unit of stealable work: a forked half of a join, tagged with its request.
pub(crate) struct Task {
    /// The request it belongs to.
    key: Key,
    job: Arc<dyn Runnable>,
}

impl Task {
    /// The address of its join's state, which tells the joiner it popped its own task.
    fn tag(&self) -> usize {
        Arc::as_ptr(&self.job) as *const () as usize
    }
}

/// A forked half as a thief runs it.
trait Runnable: Send + Sync {
    fn run(&self, worker: &Worker);
}

/// A join's forked half and its result, in one allocation shared by the joiner and the
/// deque: the joiner that pops its own half back takes the closure and runs it inline;
/// a thief runs it and leaves the result.
struct JoinJob<B, R> {
    body: Mutex<Option<B>>,
    done: AtomicBool,
    value: Mutex<Option<std::thread::Result<R>>>,
}

impl<B, R> JoinJob<B, R> {
    fn take_body(&self) -> Option<B> {
        self.body.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn take_value(&self) -> std::thread::Result<R> {
        self.value
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| Err(Box::new("a join's forked half left no result (a bug)")))
    }
}

impl<B, R> Runnable for JoinJob<B, R>
where
    B: FnOnce(&Worker) -> R + Send,
    R: Send,
{
    fn run(&self, worker: &Worker) {
        if let Some(body) = self.take_body() {
            let result = catch_unwind(AssertUnwindSafe(|| body(worker)));
            worker.before_publish();
            *self.value.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            self.done.store(true, Ordering::Release);
        }
    }
}

/// A worker thread of the work-stealing executor, as the tasks it runs see it: the handle
/// for forking ([`Worker::join`], [`Worker::parallel_for`]).
///
/// Each worker owns a deque. It pushes forked halves on it and pops them back; thieves
/// take the oldest ones from the other end. A worker stays on one request until its own
/// deque runs dry, so its deque only holds tasks of the request it is on (Fig. 5a).
pub struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) index: usize,
    deque: Deque<Task>,
    rng: Cell<u64>,
    /// The request this worker is on (0 between requests).
    key: Cell<Key>,
    /// Nesting of tasks being run: 1 for the task the worker loop started.
    depth: Cell<usize>,
    /// The depth whose task, on finishing, ends the worker's stay on its request.
    flush_depth: Cell<usize>,
    /// Generations of this worker's request slot.
    generation: Cell<u64>,
    seen: RefCell<Vec<(Key, u64)>>,
}

/// What a worker found to do.
enum Found {
    Task(Task),
    Request(Pending),
}

impl Worker {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, deque: Deque<Task>) -> Worker {
        let seed = shared.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Worker {
            shared,
            index,
            deque,
            rng: Cell::new(seed | 1),
            key: Cell::new(0),
            depth: Cell::new(0),
            flush_depth: Cell::new(1),
            generation: Cell::new(0),
            seen: RefCell::new(Vec::new()),
        }
    }

    /// This worker's index, `0..workers`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether the runtime is cancelling unfinished requests: long request code may
    /// check it and return early (the request then resolves as cancelled).
    pub fn is_cancelling(&self) -> bool {
        self.shared.cancelling.load(Ordering::Relaxed)
    }

    /// Runs `a` here and `b` possibly on another worker, and returns both results.
    ///
    /// `b` is pushed on this worker's deque, where a thief may take it, and `a` runs at
    /// once. If no thief took `b`, this worker runs it next. Otherwise it waits for the
    /// thief, helping meanwhile by stealing tasks of the same request (so a join never
    /// deadlocks and never nests another request's work under this one). A panic in
    /// either half is re-raised here, after both halves are done.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Worker) -> RA,
        B: FnOnce(&Worker) -> RB + Send + 'static,
        RB: Send + 'static,
    {
        let job = Arc::new(JoinJob {
            body: Mutex::new(Some(b)),
            done: AtomicBool::new(false),
            value: Mutex::new(None),
        });
        // The state's address tells this join's task apart (compared, never dereferenced).
        let tag = Arc::as_ptr(&job) as *const () as usize;
        self.deque.push(Task {
            key: self.key.get(),
            job: job.clone(),
        });
        self.wake_for_fork();
        let ra = catch_unwind(AssertUnwindSafe(|| a(self)));
        // Steals take the oldest tasks first, so if `b` is still here it is on top.
        let rb = match self.deque.pop() {
            Some(task) if task.tag() == tag => {
                // Not stolen: run it inline, as a plain call (the worker stays on its
                // request, so there is nothing to publish).
                drop(task);
                match job.take_body() {
                    Some(body) => catch_unwind(AssertUnwindSafe(|| body(self))),
                    None => job.take_value(),
                }
            }
            Some(other) => {
                debug_assert!(false, "a join popped a task it did not push");
                self.deque.push(other);
                self.wait_for(&job.done);
                job.take_value()
            }
            None => {
                self.wait_for(&job.done);
                job.take_value()
            }
        };
        match (ra, rb) {
            (Ok(ra), Ok(rb)) => (ra, rb),
            (Err(p), _) | (_, Err(p)) => resume_unwind(p),
        }
    }

    /// Runs `body` over `range` in pieces of at most `grain` indices.
    ///
    /// The range is split lazily (lazy binary splitting: Tzannes, Caragea, Barua and
    /// Vishkin, "Lazy Binary-Splitting: A Run-Time Adaptive Work-Stealing Scheduler",
    /// PPoPP 2010): before each piece, a worker whose own deque is empty splits what it
    /// has left in halves by [`Worker::join`], so that a thief can take one; otherwise it
    /// runs the next piece. A thief thus always finds about half of a busy worker's
    /// remaining range, while a range nobody steals from costs a few joins instead of one
    /// per piece.
    ///
    /// With prompt dissolving (the default, `StealConfig::dissolve`), once tail-control
    /// marks the request, the workers that stole parts of the range stop at their next
    /// piece boundary and hand the rest back; this worker stops splitting and runs its
    /// own parts, then the handed-back ones (`handback.rs`).
    pub fn parallel_for<F>(&self, range: Range<usize>, grain: usize, body: &Arc<F>)
    where
        F: Fn(Range<usize>, &Worker) + Send + Sync + 'static,
    {
        let grain = grain.max(1);
        let owner = Arc::new(Owner {
            index: self.index,
            handback: HandBack::new(),
        });
        self.parallel_for_in(range, grain, body, &owner);
        // Every join above has finished, so every thief has returned and nothing more
        // can be handed back.
        while let Some(rest) = owner.handback.take() {
            self.run_in_order(rest, grain, body);
        }
    }

    fn parallel_for_in<F>(
        &self,
        mut range: Range<usize>,
        grain: usize,
        body: &Arc<F>,
        owner: &Arc<Owner>,
    ) where
        F: Fn(Range<usize>, &Worker) + Send + Sync + 'static,
    {
        let splits = self.shared.stealers.len() > 1;
        loop {
            // Every piece boundary is a pileup check: a worker deep in a parallel-for
            // rarely runs dry, so without it a request could pass its threshold with no
            // thief left to notice (the simulator checks at every event for this reason).
            self.check_pileup_phase(usize::MAX);
            if self.dissolving() {
                if self.index == owner.index {
                    self.run_in_order(range, grain, body);
                } else {
                    owner.handback.give(range);
                }
                return;
            }
            if range.len() <= grain {
                if !range.is_empty() {
                    body(range, self);
                }
                return;
            }
            if splits && self.deque.is_empty() {
                let mid = range.start + range.len() / 2;
                let (right, right_owner) = (body.clone(), owner.clone());
                let end = range.end;
                self.join(
                    |w| w.parallel_for_in(range.start..mid, grain, body, owner),
                    move |w| w.parallel_for_in(mid..end, grain, &right, &right_owner),
                );
                return;
            }
            let next = range.start + grain;
            body(range.start..next, self);
            range.start = next;
        }
    }

    /// Runs `range` here, piece by piece, without splitting it.
    fn run_in_order<F>(&self, range: Range<usize>, grain: usize, body: &Arc<F>)
    where
        F: Fn(Range<usize>, &Worker) + Send + Sync + 'static,
    {
        let mut at = range.start;
        while at < range.end {
            let next = (at + grain).min(range.end);
            body(at..next, self);
            at = next;
        }
    }

    /// Whether this worker's request is marked and dissolves promptly. Only tail-control
    /// marks requests, so the other policies skip the board on this per-piece path.
    fn dissolving(&self) -> bool {
        let shared = &self.shared;
        shared.dissolve == Dissolve::Prompt
            && shared.policy.checks_pileup()
            && !shared.board.is_stealable(self.key.get())
    }

    // ---- The worker loop (Fig. 5a) ----

    pub(crate) fn run_loop(&self) {
        ON_A_WORKER.with(|on| on.set(true));
        let backoff = Backoff::new();
        let mut idle_rounds = 0u32;
        loop {
            match self.find_work() {
                Some(Found::Task(task)) => {
                    backoff.reset();
                    idle_rounds = 0;
                    self.run_stolen(task);
                }
                Some(Found::Request(pending)) => {
                    backoff.reset();
                    idle_rounds = 0;
                    self.shared.run_request(self, pending);
                }
                None => {
                    if self.shared.stopping.load(Ordering::Acquire) && !self.shared.has_pending() {
                        return;
                    }
                    // Spin and yield for a while (about 50 us here) before sleeping: a
                    // wake-up through the condition variable costs tens of microseconds,
                    // more than most gaps between forks and arrivals under load.
                    if backoff.is_completed() {
                        idle_rounds += 1;
                        if idle_rounds >= IDLE_ROUNDS_BEFORE_SLEEP {
                            self.shared.sleep(self);
                            idle_rounds = 0;
                        }
                        std::thread::yield_now();
                    } else {
                        backoff.snooze();
                    }
                }
            }
        }
    }

    /// Fig. 5a lines 23-30: check for a pileup, then get work by the admission policy.
    fn find_work(&self) -> Option<Found> {
        let shared = &self.shared;
        self.check_pileup_phase(self.index);
        if let Some(task) = shared.take_returned() {
            return Some(Found::Task(task));
        }
        let admit = || shared.admit(self).map(Found::Request);
        let steal = || self.steal(false).map(Found::Task);
        match shared.policy.admission() {
            StealAdmission::StealFirst => steal().or_else(admit),
            StealAdmission::AdmitFirst => admit().or_else(steal),
            StealAdmission::RandomAdmit => admit()
                .or_else(steal)
                .or_else(|| shared.steal_inbox(self).map(Found::Request)),
        }
    }

    /// Fig. 5b's pileup check, for the tail-control policies; `left_out` is a worker whose
    /// in-flight time is not counted (the thief itself once it has left its request).
    fn check_pileup_phase(&self, left_out: usize) {
        let shared = &self.shared;
        if shared.policy.checks_pileup() {
            let now = shared.now_ns();
            let mut seen = self.seen.borrow_mut();
            let marked = shared
                .board
                .check_pileup_phase(left_out, now, &shared.policy, &mut seen);
            if marked > 0 {
                shared.metrics_serialized(marked);
            }
        }
    }

    /// Steals one task from a random victim, skipping victims whose request is marked
    /// (Fig. 5b lines 1-8). With `same_request`, only from workers on this worker's
    /// request (a blocked join helping).
    fn steal(&self, same_request: bool) -> Option<Task> {
        let shared = &self.shared;
        let n = shared.stealers.len();
        if n < 2 {
            return None;
        }
        let first = self.random(n);
        for i in 0..n {
            let victim = (first + i) % n;
            if victim == self.index {
                continue;
            }
            if same_request {
                if shared.board.current(victim) != self.key.get() {
                    continue;
                }
            } else if !shared.board.stealable_from(victim) {
                continue;
            }
            loop {
                match shared.stealers[victim].steal() {
                    Steal::Success(task) => return Some(task),
                    Steal::Retry => continue,
                    Steal::Empty => break,
                }
            }
        }
        None
    }

    /// Runs a task stolen at the top of the loop: the worker joins its request.
    fn run_stolen(&self, task: Task) {
        let shared = &self.shared;
        self.key.set(task.key);
        shared.board.enter(self.index, task.key, shared.now_ns());
        shared
            .metrics
            .threads_in_use
            .fetch_add(1, Ordering::Relaxed);
        self.flush_depth.set(1);
        self.run_nested(task);
        shared
            .metrics
            .threads_in_use
            .fetch_sub(1, Ordering::Relaxed);
        self.key.set(0);
    }

    fn run_nested(&self, task: Task) {
        self.depth.set(self.depth.get() + 1);
        task.job.run(self);
        self.depth.set(self.depth.get() - 1);
    }

    /// Called by a forked half just before it publishes its result: if it is the task
    /// that brought this worker onto its request, the worker leaves the request now, so
    /// that its time is flushed before the request can end (Fig. 5a lines 18-21).
    fn before_publish(&self) {
        if self.depth.get() == self.flush_depth.get() {
            self.shared.board.leave(self.index, self.shared.now_ns());
        }
    }

    /// Waits for a stolen half to finish, stealing tasks of the same request meanwhile.
    /// The worker has run dry locally, which makes it a thief in Fig. 5's terms, so it
    /// runs the pileup check first, counting its own time on the request (it has not
    /// left it). Like any thief it never steals from a marked request: it waits for the
    /// half's thief, who under prompt dissolving returns at its next piece boundary.
    fn wait_for(&self, done: &AtomicBool) {
        if !done.load(Ordering::Acquire) {
            self.check_pileup_phase(usize::MAX);
        }
        let backoff = Backoff::new();
        while !done.load(Ordering::Acquire) {
            let helping = self.shared.board.is_stealable(self.key.get());
            match helping.then(|| self.steal(true)).flatten() {
                Some(task) if task.key == self.key.get() => {
                    backoff.reset();
                    self.run_nested(task);
                }
                Some(task) => {
                    // The victim switched requests between the check and the steal. The
                    // task must not run nested under this request's join (it would
                    // delay this request by another's work), so it goes back to the
                    // executor, where an idle worker takes it up at the top of its loop.
                    backoff.reset();
                    self.shared.return_task(task);
                }
                None => match self.shared.take_returned() {
                    // A task of this request that some other helper handed back.
                    Some(task) if task.key == self.key.get() => {
                        backoff.reset();
                        self.run_nested(task);
                    }
                    Some(task) => {
                        self.shared.return_task(task);
                        backoff.snooze();
                    }
                    None => backoff.snooze(),
                },
            }
        }
    }

    /// Starts a request's root on this worker; the executor calls it.
    pub(crate) fn begin_root(&self, key: Key) {
        self.key.set(key);
        self.flush_depth.set(1);
        self.depth.set(1);
    }

    pub(crate) fn end_root(&self) {
        self.depth.set(0);
        self.key.set(0);
    }

    pub(crate) fn next_generation(&self) -> u64 {
        self.generation.set(self.generation.get() + 1);
        self.generation.get()
    }

    pub(crate) fn has_local_work(&self) -> bool {
        !self.deque.is_empty()
    }

    /// After a fork: wake a sleeping worker if there is one and it could steal the task.
    fn wake_for_fork(&self) {
        let shared = &self.shared;
        if shared.has_sleepers() && shared.board.is_stealable(self.key.get()) {
            shared.wake_one();
        }
    }

    /// A number in `0..n` from this worker's seeded xorshift generator.
    pub(crate) fn random(&self, n: usize) -> usize {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x % n as u64) as usize
    }
}

thread_local! {
    /// Whether this thread is a worker of some work-stealing executor.
    static ON_A_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is a work-stealing worker (dropping an executor there must
/// not wait for the request it is running).
pub(crate) fn on_a_worker() -> bool {
    ON_A_WORKER.with(Cell::get)
}
