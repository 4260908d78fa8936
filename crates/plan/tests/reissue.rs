//! SingleR's planner against the exhaustive oracle on small logs (every candidate
//! target and delay), some with censored first copies, and the plan's own promises:
//! within the budget, its predicted percentile met by its (d, q), never worse than
//! SingleD or no reissue.

use proptest::prelude::*;
use tailor_plan::{plan_reissue, plan_reissue_exhaustive, ReissueParams};

/// The empirical probability of being late at `t` under SingleR(d, q).
fn late(x: &[f64], t: f64, d: f64, q: f64) -> f64 {
    let n = x.len() as f64;
    let tail = x.iter().filter(|&&v| v > t).count() as f64 / n;
    if d > t {
        return tail;
    }
    let cdf = x.iter().filter(|&&v| v <= t - d).count() as f64 / n;
    tail * (1.0 - q * cdf)
}

/// Few distinct values, so ties are common.
fn times(size: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((1u32..12).prop_map(|v| f64::from(v) * 0.5), size)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_plan_matches_the_exhaustive_oracle(
        x in times(1..12),
        censored in prop_oneof![3 => Just(Vec::new()), 1 => times(0..4)],
        budget in prop_oneof![Just(0.0), Just(1.0), 0.0f64..0.6],
        percentile in prop_oneof![Just(50.0), Just(90.0), 10.0f64..99.0],
        shards in 1usize..4,
    ) {
        let params = ReissueParams { budget, percentile, shards };
        let oracle = plan_reissue_exhaustive(&x, &censored, params);
        let plan = plan_reissue(&x, &censored, params);
        match (oracle, plan) {
            (Ok(t), Ok(plan)) => {
                let tolerance = 1e-5 * (1.0 + t);
                prop_assert!(plan.predicted_ms >= t - 1e-9, "{plan:?} below the oracle's {t}");
                prop_assert!(plan.predicted_ms <= t + tolerance, "{plan:?} above the oracle's {t}");
                // Without censoring the distribution is the plain empirical one.
                let allowed = 1.0 - plan.shard_percentile / 100.0;
                if censored.is_empty() {
                    prop_assert!(late(&x, plan.predicted_ms, plan.d_ms, plan.q) <= allowed + 1e-9, "{plan:?}");
                }
                prop_assert!(plan.predicted_rate <= budget + 1e-12);
                if let Some((_, single_d)) = plan.single_d {
                    prop_assert!(plan.predicted_ms <= single_d + tolerance);
                }
                if let Some(none) = plan.no_reissue_ms {
                    prop_assert!(plan.predicted_ms <= none + tolerance);
                }
            }
            (Err(_), Err(_)) => {}
            (oracle, plan) => prop_assert!(false, "oracle {oracle:?}, plan {plan:?}"),
        }
    }
}
