//! Helpers shared by the planner's integration tests.

use tailor_core::{DemandProfile, RequestProfile};

/// A profile of requests given as (sequential ms, speedups s(1..=n)): t_d = seq / s(d).
pub(crate) fn profile_of(requests: &[(f64, Vec<f64>)]) -> DemandProfile {
    DemandProfile::new(
        requests
            .iter()
            .enumerate()
            .map(|(i, (seq, s))| RequestProfile {
                id: format!("r{i}"),
                times_ms: s.iter().map(|x| seq / x).collect(),
            })
            .collect(),
    )
    .unwrap()
}
