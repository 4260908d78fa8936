//! The Request Clairvoyant baseline's planner (FM paper §5 and §6.2): the work threshold
//! and degree that minimize p99 at one load.
//!
//! RC knows each request's work on arrival: requests above the threshold run at the
//! degree, the others sequentially. The FM paper finds the threshold "experimentally"
//! (225 ms for Lucene at degree 4). Here the experiment is a search: the caller supplies
//! `evaluate(threshold, degree) -> p99`, usually a simulation at the load in question
//! with one seed for every candidate (common random numbers), and the planner tries
//! thresholds at quantiles of the work (plus 0, which is FIX-N, and above the largest
//! work, which is SEQ) for every degree, then refines between the neighbours of the best.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The `kind` of an RC plan file.
pub const RC_PLAN_KIND: &str = "rc-threshold";

/// The quantiles of the work tried first.
const COARSE: [f64; 16] = [
    0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 0.999,
];

/// Points tried between the best coarse threshold and each neighbour.
const REFINE: usize = 8;

/// One evaluated candidate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RcCandidate {
    /// Work threshold in ms.
    pub threshold_ms: f64,
    /// Degree of requests above it.
    pub degree: usize,
    /// The p99 the evaluation gave.
    pub p99_ms: f64,
}

/// The chosen threshold and degree, with every candidate tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RcPlan {
    /// Always [`RC_PLAN_KIND`].
    pub kind: String,
    /// The chosen work threshold in ms.
    pub threshold_ms: f64,
    /// The chosen degree.
    pub degree: usize,
    /// The p99 at the chosen setting.
    pub p99_ms: f64,
    /// The policy string for `tailor simulate --policy`.
    pub policy: String,
    /// Everything tried, in order.
    pub candidates: Vec<RcCandidate>,
}

/// Searches thresholds and degrees 2..=`max_degree` for the least p99. `works` are the
/// request works the thresholds are drawn from (any order). Ties go to the smaller
/// degree, then the larger threshold (fewer requests parallelized).
pub fn plan_rc(
    works: &[f64],
    max_degree: usize,
    evaluate: impl Fn(f64, usize) -> f64 + Sync,
) -> Option<RcPlan> {
    if works.is_empty() || max_degree < 2 {
        return None;
    }
    let mut sorted = works.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Thresholds are kept to 0.01 ms, which reads better in a policy string.
    let round = |t: f64| (t * 100.0).round() / 100.0;
    let quantile =
        |q: f64| round(sorted[((q * sorted.len() as f64) as usize).min(sorted.len() - 1)]);
    let mut coarse: Vec<f64> = vec![0.0];
    coarse.extend(COARSE.iter().map(|q| quantile(*q)));
    coarse.push(round(sorted[sorted.len() - 1]) + 0.01);
    coarse.dedup();

    // Evaluates thresholds at one degree, in parallel.
    let try_all = |thresholds: &[f64], degree: usize| -> Vec<RcCandidate> {
        thresholds
            .par_iter()
            .map(|&t| RcCandidate {
                threshold_ms: t,
                degree,
                p99_ms: evaluate(t, degree),
            })
            .collect()
    };
    let mut candidates = Vec::new();
    for degree in 2..=max_degree {
        let results = try_all(&coarse, degree);
        let best = best_index(&results);
        let mut refine = Vec::new();
        for neighbour in [best.checked_sub(1), Some(best + 1)].into_iter().flatten() {
            if let Some(&other) = coarse.get(neighbour) {
                let (lo, hi) = (coarse[best], other);
                for i in 1..=REFINE {
                    refine.push(round(lo + (hi - lo) * i as f64 / (REFINE + 1) as f64));
                }
            }
        }
        candidates.extend(results);
        candidates.extend(try_all(&refine, degree));
    }
    let chosen = candidates[best_index(&candidates)];
    Some(RcPlan {
        kind: RC_PLAN_KIND.to_string(),
        threshold_ms: chosen.threshold_ms,
        degree: chosen.degree,
        p99_ms: chosen.p99_ms,
        policy: format!("rc:{}:{}", chosen.threshold_ms, chosen.degree),
        candidates,
    })
}

/// The least p99; ties to the smaller degree, then the larger threshold.
fn best_index(c: &[RcCandidate]) -> usize {
    (0..c.len())
        .min_by(|&a, &b| {
            c[a].p99_ms
                .total_cmp(&c[b].p99_ms)
                .then(c[a].degree.cmp(&c[b].degree))
                .then(c[b].threshold_ms.total_cmp(&c[a].threshold_ms))
        })
        .expect("non-empty")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_a_known_function() {
        // p99 is least at threshold 42 and degree 3.
        let works: Vec<f64> = (1..=100).map(f64::from).collect();
        let plan = plan_rc(&works, 4, |t, d| {
            (t - 42.0).abs() + (d as f64 - 3.0).abs() * 10.0
        })
        .unwrap();
        assert_eq!(plan.degree, 3);
        assert!(
            (plan.threshold_ms - 42.0).abs() < 2.0,
            "{}",
            plan.threshold_ms
        );
        assert_eq!(plan.policy, format!("rc:{}:3", plan.threshold_ms));
        // Candidates include FIX-N (0) and SEQ (the largest work) for each degree.
        assert!(plan.candidates.iter().any(|c| c.threshold_ms == 0.0));
        assert!(plan.candidates.iter().any(|c| c.threshold_ms > 100.0));
    }

    #[test]
    fn ties_prefer_fewer_parallel_requests() {
        let works = [1.0, 2.0, 3.0];
        let plan = plan_rc(&works, 3, |_, _| 7.0).unwrap();
        assert_eq!(plan.degree, 2);
        assert!(plan.threshold_ms > 3.0, "above every work: SEQ");
    }

    #[test]
    fn needs_works_and_a_parallel_degree() {
        assert!(plan_rc(&[], 4, |_, _| 0.0).is_none());
        assert!(plan_rc(&[1.0], 1, |_, _| 0.0).is_none());
    }
}
