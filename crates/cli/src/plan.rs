//! `tailor plan`: the offline planners (FM interval table, Adaptive table, RC threshold,
//! tail-control thresholds).

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use tailor_core::{
    seeded_rng, AdaptiveTable, Arrivals, BinnedDistribution, Calibration, Demand, DemandModel,
    DemandProfile, IntervalRow, IntervalTable, Policy, Speedup, TailControlTable, ThreadModel,
};
use tailor_plan::{
    binned_problem, default_max_degree, plan_adaptive, plan_fm, plan_fm_exhaustive, plan_rc,
    plan_tail_control, AdaptiveParams, FmDefaults, FmParams, FmProblem, TailControlParams,
    WaitModel, EFFICIENCY_THRESHOLD,
};
use tailor_sim::{simulate, SimConfig};

use crate::bounds;
use crate::{interactive, write_output, PathArg};

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Compute the Few-to-Many interval table (Haque et al., ASPLOS 2015, §4.1).
    Fm(FmArgs),
    /// Compute the Adaptive baseline's degree-by-load table (Jeon et al., EuroSys 2013).
    ///
    /// The degree at load q minimizes mean_t1 / s(d) * max(1, q * d / P), with s the
    /// profile's work-weighted average speedup and P the target parallelism: a
    /// reconstruction of Jeon et al.'s rule, documented in crates/plan/src/adaptive.rs.
    Adaptive(AdaptiveArgs),
    /// Find the Request Clairvoyant threshold and degree with the least p99 at one load,
    /// by simulation (FM paper §5: RC parallelizes requests whose work it knows exceeds a
    /// threshold).
    Rc(RcArgs),
    /// Compute tail-control's thresholds by active requests (Li et al., PPoPP 2016, §4.1,
    /// Fig. 3; formulas and conventions in docs/tail-control.md).
    TailControl(TailControlArgs),
    /// Compute EETL's controller for heterogeneous cores (Haque's dissertation, ch. 5):
    /// the low-load thresholds t* of Fig. 5.3, then one PI controller on the threshold
    /// scale z per load interval, identified and tuned on the simulator (docs/as2f.md).
    Eetl(crate::plan_eetl::EetlArgs),
    /// Compute SingleR's reissue delay and probability for a fan-out from a shard log
    /// under a reissue budget (Kaler, He and Elnikety, SPAA 2017): prints JSON with
    /// `policy` (single-r:D_MS:Q), `d_ms` and `q`.
    Reissue(crate::plan_reissue::ReissueArgs),
}

#[derive(Debug, Args)]
pub(crate) struct TailControlArgs {
    /// Binned work distribution CSV: work_ms,probability.
    #[arg(long, required_unless_present = "demand", conflicts_with = "demand")]
    distribution: Option<PathArg>,
    /// Instead of --distribution: a DEMAND (e.g. shape:bing, lognormal:10:13) sampled
    /// --samples times with --seed and binned into --bins equal-width bins, each bin
    /// represented by the largest work in it.
    #[arg(long)]
    demand: Option<String>,
    /// With --demand: the number of bins.
    #[arg(long, default_value_t = 200, requires = "demand", value_parser = bounds::COUNT)]
    bins: usize,
    /// With --demand: the number of sampled requests.
    #[arg(long, default_value_t = 100_000, requires = "demand", value_parser = bounds::COUNT)]
    samples: usize,
    /// With --demand: the sampling seed.
    #[arg(long, default_value_t = 1, requires = "demand")]
    seed: u64,
    /// The sequential part of each request's work, in [0, 1): above 0 a small request
    /// takes at least its span (the sub-linear variant of §4.1's Discussion).
    #[arg(long, default_value_t = 0.0, value_parser = bounds::FRACTION0)]
    sequential_fraction: f64,
    /// Cores m.
    #[arg(long, value_parser = bounds::THREADS)]
    cores: usize,
    /// Arrival rate, requests per second.
    #[arg(long, value_parser = bounds::RPS)]
    rps: f64,
    /// Latency target, ms.
    #[arg(long, value_parser = bounds::MS)]
    target_ms: f64,
    /// Plan 1..=Q active requests.
    #[arg(long, value_parser = bounds::COUNT)]
    max_active: usize,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct RcArgs {
    /// DEMAND, e.g. shape:lucene or profile:PATH.
    #[arg(long)]
    demand: String,
    /// SPEEDUP (default: each request's own for profiles and shapes, linear otherwise).
    #[arg(long)]
    speedup: Option<String>,
    /// Cores to simulate.
    #[arg(long)]
    cores: String,
    /// The load, requests per second.
    #[arg(long, value_parser = bounds::RPS)]
    rps: f64,
    /// The highest degree to try for long requests (degrees 2..=N are tried).
    #[arg(long, value_parser = bounds::THREADS)]
    max_degree: usize,
    /// ARRIVALS for the simulations.
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Requests per simulation (at least 10,000 measured are needed for a p99).
    #[arg(long, default_value_t = 20_000, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Seed shared by every candidate's simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the plan (JSON) here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
}

/// How a table is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TableFormat {
    /// The JSON file format of shared/spec/formats.md.
    Json,
    /// A table for people: load, then (time, degree) pairs as in the paper's Table 2.
    Table,
}

/// Which search computes the FM table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Method {
    /// The fast exact search.
    Fast,
    /// Fig. 7 as written: every schedule, every request. Slow; for checks and benchmarks.
    Exhaustive,
}

/// Where and how a planned table is written.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Write the table here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Json)]
    format: TableFormat,
}

#[derive(Debug, Args)]
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
    /// The interval grid step in ms. Default: 0.25, or the coarsest multiple of it that
    /// keeps y within 150 grid points, as `tailor demo` plans (tailor_plan::FmDefaults).
    #[arg(long, value_parser = bounds::MS)]
    step_ms: Option<f64>,
    /// y: the largest interval in ms (a multiple of the step). Default: the profile's
    /// longest t1, rounded up to the grid (the FM paper's choice, §4.1).
    #[arg(long, value_parser = bounds::MS0)]
    max_interval_ms: Option<f64>,
    /// beta: the percentile to minimize, in (0, 1]. Default: 0.99.
    #[arg(long, value_parser = bounds::FRACTION)]
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
    /// --percentile latency is at most d ms; loads where none is keep the least tail.
    /// Short requests then stay sequential at low load. Runs the exhaustive search
    /// (docs/fm-planner.md, "A latency bound").
    #[arg(long, value_name = "MS", value_parser = bounds::MS)]
    latency_bound_ms: Option<f64>,
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
    /// Search only schedules that step through these degrees, such as 1,2,4,8: from 1
    /// up to --max-degree, skipping the rest (they get zero intervals in the table), so
    /// a high --max-degree costs the search as many intervals as the list has entries
    /// (docs/fm-planner.md, "A ladder of degrees"). Default: every degree, or without
    /// --step-ms the doubling ladder 1,2,4,8,16 below --max-degree and --max-degree itself.
    #[arg(
        long,
        value_name = "D1,D2,...",
        value_delimiter = ',',
        conflicts_with = "bins"
    )]
    degrees: Option<Vec<usize>>,
}

/// How many threads a request at degree d keeps busy (`tailor_core::ThreadModel`), for
/// the FM planner's Eq. 2 and the simulator's sharing of cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Threads {
    /// The FM paper's charge (the default): d threads, held until the request ends.
    Held,
    /// Threads leave a request with no unit left to claim, as in tailor's runtime: on
    /// average s(d) of them are busy, so parallelism costs only what it adds to the
    /// work (docs/fm-planner.md).
    Busy,
}

impl From<Threads> for ThreadModel {
    fn from(t: Threads) -> ThreadModel {
        match t {
            Threads::Held => ThreadModel::Held,
            Threads::Busy => ThreadModel::Busy,
        }
    }
}

/// How the FM planner's parallelism model counts waits (`tailor_plan::WaitModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Waits {
    /// The paper's Eq. 2 as written: a wait is time with zero threads and lowers the
    /// parallelism.
    Paper,
    /// Parallelism is averaged over running time only (the default): a wait never buys
    /// parallelism, since by Little's law it saves no CPU; loads where nothing fits run
    /// the most sequential schedule, and wait for an exit above the target
    /// (docs/fm-planner.md).
    Running,
}

impl From<Waits> for WaitModel {
    fn from(w: Waits) -> WaitModel {
        match w {
            Waits::Paper => WaitModel::Paper,
            Waits::Running => WaitModel::Running,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct AdaptiveArgs {
    /// Demand profile CSV: request,t1_ms,...,tN_ms.
    #[arg(long)]
    profile: PathArg,
    /// The highest degree a request may get.
    #[arg(long, value_parser = bounds::THREADS)]
    max_degree: usize,
    /// P: the hardware parallelism the requests share (usually the cores).
    #[arg(long, value_parser = bounds::POSITIVE)]
    target_parallelism: f64,
    /// Plan loads 1..=Q.
    #[arg(long, value_parser = bounds::COUNT)]
    max_load: usize,
    #[command(flatten)]
    output: OutputArgs,
}

pub(crate) fn run(cmd: PlanCommand) -> anyhow::Result<()> {
    match cmd {
        PlanCommand::Fm(args) => fm(args),
        PlanCommand::Adaptive(args) => adaptive(args),
        PlanCommand::Rc(args) => rc(args),
        PlanCommand::TailControl(args) => tail_control(args),
        PlanCommand::Eetl(args) => crate::plan_eetl::eetl(args),
        PlanCommand::Reissue(args) => crate::plan_reissue::reissue(args),
    }
}

fn fm(args: FmArgs) -> anyhow::Result<()> {
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
        percentile: args.percentile.unwrap_or(defaults.percentile),
        max_load: args.max_load.unwrap_or(defaults.max_load),
        wait_model: args.wait_model.into(),
        thread_model: args.thread_model.into(),
    };
    let degrees = match &args.degrees {
        Some(d) => Some(d.iter().copied().filter(|&d| d <= max_degree).collect()),
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
    let mut method = args.method;
    if let Some(d) = args.latency_bound_ms {
        (exact, problem) = (exact.with_latency_bound(d), problem.with_latency_bound(d));
        if method == Method::Fast {
            eprintln!("--latency-bound-ms: planning with the exhaustive search");
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
        report_binned(&exact, &table, optimum.as_ref())?;
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
        TableFormat::Table => print_fm_table(&table, w),
    })
}

/// Whether the search steps through the default ladder when `--degrees` is not given:
/// only on the profile's own grid (no `--step-ms`) and without `--bins`.
fn ladder_by_default(args: &FmArgs) -> bool {
    args.step_ms.is_none() && args.bins.is_none()
}

/// The flags `tailor plan fm` takes from the profile because they were not given, as
/// they would be written, so that the plan can be repeated with them.
fn derived_flags(args: &FmArgs, d: &FmDefaults) -> Vec<String> {
    let mut flags = Vec::new();
    if args.step_ms.is_none() {
        flags.push(format!("--step-ms {}", d.step_ms));
    }
    if args.max_interval_ms.is_none() {
        flags.push(format!("--max-interval-ms {}", d.max_interval_ms));
    }
    if args.percentile.is_none() {
        flags.push(format!("--percentile {}", d.percentile));
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

/// Reports, per load, the binned table's predicted tail against the exact tail of the
/// same schedule on every profiled request, with that schedule's exact parallelism
/// (which may exceed the target: the bins only approximate it), and optionally the
/// exact optimum.
fn report_binned(
    exact: &FmProblem,
    binned: &IntervalTable,
    optimum: Option<&IntervalTable>,
) -> anyhow::Result<()> {
    let mut err = io::stderr().lock();
    write!(
        err,
        "load  binned_tail_ms  exact_tail_ms  error_%  exact_parallelism"
    )?;
    if optimum.is_some() {
        write!(err, "  optimum_tail_ms  gap_%")?;
    }
    writeln!(err)?;
    let mut worst: f64 = 0.0;
    for row in &binned.rows {
        let truth = exact.evaluate(&row.intervals_ms, row.load);
        let actual = truth.tail_ms;
        let error = 100.0 * (row.tail_ms - actual) / actual;
        worst = worst.max(error.abs());
        write!(
            err,
            "{:4}  {:14.2}  {:13.2}  {:7.2}  {:17.2}",
            row.load, row.tail_ms, actual, error, truth.parallelism
        )?;
        if let Some(opt) = optimum {
            let best = opt.rows[row.load - 1].tail_ms;
            write!(
                err,
                "  {:15.2}  {:5.2}",
                best,
                100.0 * (actual - best) / best
            )?;
        }
        writeln!(err)?;
    }
    writeln!(err, "largest |error| of the binned prediction: {worst:.2}%")
        .context("cannot write to stderr")
}

/// The paper's Table 2 layout: for each load, the admission then (time, degree) pairs,
/// where a time is the request's executed time at which it moves to that degree.
fn print_fm_table(table: &IntervalTable, w: &mut dyn Write) -> io::Result<()> {
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

fn adaptive(args: AdaptiveArgs) -> anyhow::Result<()> {
    let profile = DemandProfile::read(&args.profile)?;
    let table = plan_adaptive(
        &profile,
        &AdaptiveParams {
            max_degree: args.max_degree,
            target_parallelism: args.target_parallelism,
            max_load: args.max_load,
        },
    )?;
    write_output(args.output.out.as_deref(), |w| match args.output.format {
        TableFormat::Json => table.write(w),
        TableFormat::Table => print_adaptive_table(&table, w),
    })
}

fn print_adaptive_table(table: &AdaptiveTable, w: &mut dyn Write) -> io::Result<()> {
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

fn tail_control(args: TailControlArgs) -> anyhow::Result<()> {
    let dist = match (&args.distribution, &args.demand) {
        (Some(path), _) => BinnedDistribution::read(path)?,
        (None, Some(spec)) => {
            let model = tailor_core::DemandModel::new(tailor_core::Demand::parse(spec)?, None)?;
            anyhow::ensure!(args.samples >= 1, "--samples: must be at least 1");
            let mut rng = tailor_core::seeded_rng(args.seed);
            let works: Vec<f64> = model
                .sample_many(args.samples, &mut rng)
                .iter()
                .map(|d| d.work_ms)
                .collect();
            BinnedDistribution::from_samples(&works, args.bins)
                .map_err(|e| anyhow::anyhow!("--demand {spec}: {e}"))?
        }
        (None, None) => anyhow::bail!("give --distribution or --demand"),
    };
    let table = plan_tail_control(
        &dist,
        &TailControlParams {
            cores: args.cores,
            rps: args.rps,
            target_ms: args.target_ms,
            max_active: args.max_active,
            sequential_fraction: args.sequential_fraction,
        },
    )?;
    write_output(args.output.out.as_deref(), |w| match args.output.format {
        TableFormat::Json => table.write(w),
        TableFormat::Table => print_tail_control_table(&table, w),
    })
}

fn print_tail_control_table(table: &TailControlTable, w: &mut dyn Write) -> io::Result<()> {
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

fn rc(args: RcArgs) -> anyhow::Result<()> {
    let cores = crate::simulate::parse_uniform_cores(&args.cores)?;
    let demand = Demand::parse(&args.demand)?;
    let speedup = args.speedup.as_deref().map(Speedup::parse).transpose()?;
    let demand = DemandModel::new(demand, speedup)?;
    let arrivals = Arrivals::parse(&args.arrivals)?;
    anyhow::ensure!(
        args.max_degree >= 2,
        "--max-degree: RC needs a degree of at least 2"
    );
    let config = |threshold_ms: f64, degree: usize| {
        SimConfig::new(
            cores,
            Policy::Rc {
                threshold_ms,
                degree,
            },
            demand.clone(),
            arrivals.clone(),
            args.rps,
            args.requests,
            args.seed,
        )
    };
    // Refuse bad settings once, before the search.
    config(0.0, args.max_degree).validate()?;
    let works: Vec<f64> = demand
        .sample_many(args.requests, &mut seeded_rng(args.seed))
        .iter()
        .map(|r| r.work_ms)
        .collect();
    let started = Instant::now();
    let plan = plan_rc(&works, args.max_degree, |t, d| {
        simulate(&config(t, d)).map_or(f64::INFINITY, |o| o.summary.latency_ms.p99)
    })
    .context("no candidates to try")?;
    eprintln!(
        "tried {} settings in {:.1} s: {} gives p99 {:.1} ms at {} rps",
        plan.candidates.len(),
        started.elapsed().as_secs_f64(),
        plan.policy,
        plan.p99_ms,
        args.rps
    );
    write_output(args.out.as_deref(), |w| {
        serde_json::to_writer_pretty(&mut *w, &plan)?;
        writeln!(w)
    })
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
