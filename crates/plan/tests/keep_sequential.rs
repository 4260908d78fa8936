//! The FM planner with a floor on the first interval v1 (`--keep-sequential`, tailor's
//! departure from Haque et al., ASPLOS 2015, §4.1): both searches agree, every row keeps
//! the floor, each row is the least tail among the grid's schedules that keep it, and a
//! hand-worked profile keeps its short requests at degree 1.

mod common;

use common::{profile_of, schedules};
use proptest::prelude::*;
use tailor_core::ThreadModel;
use tailor_plan::{
    binned_problem, plan_fm, plan_fm_exhaustive, FmParams, FmProblem, PlanError, WaitModel,
    PARALLELISM_TOLERANCE,
};

fn params(n: usize, step: f64, steps: usize, target: f64, max_load: usize) -> FmParams {
    FmParams {
        max_degree: n,
        target_parallelism: target,
        step_ms: step,
        max_interval_ms: step * steps as f64,
        percentile: 0.9,
        max_load,
        wait_model: WaitModel::Running,
        thread_model: ThreadModel::Held,
    }
}

/// The share's quantile of the sequential times, rounded up to the grid and capped at y.
fn expected_floor(requests: &[(f64, Vec<f64>)], share: f64, step: f64, steps: usize) -> f64 {
    let mut seq: Vec<f64> = requests.iter().map(|r| r.0).collect();
    seq.sort_by(f64::total_cmp);
    let k = ((share * seq.len() as f64) - 1e-9).ceil().max(1.0) as usize;
    let q = seq[k - 1];
    (0..=steps)
        .map(|j| j as f64 * step)
        .find(|v| *v >= q * (1.0 - 1e-9))
        .unwrap_or(step * steps as f64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rows_keep_the_floor_and_are_the_least_tail_that_does(
        n in 1usize..=3,
        steps in 0usize..=5,
        step in prop_oneof![Just(1.0), Just(2.5), 0.5f64..10.0],
        requests in proptest::collection::vec((0.5f64..40.0, 0.4f64..1.05, 0.4f64..1.05), 1..=8),
        target in 0.5f64..6.0,
        max_load in 1usize..=5,
        share in 0.01f64..=1.0,
        wait_model in prop_oneof![Just(WaitModel::Paper), Just(WaitModel::Running)],
        thread_model in prop_oneof![Just(ThreadModel::Held), Just(ThreadModel::Busy)],
    ) {
        let requests: Vec<(f64, Vec<f64>)> = requests
            .iter()
            .map(|(seq, e2, e3)| (*seq, [1.0, 2.0 * e2, 3.0 * e3][..n].to_vec()))
            .collect();
        let mut p = params(n, step, steps, target, max_load);
        (p.wait_model, p.thread_model) = (wait_model, thread_model);
        let problem = FmProblem::new(&profile_of(&requests), p)
            .unwrap()
            .with_keep_sequential(share)
            .unwrap();
        let floor = problem.min_v1_ms();
        let want = expected_floor(&requests, share, step, steps);
        prop_assert!((floor - want).abs() <= 1e-9 * want.max(1.0), "floor {floor}, expected {want}");
        let (fast, reference) = match (plan_fm(&problem, None), plan_fm_exhaustive(&problem, None)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(PlanError::NothingFeasible { .. }), Err(PlanError::NothingFeasible { .. })) => {
                return Ok(());
            }
            (a, b) => {
                return Err(TestCaseError::fail(format!("the searches disagree: {a:?} against {b:?}")));
            }
        };
        for (a, b) in fast.rows.iter().zip(&reference.rows) {
            prop_assert_eq!(&a.intervals_ms, &b.intervals_ms, "load {}", a.load);
            prop_assert_eq!(a.admit_on_exit, b.admit_on_exit);
        }
        let grid = schedules(n, step, steps);
        for row in &fast.rows {
            if n >= 2 {
                prop_assert!(row.intervals_ms[1] >= floor * (1.0 - 1e-9),
                    "load {}: v1 {} below the floor {floor}", row.load, row.intervals_ms[1]);
            }
            let least = grid
                .iter()
                .filter(|s| n < 2 || s[1] >= floor * (1.0 - 1e-9))
                .map(|s| problem.evaluate(s, row.load))
                .filter(|e| e.parallelism <= target * (1.0 + PARALLELISM_TOLERANCE))
                .map(|e| e.tail_ms)
                .fold(f64::INFINITY, f64::min);
            if least.is_finite() {
                let tail = problem.evaluate(&row.intervals_ms, row.load).tail_ms;
                prop_assert!((tail - least).abs() <= 1e-6 * least.max(1.0),
                    "load {}: tail {tail}, least that keeps the floor {least}", row.load);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// With bins, the floor planned on the requests carries over to the binned problem:
    /// both searches agree on it and every row keeps it.
    #[test]
    fn bins_keep_the_floor_of_the_requests(
        requests in proptest::collection::vec((0.5f64..40.0, 0.4f64..1.05), 2..=12),
        bins in 1usize..=4,
        steps in 1usize..=6,
        share in 0.05f64..=1.0,
    ) {
        let requests: Vec<(f64, Vec<f64>)> =
            requests.iter().map(|(seq, e2)| (*seq, vec![1.0, 2.0 * e2])).collect();
        let longest = requests.iter().map(|r| r.0).fold(0.0, f64::max);
        let step = longest / steps as f64;
        let p = params(2, step, steps, 3.0, 3);
        let profile = profile_of(&requests);
        let exact = FmProblem::new(&profile, p.clone()).unwrap().with_keep_sequential(share).unwrap();
        let binned = binned_problem(&profile, p, bins).unwrap().with_min_v1_ms(exact.min_v1_ms());
        prop_assert_eq!(binned.min_v1_ms(), exact.min_v1_ms());
        let (fast, reference) = (plan_fm(&binned, None).unwrap(), plan_fm_exhaustive(&binned, None).unwrap());
        for (a, b) in fast.rows.iter().zip(&reference.rows) {
            prop_assert_eq!(&a.intervals_ms, &b.intervals_ms, "load {}", a.load);
            prop_assert!(a.intervals_ms[1] >= exact.min_v1_ms() * (1.0 - 1e-9), "load {}", a.load);
        }
    }
}

/// Ten requests of 1 to 10 ms and one of 100 ms, speedup 1.8 at degree 2, the maximum as
/// the tail. Fig. 7 starts every request at degree 2 at load 1; keeping the shortest half
/// sequential puts v1 at the sixth shortest time, 6 ms, so requests up to 6 ms finish at
/// degree 1 and the long one pays 6 - 6 / 1.8 ms of tail for it.
#[test]
fn the_shortest_half_finishes_at_degree_one() {
    let mut requests: Vec<(f64, Vec<f64>)> = (1..=10).map(|t| (t as f64, vec![1.0, 1.8])).collect();
    requests.push((100.0, vec![1.0, 1.8]));
    let mut p = params(2, 0.5, 200, 2.0, 1);
    p.percentile = 1.0;
    let problem = FmProblem::new(&profile_of(&requests), p).unwrap();
    let fig7 = plan_fm(&problem, None).unwrap();
    assert_eq!(fig7.rows[0].intervals_ms, vec![0.0, 0.0]);
    let kept = problem.with_keep_sequential(0.5).unwrap();
    assert_eq!(kept.min_v1_ms(), 6.0);
    let table = plan_fm(&kept, None).unwrap();
    assert_eq!(table.rows[0].intervals_ms, vec![0.0, 6.0]);
    let extra = table.rows[0].tail_ms - fig7.rows[0].tail_ms;
    assert!(
        (extra - (6.0 - 6.0 / 1.8)).abs() < 1e-9,
        "extra tail {extra}"
    );
}

/// A floor past the grid's end, y, is capped there: requests longer than y still get a
/// helper, and no load is left without a schedule.
#[test]
fn a_floor_past_the_grid_is_capped_at_y() {
    let requests = vec![(50.0, vec![1.0, 1.9]), (80.0, vec![1.0, 1.9])];
    let problem = FmProblem::new(&profile_of(&requests), params(2, 1.0, 20, 2.0, 2))
        .unwrap()
        .with_keep_sequential(1.0)
        .unwrap();
    assert_eq!(problem.min_v1_ms(), 20.0);
    let table = plan_fm(&problem, None).unwrap();
    assert!(table.rows.iter().all(|r| r.intervals_ms[1] == 20.0));
}

#[test]
fn a_share_outside_zero_to_one_is_refused_by_name() {
    let requests = vec![(5.0, vec![1.0, 1.5])];
    for share in [0.0, -0.5, 1.5, f64::NAN] {
        let problem = FmProblem::new(&profile_of(&requests), params(2, 1.0, 5, 2.0, 1)).unwrap();
        match problem.with_keep_sequential(share) {
            Err(PlanError::BadParameter { name, .. }) => assert_eq!(name, "--keep-sequential"),
            other => panic!("share {share}: expected a refusal, got {other:?}"),
        }
    }
}
