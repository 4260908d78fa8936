//! The Adaptive baseline's offline table (Jeon et al., "Adaptive Parallelism for Web
//! Search", EuroSys 2013), as the FM paper uses it in §5.
//!
//! Adaptive picks a request's degree once, at admission, from the instantaneous load, and
//! never changes it. The original describes the goal (high degree at light load, lower as
//! load grows, sequential under heavy load, weighing parallel efficiency against the
//! resources a parallel request takes from the others) but its text is not available to
//! us, so this is a reconstruction, stated exactly:
//!
//! - The average speedup is work-weighted: s(d) = sum_r t_r(1) / sum_r t_r(d).
//! - At load q (requests in the system, the new one included), suppose all q requests
//!   run at degree d. They ask for q * d threads of the P that the hardware offers
//!   (`--target-parallelism`); when q * d > P, fair sharing gives each thread P / (q * d)
//!   of a core. The predicted execution time of a mean request is then
//!   mean_r t_r(1) / s(d) * max(1, q * d / P).
//! - The table's degree at load q is the d in 1..=N that minimizes that prediction, the
//!   smaller d on ties.
//!
//! At load 1 this is the degree with the best speedup that fits in P; once q * d exceeds
//! P it prefers the degree with the best efficiency s(d) / d, which is 1 for sub-linear
//! speedups, so the degree falls gracefully with load as Jeon et al. describe.

use tailor_core::{AdaptiveRow, AdaptiveTable, DemandProfile, ADAPTIVE_TABLE_KIND};

use crate::PlanError;

/// The inputs of `tailor plan adaptive` besides the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveParams {
    /// The highest degree a request may get.
    pub max_degree: usize,
    /// P: the hardware parallelism the requests share.
    pub target_parallelism: f64,
    /// The highest load to plan for.
    pub max_load: usize,
}

/// Plans the Adaptive degree table from a profile.
pub fn plan_adaptive(
    profile: &DemandProfile,
    params: &AdaptiveParams,
) -> Result<AdaptiveTable, PlanError> {
    let bad = |name, reason: String| Err(PlanError::BadParameter { name, reason });
    if params.max_degree == 0 {
        return bad("--max-degree", "must be at least 1".into());
    }
    if params.max_degree > profile.max_degree() {
        return Err(PlanError::ProfileTooShallow {
            max_degree: params.max_degree,
            profiled: profile.max_degree(),
        });
    }
    if !(params.target_parallelism.is_finite() && params.target_parallelism > 0.0) {
        return bad(
            "--target-parallelism",
            format!("must be positive, found {}", params.target_parallelism),
        );
    }
    if params.max_load == 0 {
        return bad("--max-load", "must be at least 1".into());
    }
    let requests = profile.requests();
    let total_at = |d: usize| requests.iter().map(|r| r.times_ms[d - 1]).sum::<f64>();
    let t1 = total_at(1);
    let mean_t1 = t1 / requests.len() as f64;
    let speedup: Vec<f64> = (1..=params.max_degree).map(|d| t1 / total_at(d)).collect();
    let p = params.target_parallelism;
    let rows = (1..=params.max_load)
        .map(|q| {
            let predict = |d: usize| {
                let share = (q as f64 * d as f64 / p).max(1.0);
                mean_t1 / speedup[d - 1] * share
            };
            let (degree, predicted_ms) = (1..=params.max_degree).map(|d| (d, predict(d))).fold(
                (1, predict(1)),
                |best, cand| {
                    if cand.1 < best.1 {
                        cand
                    } else {
                        best
                    }
                },
            );
            AdaptiveRow {
                load: q,
                degree,
                predicted_ms,
            }
        })
        .collect();
    Ok(AdaptiveTable {
        kind: ADAPTIVE_TABLE_KIND.to_string(),
        max_degree: params.max_degree,
        target_parallelism: params.target_parallelism,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::RequestProfile;

    fn profile(speedups: &[f64]) -> DemandProfile {
        let requests = (0..4)
            .map(|i| RequestProfile {
                id: format!("q{i}"),
                times_ms: speedups
                    .iter()
                    .map(|s| 100.0 * (i + 1) as f64 / s)
                    .collect(),
            })
            .collect();
        DemandProfile::new(requests).unwrap()
    }

    #[test]
    fn degree_falls_with_load_to_sequential() {
        let p = profile(&[1.0, 1.9, 2.6, 3.2]);
        let t = plan_adaptive(
            &p,
            &AdaptiveParams {
                max_degree: 4,
                target_parallelism: 16.0,
                max_load: 40,
            },
        )
        .unwrap();
        let degrees: Vec<usize> = t.rows.iter().map(|r| r.degree).collect();
        assert_eq!(degrees[0], 4, "light load: the fastest degree that fits");
        assert!(degrees.windows(2).all(|w| w[0] >= w[1]), "{degrees:?}");
        assert_eq!(*degrees.last().unwrap(), 1, "heavy load: sequential");
        // At load 4, degree 4 fits exactly in 16 contexts.
        assert_eq!(degrees[3], 4);
        assert!(degrees[5] < 4);
    }

    #[test]
    fn useless_parallelism_is_never_chosen() {
        // Speedup 1 at every degree: parallelism only costs.
        let p = profile(&[1.0, 1.0, 1.0]);
        let t = plan_adaptive(
            &p,
            &AdaptiveParams {
                max_degree: 3,
                target_parallelism: 8.0,
                max_load: 5,
            },
        )
        .unwrap();
        assert!(t.rows.iter().all(|r| r.degree == 1));
    }

    #[test]
    fn rejects_bad_parameters() {
        let p = profile(&[1.0, 2.0]);
        let params = AdaptiveParams {
            max_degree: 3,
            target_parallelism: 8.0,
            max_load: 5,
        };
        assert!(matches!(
            plan_adaptive(&p, &params),
            Err(PlanError::ProfileTooShallow { .. })
        ));
        for params in [
            AdaptiveParams {
                max_degree: 0,
                ..params.clone()
            },
            AdaptiveParams {
                max_degree: 2,
                target_parallelism: 0.0,
                max_load: 5,
            },
            AdaptiveParams {
                max_degree: 2,
                target_parallelism: 4.0,
                max_load: 0,
            },
        ] {
            assert!(plan_adaptive(&p, &params).is_err());
        }
    }
}
