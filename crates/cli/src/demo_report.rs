//! The demo's printed report: the live comparison with its verdicts, the simulator's
//! check against the live cells, and the projections to bigger servers.

use tailor_core::{Estimate, RunSummary, Verdict};

use crate::demo::{MODEL_CHECK_MAX_LOAD, POLICIES};
use crate::plan::Threads;
use crate::projection::{ChosenTarget, Projection};
use crate::verdict::{Cell, LoadVerdict};

/// The comparison tables: p99 and mean per policy and load with their intervals, and FM
/// against the best peer with the verdict. A `*` marks a cell with a run kept although
/// noisy.
pub(crate) fn print_table(
    rates: &[f64],
    loads: &[f64],
    cells: &[Vec<Cell>],
    verdicts: &[LoadVerdict],
) {
    let rounds = cells[0][0].runs;
    let mut header = format!("{:>5} {:>6}", "load", "rps");
    for (label, _, _) in POLICIES {
        header.push_str(&format!(" | {label:>20}"));
    }
    type Pick = fn(&Cell) -> &Estimate;
    let tables: [(&str, Pick); 2] = [("p99", |c| &c.p99), ("mean", |c| &c.mean)];
    for (what, pick) in tables {
        println!(
            "{what} latency in ms, [95% interval] over {rounds} rounds (bootstrap over rounds and blocks of requests, widened for the spread between few rounds)"
        );
        println!("{header}");
        for (i, (&rps, &load)) in rates.iter().zip(loads).enumerate() {
            let mut line = format!("{:>4.0}% {rps:>6.0}", load * 100.0);
            for by_load in cells {
                let c = &by_load[i];
                let e = pick(c);
                let flag = if c.noisy > 0 { "*" } else { " " };
                line.push_str(&format!(
                    " | {:>20}",
                    format!(
                        "{} [{}, {}]{flag}",
                        short(e.value),
                        short(e.low),
                        short(e.high)
                    )
                ));
            }
            println!("{line}");
        }
        println!();
    }
    println!("FM's p99 against the best other policy's, [95% interval]:");
    for v in verdicts {
        println!(
            "{:>4.0}% {:>6.0} | {:.2}x [{:.2}, {:.2}] {}",
            v.load * 100.0,
            v.rps,
            v.ratio.value,
            v.ratio.low,
            v.ratio.high,
            match v.verdict {
                Verdict::Better => "better",
                Verdict::Same => "no significant difference",
                Verdict::Worse => "worse",
            }
        );
    }
    if cells.iter().flatten().any(|c| c.noisy > 0) {
        println!("* a run of this cell met noise on the machine even after its retries (stderr says which)");
    }
}

/// One line on how FM's planner and the simulator below charged a query's threads.
pub(crate) fn threads_note(threads: Threads) -> &'static str {
    match threads {
        Threads::Busy => {
            "FM's planner and the simulator: a query at degree d keeps s(d) threads busy, as \
             tailor's runtime lets a thread leave when no segment is left (--thread-model held \
             charges d threads, as the FM paper's Eq. 2)"
        }
        Threads::Held => {
            "FM's planner and the simulator: a query at degree d holds d threads until it ends \
             (the FM paper's Eq. 2; --thread-model busy charges the s(d) threads it keeps busy)"
        }
    }
}

/// The projected p99s at `cores` cores, and FM's against the best other policy's.
pub(crate) fn print_projection(
    cores: usize,
    degree: usize,
    loads: &[f64],
    projection: &Projection,
) {
    let runs = &projection.runs;
    println!();
    println!(
        "projected p99 in ms at {cores} cores (the simulator; each query's times at degrees 2 \
         to {degree} predicted from its segment times)"
    );
    let tried = |chosen: &ChosenTarget| {
        chosen
            .scores
            .iter()
            .map(|(t, s)| format!("{t:.0}: {}", short(*s)))
            .chain(
                chosen
                    .failed
                    .iter()
                    .map(|(t, why)| format!("{t:.0}: not planned ({why})")),
            )
            .collect::<Vec<_>>()
            .join(", ")
    };
    if projection.fm_target.scores.is_empty() {
        println!(
            "target parallelism: the cores, the planners' default (--projected-target search \
             tries more, as the FM paper did)"
        );
    } else {
        println!(
            "target parallelism, chosen by simulation as the FM paper chose it (§4.1): FM {:.0}, \
         Adaptive {:.0} (geometric-mean p99 over the loads, ms; FM {}; Adaptive {})",
            projection.fm_target.target,
            projection.adaptive_target.target,
            tried(&projection.fm_target),
            tried(&projection.adaptive_target)
        );
    }
    let mut header = format!("{:>5}", "load");
    for (label, _) in runs {
        header.push_str(&format!(" | {label:>9}"));
    }
    header.push_str(" | FM vs best");
    println!("{header}");
    let fm = runs.len() - 1;
    for (l, &load) in loads.iter().enumerate() {
        let mut line = format!("{:>4.0}%", load * 100.0);
        for (_, by_load) in runs {
            line.push_str(&format!(" | {:>9}", short(by_load[l].latency_ms.p99)));
        }
        let best = runs[..fm]
            .iter()
            .map(|(_, r)| r[l].latency_ms.p99)
            .fold(f64::INFINITY, f64::min);
        line.push_str(&format!(" | {:.2}x", runs[fm].1[l].latency_ms.p99 / best));
        println!("{line}");
    }
}

/// The simulator's p99 at this machine's cores against the live cells': their ratio,
/// and how many are within 15% at loads up to 75% (docs/validation.md).
pub(crate) fn print_home_check(
    cores: usize,
    delivered: &[f64],
    loads: &[f64],
    cells: &[Vec<Cell>],
    home: &[(String, Vec<Option<RunSummary>>)],
    live_cell: &[usize],
) {
    println!();
    let by_load = delivered
        .iter()
        .map(|d| format!("{d:.2}"))
        .collect::<Vec<_>>()
        .join("/");
    println!(
        "the simulator at {cores} cores against the live runs: p99 simulated / live (each \
         query's cost drawn from SEQ's live service times over the profiled ones at the same \
         load, {by_load} on average)"
    );
    let mut header = format!("{:>5}", "load");
    for (label, _) in home {
        header.push_str(&format!(" | {label:>18}"));
    }
    println!("{header}");
    for (l, &load) in loads.iter().enumerate() {
        let mut line = format!("{:>4.0}%", load * 100.0);
        for p in 0..home.len() {
            match model_ratio(cells, home, live_cell, p, l) {
                Some(r) => line.push_str(&format!(" | {r:>17.2}x")),
                None => line.push_str(&format!(" | {:>18}", "overloaded")),
            }
        }
        println!("{line}");
    }
    let (within, checked) = within_15(loads, cells, home, live_cell);
    let beside = if home.len() > cells.len() {
        " (columns after the policies' own: another model, not counted)"
    } else {
        ""
    };
    println!(
        "within 15% at loads up to {:.0}%: {within} of {checked}{beside}",
        100.0 * MODEL_CHECK_MAX_LOAD
    );
}

/// Simulated p99 over live p99 for `home`'s peer `p` at load `l`; `None` if overloaded.
fn model_ratio(
    cells: &[Vec<Cell>],
    home: &[(String, Vec<Option<RunSummary>>)],
    live_cell: &[usize],
    p: usize,
    l: usize,
) -> Option<f64> {
    home[p].1[l]
        .as_ref()
        .map(|sim| sim.latency_ms.p99 / cells[live_cell[p]][l].p99.value)
}

/// How many of the policies' own model cells at loads up to 75% are within 15% of live,
/// and how many were checked; columns of `home` past the policies' (another model shown
/// beside) do not count.
pub(crate) fn within_15(
    loads: &[f64],
    cells: &[Vec<Cell>],
    home: &[(String, Vec<Option<RunSummary>>)],
    live_cell: &[usize],
) -> (usize, usize) {
    let (mut within, mut checked) = (0, 0);
    for (l, &load) in loads.iter().enumerate() {
        for p in 0..home.len().min(cells.len()) {
            if load <= MODEL_CHECK_MAX_LOAD + 1e-9 {
                checked += 1;
                let ratio = model_ratio(cells, home, live_cell, p, l);
                within += usize::from(ratio.is_some_and(|r| (r - 1.0).abs() <= 0.15));
            }
        }
    }
    (within, checked)
}

/// A latency in three significant figures.
fn short(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}
