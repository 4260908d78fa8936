//! What a simulation run is given, and the checks that refuse impossible settings.

use tailor_core::{ArrivalError, Arrivals, DemandModel, Policy};

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
    /// Whether runs in which no core is ever shared may use the dedicated loop, which
    /// gives the same results faster (off only to check that claim).
    pub fast_path: bool,
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
            fast_path: true,
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
        if !(self.quantum_ms.is_finite() && self.quantum_ms > 0.0) {
            return bad(
                "--quantum-ms",
                format!("must be positive, found {}", self.quantum_ms),
            );
        }
        if let Some(t) = self.target_ms {
            if !(t.is_finite() && t > 0.0) {
                return bad("--target-ms", format!("must be positive, found {t}"));
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
            let utilization = rps * self.demand.mean_work_ms() / (1000.0 * self.cores as f64);
            if utilization >= 1.0 {
                return Err(SimError::Overload { rps, utilization });
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
