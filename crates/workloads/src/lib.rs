//! tailor's request kernels. For now: the calibrated synthetic workload.

mod synthetic;

pub use synthetic::{Spinner, SyntheticJob, SyntheticShape};
