//! The live heterogeneous-core runtime: each request on its own thread, pinned to the core that Algorithm 2 (or Oblivious, or RC) gives it, on cores made heterogeneous by duty-cycle emulation.
//!
//! Haque's dissertation, §5.1.3: requests run sequentially and self-schedule; between
//! units of its work a request asks for its placement ([`tailor_core::as2f_moves`] over
//! every request in the system, oldest first) and moves by thread affinity. A request
//! with no core waits (Algorithm 2 starts it at low priority, which gets no cycles while
//! every core is busy). The thresholds come from [`ThresholdControl`], the same
//! bookkeeping the simulator uses: EETL's controller every 2000 completions, its load
//! estimator at every arrival.
//!
//! Oblivious and RC place by [`tailor_core::oblivious_moves`] and
//! [`tailor_core::rc_moves`] (§5.2.6), the decision code the simulator runs too. RC is
//! clairvoyant: it reads each request's [`Job::demand_hint_ms`] at submission.
//!
//! Cores of a type slower than the fastest are slowed by a [`SlowCore`] emulator to
//! s / s_max of the machine's speed (§5.2.3). A request that another's placement moved
//! keeps running where it was until its next unit ends, so two requests can share a CPU
//! for up to one unit.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tailor_core::{
    as2f_moves, oblivious_moves, rc_moves, splitmix_below, CoreSet, EpochStats, HeteroPolicy, Job,
    Move, Placed, RcRequest, ThresholdControl,
};

use crate::emulate::{pin_current_thread, EmulatorPriority, SlowCore};
use crate::handle::{oneshot, panic_text, Handle, RequestError, Timing};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::priority::ThreadClass;

/// What the runtime runs on and by.
#[derive(Debug, Clone)]
pub struct S2fConfig {
    /// The cores by type.
    pub cores: CoreSet,
    /// The CPU of each core, in the order of the core set (slowest type first).
    pub cpus: Vec<usize>,
    /// A heterogeneous-core policy: `eetl`, `rtl`, `ee`, `s2f`, `reactive`, `oblivious` or
    /// `rc-hetero`.
    pub policy: HeteroPolicy,
    /// Seeds Oblivious's core choices.
    pub seed: u64,
    /// The slow cores' duty-cycle period (`None`: no emulation, the cores already
    /// differ), and the loss per period to give back (`tailor emulate` measures it).
    pub emulation: Option<(Duration, Duration)>,
    /// The most requests in the system; more are refused.
    pub max_active: usize,
    /// An open-loop schedule (window, thresholds per epoch, the last held) in place of
    /// the policy's thresholds, to identify the live plant (`tailor run --open-loop`).
    pub open_loop: Option<(usize, Vec<Vec<f64>>)>,
}

/// Why the runtime could not start, or refused a request.
#[derive(Debug, thiserror::Error)]
pub enum S2fError {
    /// The CPUs do not match the cores.
    #[error("{0}")]
    Config(String),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Io(#[from] std::io::Error),
    /// The system already holds `max_active` requests.
    #[error("{0} requests are in the system already")]
    Full(usize),
    /// RC needs each request's work in advance, and this request gave none.
    #[error("rc-hetero is clairvoyant: it needs each request's work in advance, and this request gives none")]
    NoDemandHint,
}

struct Entry {
    id: u64,
    arrival: Instant,
    core: Option<usize>,
    /// Its thread while it waits for a core: a placement that gives it one unparks it
    /// (and nobody else).
    waiter: Option<std::thread::Thread>,
    /// RC's view: its work, known in advance, is at least the policy's bound.
    long: bool,
}

struct State {
    /// Requests in the system, oldest first.
    active: Vec<Entry>,
    core_req: Vec<Option<u64>>,
    /// The thresholds and their control; `None` for Oblivious and RC.
    control: Option<ThresholdControl>,
    /// Oblivious's splitmix state.
    rng: u64,
    busy_ms: Vec<f64>,
    migrations: u64,
    next_id: u64,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a request leaves, for `drain`.
    changed: Condvar,
    start: Instant,
    cores: CoreSet,
    policy: HeteroPolicy,
    core_type: Vec<usize>,
    cpus: Vec<usize>,
    metrics: Metrics,
    max_active: usize,
    /// Request threads the kernel would not pin.
    pin_failures: std::sync::atomic::AtomicU64,
}

/// The live AS2F runtime.
pub struct S2fRuntime {
    shared: Arc<Shared>,
    emulators: Vec<SlowCore>,
    /// The scheduling class of the thread that started it, for its request threads.
    class: Option<ThreadClass>,
}

impl S2fRuntime {
    /// Starts the emulators and the placement state.
    pub fn start(cfg: S2fConfig) -> Result<S2fRuntime, S2fError> {
        let total = cfg.cores.total();
        if cfg.cpus.len() != total {
            return Err(S2fError::Config(format!(
                "{} cores ({}) need {total} CPUs, given {}",
                total,
                cfg.cores.spec(),
                cfg.cpus.len()
            )));
        }
        let mut seen = cfg.cpus.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != total {
            return Err(S2fError::Config("each core needs its own CPU".into()));
        }
        let speeds: Vec<f64> = cfg.cores.types().iter().map(|t| t.speed).collect();
        let control = ThresholdControl::new(&cfg.policy, &cfg.cores, cfg.open_loop.clone())
            .map_err(S2fError::Config)?;
        if matches!(cfg.policy, HeteroPolicy::RcHetero(_)) && speeds.len() < 2 {
            return Err(S2fError::Config(
                "rc-hetero needs at least two core types".into(),
            ));
        }
        let core_type: Vec<usize> = cfg.cores.core_types();
        let fastest = speeds.last().copied().unwrap_or(1.0);
        let mut emulators = Vec::new();
        if let Some((period, loss)) = cfg.emulation {
            for (c, &k) in core_type.iter().enumerate() {
                if speeds[k] < fastest {
                    let slow = SlowCore::start_compensated(
                        cfg.cpus[c],
                        fastest / speeds[k],
                        period,
                        loss,
                    )?;
                    if !slow.pinned() {
                        return Err(S2fError::Config(format!(
                            "cannot pin the slow-core emulator to CPU {}",
                            cfg.cpus[c]
                        )));
                    }
                    emulators.push(slow);
                }
            }
        }
        let n_types = speeds.len();
        Ok(S2fRuntime {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    active: Vec::new(),
                    core_req: vec![None; total],
                    control,
                    rng: cfg.seed ^ 0x4845_5445,
                    busy_ms: vec![0.0; n_types],
                    migrations: 0,
                    next_id: 0,
                }),
                changed: Condvar::new(),
                start: Instant::now(),
                cores: cfg.cores,
                policy: cfg.policy,
                core_type,
                cpus: cfg.cpus,
                metrics: Metrics::new(1),
                max_active: cfg.max_active.max(1),
                pin_failures: std::sync::atomic::AtomicU64::new(0),
            }),
            emulators,
            class: ThreadClass::current(),
        })
    }

    /// The emulators' priority (`None` without emulation).
    pub fn emulator_priority(&self) -> Option<EmulatorPriority> {
        self.emulators.first().map(SlowCore::priority)
    }

    /// Submits a request that arrived (or was meant to) at `arrival`; `measured` says
    /// whether its latency counts. It runs on a thread of its own.
    pub fn submit_at<J: Job>(
        &self,
        job: J,
        arrival: Instant,
        measured: bool,
    ) -> Result<Handle<J::Output>, S2fError> {
        let long = match self.shared.policy {
            // Work on a speed-1 core: the hint is at the machine's speed, the fastest
            // type's.
            HeteroPolicy::RcHetero(bound) => {
                let hint = job.demand_hint_ms().ok_or(S2fError::NoDemandHint)?;
                hint * self.shared.fastest_speed() >= bound
            }
            _ => false,
        };
        let id = {
            let mut st = self.shared.lock();
            if st.active.len() >= self.shared.max_active {
                self.shared.metrics.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(S2fError::Full(st.active.len()));
            }
            let id = st.next_id;
            st.next_id += 1;
            // Keep the list oldest first even if submitters race.
            let at = st.active.partition_point(|e| e.arrival <= arrival);
            st.active.insert(
                at,
                Entry {
                    id,
                    arrival,
                    core: None,
                    waiter: None,
                    long,
                },
            );
            let now_ms = self.shared.ms(arrival);
            if let Some(c) = &mut st.control {
                c.on_arrival(now_ms);
            }
            self.shared.place(&mut st);
            id
        };
        self.shared.metrics.load.fetch_add(1, Ordering::Relaxed);
        let (handle, completer) = oneshot();
        let shared = self.shared.clone();
        let class = self.class;
        let spawned = std::thread::Builder::new()
            .name("tailor-s2f-request".into())
            .spawn(move || {
                // The submitting thread may run at another priority than the one that
                // started the runtime (a harness's submitter above the requests).
                if let Some(class) = class {
                    class.apply();
                }
                let (result, timing) = shared.serve(id, &job, arrival, measured);
                completer.complete(result, Some(timing));
            });
        if let Err(e) = spawned {
            // Take it back out; its completer went with the closure and resolves it.
            let mut st = self.shared.lock();
            self.shared.leave(&mut st, id);
            self.shared.place(&mut st);
            self.shared.metrics.load.fetch_sub(1, Ordering::Relaxed);
            return Err(S2fError::Io(e));
        }
        Ok(handle)
    }

    /// Counts and latencies so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        let waiting = self
            .shared
            .lock()
            .active
            .iter()
            .filter(|e| e.core.is_none())
            .count();
        self.shared.metrics.snapshot(waiting)
    }

    /// Waits until every submitted request has finished, stops the emulators, and
    /// returns the busy ms per core type, the migrations and the control epochs.
    pub fn drain(self) -> S2fReport {
        let mut st = self.shared.lock();
        while !st.active.is_empty() {
            st = self
                .shared
                .changed
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
        let report = S2fReport {
            pin_failures: self.shared.pin_failures.load(Ordering::Relaxed),
            busy_ms: st.busy_ms.clone(),
            migrations: st.migrations,
            epochs: st
                .control
                .as_ref()
                .map(|c| c.epochs().to_vec())
                .unwrap_or_default(),
            metrics: self.shared.metrics.snapshot(0),
            energy: self.shared.cores.energy(&st.busy_ms),
            dynamic_energy: self.shared.cores.dynamic_energy(&st.busy_ms),
        };
        drop(st);
        drop(self.emulators);
        report
    }
}

/// What a drained run leaves.
#[derive(Debug, Clone)]
pub struct S2fReport {
    /// Times a request thread could not be pinned to its core's CPU.
    pub pin_failures: u64,
    /// Busy core-ms per core type, slowest first.
    pub busy_ms: Vec<f64>,
    /// Moves to a faster core.
    pub migrations: u64,
    /// The control epochs.
    pub epochs: Vec<EpochStats>,
    /// The final counts.
    pub metrics: MetricsSnapshot,
    /// Energy of the run in model units ([`CoreSet::energy`]).
    pub energy: f64,
    /// Its dynamic part.
    pub dynamic_energy: f64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pins the calling thread to core `core`'s CPU; a refusal is counted, since the
    /// request then runs wherever the kernel puts it.
    fn pin(&self, core: usize) {
        if !pin_current_thread(self.cpus[core]) {
            self.pin_failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ms(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64() * 1000.0
    }

    /// The fastest type's speed, relative to the slowest's.
    fn fastest_speed(&self) -> f64 {
        self.cores.types().last().map_or(1.0, |t| t.speed)
    }

    /// Applies the policy's placement to the state now (Algorithm 2 for the threshold
    /// policies), and wakes the waiting requests it gave a core.
    fn place(&self, st: &mut State) {
        let mut free = vec![0usize; self.cores.types().len()];
        for (c, r) in st.core_req.iter().enumerate() {
            if r.is_none() {
                free[self.core_type[c]] += 1;
            }
        }
        let on_type = |e: &Entry| e.core.map(|c| self.core_type[c]);
        let moves: Vec<Move> = match (&self.policy, &st.control) {
            (HeteroPolicy::Oblivious, _) => {
                let busy: Vec<bool> = st.core_req.iter().map(Option::is_some).collect();
                let waiting: Vec<usize> = (0..st.active.len())
                    .filter(|&i| st.active[i].core.is_none())
                    .collect();
                let rng = &mut st.rng;
                let picks = oblivious_moves(&busy, &waiting, &mut |n| splitmix_below(rng, n));
                if picks.is_empty() {
                    return;
                }
                for (i, core) in picks {
                    Self::give(st, i, core);
                }
                return;
            }
            (HeteroPolicy::RcHetero(_), _) => {
                let requests: Vec<RcRequest> = st
                    .active
                    .iter()
                    .map(|e| RcRequest {
                        core_type: on_type(e),
                        long: e.long,
                    })
                    .collect();
                rc_moves(&free, &requests)
            }
            (_, Some(control)) => {
                let now = Instant::now();
                let placed: Vec<Placed> = st
                    .active
                    .iter()
                    .map(|e| Placed {
                        age_ms: now.saturating_duration_since(e.arrival).as_secs_f64() * 1000.0,
                        core_type: on_type(e),
                    })
                    .collect();
                as2f_moves(control.thresholds(), self.cores.counts(), &free, &placed)
            }
            (_, None) => Vec::new(),
        };
        if moves.is_empty() {
            return;
        }
        for mv in moves {
            let core = (0..st.core_req.len())
                .find(|&c| st.core_req[c].is_none() && self.core_type[c] == mv.to)
                .expect("the placement had a free core");
            if let Some(old) = st.active[mv.request].core {
                st.core_req[old] = None;
                st.migrations += 1;
            }
            Self::give(st, mv.request, core);
        }
    }

    /// Puts request `i` (an index into `active`) on free core `core`, waking it if it
    /// was waiting.
    fn give(st: &mut State, i: usize, core: usize) {
        let entry = &mut st.active[i];
        entry.core = Some(core);
        st.core_req[core] = Some(entry.id);
        if let Some(t) = entry.waiter.take() {
            t.unpark();
        }
    }

    /// Takes request `id` out of the system, freeing its core.
    fn leave(&self, st: &mut State, id: u64) {
        if let Some(c) = Self::core_of(st, id) {
            st.core_req[c] = None;
        }
        st.active.retain(|e| e.id != id);
    }

    fn core_of(st: &State, id: u64) -> Option<usize> {
        st.active.iter().find(|e| e.id == id).and_then(|e| e.core)
    }

    /// Runs request `id` on this thread: waits for a core, runs its units with a
    /// placement check after each, merges, and leaves.
    fn serve<J: Job>(
        &self,
        id: u64,
        job: &J,
        arrival: Instant,
        measured: bool,
    ) -> (Result<J::Output, RequestError>, Timing) {
        let mut core = loop {
            let mut st = self.lock();
            if let Some(c) = Self::core_of(&st, id) {
                break c;
            }
            // Leave this thread's handle for the placement that gives it a core, then
            // sleep; an unpark that comes before the park makes the park return at once.
            if let Some(e) = st.active.iter_mut().find(|e| e.id == id) {
                e.waiter = Some(std::thread::current());
            }
            drop(st);
            std::thread::park();
        };
        self.pin(core);
        self.metrics.threads_in_use.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        // After each unit: its time (taken before waiting for the lock) goes to the
        // core's type, then the placement runs and the thread follows its request.
        let account = |core: &mut usize, since: Instant| {
            let ms = since.elapsed().as_secs_f64() * 1000.0;
            let mut st = self.lock();
            st.busy_ms[self.core_type[*core]] += ms;
            self.place(&mut st);
            if let Some(c) = Self::core_of(&st, id) {
                if c != *core {
                    *core = c;
                    self.pin(c);
                }
            }
        };
        let merge_ms = std::cell::Cell::new(0.0);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut parts = Vec::with_capacity(job.units());
            for unit in 0..job.units() {
                let t0 = Instant::now();
                parts.push(job.run(unit));
                account(&mut core, t0);
            }
            let t0 = Instant::now();
            let out = job.merge(parts);
            merge_ms.set(t0.elapsed().as_secs_f64() * 1000.0);
            out
        }));
        let finish = Instant::now();
        self.metrics.threads_in_use.fetch_sub(1, Ordering::Relaxed);
        let result = run.map_err(|p| RequestError::Panicked(panic_text(p.as_ref())));
        let timing = Timing::sequential(arrival, start, finish);
        let m = &self.metrics;
        match &result {
            Ok(_) => {
                m.completed.fetch_add(1, Ordering::Relaxed);
                m.degrees[0].fetch_add(1, Ordering::Relaxed);
                if measured {
                    m.latency
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record(timing.latency_ms());
                }
            }
            Err(_) => {
                m.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        {
            // The merge's time, the departure and the placement in one critical section,
            // so a finished request is never placed.
            let mut st = self.lock();
            st.busy_ms[self.core_type[core]] += merge_ms.get();
            self.leave(&mut st, id);
            let now_ms = self.ms(finish);
            if let Some(c) = &mut st.control {
                c.on_completion(now_ms, timing.latency_ms());
            }
            self.place(&mut st);
            self.changed.notify_all();
        }
        m.load.fetch_sub(1, Ordering::Relaxed);
        (result, timing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins for `ms` per unit, `units` units; tells RC its work when `hint`. With a
    /// `gate`, its first unit waits until the gate opens.
    struct Spin {
        units: usize,
        ms: f64,
        panic: bool,
        hint: bool,
        gate: Option<Arc<std::sync::atomic::AtomicBool>>,
    }

    fn spin(units: usize, ms: f64) -> Spin {
        Spin {
            units,
            ms,
            panic: false,
            hint: true,
            gate: None,
        }
    }

    impl Job for Spin {
        type Part = ();
        type Output = usize;
        fn units(&self) -> usize {
            self.units
        }
        fn run(&self, unit: usize) {
            assert!(!self.panic, "boom");
            if let (0, Some(gate)) = (unit, &self.gate) {
                while !gate.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
            }
            let until = Instant::now() + Duration::from_secs_f64(self.ms / 1000.0);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        fn merge(&self, parts: Vec<()>) -> usize {
            parts.len()
        }
        fn demand_hint_ms(&self) -> Option<f64> {
            self.hint.then_some(self.units as f64 * self.ms)
        }
    }

    fn runtime(policy: HeteroPolicy) -> S2fRuntime {
        S2fRuntime::start(S2fConfig {
            cores: CoreSet::parse("1@1,1@2").unwrap(),
            cpus: vec![0, 1],
            policy,
            seed: 1,
            emulation: None,
            max_active: 100,
            open_loop: None,
        })
        .unwrap()
    }

    #[test]
    fn every_request_completes_or_fails_alone_and_long_ones_migrate() {
        let rt = runtime(HeteroPolicy::Fixed(vec![5.0]));
        let now = Instant::now();
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let job = Spin {
                    panic: i == 3,
                    ..spin(10, 1.0)
                };
                rt.submit_at(job, now, true).unwrap()
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.wait()).collect();
        for (i, r) in results.iter().enumerate() {
            match r {
                Ok(done) => assert_eq!(done.output, 10),
                Err(RequestError::Panicked(m)) => {
                    assert_eq!(i, 3);
                    assert!(m.contains("boom"));
                }
                Err(e) => panic!("{e}"),
            }
        }
        let report = rt.drain();
        assert_eq!(report.metrics.completed, 5);
        assert_eq!(report.metrics.failed, 1);
        // 10 ms requests pass the 5 ms threshold, so some moved to the fast core.
        assert!(report.migrations > 0);
        assert!(report.busy_ms[1] > 0.0);
        assert!(report.energy > report.dynamic_energy);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let cfg = |cpus: Vec<usize>, policy| S2fConfig {
            cores: CoreSet::parse("1@1,1@2").unwrap(),
            cpus,
            policy,
            seed: 1,
            emulation: None,
            max_active: 10,
            open_loop: None,
        };
        assert!(S2fRuntime::start(cfg(vec![0], HeteroPolicy::Rtl)).is_err());
        assert!(S2fRuntime::start(cfg(vec![0, 0], HeteroPolicy::Rtl)).is_err());
        // RC without the work of a request refuses that request.
        let rc = S2fRuntime::start(cfg(vec![0, 1], HeteroPolicy::RcHetero(5.0))).unwrap();
        let blind = Spin {
            hint: false,
            ..spin(1, 0.1)
        };
        assert!(matches!(
            rc.submit_at(blind, Instant::now(), true),
            Err(S2fError::NoDemandHint)
        ));
        assert_eq!(rc.drain().metrics.completed, 0);
    }

    /// Runs `jobs` submitted at once and returns the report. Each waits at a gate until
    /// all are in, so that the first ones hold their cores however slowly the
    /// submitting thread runs (on a busy machine it could otherwise see each finish
    /// before it submits the next).
    fn run_all(policy: HeteroPolicy, jobs: Vec<Spin>) -> S2fReport {
        let rt = runtime(policy);
        let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let now = Instant::now();
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|j| {
                let job = Spin {
                    gate: Some(gate.clone()),
                    ..j
                };
                rt.submit_at(job, now, true).unwrap()
            })
            .collect();
        gate.store(true, Ordering::Release);
        for h in handles {
            assert!(h.wait().is_ok());
        }
        rt.drain()
    }

    #[test]
    fn oblivious_places_once_and_never_migrates() {
        let report = run_all(
            HeteroPolicy::Oblivious,
            (0..8).map(|_| spin(4, 1.0)).collect(),
        );
        assert_eq!(report.metrics.completed, 8);
        assert_eq!(report.migrations, 0);
        assert!(report.epochs.is_empty());
    }

    #[test]
    fn rc_keeps_short_requests_off_the_fast_core_and_moves_long_ones_up() {
        // 2 ms of machine time is 4 ms of work on the speed-1 core: under a 5 ms bound.
        let short = run_all(
            HeteroPolicy::RcHetero(5.0),
            (0..4).map(|_| spin(2, 1.0)).collect(),
        );
        assert_eq!(short.metrics.completed, 4);
        assert_eq!(short.busy_ms[1], 0.0, "short requests ran on the fast core");
        let long = run_all(
            HeteroPolicy::RcHetero(5.0),
            (0..4).map(|_| spin(5, 1.0)).collect(),
        );
        assert_eq!(long.metrics.completed, 4);
        assert!(long.busy_ms[1] > 0.0);
        assert!(
            long.migrations > 0,
            "no long request moved up from the slow core"
        );
    }
}
