//! tailor's offline planners: the Few-to-Many interval table and the Adaptive baseline.
//!
//! Planners are pure computations from a workload description to a table in the file
//! formats of shared/spec/formats.md; the simulator and the runtime read those tables.

mod adaptive;
mod fm;

pub use adaptive::{plan_adaptive, AdaptiveParams};
pub use fm::{
    binned_problem, plan_fm, plan_fm_exhaustive, tail_rank, FmParams, FmProblem, PlanError,
    Prediction, Progress, PARALLELISM_TOLERANCE,
};
