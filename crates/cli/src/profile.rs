//! `tailor profile`: measure a workload's profile, generate one from a distribution,
//! build one from a live run's records, or describe one.

use std::io::Write;

use clap::{Args, Subcommand};
use tailor_core::{seeded_rng, Demand, DemandModel, DemandProfile, RequestProfile, Speedup};

use anyhow::Context;
use tailor_bench::{
    measure_profile, AsianSource, BlackScholesSource, ProfileConfig, SearchSource, SyntheticSource,
};
use tailor_workloads::{PdeCalibration, Workload};

use crate::bounds;
use crate::progress::Bar;
use crate::search::SearchArgs;
use crate::{write_output, PathArg};

/// `tailor profile`: measure a workload's profile, or generate or describe one.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct ProfileArgs {
    #[command(subcommand)]
    command: Option<ProfileCommand>,
    #[command(flatten)]
    measure: MeasureArgs,
}

/// Measuring a workload: each request alone at each degree, several times.
#[derive(Debug, Args)]
pub(crate) struct MeasureArgs {
    /// WORKLOAD to measure: synthetic:DEMAND[:SPEEDUP], or search (the first --requests
    /// of its queries, in order).
    #[arg(long)]
    workload: Option<String>,
    /// Degrees to measure, 1..N.
    #[arg(long, value_name = "DEGREES", value_parser = bounds::degrees)]
    degrees: Option<bounds::Degrees>,
    /// Runs per request and degree; the profile keeps the mean (the FM paper used at
    /// least 10).
    #[arg(long, default_value_t = 10, value_parser = bounds::COUNT)]
    repeat: usize,
    /// Requests to draw and measure.
    #[arg(long, default_value_t = 200, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Seed of the requests.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the profile here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
    /// Synthetic workload: the spin loop's iterations per microsecond, as an earlier run
    /// printed it (default: calibrated now).
    #[arg(long, value_parser = bounds::SPIN_RATE)]
    spin_rate: Option<f64>,
    #[command(flatten)]
    search: SearchArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ProfileCommand {
    /// Measure a workload: each request alone at each degree, several times (the bare
    /// `tailor profile --workload ...` does the same).
    Measure(MeasureArgs),
    /// Draw a synthetic profile: each request's time at degree d is its work / s(d).
    Generate(GenerateArgs),
    /// Print a profile's demand statistics and average speedups.
    Describe(DescribeArgs),
    /// Build a profile from `tailor run --records` of a live run: t1 as each request's
    /// units and merge measured, higher degrees predicted from its unit times by list
    /// scheduling.
    FromRecords(FromRecordsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct FromRecordsArgs {
    /// The records CSV (`tailor run --engine live --records FILE` with an FM or pool
    /// policy, which writes the `units_ms` and `merge_ms` columns).
    records: PathArg,
    /// Profile degrees 1..N (default: 1..the machine's cores).
    #[arg(long, value_name = "DEGREES", value_parser = bounds::degrees)]
    degrees: Option<bounds::Degrees>,
    /// A calibration (`tailor calibrate`): each helper then starts after the machine's
    /// hand-off delay and helper cost.
    #[arg(long)]
    calibration: Option<PathArg>,
    /// Write the profile here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
}

#[derive(Debug, Args)]
pub(crate) struct GenerateArgs {
    /// DEMAND: exp:MEAN, const:MS, lognormal:MEAN:SD, profile:PATH, distribution:PATH,
    /// shape:bing, shape:lucene or shape:finance.
    #[arg(long)]
    demand: String,
    /// SPEEDUP: linear, amdahl:F, table:S1,S2,... or profile (default: each request's
    /// own for profiles and shapes, linear otherwise).
    #[arg(long)]
    speedup: Option<String>,
    /// How many requests to draw.
    #[arg(long, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Profile degrees 1..N (`--max-degree N` is an older spelling).
    #[arg(long = "degrees", alias = "max-degree", value_name = "DEGREES", value_parser = bounds::degrees)]
    degrees: bounds::Degrees,
    /// Random seed; the same seed gives the same profile.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the profile here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
}

#[derive(Debug, Args)]
pub(crate) struct DescribeArgs {
    /// The profile CSV to describe.
    profile: PathArg,
}

pub(crate) fn run(args: ProfileArgs) -> anyhow::Result<()> {
    match args.command {
        Some(ProfileCommand::Measure(args)) => measure(args),
        Some(ProfileCommand::Generate(args)) => generate(args),
        Some(ProfileCommand::Describe(args)) => describe(args),
        Some(ProfileCommand::FromRecords(args)) => from_records(args),
        None => measure(args.measure),
    }
}

/// The records files `from-records` reads, at most (as the other input files).
const MAX_RECORDS_BYTES: u64 = 256 << 20;

fn from_records(args: FromRecordsArgs) -> anyhow::Result<()> {
    use std::io::Read;
    let path = args.records.as_path();
    let max_degree = match &args.degrees {
        Some(d) => max_degree(d)?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?
        .take(MAX_RECORDS_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(
        text.len() as u64 <= MAX_RECORDS_BYTES,
        "{}: larger than {} MiB, the most an input file may be",
        path.display(),
        MAX_RECORDS_BYTES >> 20
    );
    let calibration = args
        .calibration
        .as_deref()
        .map(tailor_core::Calibration::read)
        .transpose()?;
    let built = tailor_bench::profile_from_records(
        &text,
        &path.display().to_string(),
        max_degree,
        calibration.as_ref(),
    )
    .map_err(anyhow::Error::msg)?;
    eprintln!(
        "tailor: {} requests profiled at degrees 1..{max_degree} (higher degrees predicted \
         by list scheduling{}){}",
        built.profile.requests().len(),
        if calibration.is_some() {
            ", helpers charged the calibration's hand-off delay and helper cost"
        } else {
            ""
        },
        if built.skipped > 0 {
            format!("; {} records without unit times left out", built.skipped)
        } else {
            String::new()
        }
    );
    write_output(args.out.as_deref(), |w| built.profile.write(w))
}

/// The highest of `--degrees`, which must be every degree from 1: a profile has a
/// column per degree.
fn max_degree(list: &bounds::Degrees) -> anyhow::Result<usize> {
    let list = &list.0;
    let n = list.len();
    anyhow::ensure!(
        list.iter().copied().eq(1..=n),
        "--degrees: a profile measures every degree from 1; give 1..N"
    );
    Ok(n)
}

fn measure(args: MeasureArgs) -> anyhow::Result<()> {
    let (Some(workload), Some(degrees)) = (&args.workload, &args.degrees) else {
        anyhow::bail!(
            "tailor profile needs --workload and --degrees to measure, or a subcommand \
             (generate, describe); see tailor profile --help"
        );
    };
    let max_degree = max_degree(degrees)?;
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    let cfg = ProfileConfig {
        requests: args.requests,
        max_degree,
        repeat: args.repeat,
    };
    let bar = Bar::new("profiling", args.requests as u64);
    let show = |done: usize, total: usize| bar.set_of(done, total);
    let profile = match Workload::parse(workload)? {
        Workload::Synthetic { demand, shape } => {
            let source = SyntheticSource::new(
                &demand,
                shape,
                crate::spinner(args.spin_rate)?,
                args.requests,
                args.seed,
            );
            measure_profile(&cfg, &source, show)?
        }
        Workload::Search => {
            let prepared = args.search.prepare()?;
            let mut queries = prepared.queries;
            queries.truncate(args.requests);
            let source =
                SearchSource::each_query(prepared.index, queries).map_err(anyhow::Error::msg)?;
            measure_profile(&cfg, &source, show)?
        }
        Workload::BlackScholes { demand } => {
            let source = BlackScholesSource::new(
                &demand,
                PdeCalibration::measure(),
                args.requests,
                args.seed,
            );
            measure_profile(&cfg, &source, show)?
        }
        Workload::Asian { scale } => {
            let source = AsianSource::new(args.requests, args.seed, scale);
            measure_profile(&cfg, &source, show)?
        }
    };
    bar.finish();
    write_output(args.out.as_deref(), |w| profile.write(w))
}

fn generate(args: GenerateArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    let max_degree = max_degree(&args.degrees)?;
    let demand = Demand::parse(&args.demand)?;
    let speedup = args.speedup.as_deref().map(Speedup::parse).transpose()?;
    let model = DemandModel::new(demand, speedup)?;
    let mut rng = seeded_rng(args.seed);
    let width = args.requests.to_string().len();
    let requests = (0..args.requests)
        .map(|i| {
            let r = model.sample(&mut rng);
            RequestProfile {
                id: format!("q{:0width$}", i + 1),
                times_ms: (1..=max_degree)
                    .map(|d| r.work_ms / r.speedup.at(d))
                    .collect(),
            }
        })
        .collect();
    let profile = DemandProfile::new(requests).map_err(anyhow::Error::msg)?;
    write_output(args.out.as_deref(), |w| profile.write(w))
}

fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    let profile = DemandProfile::read(&args.profile)?;
    let mut seq: Vec<f64> = profile.requests().iter().map(|r| r.seq_ms()).collect();
    seq.sort_by(f64::total_cmp);
    let n = seq.len();
    let quantile = |q: f64| seq[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let mean = seq.iter().sum::<f64>() / n as f64;
    write_output(None, |w: &mut dyn Write| {
        writeln!(w, "requests        {n}")?;
        writeln!(w, "degrees         1..={}", profile.max_degree())?;
        writeln!(w, "work_ms min     {:.3}", seq[0])?;
        writeln!(w, "work_ms mean    {mean:.3}")?;
        writeln!(w, "work_ms p50     {:.3}", quantile(0.5))?;
        writeln!(w, "work_ms p90     {:.3}", quantile(0.9))?;
        writeln!(w, "work_ms p99     {:.3}", quantile(0.99))?;
        writeln!(w, "work_ms max     {:.3}", seq[n - 1])?;
        writeln!(w, "p99 / p50       {:.2}", quantile(0.99) / quantile(0.5))?;
        for d in 2..=profile.max_degree() {
            let t1: f64 = profile.requests().iter().map(|r| r.times_ms[0]).sum();
            let td: f64 = profile.requests().iter().map(|r| r.times_ms[d - 1]).sum();
            writeln!(w, "speedup s({d})    {:.3} (work-weighted)", t1 / td)?;
        }
        Ok(())
    })
}
