//! A request in flight: its units, how threads claim them, and how it finishes.
//!
//! Threads claim units with one atomic add each; the thread that finishes the last unit
//! (or skips the remaining ones after a panic or a cancel) merges and completes the
//! request, so no thread waits for another.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tailor_core::Job;

use crate::handle::{panic_text, Completer, RequestError, Timing};

/// The state every request shares, whatever its job type.
pub(crate) struct Core {
    pub(crate) id: u64,
    pub(crate) units: usize,
    /// The next unit to claim; at or past `units`, none are left.
    next: AtomicUsize,
    /// Units finished or skipped; the thread that brings it to `units` finishes.
    done: AtomicUsize,
    failure: Mutex<Option<RequestError>>,
    /// Threads assigned to the request (its degree): the policy's degree, or under the
    /// core guard the threads on it plus the helpers sent to it.
    pub(crate) degree: AtomicUsize,
    /// Under the core guard: the degree the policy asks for (it never falls).
    pub(crate) wanted: AtomicUsize,
    /// Under the core guard: threads working on it now.
    pub(crate) threads: AtomicUsize,
    /// Under the core guard: helpers sent to it that have not joined yet.
    pub(crate) pending: AtomicUsize,
    pub(crate) max_degree: AtomicUsize,
    /// Whether it runs on the boost pool (ordinary threads leave it between units).
    pub(crate) boosted: AtomicBool,
    /// The arrival its latency counts from.
    pub(crate) arrival: Instant,
    pub(crate) start: Mutex<Option<Instant>>,
    /// Since when the current degree holds, and the integral of the degree before it, in
    /// degree x seconds.
    degree_log: Mutex<(Option<Instant>, f64)>,
    /// Whether its latency goes into the runtime's histogram.
    pub(crate) measured: bool,
    pub(crate) demand_hint_ms: Option<f64>,
    /// Each unit's time in ns, when the runtime keeps a profile of served requests
    /// (empty otherwise).
    pub(crate) unit_ns: Box<[AtomicU64]>,
    /// The merge's time in ns, when it keeps one.
    pub(crate) merge_ns: AtomicU64,
}

impl Core {
    pub(crate) fn new(
        id: u64,
        units: usize,
        arrival: Instant,
        measured: bool,
        demand_hint_ms: Option<f64>,
    ) -> Core {
        Core {
            id,
            units,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            failure: Mutex::new(None),
            degree: AtomicUsize::new(0),
            wanted: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            max_degree: AtomicUsize::new(0),
            boosted: AtomicBool::new(false),
            arrival,
            start: Mutex::new(None),
            degree_log: Mutex::new((None, 0.0)),
            measured,
            demand_hint_ms,
            unit_ns: Box::new([]),
            merge_ns: AtomicU64::new(0),
        }
    }

    /// The same core with room to time each unit and the merge, for the runtime's
    /// profile of served requests.
    pub(crate) fn timed(mut self) -> Core {
        self.unit_ns = (0..self.units).map(|_| AtomicU64::new(0)).collect();
        self
    }

    /// Whether its units and merge are timed.
    pub(crate) fn is_timed(&self) -> bool {
        self.units == 0 || !self.unit_ns.is_empty()
    }

    /// Its parts as timed: each unit's time and the merge's, in ms.
    pub(crate) fn parts_ms(&self) -> (Vec<f64>, f64) {
        let ms = |ns: &AtomicU64| ns.load(Ordering::Acquire) as f64 / 1e6;
        (self.unit_ns.iter().map(ms).collect(), ms(&self.merge_ns))
    }

    /// Claims the next unit, if any are left.
    pub(crate) fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::AcqRel);
        (i < self.units).then_some(i)
    }

    /// Units no thread has claimed yet.
    pub(crate) fn unclaimed(&self) -> usize {
        self.units.saturating_sub(self.next.load(Ordering::Acquire))
    }

    /// Counts `n` units as done; true for the one caller that completes the count.
    pub(crate) fn add_done(&self, n: usize) -> bool {
        n > 0 && self.done.fetch_add(n, Ordering::AcqRel) + n == self.units
    }

    /// Records why the request fails (the first reason wins) and stops further claims.
    /// Returns how many unclaimed units were skipped; the caller counts them as done.
    pub(crate) fn fail(&self, why: RequestError) -> usize {
        {
            let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            if failure.is_none() {
                *failure = Some(why);
            }
        }
        let before = self.next.swap(self.units, Ordering::AcqRel);
        self.units.saturating_sub(before)
    }

    pub(crate) fn take_failure(&self) -> Option<RequestError> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Sets the degree to `degree` from now on, closing the previous degree's interval.
    pub(crate) fn set_degree(&self, degree: usize) {
        let mut log = self.degree_log.lock().unwrap_or_else(|e| e.into_inner());
        let now = match log.0 {
            Some(since) => {
                let now = Instant::now();
                log.1 += self.degree.load(Ordering::Acquire) as f64
                    * now.duration_since(since).as_secs_f64();
                now
            }
            // The first degree holds from the start.
            None => self.started_at(),
        };
        log.0 = Some(now);
        self.degree.store(degree, Ordering::Release);
        self.max_degree.fetch_max(degree, Ordering::AcqRel);
    }

    /// Changes the degree by `delta` from now on (the core guard's threads come and go).
    pub(crate) fn adjust_degree(&self, delta: isize) {
        let mut log = self.degree_log.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let current = self.degree.load(Ordering::Acquire);
        if let Some(since) = log.0 {
            log.1 += current as f64 * now.duration_since(since).as_secs_f64();
        }
        log.0 = Some(now);
        let degree = current.saturating_add_signed(delta);
        self.degree.store(degree, Ordering::Release);
        self.max_degree.fetch_max(degree, Ordering::AcqRel);
    }

    /// The degree averaged over the request's run, from its start to `finish`.
    pub(crate) fn mean_degree(&self, finish: Instant) -> f64 {
        let log = self.degree_log.lock().unwrap_or_else(|e| e.into_inner());
        let degree = self.degree.load(Ordering::Acquire) as f64;
        let start = self.started_at();
        let total = finish.duration_since(start).as_secs_f64();
        match log.0 {
            Some(since) if total > 0.0 => {
                (log.1 + degree * finish.duration_since(since).as_secs_f64()) / total
            }
            _ => degree.max(1.0),
        }
    }

    pub(crate) fn started_at(&self) -> Instant {
        self.start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(self.arrival)
    }
}

/// A request whatever its job type: what the pool's threads call.
pub(crate) trait Work: Send + Sync {
    fn core(&self) -> &Core;
    /// The job's per-thread set-up; Err with the panic message if it panicked.
    fn join(&self) -> Result<(), String>;
    /// Runs unit `i` and keeps its part; Err with the panic message if it panicked.
    fn run_unit(&self, i: usize) -> Result<(), String>;
    /// Merges the parts (unless the request failed) and resolves the handle with the
    /// timing `timing` gives for the moment the result is ready: the merge is part of
    /// the request, so its latency ends after it. A merge that sees `stop` turn true may
    /// end early, and the request resolves as cancelled. `record` gets the timing and the
    /// failure the handle will resolve with, if any (a merge may add one), just before
    /// the handle resolves, so a submitter that has its result also sees it counted.
    fn complete(
        &self,
        failure: Option<RequestError>,
        timing: &dyn Fn(Instant) -> Timing,
        stop: &dyn Fn() -> bool,
        record: &dyn Fn(&Timing, Option<&RequestError>),
    );
    /// Whether its submitter cancelled it (see `Handle::cancel`).
    fn cancelled(&self) -> bool;
}

/// A request of job type `J`.
pub(crate) struct Request<J: Job> {
    core: Core,
    job: J,
    parts: Vec<Mutex<Option<J::Part>>>,
    completer: Completer<J::Output>,
}

impl<J: Job> Request<J> {
    pub(crate) fn new(core: Core, job: J, completer: Completer<J::Output>) -> Self {
        let parts = (0..core.units).map(|_| Mutex::new(None)).collect();
        Request {
            core,
            job,
            parts,
            completer,
        }
    }
}

impl<J: Job> Work for Request<J> {
    fn core(&self) -> &Core {
        &self.core
    }

    fn join(&self) -> Result<(), String> {
        catch_unwind(AssertUnwindSafe(|| self.job.on_join())).map_err(|p| panic_text(&*p))
    }

    fn run_unit(&self, i: usize) -> Result<(), String> {
        let started = (!self.core.unit_ns.is_empty()).then(Instant::now);
        let part =
            catch_unwind(AssertUnwindSafe(|| self.job.run(i))).map_err(|p| panic_text(&*p))?;
        if let (Some(t), Some(slot)) = (started, self.core.unit_ns.get(i)) {
            slot.store(elapsed_ns(t), Ordering::Release);
        }
        *self.parts[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(part);
        Ok(())
    }

    fn cancelled(&self) -> bool {
        self.completer.is_cancelled()
    }

    fn complete(
        &self,
        failure: Option<RequestError>,
        timing: &dyn Fn(Instant) -> Timing,
        stop: &dyn Fn() -> bool,
        record: &dyn Fn(&Timing, Option<&RequestError>),
    ) {
        if let Some(why) = failure {
            let timing = timing(Instant::now());
            record(&timing, Some(&why));
            self.completer.complete(Err(why), Some(timing));
            return;
        }
        let parts: Option<Vec<J::Part>> = self
            .parts
            .iter()
            .map(|p| p.lock().unwrap_or_else(|e| e.into_inner()).take())
            .collect();
        let merging = Instant::now();
        let result = match parts {
            Some(parts) => catch_unwind(AssertUnwindSafe(|| self.job.merge_or_stop(parts, stop)))
                .map_err(|p| RequestError::Panicked(panic_text(&*p)))
                .and_then(|merged| merged.ok_or(RequestError::Cancelled)),
            None => Err(RequestError::Panicked(
                "a unit finished without its part (a runtime bug)".into(),
            )),
        };
        self.core
            .merge_ns
            .store(elapsed_ns(merging), Ordering::Release);
        let timing = timing(Instant::now());
        record(&timing, result.as_ref().err());
        self.completer.complete(result, Some(timing));
    }
}

/// Nanoseconds since `t`, saturating.
fn elapsed_ns(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_is_claimed_once_and_the_last_one_finishes() {
        let core = Core::new(1, 3, Instant::now(), true, None);
        assert_eq!(core.claim(), Some(0));
        assert_eq!(core.claim(), Some(1));
        assert_eq!(core.claim(), Some(2));
        assert_eq!(core.claim(), None);
        assert!(!core.add_done(1));
        assert!(!core.add_done(1));
        assert!(core.add_done(1));
    }

    #[test]
    fn a_failure_skips_the_unclaimed_units() {
        let core = Core::new(1, 5, Instant::now(), true, None);
        core.claim();
        core.claim();
        let skipped = core.fail(RequestError::Panicked("boom".into()));
        assert_eq!(skipped, 3);
        assert_eq!(core.claim(), None);
        // The failing unit and the skipped ones, then the other running unit finishes.
        assert!(!core.add_done(1 + skipped));
        assert!(core.add_done(1));
        assert_eq!(
            core.take_failure(),
            Some(RequestError::Panicked("boom".into()))
        );
    }
}
