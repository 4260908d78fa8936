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

/// Every schedule (v0, v1, ..., v_{n-1}) of the grid 0, step, ..., steps x step, v0 first:
/// the brute-force oracles' search space. (Not every test binary uses it.)
#[allow(dead_code)]
pub(crate) fn schedules(n: usize, step: f64, steps: usize) -> Vec<Vec<f64>> {
    let mut all = vec![vec![]];
    for _ in 0..n {
        all = all
            .into_iter()
            .flat_map(|s: Vec<f64>| {
                (0..=steps).map(move |j| {
                    let mut t = s.clone();
                    t.push(j as f64 * step);
                    t
                })
            })
            .collect();
    }
    all
}
