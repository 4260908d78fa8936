//! The FM planner in Theorem 1's own form (Haque et al., ASPLOS 2015, §3.2, Appendix A):
//! the least resource usage under a bound on the tail, checked against every schedule of
//! the grid, and on a hand-worked profile where it keeps short requests sequential.

mod common;

use common::{profile_of, schedules};
use proptest::prelude::*;
use tailor_core::ThreadModel;
use tailor_plan::{
    plan_fm, plan_fm_exhaustive, FmParams, FmProblem, PlanError, WaitModel, PARALLELISM_TOLERANCE,
};

fn params(n: usize, step: f64, steps: usize, beta: f64, target: f64, max_load: usize) -> FmParams {
    FmParams {
        max_degree: n,
        target_parallelism: target,
        step_ms: step,
        max_interval_ms: step * steps as f64,
        percentile: beta,
        max_load,
        wait_model: WaitModel::Running,
        thread_model: ThreadModel::Held,
    }
}

/// Mean thread-time per request of `schedule` at `load`, from the model's predictions:
/// Eq. 3 is load x thread-time / running time, and under the running-time wait model the
/// running time is the mean less the wait v0.
fn resource(problem: &FmProblem, schedule: &[f64], load: usize) -> (f64, f64, f64) {
    let p = problem.evaluate(schedule, load);
    let r = p.parallelism / load as f64 * (p.mean_ms - schedule[0]);
    (p.tail_ms, r, p.parallelism)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn each_row_uses_the_least_resources_that_meet_the_bound(
        n in 1usize..=3,
        steps in 0usize..=4,
        step in prop_oneof![Just(1.0), Just(2.5), 0.5f64..10.0],
        requests in proptest::collection::vec((0.5f64..60.0, 0.4f64..1.05, 0.4f64..1.05), 1..=8),
        beta in prop_oneof![Just(0.9), Just(1.0), 0.05f64..1.0],
        target in 0.5f64..8.0,
        max_load in 1usize..=6,
        bound_share in 0.2f64..1.2,
    ) {
        let requests: Vec<(f64, Vec<f64>)> = requests
            .iter()
            .map(|(seq, e2, e3)| (*seq, [1.0, 2.0 * e2, 3.0 * e3][..n].to_vec()))
            .collect();
        let longest = requests.iter().map(|r| r.0).fold(0.0, f64::max);
        let bound = bound_share * longest;
        let p = params(n, step, steps, beta, target, max_load);
        let problem = FmProblem::new(&profile_of(&requests), p.clone())
            .unwrap()
            .with_latency_bound(bound);
        let is_bad_parameter = matches!(plan_fm(&problem, None), Err(PlanError::BadParameter { .. }));
        prop_assert!(is_bad_parameter);
        let table = match plan_fm_exhaustive(&problem, None) {
            Ok(t) => t,
            Err(PlanError::NothingFeasible { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        };
        let grid = schedules(n, step, steps);
        for row in &table.rows {
            let q = row.load;
            let feasible: Vec<(f64, f64)> = grid
                .iter()
                .map(|s| resource(&problem, s, q))
                .filter(|(_, _, ap)| *ap <= target * (1.0 + PARALLELISM_TOLERANCE))
                .map(|(t, r, _)| (t, r))
                .collect();
            if feasible.is_empty() {
                continue; // the fallback rows, as without a bound
            }
            let (tail, res, _) = resource(&problem, &row.intervals_ms, q);
            let meeting: Vec<f64> = feasible
                .iter()
                .filter(|(t, _)| *t <= bound * (1.0 + 1e-9))
                .map(|(_, r)| *r)
                .collect();
            if meeting.is_empty() {
                let least = feasible.iter().map(|(t, _)| *t).fold(f64::INFINITY, f64::min);
                prop_assert!(close(tail, least), "load {q}: tail {tail}, least {least}");
            } else {
                let least = meeting.iter().copied().fold(f64::INFINITY, f64::min);
                prop_assert!(tail <= bound * (1.0 + 1e-9), "load {q}: tail {tail} over {bound}");
                prop_assert!(close(res, least), "load {q}: resource {res}, least {least}");
            }
        }
    }
}

/// Ten 1 ms requests and one of 100 ms, speedup 1.8 at degree 2, the maximum as the tail.
/// Fig. 7 starts every request at degree 2 at load 1; under a 70 ms bound, the long one
/// meets it with v1 = (70 x 1.8 - 100) / 0.8 = 32.5 ms, which is the least thread-time,
/// so the short ones finish at degree 1.
#[test]
fn a_bound_keeps_short_requests_sequential_at_load_one() {
    let mut requests = vec![(1.0, vec![1.0, 1.8]); 10];
    requests.push((100.0, vec![1.0, 1.8]));
    let p = params(2, 0.5, 100, 1.0, 2.0, 2);
    let problem = FmProblem::new(&profile_of(&requests), p).unwrap();
    let fig7 = plan_fm_exhaustive(&problem, None).unwrap();
    assert_eq!(fig7.rows[0].intervals_ms, vec![0.0, 0.0]);
    let bounded = plan_fm_exhaustive(&problem.with_latency_bound(70.0), None).unwrap();
    assert_eq!(bounded.rows[0].intervals_ms, vec![0.0, 32.5]);
    assert!((bounded.rows[0].tail_ms - 70.0).abs() < 1e-9);
    assert!(bounded.rows[0].parallelism < fig7.rows[0].parallelism);
}
