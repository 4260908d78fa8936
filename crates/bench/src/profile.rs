//! Measured demand profiles: each request run alone at each degree, several times.
//!
//! This is the offline measurement of the FM paper (§6.1): every request executes in
//! isolation at degrees 1..N, each time averaged over repetitions (the paper used at
//! least 10), and the result is the profile `tailor plan fm` reads.

use std::sync::Arc;

use tailor_core::{workload_rngs, DemandModel, DemandProfile, Policy, RequestProfile};
use tailor_runtime::{Runtime, RuntimeConfig, Shutdown, StartError};
use tailor_workloads::{Spinner, SyntheticJob, SyntheticShape};

/// What to profile, and how.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// Where the requests' work comes from.
    pub demand: DemandModel,
    /// How a synthetic request parallelizes.
    pub shape: SyntheticShape,
    /// How many requests to draw and measure.
    pub requests: usize,
    /// Degrees 1..=`max_degree`.
    pub max_degree: usize,
    /// Runs per request and degree; the profile keeps their mean.
    pub repeat: usize,
    /// The workload's seed (the same requests as a run with this seed).
    pub seed: u64,
}

/// Measures the profile, calling `progress(done, total)` after each request.
pub fn measure_profile(
    cfg: &ProfileConfig,
    spinner: Spinner,
    progress: impl Fn(usize, usize),
) -> Result<DemandProfile, StartError> {
    let spinner = Arc::new(spinner);
    let (_, mut demand_rng) = workload_rngs(cfg.seed);
    let works: Vec<f64> = cfg
        .demand
        .sample_many(cfg.requests, &mut demand_rng)
        .iter()
        .map(|d| d.work_ms)
        .collect();
    // One runtime per degree, each running one request at a time at that degree.
    let runtimes = (1..=cfg.max_degree)
        .map(|d| {
            let mut rc = RuntimeConfig::new(d, Policy::Fix { degree: d });
            rc.workers = Some(1);
            Runtime::start(rc)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let width = cfg.requests.to_string().len();
    let mut requests = Vec::with_capacity(cfg.requests);
    for (i, &work) in works.iter().enumerate() {
        let times_ms = runtimes
            .iter()
            .map(|rt| {
                let total: f64 = (0..cfg.repeat.max(1))
                    .map(|_| {
                        let job = SyntheticJob::new(work, cfg.shape, spinner.clone());
                        let done = rt
                            .submit(job)
                            .expect("an idle runtime admits a request")
                            .wait()
                            .expect("a synthetic request does not fail");
                        let t = done.timing;
                        t.finish.duration_since(t.start).as_secs_f64() * 1000.0
                    })
                    .sum();
                (total / cfg.repeat.max(1) as f64).max(1e-6)
            })
            .collect();
        requests.push(RequestProfile {
            id: format!("q{:0width$}", i + 1),
            times_ms,
        });
        progress(i + 1, cfg.requests);
    }
    for rt in runtimes {
        rt.shutdown(Shutdown::Drain);
    }
    Ok(DemandProfile::new(requests).expect("measured times are positive"))
}
