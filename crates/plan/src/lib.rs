//! tailor's offline planners: the Few-to-Many interval table, tail-control's thresholds,
//! the Adaptive and RC baselines, EETL's low-load thresholds and controller tuning, and
//! SingleR's reissue delay and probability.
//!
//! Planners are pure computations from a workload description to a table in the file
//! formats of shared/spec/formats.md; the simulator and the runtime read those tables.

mod adaptive;
mod as2f;
mod calibrate;
mod fm;
mod rc;
mod reissue;
mod reissue_adapt;
mod tail_control;
mod text;

pub use adaptive::{plan_adaptive, AdaptiveParams};
pub use as2f::{
    design_interval, identify_first_order, identify_open_loop, low_load_exhaustive, pole_placement,
    ArxFit, As2fError, IntervalDesign, LowLoad, LowLoadSolution,
};
pub use calibrate::{calibrate, CalibrateError, CalibrateInput};
pub use fm::{
    binned_problem, default_max_degree, ladder, plan_fm, plan_fm_exhaustive, planning_step_ms,
    tail_rank, FmDefaults, FmParams, FmProblem, PlanError, Prediction, Progress, WaitModel,
    DEFAULT_PERCENTILE, EFFICIENCY_THRESHOLD, FINEST_STEP_MS, PARALLELISM_TOLERANCE,
};
pub use rc::{plan_rc, RcCandidate, RcPlan, RC_PLAN_KIND};
pub use reissue::{
    plan_reissue, plan_reissue_exhaustive, ReissueError, ReissueParams, ReissuePlan,
};
pub use reissue_adapt::{
    adapt_reissue, next_multiplier, AdaptParams, AdaptStep, AdaptedPlan, Measured, ReissueTrial,
};
pub use tail_control::{plan_tail_control, TailControlError, TailControlParams};
pub use text::{
    write_adaptive_table, write_binned_report, write_fm_table, write_tail_control_table,
};
