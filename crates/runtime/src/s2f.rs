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
//!
//! **DVFS cores** (issue 42, [`DvfsLive`]): identical cores, placed first come, first
//! served, each with an emulator whose duty changes at run time: a request's core runs at
//! the P-state its age gives ([`tailor_core::pstate_for_age`], the thresholds from the
//! same [`ThresholdControl`]), set when the request starts and after each unit. The top
//! state is the host's own speed. Only per-core policies run live; the all-core governors
//! are simulated.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tailor_core::{
    as2f_moves, oblivious_moves, pstate_for_age, rc_moves, splitmix_below, CoreSet, DvfsCores,
    DvfsPolicy, EpochStats, HeteroPolicy, Job, Move, Placed, RcRequest, Scope, ThresholdControl,
};

use crate::emulate::{pin_current_thread, Duty, EmulatorPriority, SlowCore};
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
    /// DVFS cores in place of core types: `cores` must then be the same count of speed-1
    /// cores, `policy` is not used, and `open_loop` holds the P-state thresholds.
    pub dvfs: Option<DvfsLive>,
}

/// Live DVFS cores (issue 42): the chip and a per-core policy.
#[derive(Debug, Clone)]
pub struct DvfsLive {
    /// The cores and their P-states; the top state runs at the host's speed.
    pub chip: DvfsCores,
    /// A per-core policy: eetl-dvfs, tl-dvfs, s2f-dvfs or max.
    pub policy: DvfsPolicy,
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
    /// DVFS: each core's P-state, the thresholds' control and the changes so far.
    pstate: Vec<usize>,
    dvfs_control: Option<ThresholdControl>,
    transitions: u64,
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
    /// DVFS cores and each core's emulator handle.
    dvfs: Option<(DvfsLive, Vec<Duty>)>,
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
        if let Some(d) = &cfg.dvfs {
            return Self::start_dvfs(cfg.clone(), d.clone());
        }
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
        let state = State::new(total, control, cfg.seed, n_types);
        Ok(Self::assemble(cfg, state, emulators, None))
    }

    fn assemble(
        cfg: S2fConfig,
        state: State,
        emulators: Vec<SlowCore>,
        dvfs: Option<(DvfsLive, Vec<Duty>)>,
    ) -> S2fRuntime {
        S2fRuntime {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                changed: Condvar::new(),
                start: Instant::now(),
                core_type: cfg.cores.core_types(),
                cores: cfg.cores,
                policy: cfg.policy,
                cpus: cfg.cpus,
                metrics: Metrics::new(1),
                max_active: cfg.max_active.max(1),
                pin_failures: std::sync::atomic::AtomicU64::new(0),
                dvfs,
            }),
            emulators,
            class: ThreadClass::current(),
        }
    }

    /// DVFS cores: first come, first served (one core type, no thresholds), an emulator
    /// on every core, and the P-state thresholds in a control of their own.
    fn start_dvfs(cfg: S2fConfig, d: DvfsLive) -> Result<S2fRuntime, S2fError> {
        let bad = |m: String| Err(S2fError::Config(m));
        if !cfg.cores.is_uniform_unit() || cfg.cores.total() != d.chip.count {
            return bad(format!(
                "DVFS cores are {} identical cores, not {}",
                d.chip.count,
                cfg.cores.spec()
            ));
        }
        if d.policy.scope() != Scope::PerCore {
            return bad(format!(
                "--policy {}: the all-core governors (pegasus, schedutil) run in `tailor                  simulate` only; live DVFS sets each core's speed (eetl-dvfs, tl-dvfs,                  s2f-dvfs, max)",
                d.policy.name()
            ));
        }
        let Some((period, loss)) = cfg.emulation else {
            return bad("DVFS cores are emulated: give an emulation period above 0".into());
        };
        let placement = ThresholdControl::new(&HeteroPolicy::Fixed(Vec::new()), &cfg.cores, None)
            .map_err(S2fError::Config)?;
        let dvfs_control = match d.policy.thresholds_policy() {
            Some(p) => ThresholdControl::for_dvfs(&p, &d.chip, cfg.open_loop.clone())
                .map_err(S2fError::Config)?,
            None => None,
        };
        let states = d.chip.pstates.states();
        let top = states.len() - 1;
        let start = match d.policy {
            DvfsPolicy::Max | DvfsPolicy::TlDvfs => top,
            _ => 0,
        };
        let mut emulators = Vec::new();
        for &cpu in &cfg.cpus {
            let slowdown = states[top].speed / states[start].speed;
            let slow = SlowCore::start_compensated(cpu, slowdown, period, loss)?;
            if !slow.pinned() {
                return bad(format!("cannot pin the DVFS emulator to CPU {cpu}"));
            }
            emulators.push(slow);
        }
        let duties = emulators.iter().map(SlowCore::duty).collect();
        let mut state = State::new(cfg.cpus.len(), placement, cfg.seed, states.len());
        state.pstate = vec![start; cfg.cpus.len()];
        state.dvfs_control = dvfs_control;
        Ok(Self::assemble(cfg, state, emulators, Some((d, duties))))
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
            if let Some(c) = &mut st.dvfs_control {
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
            energy: match &self.shared.dvfs {
                Some((d, _)) => d.chip.energy(&st.busy_ms),
                None => self.shared.cores.energy(&st.busy_ms),
            },
            dynamic_energy: match &self.shared.dvfs {
                Some((d, _)) => st
                    .busy_ms
                    .iter()
                    .zip(d.chip.pstates.states())
                    .map(|(b, s)| b * s.power)
                    .sum(),
                None => self.shared.cores.dynamic_energy(&st.busy_ms),
            },
            transitions: st.transitions,
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
    /// Busy core-ms per core type (on DVFS cores, per P-state), slowest first.
    pub busy_ms: Vec<f64>,
    /// DVFS cores: P-state changes.
    pub transitions: u64,
    /// Moves to a faster core.
    pub migrations: u64,
    /// The control epochs.
    pub epochs: Vec<EpochStats>,
    /// The final counts.
    pub metrics: MetricsSnapshot,
    /// Energy of the run in model units ([`CoreSet::energy`], or on DVFS cores
    /// [`DvfsCores::energy`]).
    pub energy: f64,
    /// Its dynamic part.
    pub dynamic_energy: f64,
}

impl State {
    fn new(cores: usize, control: Option<ThresholdControl>, seed: u64, levels: usize) -> State {
        State {
            active: Vec::new(),
            core_req: vec![None; cores],
            control,
            rng: seed ^ 0x4845_5445,
            busy_ms: vec![0.0; levels],
            migrations: 0,
            next_id: 0,
            pstate: Vec::new(),
            dvfs_control: None,
            transitions: 0,
        }
    }
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

    /// Where a core's busy time goes: its type, or on DVFS cores its P-state.
    fn level(&self, st: &State, core: usize) -> usize {
        match self.dvfs {
            Some(_) => st.pstate[core],
            None => self.core_type[core],
        }
    }

    /// DVFS cores: sets `core`'s P-state to the one its request's age gives.
    fn set_pstate(&self, st: &mut State, core: usize, arrival: Instant) {
        let Some((d, duties)) = &self.dvfs else {
            return;
        };
        let states = d.chip.pstates.states();
        let want = match (&d.policy, &st.dvfs_control) {
            (DvfsPolicy::Max, _) | (_, None) => states.len() - 1,
            (_, Some(c)) => {
                let age = arrival.elapsed().as_secs_f64() * 1000.0;
                pstate_for_age(age, c.thresholds(), states.len())
            }
        };
        if want != st.pstate[core] {
            st.pstate[core] = want;
            st.transitions += 1;
            duties[core].set_slowdown(states[states.len() - 1].speed / states[want].speed);
        }
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
        self.set_pstate(&mut self.lock(), core, arrival);
        self.metrics.threads_in_use.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        // After each unit: its time (taken before waiting for the lock) goes to the
        // core's type, then the placement runs and the thread follows its request.
        let account = |core: &mut usize, since: Instant| {
            let ms = since.elapsed().as_secs_f64() * 1000.0;
            let mut st = self.lock();
            let level = self.level(&st, *core);
            st.busy_ms[level] += ms;
            self.place(&mut st);
            if let Some(c) = Self::core_of(&st, id) {
                if c != *core {
                    *core = c;
                    self.pin(c);
                }
            }
            self.set_pstate(&mut st, *core, arrival);
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
            let level = self.level(&st, core);
            st.busy_ms[level] += merge_ms.get();
            self.leave(&mut st, id);
            let now_ms = self.ms(finish);
            if let Some(c) = &mut st.control {
                c.on_completion(now_ms, timing.latency_ms());
            }
            if let Some(c) = &mut st.dvfs_control {
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
mod tests;
