//! What a simulation run is given, and the checks that refuse impossible settings.

use std::sync::Arc;

use tailor_core::{
    ArrivalError, Arrivals, Calibration, DemandModel, Policy, ThreadModel, MAX_REQUESTS,
};

/// The shortest self-scheduling quantum, in ms.
const MIN_QUANTUM_MS: f64 = 1e-3;
/// The highest degree a policy may give a request.
const MAX_DEGREE: usize = 1024;
/// The longest span of arrivals, in ms: past it, f64 times are coarser than 0.2 us.
const MAX_SPAN_MS: f64 = 1e12;

/// A simulation run's settings.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// m, the number of identical cores.
    pub cores: usize,
    /// The policy under test.
    pub policy: Policy,
    /// Where each request's work and speedup come from.
    pub demand: DemandModel,
    /// The arrival process.
    pub arrivals: Arrivals,
    /// The offered load, requests per second.
    pub rps: f64,
    /// How many requests arrive (phases fix their own count).
    pub requests: usize,
    /// The seed for arrivals and demands; policies see the same workload for a seed.
    pub seed: u64,
    /// The self-scheduling quantum in ms (FM paper §4.2: 5 ms).
    pub quantum_ms: f64,
    /// A latency target for the miss ratio.
    pub target_ms: Option<f64>,
    /// Requests excluded from the statistics at the start; `None` means 5% of them.
    pub warmup: Option<usize>,
    /// Worker threads for policies with a pool (all but FM); `None` means one per core.
    pub workers: Option<usize>,
    /// The nice value of boosted threads (ordinary threads run at nice 0).
    pub boost_nice: i32,
    /// Whether to record the active requests and threads over time.
    pub trace: bool,
    /// Whether to keep a record of every request.
    pub records: bool,

    /// The cores' total speed in speed-1 cores, for heterogeneous cores (`None`: the
    /// cores are identical speed-1 cores). Only the overload check reads it.
    pub capacity: Option<f64>,

    /// Whether runs in which no core is ever shared may use the dedicated loop, which
    /// gives the same results faster (off only to check that claim).
    pub fast_path: bool,

    /// How many threads a request at degree d keeps busy when cores are shared: d (the
    /// FM paper's held threads, the default) or s(d) (threads that leave when their
    /// request has no unit left, as in tailor's runtime).
    pub thread_model: ThreadModel,

    /// A machine's calibration: when given, the run follows the runtime thread by
    /// thread at unit granularity and charges what the calibration measured (the
    /// charged model, `threads.rs`); `thread_model` is then not used.
    pub calibration: Option<Arc<Calibration>>,

    /// Under the charged model, FM's core guard (docs/guard.md), as in the runtime; off
    /// gives the FM paper's runtime. The fluid model has no guard.
    pub guard: bool,
}

impl SimConfig {
    /// Settings with the defaults: 5 ms quantum, 5% warm-up, one worker per core,
    /// boosted threads at nice -20, no target, no trace and no per-request records.
    pub fn new(
        cores: usize,
        policy: Policy,
        demand: DemandModel,
        arrivals: Arrivals,
        rps: f64,
        requests: usize,
        seed: u64,
    ) -> Self {
        SimConfig {
            cores,
            policy,
            demand,
            arrivals,
            rps,
            requests,
            seed,
            quantum_ms: 5.0,
            target_ms: None,
            warmup: None,
            workers: None,
            boost_nice: -20,
            trace: false,
            records: false,
            capacity: None,
            fast_path: true,
            thread_model: ThreadModel::Held,
            calibration: None,
            guard: true,
        }
    }

    /// The number of requests the run will have.
    pub fn request_count(&self) -> usize {
        self.arrivals.fixed_count().unwrap_or(self.requests)
    }

    pub(crate) fn warmup_count(&self) -> usize {
        self.warmup.unwrap_or(self.request_count() / 20)
    }

    pub(crate) fn worker_count(&self) -> usize {
        self.workers.unwrap_or(self.cores)
    }

    /// The arrival rate the run sustains: the phases' overall rate, the trace's, or `rps`.
    pub fn sustained_rps(&self) -> f64 {
        self.arrivals.sustained_rps(self.rps)
    }

    /// Refuses settings that are malformed or cannot make sense.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |name, reason: String| Err(SimError::BadArgument { name, reason });
        if self.cores == 0 {
            return bad("--cores", "must be at least 1".into());
        }
        if !(self.rps.is_finite() && self.rps > 0.0) && self.arrivals.fixed_count().is_none() {
            return bad("--rps", format!("must be positive, found {}", self.rps));
        }
        if self.request_count() == 0 {
            return bad("--requests", "must be at least 1".into());
        }
        if !(self.quantum_ms.is_finite() && self.quantum_ms >= MIN_QUANTUM_MS) {
            return bad(
                "--quantum",
                format!(
                    "must be at least {MIN_QUANTUM_MS} ms (1 us), found {}",
                    self.quantum_ms
                ),
            );
        }
        if self.request_count() > MAX_REQUESTS {
            return bad(
                "--requests",
                format!(
                    "{} is more than the {} a run may have",
                    self.request_count(),
                    MAX_REQUESTS
                ),
            );
        }
        if !(-20..=19).contains(&self.boost_nice) {
            return bad(
                "--boost-nice",
                format!(
                    "must be a nice value in -20..=19, found {}",
                    self.boost_nice
                ),
            );
        }
        if let Some(t) = self.target_ms {
            if !(t.is_finite() && t > 0.0) {
                return bad("--target", format!("must be positive, found {t}"));
            }
        }
        if self.warmup_count() >= self.request_count() {
            return bad(
                "--warmup",
                format!(
                    "{} warm-up requests leave none of the {} to measure",
                    self.warmup_count(),
                    self.request_count()
                ),
            );
        }
        if self.workers == Some(0) {
            return bad("--workers", "must be at least 1".into());
        }
        let degree = self.policy.max_degree();
        if degree > MAX_DEGREE {
            return bad(
                "--policy",
                format!("degree {degree} is more than the {MAX_DEGREE} a request may have"),
            );
        }
        if let Some(known) = self.demand.known_degrees() {
            if degree > known {
                return Err(SimError::DegreeBeyondSpeedups {
                    policy: self.policy.name(),
                    degree,
                    known,
                });
            }
        }
        // Sustained overload is refused; a trace replays as recorded, and a burst phase
        // may pass capacity as long as the phases on average do not.
        let sustained_rps = match &self.arrivals {
            Arrivals::Phases(phases) => {
                let count: usize = phases.iter().map(|p| p.count).sum();
                let seconds: f64 = phases.iter().map(|p| p.count as f64 / p.rps).sum();
                Some(count as f64 / seconds)
            }
            Arrivals::Trace(_) => None,
            _ => Some(self.rps),
        };
        if let Some(rps) = sustained_rps {
            // SEQ's capacity: one request per core, or per worker if the pool is smaller.
            let servers = if self.policy.uses_worker_pool() {
                self.cores.min(self.worker_count())
            } else {
                self.cores
            };
            let servers = self.capacity.unwrap_or(servers as f64);
            let utilization = rps * self.demand.mean_work_ms() / (1000.0 * servers);
            if utilization >= 1.0 {
                return Err(SimError::Overload { rps, utilization });
            }
            let span_ms = self.request_count() as f64 * 1000.0 / rps;
            if span_ms > MAX_SPAN_MS {
                return bad(
                    "--rps",
                    format!(
                        "{} requests at {rps} rps span about {span_ms:.3e} ms; simulated times \
                         lose sub-microsecond precision past {MAX_SPAN_MS:.0e} ms: raise \
                         --rps or lower --requests",
                        self.request_count()
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Why a simulation cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// An argument is out of range.
    #[error("{name}: {reason}")]
    BadArgument {
        /// The flag, e.g. `--cores`.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The policy asks for a degree whose speedup the demand does not give.
    #[error(
        "policy {policy} uses degree {degree}, but the speedups are known only up to degree \
         {known}; profile more degrees or lower the policy's degree"
    )]
    DegreeBeyondSpeedups {
        /// The policy's name.
        policy: String,
        /// Its highest degree.
        degree: usize,
        /// The highest degree with a known speedup.
        known: usize,
    },
    /// Even sequential execution would need all the cores or more, sustained.
    #[error(
        "overload: {rps} requests/s of this demand need {:.0}% of the cores even run \
         sequentially; lower --rps or add --cores",
        100.0 * utilization
    )]
    Overload {
        /// The sustained arrival rate.
        rps: f64,
        /// The utilization SEQ would need.
        utilization: f64,
    },
    /// The arrival process could not produce the arrivals.
    #[error(transparent)]
    Arrivals(#[from] ArrivalError),
}
