//! Planned tables for people, as `tailor plan ... --format table` prints them.
//!
//! FM's schedules in the paper's notation (Table 2), Adaptive's degrees, tail-control's
//! thresholds, and the binned FM table against the exact one.

use std::io::{self, Write};

use tailor_core::{AdaptiveTable, IntervalRow, IntervalTable, TailControlTable};

use crate::FmProblem;

/// Writes the FM table in the paper's Table 2 layout (Haque et al., ASPLOS 2015): for
/// each load, the admission then (time, degree) pairs, where a time is the request's
/// executed time at which it moves to that degree.
pub fn write_fm_table(table: &IntervalTable, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# FM interval table: max degree {}, target parallelism {}, p{}, step {} ms, y {} ms",
        table.max_degree,
        table.target_parallelism,
        table.percentile * 100.0,
        table.step_ms,
        table.max_interval_ms
    )?;
    writeln!(
        w,
        "{:>5}  {:<40} {:>9} {:>9} {:>11}",
        "load", "schedule (t, degree)", "tail_ms", "mean_ms", "parallelism"
    )?;
    for row in &table.rows {
        writeln!(
            w,
            "{:>5}  {:<40} {:>9.2} {:>9.2} {:>11.2}",
            row.load,
            schedule_pairs(row),
            row.tail_ms,
            row.mean_ms,
            row.parallelism
        )?;
    }
    Ok(())
}

/// Turns S = (v0, v1, ..., v_{n-1}) into the paper's pairs: (v0 or e1, first degree),
/// then (executed ms, degree) at each increase; zero-length intervals are skipped.
fn schedule_pairs(row: &IntervalRow) -> String {
    let v = &row.intervals_ms;
    let n = v.len();
    let mut degree = 1;
    while degree < n && v[degree] == 0.0 {
        degree += 1;
    }
    let start = if row.admit_on_exit {
        "e1".to_string()
    } else {
        format!("{}", v[0])
    };
    let mut pairs = vec![format!("({start}, d{degree})")];
    let mut executed = 0.0;
    for d in degree..n {
        executed += v[d];
        if d + 1 == n || v[d + 1] > 0.0 {
            pairs.push(format!("({executed}, d{})", d + 1));
        }
    }
    pairs.join(" ")
}

/// Writes the Adaptive table for people: the degree and predicted latency at each load.
pub fn write_adaptive_table(table: &AdaptiveTable, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# Adaptive degree table: max degree {}, target parallelism {}",
        table.max_degree, table.target_parallelism
    )?;
    writeln!(w, "{:>5} {:>7} {:>13}", "load", "degree", "predicted_ms")?;
    for row in &table.rows {
        writeln!(
            w,
            "{:>5} {:>7} {:>13.2}",
            row.load, row.degree, row.predicted_ms
        )?;
    }
    Ok(())
}

/// Writes tail-control's table for people: the threshold and expected misses by active
/// requests.
pub fn write_tail_control_table(table: &TailControlTable, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# tail-control thresholds: target {} ms, {} requests/s, {} cores",
        table.target_ms, table.rps, table.cores
    )?;
    writeln!(
        w,
        "{:>6} {:>12} {:>16}",
        "active", "threshold_ms", "expected_misses"
    )?;
    for row in &table.rows {
        writeln!(
            w,
            "{:>6} {:>12} {:>16.4}",
            row.active, row.threshold_ms, row.expected_misses
        )?;
    }
    Ok(())
}

/// Writes, per load, the binned table's predicted tail against the exact tail of the
/// same schedule on every profiled request, with that schedule's exact parallelism
/// (which may exceed the target: the bins only approximate it), and optionally the
/// exact optimum.
pub fn write_binned_report(
    exact: &FmProblem,
    binned: &IntervalTable,
    optimum: Option<&IntervalTable>,
    w: &mut dyn Write,
) -> io::Result<()> {
    write!(
        w,
        "load  binned_tail_ms  exact_tail_ms  error_%  exact_parallelism"
    )?;
    if optimum.is_some() {
        write!(w, "  optimum_tail_ms  gap_%")?;
    }
    writeln!(w)?;
    let mut worst: f64 = 0.0;
    for row in &binned.rows {
        let truth = exact.evaluate(&row.intervals_ms, row.load);
        let actual = truth.tail_ms;
        let error = 100.0 * (row.tail_ms - actual) / actual;
        worst = worst.max(error.abs());
        write!(
            w,
            "{:4}  {:14.2}  {:13.2}  {:7.2}  {:17.2}",
            row.load, row.tail_ms, actual, error, truth.parallelism
        )?;
        if let Some(opt) = optimum {
            let best = opt.rows[row.load - 1].tail_ms;
            write!(w, "  {:15.2}  {:5.2}", best, 100.0 * (actual - best) / best)?;
        }
        writeln!(w)?;
    }
    writeln!(w, "largest |error| of the binned prediction: {worst:.2}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &[f64], admit_on_exit: bool) -> IntervalRow {
        IntervalRow {
            load: 1,
            intervals_ms: v.to_vec(),
            admit_on_exit,
            tail_ms: 0.0,
            mean_ms: 0.0,
            parallelism: 0.0,
        }
    }

    #[test]
    fn pairs_follow_the_papers_notation() {
        assert_eq!(schedule_pairs(&row(&[0.0, 0.0, 0.0], false)), "(0, d3)");
        assert_eq!(
            schedule_pairs(&row(&[0.0, 50.0, 0.0], false)),
            "(0, d1) (50, d3)"
        );
        assert_eq!(
            schedule_pairs(&row(&[150.0, 50.0, 50.0], true)),
            "(e1, d1) (50, d2) (100, d3)"
        );
        assert_eq!(
            schedule_pairs(&row(&[5.0, 0.0, 20.0], false)),
            "(5, d2) (20, d3)"
        );
        assert_eq!(schedule_pairs(&row(&[5.0], false)), "(5, d1)");
    }
}
