//! tailor's offline planners: the Few-to-Many interval table, tail-control's thresholds,
//! and the Adaptive and RC baselines.
//!
//! Planners are pure computations from a workload description to a table in the file
//! formats of shared/spec/formats.md; the simulator and the runtime read those tables.

mod adaptive;
mod fm;
mod rc;
mod tail_control;

pub use adaptive::{plan_adaptive, AdaptiveParams};
pub use fm::{
    binned_problem, plan_fm, plan_fm_exhaustive, tail_rank, FmParams, FmProblem, PlanError,
    Prediction, Progress, WaitModel, PARALLELISM_TOLERANCE,
};
pub use rc::{plan_rc, RcCandidate, RcPlan, RC_PLAN_KIND};
pub use tail_control::{plan_tail_control, TailControlError, TailControlParams};
