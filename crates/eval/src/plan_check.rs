//! The check after `tailor plan fm`: the planned table against SEQ under the charged model.
//!
//! The table is simulated beside SEQ, with a warning when FM's p99 is worse
//! (docs/calibration.md).
//!
//! The planner's Eq. 1-5 price a request by its isolated speedup; what a table does on a
//! machine depends on units, merges, hand-offs and the core guard, which only the charged
//! model (`tailor_sim`, `--calibration`) follows. On the 16-core machine of 2026-11-27 a
//! table planned with parallelism priced at zero collapsed live; this check is the cheap
//! warning that would have flagged a table doing worse than SEQ before any live run.

use std::sync::Arc;

use tailor_core::{
    Arrivals, Calibration, Demand, DemandModel, DemandProfile, IntervalTable, Policy, Units,
};
use tailor_sim::{simulate, SimConfig};

use crate::error::EvalError;

/// Loads the check runs at, as fractions of SEQ's capacity.
const LOADS: [f64; 3] = [0.3, 0.45, 0.6];
/// Requests per simulated run (a p99 over 9,500 measured requests).
const REQUESTS: usize = 10_000;

/// One load's outcome: SEQ's and FM's simulated p99 at a fraction of SEQ's capacity.
#[derive(Debug, Clone)]
pub struct CheckRow {
    pub(crate) load: f64,
    pub(crate) rps: f64,
    pub(crate) seq_p99: f64,
    pub(crate) fm_p99: f64,
}

/// Simulates SEQ and FM with `table` on `cores` cores at [`LOADS`] of SEQ's capacity,
/// under `calibration` (or one that charges units and merges only: as many units as the
/// profile has degrees, no hand-off delay, helper cost or slowdown). The quantum is the
/// table's step, at most the runtime's default 5 ms.
pub fn check_fm_table(
    profile: &DemandProfile,
    table: &Arc<IntervalTable>,
    cores: usize,
    calibration: Option<&Calibration>,
) -> Result<Vec<CheckRow>, EvalError> {
    let cal =
        Arc::new(calibration.cloned().unwrap_or_else(|| {
            Calibration::ideal(cores, Units::Count(profile.max_degree().max(1)))
        }));
    let demand = DemandModel::new(Demand::Profile(Arc::new(profile.clone())), None)?;
    let slowdown = cal.slowdown_at(1.0);
    let capacity = cores as f64 * 1000.0 / (demand.mean_work_ms() * slowdown);
    let run = |policy: Policy, rps: f64| -> Result<f64, EvalError> {
        let mut cfg = SimConfig::new(
            cores,
            policy,
            demand.clone(),
            Arrivals::Poisson,
            rps,
            REQUESTS,
            1,
        );
        cfg.quantum_ms = table.step_ms.min(5.0);
        cfg.calibration = Some(cal.clone());
        Ok(simulate(&cfg)?.summary.latency_ms.p99)
    };
    LOADS
        .iter()
        .map(|&load| {
            let rps = load * capacity;
            Ok(CheckRow {
                load,
                rps,
                seq_p99: run(Policy::Seq, rps)?,
                fm_p99: run(
                    Policy::Fm {
                        table: table.clone(),
                        boost: true,
                    },
                    rps,
                )?,
            })
        })
        .collect()
}

/// Prints the check on stderr: one line per load, and a warning where FM is worse;
/// `calibrated` says whether [`check_fm_table`] was given a calibration.
pub fn print_check(rows: &[CheckRow], calibrated: bool) {
    let model = if calibrated {
        "the charged model with the calibration"
    } else {
        "the charged model without a calibration (units and merges only)"
    };
    eprintln!("check: the table under {model}, FM with its core guard against SEQ:");
    for r in rows {
        eprintln!(
            "check:   {:3.0}% of SEQ's capacity ({:.0}/s): FM p99 {:.2} ms, SEQ {:.2} ms ({:.2}x)",
            r.load * 100.0,
            r.rps,
            r.fm_p99,
            r.seq_p99,
            r.fm_p99 / r.seq_p99
        );
    }
    let worse: Vec<String> = rows
        .iter()
        .filter(|r| r.fm_p99 > r.seq_p99)
        .map(|r| format!("{:.0}%", r.load * 100.0))
        .collect();
    if !worse.is_empty() {
        eprintln!(
            "warning: FM's simulated p99 is worse than SEQ's at {} of capacity: this table is \
             unlikely to pay off on this machine (plan with --calibration from `tailor \
             calibrate`, a lower --max-degree, or keep SEQ)",
            worse.join(", ")
        );
    }
}
