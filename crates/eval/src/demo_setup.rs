//! What the demo builds its runs and its model from.
//!
//! FM's and Adaptive's tables, SEQ's live capacity, each query's delivered costs, and the
//! projection's calibration.

use std::sync::Arc;

use tailor_bench::{run_live, SearchSource};
use tailor_core::{Calibration, DemandProfile, Policy, RunSummary, Tables, Units};
use tailor_plan::{
    calibrate, plan_adaptive, plan_fm, AdaptiveParams, CalibrateInput, FmParams, FmProblem,
};
use tailor_sim::seq_mean_latency;
use tailor_workloads::search::PreparedSearch;

use crate::demo::{live_config, truncated, DemoConfig, MODEL_CHECK_MAX_LOAD, STEP_MS};
use crate::error::EvalError;
use crate::spread::Spread;
use crate::verdict::Run;

/// Plans FM (n = 2) and Adaptive from the profile.
pub(crate) fn plan(
    config: &DemoConfig,
    profile: &DemandProfile,
    cores: usize,
) -> Result<Tables, EvalError> {
    let longest = profile
        .requests()
        .iter()
        .map(|r| r.seq_ms())
        .fold(0.0, f64::max);
    // y: long enough to keep the longest query sequential, on the grid.
    let y = ((longest / STEP_MS).ceil() * STEP_MS).max(STEP_MS);
    let params = FmParams {
        max_degree: 2,
        target_parallelism: config.target_parallelism.unwrap_or(cores as f64),
        step_ms: STEP_MS,
        max_interval_ms: y,
        percentile: 0.99,
        max_load: 60,
        wait_model: config.wait_model,
        thread_model: config.thread_model,
    };
    let fm = plan_fm(&FmProblem::new(profile, params)?, None)?;
    let adaptive = plan_adaptive(
        profile,
        &AdaptiveParams {
            max_degree: 2,
            target_parallelism: cores as f64,
            max_load: 60,
        },
    )?;
    Ok(Tables {
        fm: Some(Arc::new(fm)),
        adaptive: Some(Arc::new(adaptive)),
        tail_control: None,
        eetl: None,
    })
}

/// The projection's calibration and a line saying what it is: `--calibration`, or one
/// made from this run's live SEQ runs (`tailor calibrate`'s method), or none (the fluid
/// model) when that fails, with the reason.
pub(crate) fn projection_calibration(
    config: &DemoConfig,
    profile: &DemandProfile,
    seq: &[Vec<Run>],
    segments: usize,
) -> Result<(Option<Arc<Calibration>>, String), EvalError> {
    if let Some(path) = &config.calibration {
        let c = Calibration::read(path)?;
        let note = format!(
            "the charged model, calibrated on another machine ({}): {}",
            path.display(),
            c.describe()
        );
        return Ok((Some(Arc::new(c)), note));
    }
    let runs: Vec<RunSummary> = seq.iter().flatten().map(|r| r.summary.clone()).collect();
    let shared = Arc::new(profile.clone());
    let input = CalibrateInput {
        profile,
        profile_name: "the demo's query profile".into(),
        runs: &runs,
        units: Some(Units::Count(segments)),
    };
    Ok(
        match calibrate(&input, &|c, r| seq_mean_latency(&shared, c, r)) {
            Ok(c) => {
                let note = format!(
                    "the charged model, calibrated from this run's SEQ runs and carried per core \
                     to the projected cores: {}",
                    c.describe()
                );
                (Some(Arc::new(c)), note)
            }
            Err(e) => (
                None,
                format!(
                    "the fluid model ({} threads): no calibration from this run's SEQ runs ({e})",
                    config.thread_model.name()
                ),
            ),
        },
    )
}

/// SEQ's live capacity: a short SEQ run at half the profile's capacity, whose CPU
/// utilization (process CPU time) says how much each query really costs when queries
/// run together (caches, memory bandwidth).
pub(crate) fn probe_capacity(
    config: &DemoConfig,
    prepared: &PreparedSearch,
    profile: &DemandProfile,
    profiled_capacity: f64,
) -> Result<f64, EvalError> {
    let probe_rps = 0.5 * profiled_capacity;
    let probe = live_config(
        config.cores,
        Policy::Seq,
        probe_rps,
        ((probe_rps * 3.0) as usize).max(200),
        config.seed,
    );
    let probe_source = SearchSource::random(
        prepared.index.clone(),
        truncated(prepared, profile.requests().len()),
        None,
        probe.requests,
        config.seed,
    )
    .map_err(EvalError::Search)?;
    let utilization = run_live(&probe, &Arc::new(probe_source))?
        .summary
        .cpu_utilization;
    // At most 95% of the profile's: the probe cannot see a capacity above it, and a run's
    // own draws of queries can be a few percent heavier than the profile's mean, which at
    // 90% load made `tailor run` refuse the run as overload (a quiet machine, 2026-11-27).
    let capacity = profiled_capacity * (0.5 / utilization.clamp(0.05, 1.0)).min(0.95);
    eprintln!(
        "    capacity probe: SEQ at {probe_rps:.0} queries/s used {:.0}% of the cores, so \
         SEQ's live capacity is about {capacity:.1} queries/s (the profile alone says \
         {profiled_capacity:.0}; --capacity repeats it)",
        100.0 * utilization
    );
    Ok(capacity)
}

/// What each query costs in the running service, pooled over the loads: SEQ's service
/// times over the profiled t1 in its runs at loads up to 75% (`Spread`), 16 cost draws per
/// query; every query at its profiled time where nothing was measured.
pub(crate) fn delivered_costs(
    profile: &DemandProfile,
    seq: &[Vec<Run>],
    loads: &[f64],
    seed: u64,
) -> Spread {
    let at_low_loads = seq
        .iter()
        .zip(loads)
        .filter(|(_, &load)| load <= MODEL_CHECK_MAX_LOAD + 1e-9)
        .flat_map(|(runs, _)| runs);
    costs_of(profile, at_low_loads, seed)
        .unwrap_or_else(|| Spread::constant(profile.requests().len(), 1.0))
}

/// What each query costs in SEQ's `runs` (`Spread`, 16 cost draws per query); `None`
/// where they measured nothing. On this VM a query costs about 5% more at 30% load than
/// at 60-75% (docs/validation.md, "Costs by load"), so the check draws each load's costs
/// from SEQ's runs at that load.
pub(crate) fn costs_of<'a>(
    profile: &DemandProfile,
    runs: impl IntoIterator<Item = &'a Run>,
    seed: u64,
) -> Option<Spread> {
    let executions: Vec<(f64, f64)> = runs
        .into_iter()
        .flat_map(|r| r.executions.iter().copied())
        .collect();
    Spread::measure(profile, &executions, COST_DRAWS, seed)
}

/// Cost draws per query in the simulator at this machine's cores.
const COST_DRAWS: usize = 16;
