//! SEQ under the charged model as a live run was made: the simulation `tailor calibrate`'s fit calls.

use std::sync::Arc;

use tailor_core::{Arrivals, Calibration, Demand, DemandModel, DemandProfile, Policy, RunSummary};

use crate::{simulate, SimConfig};

/// The charged model's mean latency for SEQ under `cal` as `run` was made (its rate,
/// requests, warm-up and seed), on `profile`: what `tailor_plan::calibrate` matches to the
/// live run's measured mean. A rate the simulator refuses as overload cannot be matched
/// and reports as infinitely slow.
pub fn seq_mean_latency(profile: &Arc<DemandProfile>, cal: &Calibration, run: &RunSummary) -> f64 {
    let demand = DemandModel::new(Demand::Profile(profile.clone()), None)
        .expect("a profile demand is valid");
    let mut cfg = SimConfig::new(
        cal.cores,
        Policy::Seq,
        demand,
        Arrivals::Poisson,
        run.rps,
        run.requests.max(2),
        run.seed,
    );
    cfg.warmup = Some(run.warmup.min(run.requests.max(2) - 1));
    cfg.calibration = Some(Arc::new(cal.clone()));
    match simulate(&cfg) {
        Ok(out) => out.summary.latency_ms.mean,
        // A rate the simulator refuses as overload cannot be matched: report it as slow.
        Err(_) => f64::INFINITY,
    }
}
