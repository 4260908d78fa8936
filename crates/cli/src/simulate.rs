//! `tailor simulate`: one simulated run, or a sweep of policies x loads.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use tailor_core::{
    Arrivals, Calibration, CoreSet, Demand, DemandModel, Dissolve, HeteroPolicy, RunSummary,
    SpeedTrace, Speedup, StealPolicy, Tables, HETERO_POLICY_FORMS,
};
use tailor_sim::{
    normalize_to_ee, write_records, write_shard_records, write_sweep, write_trace, HeteroSimConfig,
    Joins, ShardRecord, SimConfig, SimOutput, SimRun, Sleep, StealSimConfig, StealSize,
};

use crate::bounds;
use crate::plan::Threads;
use crate::{interactive, write_output, AnyPolicy, PathArg};

/// `--joins`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum JoinsArg {
    /// A core leaves as soon as its piece ends.
    Free,
    /// A core waits for the pieces stolen from it.
    Held,
}

/// `--steal-size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StealSizeArg {
    /// Half of the victim's unstarted units at the steal.
    HalfNow,
    /// The half the victim offered at its last split.
    LastSplit,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SummaryFormat {
    /// A table for people (the default for sweeps).
    Table,
    /// One run summary JSON per line (the default for a single run).
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor simulate --cores 16 --policy seq --demand shape:lucene --rps 40 \\
      --requests 100000
  tailor simulate --cores 16 --policy fm --table fm-table.json --demand \\
      profile:profile.csv --rps 20:60:10 --requests 50000")]
pub(crate) struct SimulateArgs {
    /// M identical cores, or COUNT@SPEED,... (e.g. 8@1,1@2: eight slow cores and one
    /// twice as fast), for the heterogeneous-core policies; with --pstates, a count.
    #[arg(long)]
    cores: String,
    /// POLICY: seq, fix:N, fix:N:boost, fix:N:gate=K, interval:D_MS:N, adaptive, rc:THRESHOLD_MS:N,
    /// fm, fm:noboost; or a work-stealing one: steal-first, admit-first, random-admit,
    /// tail-control, tail-control-clairvoyant; or, on cores of several speeds, one of
    /// eetl:TARGET_MS, rtl, ee, oblivious, rc-hetero:WORK_MS, s2f:T1[:T2...],
    /// reactive:TARGET_MS; or, with --pstates, eetl-dvfs:TARGET_MS, tl-dvfs,
    /// s2f-dvfs:T1[:T2...], pegasus:TARGET_MS, schedutil, max. Repeat for a sweep.
    #[arg(long = "policy", required = true)]
    policies: Vec<String>,
    /// DEMAND: exp:MEAN, const:MS, lognormal:MEAN:SD, profile:PATH, distribution:PATH,
    /// shape:bing, shape:lucene, shape:finance.
    #[arg(long)]
    demand: String,
    /// SPEEDUP: linear, amdahl:F, table:S1,S2,..., profile (default: each request's own
    /// for profiles and shapes, linear otherwise).
    #[arg(long)]
    speedup: Option<String>,
    /// ARRIVALS: poisson, lognormal:SD_MS, trace:PATH, phases:RPS*COUNT,...
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Requests per second, or A:B:STEP for a sweep from A to B.
    #[arg(long)]
    rps: String,
    /// Requests per run (phases fix their own count).
    #[arg(long, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Random seed: the same seed gives every policy the same arrivals and demands.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run each policy and load with seeds SEED, SEED+1, ..., SEED+N-1; the table shows
    /// the median over them.
    #[arg(long, default_value_t = 1, value_parser = bounds::SEEDS)]
    seeds: usize,
    /// Table files for fm (from `tailor plan fm`), adaptive (`tailor plan adaptive`) and
    /// tail-control (`tailor plan tail-control`); repeat to give several.
    #[arg(long = "table")]
    tables: Vec<PathArg>,
    /// Self-scheduling quantum.
    #[arg(long = "quantum", value_name = "DURATION", default_value = "5ms", value_parser = bounds::QUANTUM)]
    quantum_ms: f64,
    /// Latency target, e.g. 50ms: the summary adds the fraction of requests above it.
    #[arg(long = "target", value_name = "DURATION", value_parser = bounds::TIME)]
    target_ms: Option<f64>,
    /// Requests left out of the statistics at the start (default: 5%).
    #[arg(long, value_parser = bounds::COUNT0)]
    warmup: Option<usize>,
    /// Worker threads for policies with a pool, all but FM, which admits by its table
    /// and ignores this (default: one per core).
    #[arg(long, value_parser = bounds::THREADS)]
    workers: Option<usize>,
    /// Nice value of FM's boosted threads (ordinary threads run at nice 0).
    #[arg(long, default_value_t = -20, allow_hyphen_values = true)]
    boost_nice: i32,
    /// Thread-pool policies: how many threads a request at degree d keeps busy when
    /// cores are shared: d (`held`, the FM paper's model) or s(d) (`busy`: threads leave
    /// a request with no unit left, as in tailor's runtime).
    #[arg(long, value_enum, default_value_t = Threads::Held)]
    thread_model: Threads,
    /// Thread-pool policies: a machine's calibration from `tailor calibrate`. The run then
    /// follows the runtime thread by thread, unit by unit, and charges what the
    /// calibration measured: hand-off delays, helper costs, merges and the slowdown
    /// under load (docs/calibration.md); --thread-model is not used.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathArg>,
    /// With --calibration: model FM without its core guard, as the FM paper's runtime
    /// (`tailor run --no-guard`).
    #[arg(long, requires = "calibration")]
    no_guard: bool,
    /// Write per-request records (CSV) of a single run here.
    #[arg(long)]
    records: Option<PathArg>,
    /// Write requests and threads over time (CSV) of a single run here.
    #[arg(long)]
    trace: Option<PathArg>,
    /// Output format (default: json for a single run, table for a sweep).
    #[arg(long, value_enum)]
    format: Option<SummaryFormat>,
    /// Work-stealing policies: the grain of a request's parallel-for (the synthetic
    /// workload's units are 0.25ms).
    #[arg(long = "unit-time", value_name = "DURATION", default_value = "0.25ms", value_parser = bounds::TIME)]
    unit_ms: f64,
    /// Tail-control: how a marked request's parallelism dissolves. `prompt` (the paper's
    /// §4.1 model): every core but one leaves it at once, handing its range back;
    /// `lazy` (TBB's): thieves stop taking from it and its cores leave as their pieces
    /// end.
    #[arg(long, default_value = "prompt", value_parser = parse_dissolve)]
    dissolve: Dissolve,
    /// Work-stealing policies: model sleeping cores, which take this long to wake (e.g.
    /// 0.05ms) once work appears (the executor's condition-variable wake-up; measure it with
    /// `scripts/reproduce-tc.py calibrate`). Default: idle cores never sleep.
    #[arg(long = "wake", value_name = "DURATION", value_parser = bounds::TIME0)]
    wake_ms: Option<f64>,
    /// With `--wake`: how long an idle core spins before it sleeps; the executor spins
    /// and yields for about 0.05ms.
    #[arg(long = "spin", value_name = "DURATION", default_value = "0.05ms", value_parser = bounds::TIME0, requires = "wake_ms")]
    spin_ms: f64,
    /// Work-stealing policies: replay a host's work speed over time, a CSV of
    /// `start_ms,work_scale` as `tailor run --speed-trace` writes it (a core drains
    /// 1/scale work-ms per ms). Default: one work-ms per ms throughout.
    #[arg(long, value_name = "FILE")]
    speed_trace: Option<PathBuf>,
    /// Work-stealing policies: whether a core whose piece ends leaves the request at once
    /// (`free`, the default) or waits for the pieces thieves took from it, helping only
    /// that request (`held`: tailor's executor, whose joins hold the worker's stack).
    #[arg(long, value_enum, default_value_t = JoinsArg::Free)]
    joins: JoinsArg,
    /// Work-stealing policies: what a thief takes, `half-now` (half of the victim's
    /// unstarted units at the steal, the default) or `last-split` (the half the victim
    /// offered when it last split: lazy binary splitting, as tailor's executor does).
    #[arg(long, value_enum, default_value_t = StealSizeArg::HalfNow)]
    steal_size: StealSizeArg,
    #[command(flatten)]
    fanout: crate::simulate_fanout::FanoutArgs,
    #[command(flatten)]
    dvfs: crate::simulate_dvfs::DvfsArgs,
}

/// Parses `--dissolve`.
pub(crate) fn parse_dissolve(text: &str) -> Result<Dissolve, String> {
    Dissolve::parse(text).map_err(|e| e.to_string())
}

/// Parses `--cores` for a model of identical speed-1 cores: M, or COUNT@1,...
pub(crate) fn parse_uniform_cores(text: &str) -> anyhow::Result<usize> {
    let cores = CoreSet::parse(text)?;
    ensure_uniform(&cores, "this command")?;
    Ok(cores.total())
}

/// Refuses core speeds other than 1 for `what`, which models identical cores.
fn ensure_uniform(cores: &CoreSet, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        cores.is_uniform_unit(),
        "--cores {}: {what} runs on identical speed-1 cores; core speeds are for the \
         heterogeneous-core policies ({HETERO_POLICY_FORMS})",
        cores.spec()
    );
    Ok(())
}

/// Which engine runs a policy.
#[derive(Debug, Clone)]
enum Family {
    Threads,
    Steal(StealPolicy),
    Hetero(HeteroPolicy),
    Dvfs(tailor_core::DvfsPolicy),
    Fanout,
}

pub(crate) fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let core_set = CoreSet::parse(&args.cores)?;
    let cores = core_set.total();
    let chip = args.dvfs.chip(cores)?;
    let rps_list = bounds::parse_rps(&args.rps)?;
    let tables = Tables::read(&args.tables)?;
    let policies = args
        .policies
        .iter()
        .map(|p| AnyPolicy::parse(p, &tables))
        .collect::<Result<Vec<_>, _>>()?;
    let speed = args
        .speed_trace
        .as_deref()
        .map(SpeedTrace::read)
        .transpose()
        .context("--speed-trace")?;
    let calibration = args
        .calibration
        .as_deref()
        .map(|p| Calibration::read(p).map(Arc::new))
        .transpose()?;
    let demand = Demand::parse(&args.demand)?;
    let speedup = args.speedup.as_deref().map(Speedup::parse).transpose()?;
    let demand = DemandModel::new(demand, speedup)?;
    let arrivals = Arrivals::parse(&args.arrivals)?;
    let seeds: Vec<u64> = (0..args.seeds as u64)
        .map(|i| args.seed.wrapping_add(i))
        .collect();
    let mut runs: Vec<SimRun> = Vec::new();
    for policy in &policies {
        let (threads, steal) = policy.split();
        let family = match (policy, steal) {
            (AnyPolicy::Hetero(h), _) => Family::Hetero(h.clone()),
            (AnyPolicy::Dvfs(d), _) => Family::Dvfs(d.clone()),
            (_, Some(s)) => Family::Steal(s),
            (_, None) if args.fanout.shards.is_some() => Family::Fanout,
            (_, None) => Family::Threads,
        };
        let dvfs = matches!(family, Family::Dvfs(_));
        crate::simulate_dvfs::check_family(chip.as_ref(), dvfs, &policy.name())?;
        if args.fanout.shards.is_some() && !matches!(family, Family::Fanout) {
            bail!(
                "--shards: the fan-out runs thread-pool policies (seq, fix, interval, rc, \
                 adaptive, fm), not {}",
                policy.name()
            );
        }
        for (flag, given) in [
            ("--wake", args.wake_ms.is_some()),
            ("--speed-trace", args.speed_trace.is_some()),
            ("--joins held", args.joins == JoinsArg::Held),
            (
                "--steal-size last-split",
                args.steal_size == StealSizeArg::LastSplit,
            ),
        ] {
            if given && !matches!(family, Family::Steal(_)) {
                bail!(
                    "{flag}: modelled for the work-stealing policies (steal-first, \
                     admit-first, random-admit, tail-control), not {}",
                    policy.name()
                );
            }
        }
        if !matches!(family, Family::Hetero(_)) {
            ensure_uniform(&core_set, &format!("--policy {}", policy.name()))?;
        }
        if calibration.is_some() && !matches!(family, Family::Threads) {
            bail!(
                "--calibration: the charged model runs the thread-pool policies (seq, fix, \
                 interval, rc, adaptive, fm) on one server, not {}{}",
                policy.name(),
                if args.fanout.shards.is_some() {
                    " behind a fan-out (--shards)"
                } else {
                    ""
                }
            );
        }
        for &rps in &rps_list {
            for &seed in &seeds {
                let mut cfg = SimConfig::new(
                    cores,
                    threads.clone(),
                    demand.clone(),
                    arrivals.clone(),
                    rps,
                    args.requests,
                    seed,
                );
                cfg.quantum_ms = args.quantum_ms;
                cfg.target_ms = args.target_ms;
                cfg.warmup = args.warmup;
                cfg.workers = args.workers;
                cfg.boost_nice = args.boost_nice;
                cfg.thread_model = args.thread_model.into();
                cfg.calibration = calibration.clone();
                cfg.guard = !args.no_guard;
                cfg.trace = args.trace.is_some();
                cfg.records = args.records.is_some();
                cfg.capacity = match (&family, &chip) {
                    (Family::Hetero(_), _) => Some(core_set.capacity()),
                    (Family::Dvfs(_), Some(chip)) => Some(chip.capacity()),
                    _ => None,
                };
                runs.push(match &family {
                    Family::Threads => SimRun::Threads(cfg),
                    Family::Fanout => SimRun::Fanout(args.fanout.config(cfg).expect("fan-out")),
                    Family::Steal(policy) => SimRun::Steal(StealSimConfig {
                        base: cfg,
                        policy: policy.clone(),
                        unit_ms: args.unit_ms,
                        dissolve: args.dissolve,
                        sleep: args.wake_ms.map(|wake_ms| Sleep {
                            spin_ms: args.spin_ms,
                            wake_ms,
                        }),
                        speed: speed.clone(),
                        joins: match args.joins {
                            JoinsArg::Free => Joins::Free,
                            JoinsArg::Held => Joins::Held,
                        },
                        steal_size: match args.steal_size {
                            StealSizeArg::HalfNow => StealSize::HalfNow,
                            StealSizeArg::LastSplit => StealSize::LastSplit,
                        },
                    }),
                    Family::Hetero(policy) => SimRun::Hetero(HeteroSimConfig {
                        base: cfg,
                        cores: core_set.clone(),
                        policy: policy.clone(),
                        open_loop: None,
                    }),
                    Family::Dvfs(policy) => {
                        let chip = chip.as_ref().expect("checked: DVFS has --pstates");
                        SimRun::Dvfs(args.dvfs.config(cfg, chip, policy))
                    }
                });
            }
        }
    }
    for run in &runs {
        run.validate()
            .with_context(|| format!("{} at {} rps", run.policy_name(), run.base().rps))?;
    }
    let single = runs.len() == 1;
    if !single && (args.records.is_some() || args.trace.is_some()) {
        bail!("--records and --trace need a single run: one --policy, --rps and seed");
    }
    let format = args.format.unwrap_or(if single {
        SummaryFormat::Json
    } else {
        SummaryFormat::Table
    });

    let done = AtomicUsize::new(0);
    let show = interactive() && !single;
    let outputs = runs
        .par_iter()
        .map(|run| {
            let out = run.simulate();
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if show {
                eprint!("\rsimulated {n} of {} runs", runs.len());
            }
            out
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (outputs, shard_records): (Vec<SimOutput>, Vec<Vec<ShardRecord>>) =
        outputs.into_iter().unzip();
    if show {
        eprintln!();
    }
    if let Some(path) = &args.records {
        write_output(Some(path.as_path()), |w| match args.fanout.shards {
            Some(_) => write_shard_records(&shard_records[0], w),
            None => write_records(&outputs[0].records, w),
        })?;
    }
    if let Some(path) = &args.trace {
        write_output(Some(path.as_path()), |w| write_trace(&outputs[0].trace, w))?;
    }
    let mut summaries: Vec<RunSummary> = outputs.into_iter().map(|o| o.summary).collect();
    normalize_to_ee(&mut summaries);
    write_output(None, |w| match format {
        SummaryFormat::Json => {
            for s in &summaries {
                serde_json::to_writer(&mut *w, s)?;
                writeln!(w)?;
            }
            Ok(())
        }
        SummaryFormat::Table => write_sweep(&summaries, &rps_list, seeds.len(), w),
    })
}
