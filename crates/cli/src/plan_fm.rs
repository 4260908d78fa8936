//! `tailor plan fm`: the Few-to-Many interval table from a profile.
//!
//! With the defaults the profile implies, the binned and latency-bounded variants, and
//! the check against SEQ (`tailor_eval::check_fm_table`).

use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{ArgGroup, Args, ValueEnum};
use tailor_core::{Calibration, DemandProfile, IntervalTable};
use tailor_plan::{
    binned_problem, default_max_degree, plan_fm, plan_fm_exhaustive, FmDefaults, FmParams,
    FmProblem, EFFICIENCY_THRESHOLD,
};

use crate::bounds;
use crate::plan::{OutputArgs, TableFormat, Threads, Waits};
use crate::{interactive, write_output, PathArg};

/// Which search computes the FM table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Method {
    /// The fast exact search.
    Fast,
    /// Fig. 7 as written: every schedule, every request. Slow; for checks and benchmarks.
    Exhaustive,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor plan fm --profile profile.csv --cores 16 --out fm-table.json
  tailor plan fm --profile profile.csv --cores 16 --max-degree 8 \\
      --percentile 99.9 --format table")]
#[command(group(ArgGroup::new("target").required(true).multiple(true)
    .args(["cores", "target_parallelism", "calibration"])))]
pub(crate) struct FmArgs {
    /// Demand profile CSV: request,t1_ms,...,tN_ms.
    #[arg(long)]
    profile: PathArg,
    /// n: the maximum degree of parallelism per request. Default: the highest degree
    /// whose work-weighted efficiency s(d)/d in the profile is at least 0.5
    /// (`tailor_plan::EFFICIENCY_THRESHOLD`; the FM paper stopped Lucene at 4, Bing at 3).
    #[arg(long, value_parser = bounds::THREADS)]
    max_degree: Option<usize>,
    /// M: the cores the requests share. The target parallelism defaults to M.
    #[arg(long, value_parser = bounds::THREADS)]
    cores: Option<usize>,
    /// target_p: the runnable threads the table may use in all, at most (default: --cores).
    /// Counts threads that want a core: set it above the cores only for work whose
    /// threads block (I/O, locks), as the paper's 24 on 15 cores did (§6.1).
    #[arg(long, value_parser = bounds::POSITIVE)]
    target_parallelism: Option<f64>,
    /// The interval grid step, e.g. 0.25ms. Default: 0.25ms, or the coarsest multiple of
    /// it that keeps y within 150 grid points, as `tailor demo` plans.
    #[arg(long = "step", value_name = "DURATION", value_parser = bounds::TIME)]
    step_ms: Option<f64>,
    /// y: the largest interval (a multiple of the step). Default: the profile's longest
    /// t1, rounded up to the grid (the FM paper's choice, §4.1).
    #[arg(long = "max-interval", value_name = "DURATION", value_parser = bounds::TIME0)]
    max_interval_ms: Option<f64>,
    /// beta: the percentile to minimize, in percent (99) or as a fraction (0.99).
    /// Default: 99.
    #[arg(long, value_parser = bounds::percent)]
    percentile: Option<f64>,
    /// Q: plan loads 1..=Q. Default: twice the cores (the target parallelism, rounded up,
    /// without --cores).
    #[arg(long, value_parser = bounds::COUNT)]
    max_load: Option<usize>,
    #[command(flatten)]
    output: OutputArgs,
    /// Group requests into K equal-width demand bins (the paper's faster approximation)
    /// and report on stderr how far the binned predictions are from the exact ones.
    #[arg(long, value_name = "K", value_parser = bounds::COUNT)]
    bins: Option<usize>,
    /// With --bins, also plan the exact table and report the gap to its optimum.
    #[arg(long, requires = "bins")]
    compare_exact: bool,
    /// Which search to run.
    #[arg(long, value_enum, default_value_t = Method::Fast)]
    method: Method,
    /// d: plan in Theorem 1's own form (FM paper §3.2, Appendix A): at each load, the
    /// least resource usage (mean thread-time) among schedules whose predicted
    /// --percentile latency is at most d (e.g. 20ms); loads where none is keep the least
    /// tail.
    /// Short requests then stay sequential at low load. Runs the exhaustive search
    /// (docs/fm-planner.md, "A latency bound").
    #[arg(long = "latency-bound", value_name = "DURATION", value_parser = bounds::TIME)]
    latency_bound_ms: Option<f64>,
    /// Keep the shortest PCT percent of the profile's requests sequential: search only
    /// schedules whose first interval v1 (executed time at degree 1 before a second
    /// thread) is at least the time by which that share finishes sequentially, rounded up
    /// to the grid and at most --max-interval (tailor's departure from the paper's Fig. 7,
    /// docs/fm-planner.md, "Keeping short requests sequential"). PCT is in percent
    /// (1 is 1%). Works with either --method, --bins and --latency-bound.
    #[arg(long = "keep-sequential", value_name = "PCT", value_parser = bounds::PERCENT)]
    keep_sequential: Option<f64>,
    /// How the parallelism model counts a request's wait v0.
    #[arg(long, value_enum, default_value_t = Waits::Running)]
    wait_model: Waits,
    /// How Eq. 1-2 charge a request's threads at degree d.
    #[arg(long, value_enum, default_value_t = Threads::Held, conflicts_with = "calibration")]
    thread_model: Threads,
    /// A machine's calibration from `tailor calibrate`: plan as it prices a thread (work
    /// slowed as measured at the target parallelism, each request charged the threads it
    /// keeps busy plus its help tickets' CPU) instead of --thread-model.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathArg>,
    /// Skip the check that simulates the planned table against SEQ under the charged
    /// model and warns where FM is worse.
    #[arg(long)]
    no_check: bool,
    /// Search only schedules that step through these degrees, such as 1,2,4,8 (or 1..N,
    /// every degree): from 1
    /// up to --max-degree, skipping the rest (they get zero intervals in the table), so
    /// a high --max-degree costs the search as many intervals as the list has entries
    /// (docs/fm-planner.md, "A ladder of degrees"). Default: every degree, or without
    /// --step the doubling ladder 1,2,4,8,16 below --max-degree and --max-degree itself.
    #[arg(long, value_name = "DEGREES", value_parser = bounds::degrees, conflicts_with = "bins")]
    degrees: Option<bounds::Degrees>,
}

/// `tailor plan fm`: plans the table, reports on stderr what it derived and how the
/// table fares in the check, and writes it.
pub(crate) fn fm(args: FmArgs) -> anyhow::Result<()> {
    let profile = DemandProfile::read(&args.profile)?;
    let calibration = args
        .calibration
        .as_deref()
        .map(Calibration::read)
        .transpose()?;
    let cores = args.cores.or(calibration.as_ref().map(|c| c.cores));
    let target_parallelism = fm_target(cores, args.target_parallelism)?;
    let max_degree = match args.max_degree {
        Some(n) => n,
        None => {
            let n = default_max_degree(&profile, EFFICIENCY_THRESHOLD);
            eprintln!(
                "max degree {n}: the highest whose efficiency s(d)/d in the profile is at least \
                 {EFFICIENCY_THRESHOLD} (--max-degree to choose)"
            );
            n
        }
    };
    let defaults = FmDefaults::for_profile(
        &profile,
        cores.unwrap_or(target_parallelism.ceil().max(1.0) as usize),
        max_degree,
    );
    let derived = derived_flags(&args, &defaults);
    if !derived.is_empty() {
        eprintln!("from the profile: {}", derived.join(" "));
    }
    let params = FmParams {
        max_degree,
        target_parallelism,
        step_ms: args.step_ms.unwrap_or(defaults.step_ms),
        max_interval_ms: args.max_interval_ms.unwrap_or(defaults.max_interval_ms),
        percentile: args.percentile.map_or(defaults.percentile, |p| p / 100.0),
        max_load: args.max_load.unwrap_or(defaults.max_load),
        wait_model: args.wait_model.into(),
        thread_model: args.thread_model.into(),
    };
    let degrees = match &args.degrees {
        Some(d) => Some(d.0.iter().copied().filter(|&d| d <= max_degree).collect()),
        // The profile's own grid plans over the ladder, as the demo does.
        None if ladder_by_default(&args) => Some(defaults.degrees.clone()),
        None => None,
    };
    let exact = match &degrees {
        Some(degrees) => FmProblem::with_degrees(&profile, params.clone(), degrees)?,
        None => FmProblem::new(&profile, params.clone())?,
    };
    let problem = match args.bins {
        Some(k) => binned_problem(&profile, params, k)?,
        None => exact.clone(),
    };
    let charge = |p: FmProblem| match &calibration {
        Some(c) => p.charged(c, cores.unwrap_or(c.cores)),
        None => p,
    };
    let (mut exact, mut problem) = (charge(exact), charge(problem));
    if let Some(pct) = args.keep_sequential {
        // The floor comes from the requests themselves, never from bins' means, and the
        // binned search keeps the same one, so that --compare-exact compares like with like.
        exact = exact.with_keep_sequential(pct / 100.0)?;
        problem = problem.with_min_v1_ms(exact.min_v1_ms());
        eprintln!(
            "--keep-sequential {pct}: no second thread before {} ms of executed time, by \
             which the profile's shortest {pct}% finish sequentially (rounded up to the \
             grid, at most --max-interval)",
            exact.min_v1_ms()
        );
    }
    let mut method = args.method;
    if let Some(d) = args.latency_bound_ms {
        (exact, problem) = (exact.with_latency_bound(d), problem.with_latency_bound(d));
        if method == Method::Fast {
            eprintln!("--latency-bound: planning with the exhaustive search");
            method = Method::Exhaustive;
        }
    }
    let started = Instant::now();
    let table = search(&problem, method, "planning")?;
    eprintln!(
        "planned loads 1..={} over {} {} in {:.2} s",
        problem.params().max_load,
        problem.len(),
        if args.bins.is_some() {
            "bins"
        } else {
            "requests"
        },
        started.elapsed().as_secs_f64()
    );
    if args.bins.is_some() {
        let optimum = if args.compare_exact {
            Some(search(&exact, method, "planning the exact table")?)
        } else {
            None
        };
        tailor_plan::write_binned_report(
            &exact,
            &table,
            optimum.as_ref(),
            &mut io::stderr().lock(),
        )
        .context("cannot write to stderr")?;
    }
    if let Some(d) = args.latency_bound_ms {
        let over: Vec<usize> = table
            .rows
            .iter()
            .filter(|r| r.tail_ms > d * (1.0 + 1e-9))
            .map(|r| r.load)
            .collect();
        match over.first() {
            None => eprintln!("every load meets the bound of {d} ms in the model"),
            Some(q) => eprintln!(
                "{} of {} loads, from load {q}, cannot meet the bound of {d} ms in the model: \
                 they keep the least tail",
                over.len(),
                table.rows.len()
            ),
        }
    }
    if !args.no_check {
        let m = cores.unwrap_or(target_parallelism.ceil().max(1.0) as usize);
        let table = std::sync::Arc::new(table.clone());
        match tailor_eval::check_fm_table(&profile, &table, m, calibration.as_ref()) {
            Ok(rows) => tailor_eval::print_check(&rows, calibration.is_some()),
            Err(e) => eprintln!("check: skipped ({:#})", anyhow::Error::from(e)),
        }
    }
    write_output(args.output.out.as_deref(), |w| match args.output.format {
        TableFormat::Json => table.write(w),
        TableFormat::Table => tailor_plan::write_fm_table(&table, w),
    })
}

/// Whether the search steps through the default ladder when `--degrees` is not given:
/// only on the profile's own grid (no `--step`) and without `--bins`.
fn ladder_by_default(args: &FmArgs) -> bool {
    args.step_ms.is_none() && args.bins.is_none()
}

/// The flags `tailor plan fm` takes from the profile because they were not given, as
/// they would be written, so that the plan can be repeated with them.
fn derived_flags(args: &FmArgs, d: &FmDefaults) -> Vec<String> {
    let mut flags = Vec::new();
    if args.step_ms.is_none() {
        flags.push(format!("--step {}ms", d.step_ms));
    }
    if args.max_interval_ms.is_none() {
        flags.push(format!("--max-interval {}ms", d.max_interval_ms));
    }
    if args.percentile.is_none() {
        flags.push(format!(
            "--percentile {}",
            (d.percentile * 1e6).round() / 1e4
        ));
    }
    if args.max_load.is_none() {
        flags.push(format!("--max-load {}", d.max_load));
    }
    if args.degrees.is_none() && ladder_by_default(args) {
        let list: Vec<String> = d.degrees.iter().map(|d| d.to_string()).collect();
        flags.push(format!("--degrees {}", list.join(",")));
    }
    flags
}

/// The target parallelism: `--target-parallelism`, or else `--cores`.
fn fm_target(cores: Option<usize>, target: Option<f64>) -> anyhow::Result<f64> {
    match (cores, target) {
        (Some(0), _) => anyhow::bail!("--cores must be at least 1"),
        (_, Some(p)) => Ok(p),
        (Some(m), None) => Ok(m as f64),
        (None, None) => anyhow::bail!(
            "give --cores M (the target parallelism is then M) or --target-parallelism P"
        ),
    }
}

/// Runs one search, showing progress on a terminal.
fn search(problem: &FmProblem, method: Method, what: &str) -> anyhow::Result<IntervalTable> {
    let show = interactive();
    let last = Mutex::new(Instant::now());
    let unit = match method {
        Method::Fast => "prefixes",
        Method::Exhaustive => "waits v0",
    };
    let progress = |done: u64, total: u64| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if show && (last.elapsed() > Duration::from_millis(250) || done == total) {
            *last = Instant::now();
            eprint!(
                "\r{what}: {:5.1}% of {total} {unit}",
                100.0 * done as f64 / total as f64
            );
            if done == total {
                eprintln!();
            }
        }
    };
    Ok(match method {
        Method::Fast => plan_fm(problem, Some(&progress))?,
        Method::Exhaustive => plan_fm_exhaustive(problem, Some(&progress))?,
    })
}
