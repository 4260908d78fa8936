//! `tailor green`: the green datacenter schedulers (Haque's dissertation, appendices A and B): generate inputs, and simulate Green SLAs or GreenPar.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use tailor_green::generate::{generate, Day, System, Workload};
use tailor_green::par::{simulate_par, ParConfig, ParPolicy};
use tailor_green::sla::{simulate_sla, SlaConfig, SlaPolicy};
use tailor_green::{power_chart, EpochPower, Job, Prediction, Solar};

use crate::write_output;

#[derive(Debug, Subcommand)]
pub(crate) enum GreenCommand {
    /// Write seeded inputs shaped from the appendices: DIR/jobs.csv, DIR/solar.csv and
    /// DIR/prediction.csv (docs/green.md).
    Generate(GenerateArgs),
    /// Turn a real trace (the Parallel Workload Archive's SWF, or the Grid Workload
    /// Archive's GWF) into jobs.csv, windowed and scaled as the appendices did.
    Import(ImportArgs),
    /// Simulate a policy of Green SLAs (`--system sla`: sa, lp, ff, sgp) or GreenPar
    /// (`--system par`: baseline, reactive, aggressive, offline, nebulous) on a trace,
    /// its solar production and predictions; prints one JSON summary.
    Simulate(GreenSimulateArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GenerateArgs {
    /// The trace the jobs are shaped like: grid5k or intrepid.
    #[arg(long, value_parser = parse_workload)]
    workload: Workload,
    /// The solar days: high, medium or low.
    #[arg(long, value_parser = parse_day)]
    day: Day,
    /// Which system's scale: sla (appendix A: 48 h, 1,680 servers; the default) or par
    /// (appendix B: 24 h, 50 servers).
    #[arg(long, default_value = "sla", value_parser = parse_system)]
    system: System,
    /// Seed: the same seed writes the same files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The directory to write into (created if missing).
    #[arg(long)]
    out_dir: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The trace file.
    trace: PathBuf,
    /// Its format: swf or gwf (`--format` is an older name).
    #[arg(long = "trace-format", alias = "format")]
    format: String,
    /// Keep jobs submitted from this long after the trace's first submission, e.g. 12h.
    #[arg(long = "start", value_name = "DURATION", default_value = "0s", value_parser = crate::concepts::trace_offset)]
    start: Duration,
    /// ... for this long (§A.5.1 took 48h, §B.4 24h; default: the whole trace).
    #[arg(long = "span", value_name = "DURATION", value_parser = crate::concepts::trace_span)]
    span: Option<Duration>,
    /// Processors to servers: divide:N (⌈processors / N⌉; §A.5.1's Intrepid: 24),
    /// table-b2 (§B.4's Intrepid mapping), power-of-two (§B.4's Grid5k).
    #[arg(long, default_value = "divide:1")]
    sizing: String,
    /// Multiply runtimes by this (§A.5.1's Intrepid: 8).
    #[arg(long, default_value_t = 1.0)]
    runtime_multiplier: f64,
    /// Drop jobs with fewer processors (§B.4's Grid5k: 2).
    #[arg(long, default_value_t = 1)]
    min_processors: u64,
    /// Drop jobs with more servers after sizing (§A.5.1: 1680).
    #[arg(long)]
    max_servers: Option<u32>,
    /// Give jobs Green SLAs as §A.5.1 does, drawn from this seed (default: none).
    #[arg(long)]
    green_sla_seed: Option<u64>,
    /// Write jobs.csv here.
    #[arg(long)]
    out: PathBuf,
}

/// Which scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SystemArg {
    /// Green SLAs (appendix A).
    Sla,
    /// GreenPar (appendix B).
    Par,
}

/// How the summary is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GreenFormat {
    /// One JSON object.
    Json,
    /// A table for people.
    Table,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor green generate --workload grid5k --day medium --out-dir in
  tailor green simulate --system sla --policy sa --jobs in/jobs.csv \\
      --solar in/solar.csv --prediction in/prediction.csv --format table")]
pub(crate) struct GreenSimulateArgs {
    /// sla (Green SLAs) or par (GreenPar).
    #[arg(long, value_enum)]
    system: SystemArg,
    /// The policy: sa, lp, ff, sgp (sla); baseline, reactive, aggressive, offline,
    /// nebulous (par).
    #[arg(long)]
    policy: String,
    /// The job trace (jobs.csv).
    #[arg(long)]
    jobs: PathBuf,
    /// The solar production (solar.csv).
    #[arg(long)]
    solar: PathBuf,
    /// Its predictions (prediction.csv).
    #[arg(long)]
    prediction: PathBuf,
    /// Seed of the policy's own randomness (SA).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Green SLAs, SA: the most jobs one run may reschedule, or `all` (SA-All, §A.5.2).
    #[arg(long, default_value = "30", value_parser = parse_sa_jobs)]
    sa_jobs: SaJobs,
    /// GreenPar: the largest slowdown a job may suffer against its requested servers.
    #[arg(long, default_value_t = 1.1)]
    slowdown: f64,
    /// GreenPar: the error of the runtime estimates Aggressive and Nebulous plan with, as
    /// a fraction (0.25: every estimate 25% long; §B.5's sensitivity).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    runtime_error: f64,
    /// GreenPar: the datacenter's servers (default: 50, or the trace's peak request if
    /// larger).
    #[arg(long)]
    servers: Option<u32>,
    /// Draw the run's power profile (SVG) here.
    #[arg(long)]
    chart: Option<PathBuf>,
    /// Write the run's power profile, epoch by epoch, here (CSV).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GreenFormat::Json)]
    format: GreenFormat,
}

/// SA's job limit: a count, or none (`all`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SaJobs(Option<usize>);

fn parse_sa_jobs(text: &str) -> Result<SaJobs, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(SaJobs(None));
    }
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(SaJobs(Some(n))),
        _ => Err(format!(
            "expected a job count of at least 1, or `all`; found `{text}`"
        )),
    }
}

fn parse_workload(text: &str) -> Result<Workload, String> {
    Workload::parse(text).map_err(|e| e.to_string())
}

fn parse_day(text: &str) -> Result<Day, String> {
    Day::parse(text).map_err(|e| e.to_string())
}

fn parse_system(text: &str) -> Result<System, String> {
    System::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn run(cmd: GreenCommand) -> anyhow::Result<()> {
    match cmd {
        GreenCommand::Generate(args) => {
            let g = generate(args.workload, args.day, args.system, args.seed);
            g.write_dir(&args.out_dir)
                .with_context(|| format!("cannot write into {}", args.out_dir.display()))?;
            eprintln!(
                "wrote {} jobs, {:.1} kWh of solar over {} h, and its predictions to {}",
                g.jobs.len(),
                g.solar.total_kwh(),
                g.solar.kw.len() as f64 * tailor_green::EPOCH_H,
                args.out_dir.display()
            );
            Ok(())
        }
        GreenCommand::Simulate(args) => simulate(args),
        GreenCommand::Import(args) => import(args),
    }
}

fn import(args: ImportArgs) -> anyhow::Result<()> {
    use tailor_green::archive::{load, ArchiveOptions, Format, GreenSlas, Sizing};
    let sizing = match args.sizing.split_once(':') {
        Some(("divide", n)) => Sizing::Divide(
            n.parse()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("--sizing {}: divide:N needs N >= 1", args.sizing))?,
        ),
        None if args.sizing == "table-b2" => Sizing::IntrepidTableB2,
        None if args.sizing == "power-of-two" => Sizing::PowerOfTwoServers,
        _ => anyhow::bail!(
            "--sizing {}: expected divide:N, table-b2 or power-of-two",
            args.sizing
        ),
    };
    let options = ArchiveOptions {
        start_h: args.start.as_secs_f64() / 3600.0,
        length_h: args
            .span
            .map_or(f64::INFINITY, |d| d.as_secs_f64() / 3600.0),
        sizing,
        runtime_multiplier: args.runtime_multiplier,
        min_processors: args.min_processors,
        max_servers: args.max_servers,
        green_slas: args
            .green_sla_seed
            .map_or(GreenSlas::None, |seed| GreenSlas::Uniform { seed }),
    };
    let loaded = load(&args.trace, Format::parse(&args.format)?, &options)?;
    let k = loaded.skipped;
    let skipped = format!(
        "skipped {} with fields missing, {} partial runs, {} outside the window, {} filtered",
        k.missing, k.partial, k.outside_window, k.filtered
    );
    anyhow::ensure!(
        !loaded.jobs.is_empty(),
        "{}: no job falls in the window ({skipped})",
        args.trace.display()
    );
    write_output(Some(args.out.as_path()), |w| {
        tailor_green::generate::write_jobs(w, &loaded.jobs)
    })?;
    eprintln!(
        "wrote {} jobs to {} ({skipped})",
        loaded.jobs.len(),
        args.out.display()
    );
    Ok(())
}

fn simulate(args: GreenSimulateArgs) -> anyhow::Result<()> {
    // The policy first: a misspelt name should not wait for the files.
    let (sla_policy, par_policy) = match args.system {
        SystemArg::Sla => (Some(SlaPolicy::parse(&args.policy)?), None),
        SystemArg::Par => (None, Some(ParPolicy::parse(&args.policy)?)),
    };
    let jobs = Job::read_all(&args.jobs)?;
    let solar = Solar::read(&args.solar)?;
    let prediction = Prediction::read(&args.prediction)?;
    let (summary, epochs, table): (serde_json::Value, Vec<EpochPower>, Vec<(String, String)>) =
        match args.system {
            SystemArg::Sla => {
                let policy = sla_policy.expect("parsed above");
                let cfg = SlaConfig {
                    seed: args.seed,
                    sa_job_limit: args.sa_jobs.0,
                    ..SlaConfig::default()
                };
                let s = simulate_sla(&jobs, &solar, &prediction, &cfg, policy)?;
                let rows = vec![
                    ("policy".into(), args.policy.clone()),
                    ("profit ($)".into(), format!("{:.2}", s.profit)),
                    ("admitted".into(), s.admitted.to_string()),
                    ("rejected".into(), s.rejected.to_string()),
                    ("Green SLA violations".into(), s.violations.to_string()),
                    ("green used (kWh)".into(), format!("{:.1}", s.green_kwh)),
                    ("brown used (kWh)".into(), format!("{:.1}", s.brown_kwh)),
                ];
                (serde_json::to_value(&s)?, s.epochs.clone(), rows)
            }
            SystemArg::Par => {
                anyhow::ensure!(
                    args.slowdown.is_finite() && args.slowdown >= 1.0,
                    "--slowdown: must be at least 1, found {}",
                    args.slowdown
                );
                let policy = par_policy.expect("parsed above");
                let cfg = ParConfig {
                    slowdown: args.slowdown,
                    servers: args.servers,
                    runtime_error: args.runtime_error,
                    ..ParConfig::default()
                };
                let s = simulate_par(&jobs, &solar, &prediction, &cfg, policy)?;
                let rows = vec![
                    ("policy".into(), args.policy.clone()),
                    ("brown used (kWh)".into(), format!("{:.2}", s.brown_kwh)),
                    ("green used (kWh)".into(), format!("{:.2}", s.green_kwh)),
                    (
                        "mean runtime (h)".into(),
                        format!("{:.3}", s.mean_runtime_h),
                    ),
                ];
                (serde_json::to_value(&s)?, s.epochs.clone(), rows)
            }
        };
    let mut summary = summary;
    if let Some(fields) = summary.as_object_mut() {
        // The profile goes to --profile and --chart, not into the one-line summary.
        fields.remove("epochs");
    }
    if let Some(path) = &args.chart {
        let title = format!("{} on {}", args.policy, args.jobs.display());
        power_chart(path, &title, &epochs)?;
    }
    if let Some(path) = &args.profile {
        write_output(Some(path.as_path()), |w| {
            writeln!(
                w,
                "time_h,produced_kw,predicted_kw,green_sla_kw,green_other_kw,brown_kw,servers"
            )?;
            for e in &epochs {
                writeln!(
                    w,
                    "{},{:.4},{:.4},{:.4},{:.4},{:.4},{}",
                    e.time_h,
                    e.produced_kw,
                    e.predicted_kw,
                    e.green_sla_kw,
                    e.green_other_kw,
                    e.brown_kw,
                    e.servers
                )?;
            }
            Ok(())
        })?;
    }
    write_output(None, |w| match args.format {
        GreenFormat::Json => {
            serde_json::to_writer(&mut *w, &summary)?;
            writeln!(w)
        }
        GreenFormat::Table => {
            let width = table.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (k, v) in &table {
                writeln!(w, "{k:width$}  {v}")?;
            }
            Ok(())
        }
    })
}
