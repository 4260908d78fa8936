//! The reference planner: Fig. 7 of Haque et al., ASPLOS 2015, evaluating every schedule.
//!
//! It visits every S = (v0, ..., v_{n-1}) on the grid and evaluates Eq. 1-5 over every
//! request: (y/step + 1)^n x |R| request evaluations. The only liberty taken with Fig. 7
//! is that the load loop runs inside the schedule loop, since only Eq. 3 depends on the
//! load; the table is the same. It is here as a baseline for benchmarks and a check at
//! sizes where it finishes. Schedules below a floor on v1 ([`FmProblem::with_min_v1_ms`])
//! are skipped before they are evaluated.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use tailor_core::IntervalTable;

use super::model::{meets_target, request_time, upper_order_statistic};
use super::{
    build_table, merge_choices, offer, Candidate, Choices, FmProblem, PlanError, Progress,
};

/// Plans the FM interval table by evaluating every schedule on the grid. `progress`, if
/// given, hears (v0 values done, v0 values in all).
pub fn plan_fm_exhaustive(
    problem: &FmProblem,
    progress: Option<Progress<'_>>,
) -> Result<IntervalTable, PlanError> {
    let n = problem.n();
    let g = problem.grid_len as u64;
    let per_v0 = g.pow(n as u32 - 1);
    let done = AtomicU64::new(0);
    let choices = (0..g)
        .into_par_iter()
        .map(|v0| {
            let found = fold_schedules(problem, v0 * per_v0..(v0 + 1) * per_v0);
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, g);
            }
            found
        })
        .reduce(|| vec![None; problem.params.max_load], merge_choices);
    build_table(problem, &choices)
}

/// The best choice per load among the schedules with flat indices in `range`.
fn fold_schedules(problem: &FmProblem, range: Range<u64>) -> Choices {
    let n = problem.n();
    let g = problem.grid_len;
    let p = &problem.params;
    let need = problem.tail_need();
    let unit = problem.all_unit();
    range
        .fold(
            (
                vec![None; p.max_load] as Choices,
                Vec::new(),
                Vec::new(),
                Vec::new(),
            ),
            |(mut choices, mut grid, mut v, mut times), index| {
                decode(index, g, n, &mut grid);
                if !problem.allows(&grid) {
                    return (choices, grid, v, times);
                }
                v.clear();
                v.extend(grid.iter().map(|j| problem.grid(*j as usize)));
                times.clear();
                let (mut sum_time, mut sum_threads) = (0.0, 0.0);
                for r in 0..problem.len() {
                    let (t, th) = request_time(problem.seq[r], problem.s(r), problem.c(r), &v);
                    let w = f64::from(problem.weight[r]);
                    sum_time += w * t;
                    sum_threads += w * th;
                    times.push((t, problem.weight[r]));
                }
                let tail = upper_order_statistic(&mut times, need, unit);
                let mean = sum_time / problem.total_weight as f64;
                // Eq. 3's denominator, less v0 where the wait model gives it no credit.
                let running =
                    sum_time - (1.0 - p.wait_model.credit()) * v[0] * problem.total_weight as f64;
                for q in 1..=p.max_load {
                    let ap = q as f64 * sum_threads / running;
                    if !meets_target(ap, p.target_parallelism) {
                        break;
                    }
                    let c = Candidate {
                        tail,
                        mean,
                        resource: sum_threads / problem.total_weight as f64,
                    };
                    offer(&mut choices, q - 1, c, &grid, problem.latency_bound_ms);
                }
                (choices, grid, v, times)
            },
        )
        .0
}

/// Writes the grid indices of flat schedule `index` into `grid`, v0 most significant.
fn decode(mut index: u64, g: usize, n: usize, grid: &mut Vec<u32>) {
    grid.clear();
    grid.resize(n, 0);
    for slot in grid.iter_mut().rev() {
        *slot = (index % g as u64) as u32;
        index /= g as u64;
    }
}
