//! Open-loop live runs, in one process like TailBench's integrated mode.
//!
//! Arrival times and demands are drawn ahead of time from the same generators the
//! simulator uses (`tailor_core::workload_rngs`), so a seed gives both engines the same
//! workload. A generator thread (timer slack 1 ns, raised priority where allowed) releases
//! each request at its intended time: it sleeps until then, and does not spin (a spinning
//! generator takes its CPU from the server it measures). A
//! request's latency counts from its intended arrival, not from when it was released, so
//! a late release cannot hide queueing (no coordinated omission). The first requests are
//! warm-up and stay out of the statistics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use tailor_core::{
    degree_stats, phase_stats, workload_rngs, ArrivalError, Arrivals, Dissolve, EnergySummary,
    HostStats, Job, LatencyRecorder, Policy, RunSummary, StealPolicy,
};
use tailor_runtime::s2f::{S2fConfig, S2fReport, S2fRuntime};
use tailor_runtime::steal::{StealConfig, StealRuntime};
use tailor_runtime::{
    oneshot, BoostMode, Handle, MetricsSnapshot, RequestError, Runtime, RuntimeConfig, Shutdown,
    ShutdownReport, StartError, Timing,
};
use tailor_sim::RequestRecord;

use crate::host::HostMeter;
use crate::os::{self, GeneratorPriority};
use crate::source::RequestSource;
use crate::UnitTimes;

/// How often a live run samples the threads in use. Every wake-up takes a core from the
/// server for a moment: sampling (and the hiccup meter) every millisecond cost about 1%
/// of two cores, enough to move a tail at 75% load (BENCHMARKS.md, "Load generator
/// precision").
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// A live run's settings.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Cores the policy plans for (and utilization is measured against).
    pub cores: usize,
    /// The policy under test.
    pub policy: Policy,
    /// The arrival process.
    pub arrivals: Arrivals,
    /// Offered load, requests per second.
    pub rps: f64,
    /// Requests in the run (phases fix their own count).
    pub requests: usize,
    /// The workload's seed.
    pub seed: u64,
    /// The self-scheduling quantum in ms.
    pub quantum_ms: f64,
    /// A latency target for the miss ratio.
    pub target_ms: Option<f64>,
    /// Warm-up requests left out of the statistics; `None` means 5%.
    pub warmup: Option<usize>,
    /// Worker threads for policies with a pool; `None` means one per core.
    pub workers: Option<usize>,
    /// FM's core guard (`RuntimeConfig::guard`, docs/guard.md); off runs the FM paper's
    /// runtime, whose threads may outnumber the cores.
    pub guard: bool,
    /// When set, requests run on the work-stealing executor (one worker per core) under
    /// this policy, and `policy`, `quantum_ms` and `workers` are not used.
    pub steal: Option<StealPolicy>,
    /// With `steal`: how a request tail-control marks dissolves.
    pub dissolve: Dissolve,
    /// When set, requests run on the peer instead: a rayon pool of one thread per core,
    /// each request spawned on it as a parallel iterator over its units (policy `rayon`).
    pub rayon: bool,
    /// When set, requests run sequentially on heterogeneous cores under an AS2F policy
    /// (Haque's dissertation, ch. 5): core i on CPU i, slower types emulated.
    pub hetero: Option<HeteroLive>,
}

/// How a run summary's policy starts when its thresholds were held open loop.
pub const OPEN_LOOP_PREFIX: &str = "open-loop:";

/// A live heterogeneous-core run's cores, policy and emulation.
#[derive(Debug, Clone)]
pub struct HeteroLive {
    /// The cores by type; core i runs on CPU i.
    pub cores: tailor_core::CoreSet,
    /// A threshold policy (eetl, rtl, ee, s2f, reactive).
    pub policy: tailor_core::HeteroPolicy,
    /// The duty-cycle period of the slow-core emulators and the loss per period to give
    /// back; `None` runs without emulation.
    pub emulation: Option<(Duration, Duration)>,
    /// Open loop: thresholds per epoch of this many requests (the last held) instead of
    /// the policy's, to identify the plant live.
    pub open_loop: Option<(usize, Vec<Vec<f64>>)>,
    /// DVFS cores (issue 42) in place of core types: `cores` is then that many speed-1
    /// cores and `policy` is not used.
    pub dvfs: Option<tailor_runtime::s2f::DvfsLive>,
}

impl HeteroLive {
    /// The policy's name for summaries.
    fn name(&self) -> String {
        match &self.dvfs {
            Some(d) => d.policy.name(),
            None => self.policy.name(),
        }
    }

    /// A busy slowest core's power: the energy normalization's unit.
    fn slowest_power(&self) -> f64 {
        match &self.dvfs {
            Some(d) => d.chip.busy_power(0),
            None => self.cores.busy_power(0),
        }
    }
}

/// The executor a live run drives.
enum Engine {
    /// Sequential requests on heterogeneous cores (AS2F).
    S2f(S2fRuntime),
    Threads(Runtime),
    Steal(StealRuntime),
    /// The peer: a rayon pool of one thread per core; each request is spawned on it and
    /// runs its units as a parallel iterator, then its merge.
    Rayon(RayonPeer),
}

/// The rayon peer, with the counts a run summary needs.
struct RayonPeer {
    pool: rayon::ThreadPool,
    in_use: Arc<AtomicUsize>,
    completed: Arc<AtomicUsize>,
}

impl RayonPeer {
    /// The counts the harness reads; the rest stay zero.
    fn metrics(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            load: 0,
            waiting: 0,
            threads_in_use: self.in_use.load(Ordering::Relaxed),
            peak_threads_in_use: 0,
            boosted_threads: 0,
            completed: self.completed.load(Ordering::Relaxed) as u64,
            failed: 0,
            rejected: 0,
            cancelled: 0,
            degree_counts: Vec::new(),
            measured: 0,
            latency_ms: Default::default(),
        }
    }

    fn submit<J: Job>(&self, job: J, arrival: Instant) -> Handle<J::Output> {
        let (handle, completer) = oneshot();
        let (in_use, completed) = (self.in_use.clone(), self.completed.clone());
        self.pool.spawn(move || {
            let start = Instant::now();
            in_use.fetch_add(1, Ordering::Relaxed);
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let parts: Vec<J::Part> = (0..job.units())
                    .into_par_iter()
                    .with_max_len(1)
                    .map(|i| job.run(i))
                    .collect();
                job.merge(parts)
            }));
            in_use.fetch_sub(1, Ordering::Relaxed);
            let finish = Instant::now();
            let timing = Timing::sequential(arrival, start, finish);
            let result = run.map_err(|_| RequestError::Panicked("a rayon task panicked".into()));
            if result.is_ok() {
                completed.fetch_add(1, Ordering::Relaxed);
            }
            completer.complete(result, Some(timing));
        });
        handle
    }
}

impl Engine {
    /// `window`: the requests whose parts the FM and pool runtime keeps (`None`: its
    /// default).
    fn start(cfg: &LiveConfig, window: Option<usize>) -> Result<Engine, StartError> {
        if let Some(h) = &cfg.hetero {
            let total = h.cores.total();
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            if total > cpus {
                return Err(StartError::BadConfig(format!(
                    "--cores {}: {total} cores need as many CPUs; this machine has {cpus}",
                    h.cores.spec()
                )));
            }
            return S2fRuntime::start(S2fConfig {
                cores: h.cores.clone(),
                cpus: (0..total).collect(),
                policy: h.policy.clone(),
                seed: cfg.seed,
                emulation: h.emulation,
                max_active: 100_000,
                open_loop: h.open_loop.clone(),
                dvfs: h.dvfs.clone(),
            })
            .map(Engine::S2f)
            .map_err(|e| StartError::BadConfig(e.to_string()));
        }
        Ok(match &cfg.steal {
            _ if cfg.rayon => Engine::Rayon(RayonPeer {
                pool: rayon::ThreadPoolBuilder::new()
                    .num_threads(cfg.cores)
                    .thread_name(|i| format!("tailor-rayon-{i}"))
                    .build()
                    .map_err(|e| StartError::Thread(e.to_string()))?,
                in_use: Arc::new(AtomicUsize::new(0)),
                completed: Arc::new(AtomicUsize::new(0)),
            }),
            Some(policy) => {
                let mut sc = StealConfig::new(cfg.cores, policy.clone());
                sc.seed = cfg.seed;
                sc.dissolve = cfg.dissolve;
                Engine::Steal(StealRuntime::start(sc)?)
            }
            None => {
                let mut rc = RuntimeConfig::new(cfg.cores, cfg.policy.clone());
                rc.quantum_ms = cfg.quantum_ms;
                rc.workers = cfg.workers;
                rc.guard = cfg.guard;
                if let Some(window) = window {
                    rc.profile_window = window;
                }
                Engine::Threads(Runtime::start(rc)?)
            }
        })
    }

    fn submit_at<J: Job>(&self, job: J, at: Instant, measured: bool) -> Option<Handle<J::Output>> {
        match self {
            Engine::Threads(rt) => rt.submit_at(job, at, measured).ok(),
            Engine::Steal(rt) => rt.submit_job(job, at, measured).ok(),
            Engine::Rayon(peer) => Some(peer.submit(job, at)),
            Engine::S2f(rt) => rt.submit_at(job, at, measured).ok(),
        }
    }

    fn metrics(&self) -> MetricsSnapshot {
        match self {
            Engine::Threads(rt) => rt.metrics(),
            Engine::Steal(rt) => rt.metrics(),
            Engine::Rayon(peer) => peer.metrics(),
            Engine::S2f(rt) => rt.metrics(),
        }
    }

    fn serialized(&self) -> u64 {
        match self {
            Engine::Threads(_) | Engine::Rayon(_) | Engine::S2f(_) => 0,
            Engine::Steal(rt) => rt.serialized(),
        }
    }

    fn boost_mode(&self) -> BoostMode {
        match self {
            Engine::Threads(rt) => rt.boost_mode(),
            Engine::Steal(_) | Engine::Rayon(_) | Engine::S2f(_) => BoostMode::Unavailable,
        }
    }

    /// Drains the engine; AS2F also reports its energy and control epochs.
    fn shutdown(self) -> (ShutdownReport, Option<S2fReport>) {
        match self {
            Engine::Threads(rt) => (rt.shutdown(Shutdown::Drain), None),
            Engine::Steal(rt) => (rt.shutdown(Shutdown::Drain), None),
            Engine::Rayon(peer) => (
                ShutdownReport {
                    metrics: peer.metrics(),
                },
                None,
            ),
            Engine::S2f(rt) => {
                let r = rt.drain();
                (
                    ShutdownReport {
                        metrics: r.metrics.clone(),
                    },
                    Some(r),
                )
            }
        }
    }
}

/// What a live run produces.
#[derive(Debug, Clone)]
pub struct LiveOutput {
    /// The run summary, the same format as the simulator's, with engine `live`.
    pub summary: RunSummary,
    /// One record per request, in arrival order (rejected ones are left out).
    pub records: Vec<RequestRecord>,
    /// Actual minus intended release time of every request, in microseconds.
    pub release_error_us: Vec<f64>,
    /// How boosting set priorities.
    pub boost_mode: BoostMode,
    /// The priority the generator thread got.
    pub generator_priority: GeneratorPriority,
    /// The work's speed over the run, in ms from the arrival origin, where the source
    /// measures it (synthetic work).
    pub speed_trace: Option<tailor_core::SpeedTrace>,
    /// From [`run_live_keeping_units`]: `units[i]` is `records[i]`'s unit and merge times
    /// as the runtime measured them, `None` where it did not (an engine other than the
    /// FM and pool runtime, or a failed request). Empty from [`run_live`].
    pub units: Vec<Option<UnitTimes>>,
}

/// Why a live run could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiveError {
    /// An argument is out of range.
    #[error("{name}: {reason}")]
    BadArgument {
        /// The flag.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The arrivals could not be generated.
    #[error(transparent)]
    Arrivals(#[from] ArrivalError),
    /// The runtime did not start.
    #[error(transparent)]
    Start(#[from] StartError),
}

impl LiveConfig {
    fn request_count(&self) -> usize {
        self.arrivals.fixed_count().unwrap_or(self.requests)
    }

    fn validate(&self, source: &impl RequestSource) -> Result<(), LiveError> {
        let bad = |name, reason: String| Err(LiveError::BadArgument { name, reason });
        if self.cores == 0 {
            return bad("--cores", "must be at least 1".into());
        }
        if self.request_count() == 0 {
            return bad("--requests", "must be at least 1".into());
        }
        if source.len() < self.request_count() {
            return bad(
                "--requests",
                format!(
                    "the run needs {} requests but the workload has {}",
                    self.request_count(),
                    source.len()
                ),
            );
        }
        if let Some(h) = &self.hetero {
            if matches!(h.policy, tailor_core::HeteroPolicy::RcHetero(_))
                && source.job(0).demand_hint_ms().is_none()
            {
                return bad(
                    "--policy",
                    "rc-hetero is clairvoyant: it needs each request's work in advance, and \
                     this workload does not give it (search gives it with --search-profile)"
                        .into(),
                );
            }
        }
        let warmup = self.warmup.unwrap_or(self.request_count() / 20);
        if warmup >= self.request_count() {
            return bad(
                "--warmup",
                format!("{warmup} warm-up requests leave none to measure"),
            );
        }
        if !matches!(self.arrivals, Arrivals::Trace(_)) {
            let rps = self.arrivals.sustained_rps(self.rps);
            if !(rps.is_finite() && rps > 0.0) {
                return bad("--rps", format!("must be positive, found {rps}"));
            }
            let known: Vec<f64> = (0..self.request_count())
                .filter_map(|i| source.work_ms(i))
                .collect();
            let mean_work = known.iter().sum::<f64>() / known.len().max(1) as f64;
            let utilization = rps * mean_work / (1000.0 * self.cores as f64);
            if utilization >= 1.0 {
                return bad(
                    "--rps",
                    format!(
                        "overload: {rps} requests/s of this demand need {:.0}% of the cores even \
                         run sequentially",
                        100.0 * utilization
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Runs the first requests of `source` live at the configured arrivals and measures them.
/// The source should be drawn with the same seed, as [`crate::SyntheticSource::new`] and
/// [`crate::SearchSource::random`] do, so that the simulator sees the same requests.
pub fn run_live<S: RequestSource>(
    cfg: &LiveConfig,
    source: &Arc<S>,
) -> Result<LiveOutput, LiveError> {
    live(cfg, source, false)
}

/// [`run_live`], also keeping every request's unit and merge times where the engine
/// measures them (`LiveOutput::units`; the runtime's served window then holds the whole
/// run): the raw material of `tailor profile from-records`.
pub fn run_live_keeping_units<S: RequestSource>(
    cfg: &LiveConfig,
    source: &Arc<S>,
) -> Result<LiveOutput, LiveError> {
    live(cfg, source, true)
}

fn live<S: RequestSource>(
    cfg: &LiveConfig,
    source: &Arc<S>,
    keep_units: bool,
) -> Result<LiveOutput, LiveError> {
    cfg.validate(source.as_ref())?;
    let count = cfg.request_count();
    let warmup = cfg.warmup.unwrap_or(count / 20);
    let (mut arrival_rng, _) = workload_rngs(cfg.seed);
    let arrivals = cfg.arrivals.generate(cfg.rps, count, &mut arrival_rng)?;
    let works: Vec<f64> = (0..count)
        .map(|i| source.work_ms(i).unwrap_or(0.0))
        .collect();

    let runtime = Arc::new(Engine::start(cfg, keep_units.then_some(count))?);
    let boost_mode = runtime.boost_mode();

    let cpu_before = os::process_cpu_seconds();
    let t0 = Instant::now() + Duration::from_millis(20);
    let meter = HostMeter::start(t0).map_err(|e| StartError::Thread(e.to_string()))?;
    // The generator hands each request, at its intended time, to a submitter thread
    // that enters it into the runtime: the generator never waits on the runtime's locks,
    // and whatever the hand-off costs still counts in the latency, which runs from the
    // intended arrival.
    let (to_submitter, from_generator) = crossbeam_channel::unbounded::<(usize, Instant)>();
    // Under a real-time scheduler the submitter sits above the request threads, as the
    // generator does; under the fair one it competes with them like any thread.
    let realtime = os::current_is_realtime();
    let submitter = {
        let (runtime, source) = (runtime.clone(), source.clone());
        std::thread::Builder::new()
            .name("tailor-submitter".into())
            .spawn(move || {
                if realtime {
                    os::prepare_realtime_thread(os::GENERATOR_PRIORITY);
                }
                let mut handles = Vec::with_capacity(count);
                while let Ok((i, intended)) = from_generator.recv() {
                    let job = source.job(i);
                    handles.push(runtime.submit_at(job, intended, i >= warmup));
                }
                handles
            })
            .expect("the submitter thread starts")
    };
    let generator = {
        let arrivals = arrivals.clone();
        std::thread::Builder::new()
            .name("tailor-generator".into())
            .spawn(move || {
                release_at(t0, &arrivals, |i, intended| {
                    let _ = to_submitter.send((i, intended));
                })
            })
            .expect("the generator thread starts")
    };
    // Sample the threads in use every SAMPLE_EVERY until every request is done.
    let mut samples = 0u64;
    let mut thread_sum = 0u64;
    while !(generator.is_finished() && submitter.is_finished()) {
        thread_sum += runtime.metrics().threads_in_use as u64;
        samples += 1;
        std::thread::sleep(SAMPLE_EVERY);
    }
    let (release_error_us, generator_priority) =
        generator.join().expect("the generator does not panic");
    let handles = submitter.join().expect("the submitter does not panic");
    while handles.iter().flatten().any(|h| !h.is_done()) {
        thread_sum += runtime.metrics().threads_in_use as u64;
        samples += 1;
        std::thread::sleep(SAMPLE_EVERY);
    }
    let end = Instant::now();
    let host = meter.stop();
    let cpu = os::process_cpu_seconds() - cpu_before;
    let rejected = handles.iter().filter(|h| h.is_none()).count();
    let mut records = Vec::with_capacity(count);
    let mut latencies = vec![0.0; count];
    let mut latency = LatencyRecorder::default();
    let mut pairs = Vec::with_capacity(count);
    let top = match &cfg.steal {
        _ if cfg.rayon || cfg.hetero.is_some() => 1,
        Some(_) => cfg.cores,
        None => cfg.policy.max_degree().max(1),
    };
    let mut max_degrees = vec![0usize; top];
    let mut last_finish = t0;
    for (i, handle) in handles.into_iter().enumerate() {
        let Some(handle) = handle else { continue };
        let Ok(done) = handle.wait() else { continue };
        let t = done.timing;
        let ms = |at: Instant| at.saturating_duration_since(t0).as_secs_f64() * 1000.0;
        last_finish = last_finish.max(t.finish);
        latencies[i] = t.latency_ms();
        if i >= warmup {
            latency.record(t.latency_ms());
            pairs.push((works[i], t.mean_degree));
            max_degrees[t.max_degree.clamp(1, top) - 1] += 1;
        }
        records.push(RequestRecord {
            request: i + 1,
            arrival_ms: arrivals[i],
            start_ms: ms(t.start),
            finish_ms: ms(t.finish),
            work_ms: works[i],
            max_degree: t.max_degree,
            mean_degree: t.mean_degree,
            boosted: t.boosted,
        });
    }
    let units = if keep_units {
        match &*runtime {
            Engine::Threads(rt) => units_by_record(&rt.served(), &records, t0, &arrivals),
            _ => vec![None; records.len()],
        }
    } else {
        Vec::new()
    };
    let steal_serialized = runtime.serialized();
    let (report, s2f) = Arc::try_unwrap(runtime)
        .ok()
        .expect("the generator has let go of the runtime")
        .shutdown();
    let wall = last_finish
        .max(end)
        .duration_since(t0)
        .as_secs_f64()
        .max(1e-9);
    let wall_ms = wall * 1000.0;
    let measured = pairs.len().max(1) as f64;
    let degrees = degree_stats(&mut pairs, false);
    let summary = RunSummary {
        engine: "live".into(),
        policy: match &cfg.steal {
            _ if cfg.hetero.is_some() => cfg
                .hetero
                .as_ref()
                .map(|h| match h.open_loop {
                    Some(_) => format!("{}{}", OPEN_LOOP_PREFIX, h.name()),
                    None => h.name(),
                })
                .unwrap_or_default(),
            _ if cfg.rayon => "rayon".to_string(),
            Some(steal) => steal.name().to_string(),
            None => cfg.policy.name(),
        },
        cores: cfg.cores,
        rps: cfg.arrivals.sustained_rps(cfg.rps),
        requests: count,
        completed: report.metrics.completed as usize,
        rejected,
        latency_ms: latency.stats(),
        target_ms: cfg.target_ms,
        miss_ratio: cfg.target_ms.map(|t| latency.miss_ratio(t)),
        cpu_utilization: cpu / (wall * cfg.cores as f64),
        mean_threads: thread_sum as f64 / samples.max(1) as f64,
        mean_degree: degrees.mean,
        warmup,
        mean_degree_shortest_5pct: degrees.shortest_5pct,
        mean_degree_longest_5pct: degrees.longest_5pct,
        degree_distribution: max_degrees.iter().map(|c| *c as f64 / measured).collect(),
        seed: cfg.seed,
        serialized: cfg.steal.as_ref().map(|_| steal_serialized),
        energy: s2f.as_ref().zip(cfg.hetero.as_ref()).map(|(r, h)| {
            let done = (r.metrics.completed + r.metrics.failed).max(1) as f64;
            let busy: f64 = r.busy_ms.iter().sum();
            EnergySummary {
                per_request: r.energy / done,
                normalized: r.energy / done / h.slowest_power(),
                baseline: "1 ms busy on a slowest core".into(),
                dynamic_per_request: r.dynamic_energy / done,
                busy_share: r
                    .busy_ms
                    .iter()
                    .map(|b| if busy > 0.0 { b / busy } else { 0.0 })
                    .collect(),
            }
        }),
        migrations_per_request: s2f
            .as_ref()
            .map(|r| r.migrations as f64 / (r.metrics.completed + r.metrics.failed).max(1) as f64),
        transitions_per_request: s2f
            .as_ref()
            .zip(cfg.hetero.as_ref())
            .filter(|(_, h)| h.dvfs.is_some())
            .map(|(r, _)| {
                r.transitions as f64 / (r.metrics.completed + r.metrics.failed).max(1) as f64
            }),
        epochs: s2f.map(|r| r.epochs).unwrap_or_default(),
        phases: match &cfg.arrivals {
            Arrivals::Phases(phases) => {
                let mut stats = phase_stats(phases, &latencies);
                let mut first = 0;
                for (stat, phase) in stats.iter_mut().zip(phases) {
                    let from = arrivals.get(first).copied().unwrap_or(wall_ms);
                    first += phase.count;
                    let to = arrivals.get(first).copied().unwrap_or(wall_ms);
                    stat.host = Some(host.stats(from, to));
                }
                stats
            }
            _ => Vec::new(),
        },
        host: Some(HostStats {
            work_scale: source.work_scale(),
            ..host.stats(f64::NEG_INFINITY, f64::INFINITY)
        }),
        shards: None,
        replicas: None,
        reissue: None,
        reissue_rate: None,
    };
    Ok(LiveOutput {
        summary,
        records,
        release_error_us,
        boost_mode,
        generator_priority,
        speed_trace: source.speed_trace(t0),
        units,
    })
}

/// Each record's parts among `served`, matched by intended arrival (`t0` plus the
/// record's `arrivals` time, as [`release_at`] computes it); requests that arrived at the
/// same instant take that instant's parts in the order they were served.
fn units_by_record(
    served: &[tailor_runtime::ServedRequest],
    records: &[RequestRecord],
    t0: Instant,
    arrivals: &[f64],
) -> Vec<Option<UnitTimes>> {
    let mut by_arrival: std::collections::HashMap<Instant, std::collections::VecDeque<&_>> =
        std::collections::HashMap::new();
    for s in served {
        by_arrival.entry(s.arrival).or_default().push_back(s);
    }
    records
        .iter()
        .map(|r| {
            let at = t0 + Duration::from_secs_f64(arrivals[r.request - 1] / 1000.0);
            by_arrival
                .get_mut(&at)
                .and_then(|q| q.pop_front())
                .map(|s| UnitTimes {
                    units_ms: s.units_ms.clone(),
                    merge_ms: s.merge_ms,
                })
        })
        .collect()
}

/// Releases request i at `t0` plus `arrivals_ms[i]`, calling `release(i, intended time)`
/// on the calling thread, which it first makes a precise, high-priority generator (see
/// the module's summary). Returns each release's lateness in microseconds and the
/// priority the thread got. `tailor run` and `tailor load` both pace requests with it.
pub fn release_at(
    t0: Instant,
    arrivals_ms: &[f64],
    mut release: impl FnMut(usize, Instant),
) -> (Vec<f64>, GeneratorPriority) {
    let priority = os::prepare_generator_thread();
    let mut errors = Vec::with_capacity(arrivals_ms.len());
    for (i, &at) in arrivals_ms.iter().enumerate() {
        let intended = t0 + Duration::from_secs_f64(at / 1000.0);
        let released = wait_until(intended);
        errors.push(released.duration_since(intended).as_secs_f64() * 1e6);
        release(i, intended);
    }
    (errors, priority)
}

/// Sleeps until `target`. The thread's 1 ns timer slack and real-time priority wake it
/// within microseconds (p99 about 20 us at 1,000 requests/s on this VM). It used to
/// spin its last 150 us instead, which took that CPU from the server under test: at
/// 1,000 requests/s 7% of two cores, and at 75% load on tail-control's Bing work enough
/// to raise steal-first's misses about 1.5x (BENCHMARKS.md, "Load generator precision").
fn wait_until(target: Instant) -> Instant {
    loop {
        let now = Instant::now();
        if now >= target {
            return now;
        }
        std::thread::sleep(target - now);
    }
}
