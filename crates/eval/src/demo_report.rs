//! The demo's results: its JSON lines, the printed report and the chart's panels.
//!
//! The report holds the live comparison with its verdicts, the simulator's check
//! against the live cells, and the projections to bigger servers.

use tailor_core::ThreadModel;

use crate::bootstrap::{Estimate, Verdict};
use crate::chart::{write_charts, Panel, Series};
use crate::demo::{
    other_pool_name, pool_name, DemoConfig, DemoFormat, MODEL_CHECK_MAX_LOAD, POLICIES,
};
use crate::error::{chain, EvalError};
use crate::projection::{ChosenTarget, PeerRuns, Projection};
use crate::spread::Spread;
use crate::verdict::{cell_json, verdict_json, Cell, LoadVerdict, Run};

/// Everything the demo measured and simulated, for its report.
pub(crate) struct Results<'a> {
    pub(crate) config: &'a DemoConfig,
    /// The live runs' rates, by load.
    pub(crate) rates: &'a [f64],
    /// runs[p][l]: policy p's live runs at load l, one per round.
    pub(crate) runs: &'a [Vec<Vec<Run>>],
    /// The bootstrap of each policy's runs at each load.
    pub(crate) cells: &'a [Vec<Cell>],
    /// FM against the best peer, by load.
    pub(crate) verdicts: &'a [LoadVerdict],
    /// The simulator at this machine's cores, each load at its own costs: the policies
    /// in `POLICIES`' order, then the executor on the other pool model.
    pub(crate) home: &'a [PeerRuns],
    /// The same with the costs pooled over the loads up to `MODEL_CHECK_MAX_LOAD`.
    pub(crate) home_pooled: &'a [PeerRuns],
    /// Each load's mean cost over the profiled t1.
    pub(crate) delivered: &'a [f64],
    /// The costs pooled over the loads.
    pub(crate) pooled: &'a Spread,
    /// The projections, by projected cores.
    pub(crate) projections: &'a [(usize, Projection)],
    /// The projected profile's highest degree.
    pub(crate) degree: usize,
    /// What the projection's machine model is.
    pub(crate) calibration_note: &'a str,
}

/// The index of the live executor's cell in `POLICIES`.
fn executor_cell() -> usize {
    POLICIES
        .iter()
        .position(|p| p.2.is_some())
        .expect("the executor is a policy of the demo")
}

/// The JSON lines: each live cell (pooled summary, intervals, the simulator's p99s),
/// each projected summary, and the verdict last (shared/spec/cli.md).
fn json_lines(r: &Results<'_>) -> Result<Vec<String>, EvalError> {
    let config = r.config;
    let executor_cell = executor_cell();
    let mut lines = Vec::new();
    for (p, by_load) in r.runs.iter().enumerate() {
        for (l, runs) in by_load.iter().enumerate() {
            let mut line = cell_json(runs, &r.cells[p][l])?;
            line["sim_p99_ms"] = r.home[p].1[l].as_ref().map(|sim| sim.latency_ms.p99).into();
            if p == executor_cell {
                line["sim_executor_model"] = pool_name(config.executor_model).into();
                line[format!("sim_p99_ms_{}", other_pool_name(config.executor_model))] =
                    r.home[POLICIES.len()].1[l]
                        .as_ref()
                        .map(|sim| sim.latency_ms.p99)
                        .into();
            }
            line["sim_work_scale"] = r.delivered[l].into();
            line["sim_p99_ms_pooled_costs"] = r.home_pooled[p].1[l]
                .as_ref()
                .map(|sim| sim.latency_ms.p99)
                .into();
            line["sim_work_scale_pooled"] = r.pooled.mean().into();
            lines.push(line.to_string());
        }
    }
    for (_, projection) in r.projections {
        for (label, by_load) in &projection.runs {
            let target = match label.as_str() {
                "FM" => Some(&projection.fm_target),
                "Adaptive" => Some(&projection.adaptive_target),
                _ => None,
            };
            for summary in by_load {
                let mut line = serde_json::to_value(summary)?;
                if let Some(target) = target {
                    line["target"] = target.json(config.projected_target);
                }
                line["model"] = r.calibration_note.into();
                lines.push(line.to_string());
            }
        }
    }
    lines.push(verdict_json(r.verdicts, config.scheduler.name()).to_string());
    Ok(lines)
}

/// Prints the results as `config.format` asks (JSON lines, or the tables for people),
/// and keeps the JSON lines in `demo.jsonl` in the output directory either way.
pub(crate) fn print_results(r: &Results<'_>) -> Result<(), EvalError> {
    let config = r.config;
    let loads = &config.loads;
    let lines = json_lines(r)?;
    match config.format {
        DemoFormat::Json => {
            for line in &lines {
                println!("{line}");
            }
        }
        DemoFormat::Table => {
            print_table(r.rates, loads, r.cells, r.verdicts);
            println!();
            println!("{}", threads_note(config.thread_model));
            println!("live runs: {}", config.scheduler.describe());
            let live_cell: Vec<usize> = (0..POLICIES.len()).chain([executor_cell()]).collect();
            print_home_check(
                config.cores,
                r.delivered,
                loads,
                r.cells,
                r.home,
                &live_cell,
            );
            let (within, checked) = within_15(loads, r.cells, r.home_pooled, &live_cell);
            println!(
                "with each query's costs pooled over the loads up to {:.0}% ({:.2} on average; \
                 the model before 2026-11-25 late): {within} of {checked}",
                100.0 * MODEL_CHECK_MAX_LOAD,
                r.pooled.mean()
            );
            println!();
            println!("projection model: {}", r.calibration_note);
            for (c, projection) in r.projections {
                print_projection(*c, r.degree, loads, projection);
            }
        }
    }
    let kept = config.out_dir.join("demo.jsonl");
    let written = std::fs::create_dir_all(&config.out_dir)
        .and_then(|()| std::fs::write(&kept, lines.join("\n") + "\n"));
    match written {
        Ok(()) => eprintln!("results: {}", kept.display()),
        Err(e) => eprintln!("tailor: cannot write {}: {e}", kept.display()),
    }
    Ok(())
}

/// Draws the chart into the output directory: the live p99s with their intervals, and
/// each projection's; a chart that cannot be drawn is reported and skipped.
pub(crate) fn write_chart(r: &Results<'_>) {
    let config = r.config;
    let percent = |load: f64| 100.0 * load;
    let mut panels = vec![Panel {
        title: format!("live, {} cores (95% intervals)", config.cores),
        x_desc: "load (% of SEQ's capacity)".into(),
        y_desc: "p99 latency (ms)".into(),
        series: POLICIES
            .iter()
            .zip(r.cells)
            .map(|((label, _, _), cells)| Series {
                label: label.to_string(),
                points: config
                    .loads
                    .iter()
                    .zip(cells)
                    .map(|(&l, c)| (percent(l), c.p99))
                    .collect(),
            })
            .collect(),
    }];
    for (c, projection) in r.projections {
        panels.push(Panel {
            title: format!("projected, {c} cores (simulator)"),
            x_desc: "load (% of SEQ's capacity)".into(),
            y_desc: "p99 latency (ms)".into(),
            series: projection
                .runs
                .iter()
                .map(|(label, by_load)| Series {
                    label: label.clone(),
                    points: config
                        .loads
                        .iter()
                        .zip(by_load)
                        .map(|(&l, s)| {
                            let p99 = s.latency_ms.p99;
                            (
                                percent(l),
                                Estimate {
                                    value: p99,
                                    low: p99,
                                    high: p99,
                                },
                            )
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    match write_charts(&config.out_dir, &panels) {
        Ok(paths) => {
            for p in paths {
                eprintln!("chart: {}", p.display());
            }
        }
        Err(e) => eprintln!("tailor: no chart: {}", chain(&e)),
    }
}

/// The comparison tables: p99 and mean per policy and load with their intervals, and FM
/// against the best peer with the verdict. A `*` marks a cell with a run kept although
/// noisy.
fn print_table(rates: &[f64], loads: &[f64], cells: &[Vec<Cell>], verdicts: &[LoadVerdict]) {
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
fn threads_note(threads: ThreadModel) -> &'static str {
    match threads {
        ThreadModel::Busy => {
            "FM's planner and the simulator: a query at degree d keeps s(d) threads busy, as \
             tailor's runtime lets a thread leave when no segment is left (--thread-model held \
             charges d threads, as the FM paper's Eq. 2)"
        }
        ThreadModel::Held => {
            "FM's planner and the simulator: a query at degree d holds d threads until it ends \
             (the FM paper's Eq. 2; --thread-model busy charges the s(d) threads it keeps busy)"
        }
    }
}

/// The projected p99s at `cores` cores, and FM's against the best other policy's.
fn print_projection(cores: usize, degree: usize, loads: &[f64], projection: &Projection) {
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
fn print_home_check(
    cores: usize,
    delivered: &[f64],
    loads: &[f64],
    cells: &[Vec<Cell>],
    home: &[PeerRuns],
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
    home: &[PeerRuns],
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
fn within_15(
    loads: &[f64],
    cells: &[Vec<Cell>],
    home: &[PeerRuns],
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
