//! The low-load threshold solver (dissertation Fig. 5.3) against exhaustive search on a grid.

use proptest::prelude::*;
use tailor_plan::{low_load_exhaustive, LowLoad};

/// Table 5.3's slow, medium and fast cores; busy power = dynamic + 4/7 static share
/// (5 slow, 1 medium, 1 fast: peak dynamic 16, static 4 over 7 cores).
const SPEEDS: [f64; 3] = [1.0, 1.44, 2.0];
const POWERS: [f64; 3] = [1.0 + 4.0 / 7.0, 3.0 + 4.0 / 7.0, 8.0 + 4.0 / 7.0];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn three_types_match_exhaustive_search(
        work in prop::collection::vec(1.0f64..150.0, 20..60),
        slack in 0.55f64..1.05,
    ) {
        let xq = {
            let mut w = work.clone();
            w.sort_by(f64::total_cmp);
            w[((0.99 * w.len() as f64 - 1e-9).ceil() as usize).clamp(1, w.len()) - 1]
        };
        // Targets from just above the all-fast tail to above the all-slow one.
        let target = xq * slack;
        let p = LowLoad { work: &work, speeds: &SPEEDS, powers: &POWERS, target_ms: target, percentile: 0.99 };
        let ours = p.solve(5.0).unwrap();
        let grid = low_load_exhaustive(&p, 5.0).unwrap();
        if grid.feasible {
            // Ours searches the same grid for t1 and t2 continuously: never worse.
            prop_assert!(ours.feasible);
            prop_assert!(ours.energy <= grid.energy + 1e-9, "ours {:?} grid {:?}", ours, grid);
            prop_assert!(ours.tail_ms <= target * (1.0 + 1e-9));
            // And close to a 4x finer exhaustive grid.
            let fine = low_load_exhaustive(&p, 1.25).unwrap();
            prop_assert!(ours.energy <= fine.energy * 1.01 + 1e-9, "ours {:?} fine {:?}", ours, fine);
        }
        prop_assert!(ours.thresholds.windows(2).all(|w| w[0] <= w[1]));
    }
}
