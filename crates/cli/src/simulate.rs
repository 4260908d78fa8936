//! `tailor simulate`: one simulated run, or a sweep of policies x loads.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use tailor_core::{
    Arrivals, Calibration, CoreSet, Demand, DemandModel, Dissolve, HeteroPolicy, Noise, Reissue,
    RunSummary, SpeedTrace, Speedup, StealPolicy, Tables, HETERO_POLICY_FORMS,
};
use tailor_sim::{
    simulate, simulate_fanout, simulate_hetero, simulate_steal, write_records, write_shard_records,
    write_trace, FanoutConfig, HeteroSimConfig, Joins, Select, ShardRecord, SimConfig, SimOutput,
    Sleep, StealSimConfig, StealSize,
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
pub(crate) struct SimulateArgs {
    /// M identical cores, or COUNT@SPEED,... (e.g. 8@1,1@2: eight slow cores and one
    /// twice as fast), for the heterogeneous-core policies.
    #[arg(long)]
    cores: String,
    /// POLICY: seq, fix:N, fix:N:boost, fix:N:gate=K, interval:D_MS:N, adaptive, rc:THRESHOLD_MS:N,
    /// fm, fm:noboost; or a work-stealing one: steal-first, admit-first, random-admit,
    /// tail-control, tail-control-clairvoyant; or, on cores of several speeds, one of
    /// eetl:TARGET_MS, rtl, ee, oblivious, rc-hetero:WORK_MS, s2f:T1[:T2...],
    /// reactive:TARGET_MS. Repeat for a sweep.
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
    #[arg(long)]
    arrivals: String,
    /// Requests per second, or A:B:STEP for a sweep from A to B.
    #[arg(long)]
    rps: String,
    /// Requests per run (phases fix their own count).
    #[arg(long, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Random seed: the same seed gives every policy the same arrivals and demands.
    #[arg(long)]
    seed: u64,
    /// Run each policy and load with seeds SEED, SEED+1, ..., SEED+N-1; the table shows
    /// the median over them.
    #[arg(long, default_value_t = 1, value_parser = bounds::SEEDS)]
    seeds: usize,
    /// Table files for fm (from `tailor plan fm`), adaptive (`tailor plan adaptive`) and
    /// tail-control (`tailor plan tail-control`); repeat to give several.
    #[arg(long = "table")]
    tables: Vec<PathArg>,
    /// Self-scheduling quantum in ms.
    #[arg(long, default_value_t = 5.0, value_parser = bounds::QUANTUM_MS)]
    quantum_ms: f64,
    /// Latency target in ms: the summary adds the fraction of requests above it.
    #[arg(long, value_parser = bounds::MS)]
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
    /// Work-stealing policies: the grain of a request's parallel-for in ms (the
    /// synthetic workload's units are 0.25 ms).
    #[arg(long, default_value_t = 0.25, value_parser = bounds::MS)]
    unit_ms: f64,
    /// Tail-control: how a marked request's parallelism dissolves. `prompt` (the paper's
    /// §4.1 model): every core but one leaves it at once, handing its range back;
    /// `lazy` (TBB's): thieves stop taking from it and its cores leave as their pieces
    /// end.
    #[arg(long, default_value = "prompt", value_parser = parse_dissolve)]
    dissolve: Dissolve,
    /// Work-stealing policies: model sleeping cores, which take this long (ms) to wake
    /// once work appears (the executor's condition-variable wake-up; measure it with
    /// `scripts/reproduce-tc.py calibrate`). Default: idle cores never sleep.
    #[arg(long, value_parser = bounds::MS0)]
    wake_ms: Option<f64>,
    /// With `--wake-ms`: how long an idle core spins before it sleeps (ms); the executor
    /// spins and yields for about 0.05 ms.
    #[arg(long, default_value_t = 0.05, value_parser = bounds::MS0, requires = "wake_ms")]
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
    fanout: FanoutArgs,
}

/// Fan-out over replicated shards (issue #24): thread-pool policies only.
#[derive(Debug, Args)]
pub(crate) struct FanoutArgs {
    /// Fan each query out to S shards (one request per shard, each drawing its own work
    /// from DEMAND); the query answers when every shard has. --rps and --requests are
    /// then queries.
    #[arg(long, value_parser = bounds::SHARDS)]
    shards: Option<usize>,
    /// Replicas of each shard, each a server of --cores cores running --policy.
    #[arg(long, value_parser = bounds::REPLICAS, default_value_t = 1, requires = "shards")]
    replicas: usize,
    /// When a shard request is sent again to another replica: none, single-d:D_MS,
    /// single-r:D_MS:Q (SingleR: with probability Q after D_MS), hedge:PERCENTILE (after
    /// that percentile of the shard's latencies over the previous --hedge-period-s, as
    /// `tailor fanout` hedges).
    #[arg(long, default_value = "none", value_parser = parse_reissue, requires = "shards")]
    reissue: Reissue,
    /// Replica stalls: RATE_PER_S:LENGTH_MS (stall starts a Poisson process per replica).
    #[arg(long, value_parser = parse_noise, requires = "shards")]
    noise: Option<Noise>,
    /// How the front end picks a shard's replica.
    #[arg(long, value_enum, default_value_t = Pick::Random, requires = "shards")]
    select: Pick,
    /// Let the losing copy of a reissued request run to its end instead of cancelling it.
    #[arg(long, requires = "shards")]
    no_cancel: bool,
    /// Hedging: seconds per period of each shard's latency histogram; hedges use the
    /// previous period's percentile once it has 100 latencies (as `tailor fanout`).
    #[arg(long, default_value_t = tailor_sim::DEFAULT_HEDGE_PERIOD_MS / 1000.0,
          value_parser = bounds::SECONDS, requires = "shards")]
    hedge_period_s: f64,
}

/// `--select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Pick {
    /// Uniformly at random.
    Random,
    /// The fewest requests outstanding from the front end.
    LeastLoaded,
}

fn parse_reissue(text: &str) -> Result<Reissue, String> {
    Reissue::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn parse_noise(text: &str) -> Result<Noise, String> {
    Noise::parse(text).map_err(|e| e.to_string())
}

impl FanoutArgs {
    /// The fan-out of `server`, if asked for.
    fn config(&self, server: SimConfig) -> Option<FanoutConfig> {
        let shards = self.shards?;
        let mut cfg = FanoutConfig::new(server, shards, self.replicas);
        cfg.reissue = self.reissue;
        cfg.noise = self.noise;
        cfg.hedge_period_ms = 1000.0 * self.hedge_period_s;
        cfg.select = match self.select {
            Pick::Random => Select::Random,
            Pick::LeastLoaded => Select::LeastLoaded,
        };
        cfg.cancel = !self.no_cancel;
        cfg.records = cfg.server.records;
        Some(cfg)
    }
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

/// Normalizes energy as the dissertation does (ch. 5, §5.3.1): to EE's energy per
/// request at the lowest load, when the sweep has EE (per seed); otherwise the summaries
/// keep their own baseline.
fn normalize_to_ee(summaries: &mut [RunSummary]) {
    let bases: Vec<(u64, f64, f64)> = summaries
        .iter()
        .filter(|s| s.policy == "ee")
        .filter_map(|s| s.energy.as_ref().map(|e| (s.seed, s.rps, e.per_request)))
        .collect();
    for s in summaries.iter_mut() {
        let lowest = bases
            .iter()
            .filter(|b| b.0 == s.seed)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(&(_, rps, base)), Some(e)) = (lowest, s.energy.as_mut()) {
            e.normalized = e.per_request / base;
            e.baseline = format!("ee at {rps} rps");
        }
    }
}

/// Which engine runs a policy.
#[derive(Debug, Clone)]
enum Family {
    Threads,
    Steal(StealPolicy),
    Hetero(HeteroPolicy),
    Fanout,
}

fn policy_name(p: &AnyPolicy) -> String {
    match p {
        AnyPolicy::Threads(p) => p.name(),
        AnyPolicy::Steal(p) => p.name().to_string(),
        AnyPolicy::Hetero(p) => p.name(),
    }
}

/// Parses `--rps`: R, or A:B:STEP (inclusive of B, within rounding).
pub(crate) fn parse_rps(text: &str) -> anyhow::Result<Vec<f64>> {
    let number = |t: &str| -> anyhow::Result<f64> {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|&v| bounds::RPS.accepts(v))
            .with_context(|| {
                format!(
                    "--rps {}: expected {}",
                    bounds::clip(t),
                    bounds::RPS.expected()
                )
            })
    };
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [r] => Ok(vec![number(r)?]),
        [a, b, step] => {
            let (a, b, step) = (number(a)?, number(b)?, number(step)?);
            anyhow::ensure!(a <= b, "--rps: the sweep's start {a} is above its end {b}");
            let n = ((b - a) / step + 1e-9).floor() as usize + 1;
            anyhow::ensure!(n <= 10_000, "--rps: {n} loads is too many for one sweep");
            Ok((0..n).map(|i| a + i as f64 * step).collect())
        }
        _ => bail!(
            "--rps: expected R or A:B:STEP, found {:?}",
            bounds::clip(text)
        ),
    }
}

pub(crate) fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let core_set = CoreSet::parse(&args.cores)?;
    let cores = core_set.total();
    let rps_list = parse_rps(&args.rps)?;
    let tables = Tables::read(&args.tables)?;
    let policies = args
        .policies
        .iter()
        .map(|p| AnyPolicy::parse(p, &tables))
        .collect::<Result<Vec<_>, _>>()?;
    anyhow::ensure!(
        args.unit_ms.is_finite() && args.unit_ms >= 0.0,
        "--unit-ms: must be zero or positive, found {}",
        args.unit_ms
    );
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
    let mut configs: Vec<(SimConfig, Family)> = Vec::new();
    for policy in &policies {
        let (threads, steal) = policy.split();
        let family = match (policy, steal) {
            (AnyPolicy::Hetero(h), _) => Family::Hetero(h.clone()),
            (_, Some(s)) => Family::Steal(s),
            (_, None) if args.fanout.shards.is_some() => Family::Fanout,
            (_, None) => Family::Threads,
        };
        if args.fanout.shards.is_some() && !matches!(family, Family::Fanout) {
            bail!(
                "--shards: the fan-out runs thread-pool policies (seq, fix, interval, rc, \
                 adaptive, fm), not {}",
                policy_name(policy)
            );
        }
        for (flag, given) in [
            ("--wake-ms", args.wake_ms.is_some()),
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
                    policy_name(policy)
                );
            }
        }
        if !matches!(family, Family::Hetero(_)) {
            ensure_uniform(&core_set, &format!("--policy {}", policy_name(policy)))?;
        }
        if calibration.is_some() && !matches!(family, Family::Threads) {
            bail!(
                "--calibration: the charged model runs the thread-pool policies (seq, fix, \
                 interval, rc, adaptive, fm) on one server, not {}{}",
                policy_name(policy),
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
                if matches!(family, Family::Hetero(_)) {
                    cfg.capacity = Some(core_set.capacity());
                }
                configs.push((cfg, family.clone()));
            }
        }
    }
    for (cfg, family) in &configs {
        let name = match family {
            Family::Threads | Family::Fanout => cfg.policy.name(),
            Family::Steal(p) => p.name().to_string(),
            Family::Hetero(p) => p.name(),
        };
        match args.fanout.config(cfg.clone()) {
            Some(fanout) => fanout.validate(),
            None => cfg.validate(),
        }
        .with_context(|| format!("{name} at {} rps", cfg.rps))?;
    }
    let single = configs.len() == 1;
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
    let outputs = configs
        .par_iter()
        .map(|(cfg, family)| {
            let mut shard_records = Vec::new();
            let out = match family {
                Family::Threads => simulate(cfg),
                Family::Fanout => {
                    simulate_fanout(&args.fanout.config(cfg.clone()).expect("fan-out")).map(|o| {
                        shard_records = o.records;
                        SimOutput {
                            summary: o.summary,
                            records: Vec::new(),
                            trace: Vec::new(),
                        }
                    })
                }
                Family::Steal(policy) => simulate_steal(&StealSimConfig {
                    base: cfg.clone(),
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
                Family::Hetero(policy) => simulate_hetero(&HeteroSimConfig {
                    base: cfg.clone(),
                    cores: core_set.clone(),
                    policy: policy.clone(),
                    open_loop: None,
                }),
            };
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if show {
                eprint!("\rsimulated {n} of {} runs", configs.len());
            }
            out.map(|o| (o, shard_records))
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
        SummaryFormat::Table => print_sweep(&summaries, &rps_list, seeds.len(), w),
    })
}

/// The policy x load table of p99 and mean latency, each the median over the seeds.
pub(crate) fn print_sweep(
    summaries: &[RunSummary],
    rps_list: &[f64],
    seeds: usize,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let mut policies: Vec<&str> = Vec::new();
    for s in summaries {
        if !policies.contains(&s.policy.as_str()) {
            policies.push(&s.policy);
        }
    }
    let width = policies.iter().map(|p| p.len()).max().unwrap_or(6).max(6);
    for (title, pick) in [
        (
            "p99 latency (ms)",
            (|s: &RunSummary| s.latency_ms.p99) as fn(&RunSummary) -> f64,
        ),
        ("mean latency (ms)", |s| s.latency_ms.mean),
        ("target misses (%)", |s| {
            s.miss_ratio.map_or(f64::NAN, |m| 100.0 * m)
        }),
        ("energy per request (model units)", |s| {
            s.energy.as_ref().map_or(f64::NAN, |e| e.per_request)
        }),
    ] {
        if title.starts_with("target") && summaries.iter().all(|s| s.miss_ratio.is_none()) {
            continue;
        }
        if title.starts_with("energy") && summaries.iter().all(|s| s.energy.is_none()) {
            continue;
        }
        if seeds > 1 {
            writeln!(w, "{title}, median of {seeds} seeds")?;
        } else {
            writeln!(w, "{title}")?;
        }
        write!(w, "{:>8}", "rps")?;
        for p in &policies {
            write!(w, "  {p:>width$}")?;
        }
        writeln!(w)?;
        for &rps in rps_list {
            write!(w, "{rps:>8.1}")?;
            for p in &policies {
                let cell = median(
                    summaries
                        .iter()
                        .filter(|s| s.policy == *p && s.rps == rps)
                        .map(pick)
                        .collect(),
                );
                write!(w, "  {cell:>width$.1}")?;
            }
            writeln!(w)?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// The median (the mean of the middle two for an even count); NaN for none.
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}
