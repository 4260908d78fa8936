//! Integration tests of the planners, by feature: the FM planner against an exhaustive
//! oracle, the binned approximation, the paper's Figure 5 example, and input errors.

mod common;

use common::profile_of;
use proptest::prelude::*;
use tailor_core::{DemandProfile, IntervalTable, ThreadModel};
use tailor_plan::{
    binned_problem, plan_fm, plan_fm_exhaustive, FmParams, FmProblem, PlanError, WaitModel,
    PARALLELISM_TOLERANCE,
};

// ---------------------------------------------------------------------------------------
// The oracle: Eq. 1-5 and Fig. 7 of the FM paper as a plain nested loop, written apart
// from the planner so that a shared mistake is unlikely.
// ---------------------------------------------------------------------------------------

/// Eq. 1 and Eq. 2 by their cases: (time_r(S), ap_r(S)). Eq. 2 charges degree i for i
/// threads; with `busy`, for the s(i) threads a request whose threads leave when out of
/// units keeps busy (at most i).
fn oracle_request(seq: f64, s: &[f64], v: &[f64], busy: bool) -> (f64, f64) {
    let n = s.len();
    let th = |i: usize| {
        if busy {
            s[i - 1].min(i as f64)
        } else {
            i as f64
        }
    };
    let mut boundary = 0.0; // sum_{i<=k} s(i) v_i
    for k in 1..n {
        let before = boundary;
        boundary += s[k - 1] * v[k];
        if seq <= boundary {
            let last = (seq - before) / s[k - 1];
            let time: f64 = v[..k].iter().sum::<f64>() + last;
            let threads: f64 = (1..k).map(|i| th(i) * v[i]).sum::<f64>() + th(k) * last;
            return (time, threads / time);
        }
    }
    let last = (seq - boundary) / s[n - 1];
    let time: f64 = v.iter().sum::<f64>() + last;
    let threads: f64 = (1..n).map(|i| th(i) * v[i]).sum::<f64>() + th(n) * last;
    (time, threads / time)
}

/// The smallest k with k >= beta * len (Eq. 5's ceil), robust to rounding in the product.
fn oracle_rank(beta: f64, len: usize) -> usize {
    (1..=len)
        .find(|k| *k as f64 >= beta * len as f64 - 1e-9)
        .unwrap_or(len)
}

struct OracleRow {
    tail: f64,
    mean: f64,
}

/// Fig. 7: for each load, every schedule on the grid; the least tail, then the least mean.
fn oracle(requests: &[(f64, Vec<f64>)], p: &FmParams) -> Vec<Option<OracleRow>> {
    let every: Vec<usize> = (1..=p.max_degree).collect();
    oracle_on_ladder(requests, p, &every)
}

/// Fig. 7 over the schedules of every degree that spend zero ms at the degrees the
/// `ladder` skips.
fn oracle_on_ladder(
    requests: &[(f64, Vec<f64>)],
    p: &FmParams,
    ladder: &[usize],
) -> Vec<Option<OracleRow>> {
    let n = p.max_degree;
    let skipped = |idx: &[usize]| (1..n).any(|d| !ladder.contains(&d) && idx[d] != 0);
    let g = (p.max_interval_ms / p.step_ms).round() as usize + 1;
    let k = oracle_rank(p.percentile, requests.len());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    let mut rows = Vec::new();
    for q in 1..=p.max_load {
        let mut best: Option<OracleRow> = None;
        let mut idx = vec![0usize; n];
        loop {
            let v: Vec<f64> = idx.iter().map(|j| *j as f64 * p.step_ms).collect();
            if skipped(&idx) {
                if advance(&mut idx, g) {
                    break;
                }
                continue;
            }
            let evals: Vec<(f64, f64)> = requests
                .iter()
                .map(|(seq, s)| oracle_request(*seq, s, &v, p.thread_model == ThreadModel::Busy))
                .collect();
            let sum_time: f64 = evals.iter().map(|e| e.0).sum();
            // Eq. 3; tailor's running-time model leaves every request's wait out.
            let denominator = match p.wait_model {
                WaitModel::Paper => sum_time,
                WaitModel::Running => sum_time - v[0] * requests.len() as f64,
            };
            let ap = evals.iter().map(|e| e.0 * e.1).sum::<f64>() / denominator * q as f64;
            if ap <= p.target_parallelism * (1.0 + PARALLELISM_TOLERANCE) {
                let mut times: Vec<f64> = evals.iter().map(|e| e.0).collect();
                times.sort_by(f64::total_cmp);
                let tail = times[k - 1];
                let mean = sum_time / requests.len() as f64;
                let better = match &best {
                    None => true,
                    Some(b) => {
                        (tail < b.tail && !close(tail, b.tail))
                            || (close(tail, b.tail) && mean < b.mean && !close(mean, b.mean))
                    }
                };
                if better {
                    best = Some(OracleRow { tail, mean });
                }
            }
            if advance(&mut idx, g) {
                break;
            }
        }
        rows.push(best);
    }
    rows
}

/// Odometer over (v0, ..., v_{n-1}) with `g` values each; true once it wraps to zero.
fn advance(idx: &mut [usize], g: usize) -> bool {
    let mut d = idx.len();
    while d > 0 {
        d -= 1;
        idx[d] += 1;
        if idx[d] < g {
            break;
        }
        idx[d] = 0;
    }
    idx.iter().all(|j| *j == 0)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Checks a planned table against the oracle at every load.
fn check_against_oracle(requests: &[(f64, Vec<f64>)], params: &FmParams, table: &IntervalTable) {
    let expected = oracle(requests, params);
    for (row, want) in table.rows.iter().zip(&expected) {
        match want {
            Some(want) => {
                assert!(
                    close(row.tail_ms, want.tail) && close(row.mean_ms, want.mean),
                    "load {}: planner tail {} mean {} ({:?}), oracle tail {} mean {}",
                    row.load,
                    row.tail_ms,
                    row.mean_ms,
                    row.intervals_ms,
                    want.tail,
                    want.mean
                );
                // The schedule itself achieves what the row claims, within the target.
                let evals: Vec<(f64, f64)> = requests
                    .iter()
                    .map(|(seq, s)| {
                        oracle_request(
                            *seq,
                            s,
                            &row.intervals_ms,
                            params.thread_model == ThreadModel::Busy,
                        )
                    })
                    .collect();
                let mut sum: f64 = evals.iter().map(|e| e.0).sum();
                if params.wait_model == WaitModel::Running {
                    // A wait buys no parallelism, so a feasible row never waits.
                    assert_eq!(row.intervals_ms[0], 0.0, "load {}", row.load);
                    sum -= row.intervals_ms[0] * requests.len() as f64;
                }
                let ap = evals.iter().map(|e| e.0 * e.1).sum::<f64>() / sum * row.load as f64;
                assert!(
                    ap <= params.target_parallelism * (1.0 + 1e-6),
                    "load {}",
                    row.load
                );
                assert!(close(ap, row.parallelism));
            }
            None => {
                assert!(row.parallelism > params.target_parallelism);
                match params.wait_model {
                    WaitModel::Paper => {
                        assert!(row.admit_on_exit, "load {} is infeasible", row.load)
                    }
                    WaitModel::Running => {
                        // The most sequential schedule; an exit is awaited only where
                        // even sequential requests would outnumber the target.
                        let y = params.max_interval_ms;
                        let above = row.load as f64 > params.target_parallelism * (1.0 + 1e-9);
                        assert_eq!(row.admit_on_exit, above, "load {}", row.load);
                        assert!(close(row.intervals_ms[0], if above { y } else { 0.0 }));
                        assert!(row.intervals_ms[1..].iter().all(|v| close(*v, y)));
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Optimality against the oracle
// ---------------------------------------------------------------------------------------

/// Random small instances: 1 to 10 requests, n from 1 to 4, 1 to 5 grid points, speedups
/// anywhere from 0.4 (slower in parallel) to a little above linear.
fn instance() -> impl Strategy<Value = (Vec<(f64, Vec<f64>)>, FmParams)> {
    (1usize..=4, 0usize..=4, 1usize..=10).prop_flat_map(|(n, steps, len)| {
        let request = (0.5f64..80.0, proptest::collection::vec(0.4f64..1.1, n - 1)).prop_map(
            move |(seq, eff)| {
                let mut s = vec![1.0];
                s.extend(eff.iter().enumerate().map(|(i, e)| e * (i + 2) as f64));
                (seq, s)
            },
        );
        (
            proptest::collection::vec(request, len),
            prop_oneof![Just(1.0), Just(2.5), Just(5.0), Just(10.0), 0.5f64..20.0],
            prop_oneof![Just(0.5), Just(0.9), Just(0.99), Just(1.0), 0.01f64..1.0],
            0.5f64..12.0,
            1usize..=8,
            prop_oneof![Just(WaitModel::Paper), Just(WaitModel::Running)],
            prop_oneof![Just(ThreadModel::Held), Just(ThreadModel::Busy)],
        )
            .prop_map(
                move |(requests, step, beta, target, max_load, wait_model, thread_model)| {
                    let params = FmParams {
                        max_degree: n,
                        target_parallelism: target,
                        step_ms: step,
                        max_interval_ms: step * steps as f64,
                        percentile: beta,
                        max_load,
                        wait_model,
                        thread_model,
                    };
                    (requests, params)
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fast_planner_matches_the_exhaustive_oracle((requests, params) in instance()) {
        let problem = FmProblem::new(&profile_of(&requests), params.clone()).unwrap();
        match plan_fm(&problem, None) {
            Ok(table) => {
                check_against_oracle(&requests, &params, &table);
                // The library's Fig. 7 planner picks the very same schedules.
                let reference = plan_fm_exhaustive(&problem, None).unwrap();
                for (a, b) in table.rows.iter().zip(&reference.rows) {
                    prop_assert_eq!(&a.intervals_ms, &b.intervals_ms, "load {}", a.load);
                    prop_assert_eq!(a.admit_on_exit, b.admit_on_exit);
                }
            }
            Err(PlanError::NothingFeasible { .. }) => {
                prop_assert!(oracle(&requests, &params)[0].is_none());
                prop_assert!(plan_fm_exhaustive(&problem, None).is_err());
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A ladder that skips degrees: the search over its phases finds the best schedule
    /// among those that spend no time at the skipped degrees, and the table lists every
    /// degree with zeros there.
    #[test]
    fn a_ladder_search_matches_the_oracle_restricted_to_it(
        (requests, params) in instance().prop_filter("n of 3 or more", |(_, p)| p.max_degree >= 3),
        keep in proptest::collection::vec(proptest::bool::ANY, 2),
    ) {
        let n = params.max_degree;
        let mut ladder = vec![1];
        ladder.extend((2..n).filter(|d| keep[(d - 2) % keep.len()]));
        ladder.push(n);
        let problem = FmProblem::with_degrees(&profile_of(&requests), params.clone(), &ladder)
            .unwrap();
        let expected = oracle_on_ladder(&requests, &params, &ladder);
        match plan_fm(&problem, None) {
            Ok(table) => {
                prop_assert_eq!(table.max_degree, n);
                for (row, want) in table.rows.iter().zip(&expected) {
                    prop_assert_eq!(row.intervals_ms.len(), n);
                    for d in (1..n).filter(|d| !ladder.contains(d)) {
                        prop_assert_eq!(row.intervals_ms[d], 0.0, "load {}", row.load);
                    }
                    if let Some(want) = want {
                        prop_assert!(
                            close(row.tail_ms, want.tail) && close(row.mean_ms, want.mean),
                            "load {}: tail {} mean {}, oracle {} {}",
                            row.load, row.tail_ms, row.mean_ms, want.tail, want.mean
                        );
                    }
                }
                let reference = plan_fm_exhaustive(&problem, None).unwrap();
                for (a, b) in table.rows.iter().zip(&reference.rows) {
                    prop_assert_eq!(&a.intervals_ms, &b.intervals_ms, "load {}", a.load);
                }
            }
            Err(PlanError::NothingFeasible { .. }) => prop_assert!(expected[0].is_none()),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

#[test]
fn a_ladder_must_rise_from_one_to_the_maximum_degree() {
    let profile = profile_of(&[(10.0, vec![1.0, 2.0, 2.5, 3.0])]);
    let params = FmParams {
        max_degree: 4,
        target_parallelism: 4.0,
        step_ms: 5.0,
        max_interval_ms: 20.0,
        percentile: 0.99,
        max_load: 4,
        wait_model: WaitModel::Running,
        thread_model: ThreadModel::Held,
    };
    for bad in [
        &[2, 4][..],
        &[1, 3][..],
        &[1, 3, 3, 4][..],
        &[1, 4, 2][..],
        &[][..],
    ] {
        let err = FmProblem::with_degrees(&profile, params.clone(), bad).unwrap_err();
        assert!(err.to_string().contains("--degrees"), "{bad:?}: {err}");
    }
    assert!(FmProblem::with_degrees(&profile, params, &[1, 2, 4]).is_ok());
}

#[test]
fn larger_instances_match_the_oracle() {
    // A few instances with more requests and grid points than the property test reaches.
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for case in 0..6 {
        let n = 2 + case % 3;
        let requests: Vec<(f64, Vec<f64>)> = (0..60)
            .map(|_| {
                let seq = (rng.random::<f64>() * 4.0).exp() * 3.0;
                let mut s = vec![1.0];
                for d in 2..=n {
                    s.push(d as f64 * rng.random_range(0.3..1.0));
                }
                (seq, s)
            })
            .collect();
        let params = FmParams {
            max_degree: n,
            target_parallelism: 4.0 + case as f64,
            step_ms: 10.0,
            max_interval_ms: if n == 4 { 50.0 } else { 90.0 },
            percentile: [0.9, 0.95, 0.99][case % 3],
            max_load: 10,
            wait_model: WaitModel::Paper,
            thread_model: ThreadModel::Held,
        };
        let problem = FmProblem::new(&profile_of(&requests), params.clone()).unwrap();
        let table = plan_fm(&problem, None).unwrap();
        check_against_oracle(&requests, &params, &table);
    }
}

// ---------------------------------------------------------------------------------------
// Binning
// ---------------------------------------------------------------------------------------

#[test]
fn bins_of_identical_requests_predict_exactly() {
    // Five distinct requests, each repeated four times: bins that separate them carry
    // weight 4 each and must give the exact table.
    let distinct = [
        (10.0, vec![1.0, 1.8, 2.4]),
        (35.0, vec![1.0, 1.5, 1.9]),
        (60.0, vec![1.0, 1.9, 2.7]),
        (140.0, vec![1.0, 1.7, 2.2]),
        (210.0, vec![1.0, 1.95, 2.8]),
    ];
    let requests: Vec<(f64, Vec<f64>)> = distinct
        .iter()
        .flat_map(|r| std::iter::repeat_n(r.clone(), 4))
        .collect();
    let profile = profile_of(&requests);
    let params = FmParams {
        max_degree: 3,
        target_parallelism: 8.0,
        step_ms: 10.0,
        max_interval_ms: 100.0,
        percentile: 0.9,
        max_load: 8,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    let exact = plan_fm(&FmProblem::new(&profile, params.clone()).unwrap(), None).unwrap();
    let by_request = binned_problem(&profile, params.clone(), 200).unwrap();
    assert_eq!(by_request.len(), 5);
    let binned = plan_fm(&by_request, None).unwrap();
    for (a, b) in exact.rows.iter().zip(&binned.rows) {
        assert!(close(a.tail_ms, b.tail_ms) && close(a.mean_ms, b.mean_ms));
        assert_eq!(a.intervals_ms, b.intervals_ms);
    }
    check_against_oracle(&requests, &params, &binned);
    // Fewer bins: a coarser problem, still a valid table whose schedule can be evaluated
    // on the full profile.
    let coarse = binned_problem(&profile, params.clone(), 2).unwrap();
    assert_eq!(coarse.len(), 2);
    let table = plan_fm(&coarse, None).unwrap();
    let full = FmProblem::new(&profile, params).unwrap();
    let exact_eval = full.evaluate(&table.rows[0].intervals_ms, 1);
    assert!(exact_eval.tail_ms > 0.0);
}

// ---------------------------------------------------------------------------------------
// The paper's Figure 5 example
// ---------------------------------------------------------------------------------------

/// Plans `requests` exactly and checks the table against the oracle.
fn plan_checked(requests: &[(f64, Vec<f64>)], params: &FmParams) -> IntervalTable {
    let problem = FmProblem::new(&profile_of(requests), params.clone()).unwrap();
    let table = plan_fm(&problem, None).unwrap();
    check_against_oracle(requests, params, &table);
    table
}

/// The paper's Figure 5 workload: short 50 ms and long 150 ms requests with equal
/// probability, s(2) = 1.5, s(3) = 2, 6 cores, 50 ms grid.
fn figure_5(max_load: usize, wait_model: WaitModel) -> IntervalTable {
    let requests = vec![(50.0, vec![1.0, 1.5, 2.0]), (150.0, vec![1.0, 1.5, 2.0])];
    let params = FmParams {
        max_degree: 3,
        target_parallelism: 6.0,
        step_ms: 50.0,
        max_interval_ms: 150.0,
        percentile: 0.99,
        max_load,
        wait_model,
        thread_model: ThreadModel::Held,
    };
    plan_checked(&requests, &params)
}

#[test]
fn figure_5_example() {
    let table = figure_5(16, WaitModel::Paper);
    let row = |q: usize| &table.rows[q - 1];
    // Loads 1 and 2: start at degree 3 at once; the long request takes 75 ms.
    for q in [1, 2] {
        assert_eq!(row(q).intervals_ms, vec![0.0, 0.0, 0.0]);
        assert_eq!(row(q).tail_ms, 75.0);
    }
    // Load 3: the paper's (0, d1), (50, d3) has tail 100 ms and mean 75 ms. Degree 2 for
    // 100 ms, then 3, ties its tail at a lower mean (66.7 ms) and exactly meets the
    // 6 cores, so Fig. 7's tie-break prefers it.
    assert_eq!(row(3).intervals_ms, vec![0.0, 0.0, 100.0]);
    assert_eq!(row(3).tail_ms, 100.0);
    assert!((row(3).mean_ms - 200.0 / 3.0).abs() < 1e-9);
    assert!((row(3).parallelism - 6.0).abs() < 1e-9);
    // Load 4: the paper keeps (0, 50, 0), whose parallelism 4 x 1.67 = 6.67 exceeds the
    // 6 cores; the exact search runs 50 ms alone, 50 ms at degree 2, then degree 3.
    assert_eq!(row(4).intervals_ms, vec![0.0, 50.0, 50.0]);
    assert_eq!(row(4).tail_ms, 112.5);
    // Waiting (v0 > 0) is how the table sheds parallelism at higher loads...
    assert!(row(8).intervals_ms[0] > 0.0 && !row(8).admit_on_exit);
    // ...until the longest wait, v0 = y, which is the paper's (e1, d1).
    assert!(row(13).admit_on_exit && row(13).intervals_ms[0] == 150.0);
    // Load 16 has no feasible schedule: it copies load 15's and waits for an exit.
    assert!(row(16).admit_on_exit && row(16).parallelism > 6.0);
    assert_eq!(row(16).intervals_ms[1..], row(15).intervals_ms[1..]);
}

#[test]
fn figure_5_under_the_running_model_waits_for_an_exit_from_load_7() {
    // The paper's illustration has (e1, d1) from 7 requests on: above the 6 cores, even
    // sequential requests would outnumber them. The running model reaches the same rows,
    // and never waits v0 at a load where a schedule fits.
    let table = figure_5(10, WaitModel::Running);
    let row = |q: usize| &table.rows[q - 1];
    assert_eq!(row(1).intervals_ms, vec![0.0, 0.0, 0.0]);
    assert_eq!(row(6).intervals_ms, vec![0.0, 150.0, 0.0]);
    for q in 1..=6 {
        assert!(
            !row(q).admit_on_exit && row(q).intervals_ms[0] == 0.0,
            "load {q}"
        );
    }
    for q in 7..=10 {
        assert!(row(q).admit_on_exit, "load {q}");
        assert_eq!(row(q).intervals_ms, vec![150.0, 150.0, 150.0]);
    }
}

#[test]
fn running_model_loads_without_a_fit_up_to_the_target_run_most_sequentially() {
    // Two long requests that speed up well: on a 100 ms grid even the most sequential
    // schedule parallelizes them after 200 ms, so from load 3 nothing fits 3.5 threads;
    // load 3 still runs at once, the most sequential way, and load 4 waits for an exit.
    let requests = vec![(1000.0, vec![1.0, 1.9, 2.7]), (900.0, vec![1.0, 1.9, 2.7])];
    let params = FmParams {
        max_degree: 3,
        target_parallelism: 3.5,
        step_ms: 100.0,
        max_interval_ms: 100.0,
        percentile: 0.99,
        max_load: 5,
        wait_model: WaitModel::Running,
        thread_model: ThreadModel::Held,
    };
    let table = plan_checked(&requests, &params);
    let row = |q: usize| &table.rows[q - 1];
    assert!(row(3).parallelism > 3.5);
    assert_eq!(row(3).intervals_ms, vec![0.0, 100.0, 100.0]);
    assert!(!row(3).admit_on_exit);
    assert!(row(4).admit_on_exit && row(5).admit_on_exit);
    assert_eq!(row(4).intervals_ms, vec![100.0, 100.0, 100.0]);
}

// ---------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------

#[test]
fn rejects_bad_parameters_by_name() {
    let profile = profile_of(&[(10.0, vec![1.0, 2.0])]);
    let ok = FmParams {
        max_degree: 2,
        target_parallelism: 4.0,
        step_ms: 5.0,
        max_interval_ms: 20.0,
        percentile: 0.99,
        max_load: 4,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    assert!(FmProblem::new(&profile, ok.clone()).is_ok());
    let cases: Vec<(FmParams, &str)> = vec![
        (
            FmParams {
                max_degree: 0,
                ..ok.clone()
            },
            "--max-degree",
        ),
        (
            FmParams {
                target_parallelism: 0.0,
                ..ok.clone()
            },
            "--target-parallelism",
        ),
        (
            FmParams {
                target_parallelism: f64::NAN,
                ..ok.clone()
            },
            "--target-parallelism",
        ),
        (
            FmParams {
                step_ms: 0.0,
                ..ok.clone()
            },
            "--step",
        ),
        (
            FmParams {
                max_interval_ms: 22.0,
                ..ok.clone()
            },
            "--max-interval",
        ),
        (
            FmParams {
                max_interval_ms: -5.0,
                ..ok.clone()
            },
            "--max-interval",
        ),
        (
            FmParams {
                percentile: 0.0,
                ..ok.clone()
            },
            "--percentile",
        ),
        (
            FmParams {
                percentile: 1.5,
                ..ok.clone()
            },
            "--percentile",
        ),
        (
            FmParams {
                max_load: 0,
                ..ok.clone()
            },
            "--max-load",
        ),
    ];
    for (params, flag) in cases {
        let err = FmProblem::new(&profile, params).unwrap_err();
        assert!(
            err.to_string().starts_with(flag),
            "{err} should name {flag}"
        );
    }
    let err = FmProblem::new(
        &profile,
        FmParams {
            max_degree: 3,
            ..ok.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(
        err,
        PlanError::ProfileTooShallow {
            max_degree: 3,
            profiled: 2
        }
    ));
    // Binned planning says the same, not that a ladder is malformed.
    let err = binned_problem(
        &profile,
        FmParams {
            max_degree: 3,
            ..ok.clone()
        },
        2,
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::ProfileTooShallow { .. }), "{err}");
    let err = FmProblem::new(
        &profile,
        FmParams {
            step_ms: 1e-2,
            max_interval_ms: 1e3,
            max_degree: 2,
            ..ok
        },
    );
    assert!(err.is_ok(), "10^5 grid steps are fine");
}

#[test]
fn an_unreachable_target_is_an_error_not_a_panic() {
    // A single request that always runs at degree 4 cannot meet target 1 at load 1.
    let profile = profile_of(&[(100.0, vec![1.0, 2.0])]);
    let params = FmParams {
        max_degree: 2,
        target_parallelism: 1.0,
        step_ms: 10.0,
        max_interval_ms: 0.0,
        percentile: 0.99,
        max_load: 3,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    let problem = FmProblem::new(&profile, params).unwrap();
    assert!(matches!(
        plan_fm(&problem, None),
        Err(PlanError::NothingFeasible { .. })
    ));
}

#[test]
#[allow(clippy::type_complexity)]
fn a_speedup_that_collapses_at_degree_n_keeps_the_sums_exact() {
    // Found in review: request `a` runs 10^13 times slower at degree 2. Its linear terms
    // in v1 dwarf the sums, which once rounded far past the comparison tolerances.
    let cases: [(Vec<(f64, Vec<f64>)>, FmParams); 2] = [
        (
            vec![(2.3, vec![1.0, 2.3 / 2.3e13]), (6.1, vec![1.0, 2.0])],
            FmParams {
                max_degree: 2,
                target_parallelism: 3.0,
                step_ms: 3.0,
                max_interval_ms: 15.0,
                percentile: 1.0,
                max_load: 3,
                wait_model: WaitModel::Paper,
                thread_model: ThreadModel::Held,
            },
        ),
        (
            vec![
                (2.668350280448794, vec![1.0, 1e-13]),
                (8.881901323050261, vec![1.0, 1.0]),
            ],
            FmParams {
                max_degree: 2,
                target_parallelism: 3.158775888449327,
                step_ms: 2.0,
                max_interval_ms: 8.0,
                percentile: 0.5,
                max_load: 7,
                wait_model: WaitModel::Paper,
                thread_model: ThreadModel::Held,
            },
        ),
    ];
    for (requests, params) in cases {
        let problem = FmProblem::new(&profile_of(&requests), params.clone()).unwrap();
        let table = plan_fm(&problem, None).unwrap();
        check_against_oracle(&requests, &params, &table);
        let reference = plan_fm_exhaustive(&problem, None).unwrap();
        for (a, b) in table.rows.iter().zip(&reference.rows) {
            assert_eq!(a.intervals_ms, b.intervals_ms, "load {}", a.load);
        }
    }
}

#[test]
fn oversized_searches_are_refused_before_allocating() {
    let profile = profile_of(&[(10.0, vec![1.0, 2.0, 2.5])]);
    let ok = FmParams {
        max_degree: 3,
        target_parallelism: 4.0,
        step_ms: 5.0,
        max_interval_ms: 20.0,
        percentile: 0.99,
        max_load: 4,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    let refused = [
        FmParams {
            max_load: usize::MAX,
            ..ok.clone()
        },
        FmParams {
            max_load: 10_000_000_000,
            ..ok.clone()
        },
        FmParams {
            step_ms: 1.0,
            max_interval_ms: 1e300,
            ..ok.clone()
        },
        FmParams {
            step_ms: 1.0,
            max_interval_ms: 1e20,
            ..ok.clone()
        },
        FmParams {
            max_degree: 2,
            step_ms: 1.0,
            max_interval_ms: 999_999_999_999.0,
            ..ok.clone()
        },
        FmParams {
            max_degree: 1,
            step_ms: 0.5,
            max_interval_ms: 4e9,
            ..ok.clone()
        },
        // 40001^2 = 1.6e9 schedules.
        FmParams {
            step_ms: 0.001,
            max_interval_ms: 40.0,
            ..ok.clone()
        },
    ];
    for params in refused {
        let profile = profile_of(&[(10.0, vec![1.0, 2.0, 2.5])]);
        assert!(
            FmProblem::new(&profile, params.clone()).is_err(),
            "{params:?}"
        );
    }
    // Bins beyond the request count are capped, not allocated.
    let binned = binned_problem(&profile, ok.clone(), usize::MAX).unwrap();
    assert_eq!(binned.len(), 1);
    assert!(binned_problem(&profile, ok, 0).is_err());
}

#[test]
fn speedups_that_overflow_are_refused_naming_the_request() {
    let profile = DemandProfile::parse("request,t1_ms,t2_ms\na,1e300,1e-300\n", "p.csv").unwrap();
    let params = FmParams {
        max_degree: 2,
        target_parallelism: 4.0,
        step_ms: 5.0,
        max_interval_ms: 20.0,
        percentile: 0.99,
        max_load: 4,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    let err = FmProblem::new(&profile, params).unwrap_err();
    assert!(err.to_string().contains("request 1"), "{err}");
}

#[test]
fn grid_values_are_clean_decimals() {
    let profile = profile_of(&[(1.0, vec![1.0, 2.0])]);
    let params = FmParams {
        max_degree: 2,
        target_parallelism: 1.5,
        step_ms: 0.1,
        max_interval_ms: 0.3,
        percentile: 0.99,
        max_load: 6,
        wait_model: WaitModel::Paper,
        thread_model: ThreadModel::Held,
    };
    let table = plan_fm(&FmProblem::new(&profile, params).unwrap(), None).unwrap();
    for row in &table.rows {
        for v in &row.intervals_ms {
            assert!([0.0, 0.1, 0.2, 0.3].contains(v), "{v}");
        }
    }
}
