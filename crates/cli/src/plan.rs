//! `tailor plan`: the planners' subcommands, and `plan adaptive`, `plan tail-control` and `plan rc`.
//!
//! `plan fm` is in `plan_fm.rs`, `plan eetl` in `plan_eetl.rs`, `plan reissue` in
//! `plan_reissue.rs`; the shared output flags and value enums are here.

use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use tailor_core::{
    seeded_rng, Arrivals, BinnedDistribution, Demand, DemandModel, DemandProfile, Policy, Speedup,
    ThreadModel,
};
use tailor_plan::{
    plan_adaptive, plan_rc, plan_tail_control, AdaptiveParams, TailControlParams, WaitModel,
};
use tailor_sim::{simulate, SimConfig};

use crate::bounds;
use crate::{write_output, PathArg};

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Compute the Few-to-Many interval table (Haque et al., ASPLOS 2015, §4.1).
    Fm(crate::plan_fm::FmArgs),
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
    /// Latency target, e.g. 50ms.
    #[arg(long = "target", value_name = "DURATION", value_parser = bounds::TIME)]
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
    /// The JSON table file that `simulate`, `run` and `serve` read (docs/cli.md).
    Json,
    /// A table for people: load, then (time, degree) pairs as in the paper's Table 2.
    Table,
}

/// Where and how a planned table is written.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Write the table here instead of stdout.
    #[arg(long)]
    pub(crate) out: Option<PathArg>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Json)]
    pub(crate) format: TableFormat,
}

/// How many threads a request at degree d keeps busy (`tailor_core::ThreadModel`), for
/// the FM planner's Eq. 2 and the simulator's sharing of cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Threads {
    /// The FM paper's charge: d threads, held until the request ends.
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
    /// Parallelism is averaged over running time only: a wait never buys
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
        PlanCommand::Fm(args) => crate::plan_fm::fm(args),
        PlanCommand::Adaptive(args) => adaptive(args),
        PlanCommand::Rc(args) => rc(args),
        PlanCommand::TailControl(args) => tail_control(args),
        PlanCommand::Eetl(args) => crate::plan_eetl::eetl(args),
        PlanCommand::Reissue(args) => crate::plan_reissue::reissue(args),
    }
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
        TableFormat::Table => tailor_plan::write_adaptive_table(&table, w),
    })
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
        TableFormat::Table => tailor_plan::write_tail_control_table(&table, w),
    })
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
