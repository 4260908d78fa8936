//! `tailor run`: a live, open-loop run of a workload on the runtime.

use anyhow::Context;
use clap::Args;
use std::sync::Arc;
use std::time::Duration;

use tailor_bench::{
    run_live, run_live_keeping_units, write_records_with_units, AsianSource, BlackScholesSource,
    HeteroLive, LiveConfig, LiveOutput, Scheduler, SchedulerGuard, SearchSource, SyntheticSource,
};
use tailor_core::{exact_quantile, identify_schedule, Arrivals, CoreSet, DemandProfile, Tables};
use tailor_workloads::{PdeCalibration, Workload};

use crate::bounds;
use crate::scheduler::{describe, SchedulerArg};
use crate::search::SearchArgs;
use crate::{write_output, AnyPolicy, PathArg};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor run --workload synthetic:exp:5 --policy fix:2 --rps 150 --requests 5000
  tailor run --workload search --policy fm --table fm-table.json --rps 300 \\
      --requests 20000")]
pub(crate) struct RunArgs {
    /// WORKLOAD: synthetic:DEMAND[:SPEEDUP], with SPEEDUP linear (default) or amdahl:F;
    /// black-scholes:DEMAND (PDE option pricing, one option per unit); or search
    /// (tantivy; see the search flags).
    #[arg(long)]
    workload: String,
    /// POLICY, as for `tailor simulate` (work-stealing policies run every request as a
    /// parallel-for of its units on the work-stealing executor); or `rayon`, the peer: a
    /// rayon pool of one thread per core runs each request as a parallel iterator.
    #[arg(long)]
    policy: String,
    /// Requests per second.
    #[arg(long, value_parser = bounds::RPS)]
    rps: f64,
    /// Requests in the run (phases fix their own count).
    #[arg(long, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Seed of the workload: the same seed gives `tailor simulate` the same requests.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Table files for fm, adaptive and tail-control; repeat to give several.
    #[arg(long = "table")]
    tables: Vec<PathArg>,
    /// Latency target, e.g. 50ms: the summary adds the fraction of requests above it.
    #[arg(long = "target", value_name = "DURATION", value_parser = bounds::TIME)]
    target_ms: Option<f64>,
    /// ARRIVALS: poisson, lognormal:SD_MS, trace:PATH, phases:RPS*COUNT,...
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Cores the policy plans for (default: the machine's): M, or COUNT@SPEED,... for
    /// the heterogeneous-core policies (core i runs on CPU i; slower types are emulated
    /// by duty cycling).
    #[arg(long)]
    cores: Option<String>,
    /// DVFS cores: P-states S1:P1,... for eetl-dvfs:T, tl-dvfs, s2f-dvfs:T1..
    /// or max, with --cores a count. Every core gets an emulator whose duty follows its
    /// request's P-state; the top state is this machine's own speed.
    #[arg(long)]
    pstates: Option<String>,
    /// With --pstates: how static power follows the P-state, voltage, fixed or busy:W.
    #[arg(long, default_value = "voltage", requires = "pstates")]
    static_power: String,
    /// Heterogeneous cores: the slow-core emulators' duty-cycle period (0s: no
    /// emulation).
    #[arg(long = "emulation-period", value_name = "DURATION", default_value = "250us", value_parser = bounds::SHORT0)]
    emulation_period_ms: f64,
    /// Heterogeneous cores: the time each period costs other threads beyond the
    /// emulator's share, given back by the emulator (`tailor emulate` measures it).
    #[arg(long = "emulation-loss", value_name = "DURATION", default_value = "10us", value_parser = bounds::SHORT0)]
    emulation_loss_ms: f64,
    /// With --policy eetl:T and its plan: hold the thresholds open loop at z·t*, z from
    /// the identification schedule seeded by --seed (each level held two epochs of the
    /// plan's window), instead of controlling them. The summary's epochs then identify
    /// the live plant: `tailor plan eetl --live-runs`.
    #[arg(long)]
    open_loop: bool,
    /// Self-scheduling quantum, e.g. 5ms (default: the FM table's step when one is given,
    /// else 5ms).
    #[arg(long = "quantum", value_name = "DURATION", value_parser = bounds::QUANTUM)]
    quantum_ms: Option<f64>,
    /// Tail-control on the work-stealing executor: how a marked request dissolves.
    /// `prompt`: the workers that stole parts of it hand them back to its root worker
    /// and leave at their next unit boundary; `lazy` (TBB's): only further steals stop.
    #[arg(long, default_value = "prompt", value_parser = crate::simulate::parse_dissolve)]
    dissolve: tailor_core::Dissolve,
    /// Warm-up requests left out of the statistics (default: 5%).
    #[arg(long, value_parser = bounds::COUNT0)]
    warmup: Option<usize>,
    /// Worker threads for policies with a pool, all but FM (default: one per core).
    #[arg(long, value_parser = bounds::THREADS)]
    workers: Option<usize>,
    /// FM without its core guard: the FM paper's runtime (§4.2), whose helpers go
    /// wherever the table says and whose threads may outnumber the cores (docs/guard.md).
    #[arg(long)]
    no_guard: bool,
    /// The summary's format: json (one run summary, as docs/cli.md describes) or table (the
    /// latency table `tailor simulate` prints, for people).
    #[arg(long, value_enum, default_value_t = crate::simulate::SummaryFormat::Json)]
    format: crate::simulate::SummaryFormat,
    /// Write per-request records (CSV) here; with an FM or pool policy they carry each
    /// request's unit times (`units_ms`, `merge_ms`), from which `tailor profile
    /// from-records` builds a profile.
    #[arg(long)]
    records: Option<PathArg>,
    /// How the operating system schedules the request threads: `fair` (SCHED_OTHER),
    /// `rr` (SCHED_RR below the harness's threads; needs root, CAP_SYS_NICE or
    /// RLIMIT_RTPRIO) or `auto` (rr where allowed). On a VM the fair scheduler can leave a
    /// core idle for milliseconds while a request thread waits (docs/demo.md).
    #[arg(long, value_enum, default_value_t = SchedulerArg::Fair)]
    scheduler: SchedulerArg,
    /// Synthetic workload: write the spin loop's work scale (wall time over time asked)
    /// in 100 ms windows from the first arrival here, a CSV of `start_ms,work_scale`
    /// that `tailor simulate --speed-trace` replays.
    #[arg(long, value_name = "FILE")]
    speed_trace: Option<PathArg>,
    /// Synthetic workload: the spin loop's iterations per microsecond, as an earlier run
    /// printed it (default: calibrated now).
    #[arg(long, value_parser = bounds::SPIN_RATE)]
    spin_rate: Option<f64>,
    #[command(flatten)]
    search: SearchArgs,
    /// With search: the queries' profile from `tailor profile --workload search`. Only
    /// the profiled queries run, and their times serve RC's hints and the statistics.
    #[arg(long, value_name = "FILE")]
    search_profile: Option<PathArg>,
    /// With search: run each query on tantivy's own executor with N threads
    /// (`search_with_executor`) instead of splitting it for the policy; use --policy seq.
    #[arg(long, value_name = "N", value_parser = bounds::THREADS)]
    tantivy_executor: Option<usize>,
}

/// The live DVFS cores of `--pstates` with a DVFS policy (`None` with neither).
fn dvfs_live(
    args: &RunArgs,
    policy: Option<tailor_core::DvfsPolicy>,
    cores: Option<&CoreSet>,
) -> anyhow::Result<Option<tailor_runtime::s2f::DvfsLive>> {
    let chip = match (&args.pstates, cores) {
        (None, _) => None,
        (Some(p), Some(c)) if c.is_uniform_unit() => Some(tailor_core::DvfsCores {
            static_rule: tailor_core::StaticRule::parse(&args.static_power)?,
            ..tailor_core::DvfsCores::new(c.total(), tailor_core::PStates::parse(p)?)
        }),
        (Some(_), _) => anyhow::bail!("--pstates: give --cores as a count of cores"),
    };
    crate::simulate_dvfs::check_family(chip.as_ref(), policy.is_some(), &args.policy)?;
    Ok(chip
        .zip(policy)
        .map(|(chip, policy)| tailor_runtime::s2f::DvfsLive { chip, policy }))
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    bounds::ensure_duration(args.requests, args.rps)?;
    let tables = Tables::read(&args.tables)?;
    // `rayon` is the work-stealing family's peer, live only: a rayon pool runs each
    // request's units as a parallel iterator.
    let rayon = args.policy == "rayon";
    let mut dvfs_policy = None;
    let (policy, steal) = if rayon {
        (tailor_core::Policy::Seq, (None, None))
    } else {
        let any = AnyPolicy::parse(&args.policy, &tables)?;
        if let AnyPolicy::Dvfs(p) = &any {
            dvfs_policy = Some(p.clone());
        }
        any.split_hetero()
    };
    let (policy, steal, hetero_policy) = (policy, steal.0, steal.1);
    let workload = Workload::parse(&args.workload)?;
    let core_set = match &args.cores {
        Some(c) => Some(CoreSet::parse(c)?),
        None => None,
    };
    let dvfs = dvfs_live(&args, dvfs_policy, core_set.as_ref())?;
    // DVFS cores run on the heterogeneous-core runtime, one type, placed first come,
    // first served (EE with one type never moves a request).
    let hetero_policy = hetero_policy.or(dvfs.as_ref().map(|_| tailor_core::HeteroPolicy::Ee));
    let hetero = match (hetero_policy, &core_set) {
        (Some(p), Some(cores)) => {
            let open_loop = match (&p, args.open_loop) {
                (_, false) => None,
                (_, true) if dvfs.is_some() => {
                    anyhow::bail!("--open-loop identifies EETL's plant on core types, not --pstates")
                }
                (tailor_core::HeteroPolicy::Eetl(plan), true) => {
                    let count = Arrivals::parse(&args.arrivals)?
                        .fixed_count()
                        .unwrap_or(args.requests);
                    let epochs = count / plan.window + 3;
                    let steps = identify_schedule(args.seed, epochs)
                        .iter()
                        .map(|z| plan.thresholds_ms.iter().map(|t| t * z).collect())
                        .collect();
                    Some((plan.window, steps))
                }
                (p, true) => anyhow::bail!(
                    "--open-loop identifies EETL's plant: use --policy eetl:T with its plan, not {}",
                    p.name()
                ),
            };
            Some(HeteroLive {
                cores: cores.clone(),
                policy: p,
                emulation: (args.emulation_period_ms > 0.0).then(|| {
                    (
                        Duration::from_secs_f64(args.emulation_period_ms / 1000.0),
                        Duration::from_secs_f64(args.emulation_loss_ms / 1000.0),
                    )
                }),
                open_loop,
                dvfs: dvfs.clone(),
            })
        }
        (Some(p), None) => anyhow::bail!(
            "--policy {}: give the heterogeneous cores with --cores COUNT@SPEED,...",
            p.name()
        ),
        (None, Some(cores)) if !cores.is_uniform_unit() => anyhow::bail!(
            "--cores {}: core speeds are for the heterogeneous-core policies ({})",
            cores.spec(),
            tailor_core::HETERO_POLICY_FORMS
        ),
        (None, _) => None,
    };
    anyhow::ensure!(
        !args.open_loop || hetero.is_some(),
        "--open-loop goes with --policy eetl:T and --cores COUNT@SPEED,..."
    );
    let cores = match &core_set {
        Some(c) => c.total(),
        None => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let cfg = LiveConfig {
        cores,
        policy,
        arrivals: Arrivals::parse(&args.arrivals)?,
        rps: args.rps,
        requests: args.requests,
        seed: args.seed,
        quantum_ms: bounds::quantum_ms(args.quantum_ms, &tables),
        target_ms: args.target_ms,
        warmup: args.warmup,
        workers: args.workers,
        guard: !args.no_guard,
        steal,
        dissolve: args.dissolve,
        rayon,
        hetero,
    };
    let count = cfg.arrivals.fixed_count().unwrap_or(cfg.requests);
    let scheduler = args.scheduler.resolve()?;
    eprintln!("tailor: {}", describe(scheduler));
    // Threads started in the guard's scope (the runtime's, tantivy's executor's) inherit
    // its scheduler; it is entered after the search index is ready, not while building it.
    let enter = || SchedulerGuard::enter(scheduler);
    anyhow::ensure!(
        args.speed_trace.is_none() || matches!(workload, Workload::Synthetic { .. }),
        "--speed-trace: only the synthetic workload's spin loop measures its speed"
    );
    let out = match workload {
        Workload::Synthetic { demand, shape } => {
            anyhow::ensure!(
                args.search_profile.is_none() && args.tantivy_executor.is_none(),
                "--search-profile and --tantivy-executor go with --workload search"
            );
            let source = SyntheticSource::new(
                &demand,
                shape,
                crate::spinner(args.spin_rate)?,
                count,
                cfg.seed,
            );
            let _scheduler = enter()?;
            live(&args, &cfg, &Arc::new(source))?
        }
        Workload::Search => run_search(&args, &cfg, count, scheduler)?,
        Workload::BlackScholes { demand } => {
            anyhow::ensure!(
                args.search_profile.is_none() && args.tantivy_executor.is_none(),
                "--search-profile and --tantivy-executor go with --workload search"
            );
            let calibration = PdeCalibration::measure();
            eprintln!(
                "tailor: one option takes {:.1} us on this machine",
                calibration.us_per_option()
            );
            let source = BlackScholesSource::new(&demand, calibration, count, cfg.seed);
            let _scheduler = enter()?;
            live(&args, &cfg, &Arc::new(source))?
        }
        Workload::Asian { scale } => {
            anyhow::ensure!(
                args.search_profile.is_none() && args.tantivy_executor.is_none(),
                "--search-profile and --tantivy-executor go with --workload search"
            );
            let _scheduler = enter()?;
            live(
                &args,
                &cfg,
                &Arc::new(AsianSource::new(count, cfg.seed, scale)),
            )?
        }
    };
    if cfg.steal.is_none() && !cfg.rayon && cfg.hetero.is_none() {
        eprintln!("tailor: {}", out.boost_mode);
    }
    eprintln!(
        "tailor: generator at {:?} priority; release error p50 {:.0} us, p99 {:.0} us",
        out.generator_priority,
        exact_quantile(&out.release_error_us, 0.5),
        exact_quantile(&out.release_error_us, 0.99)
    );
    crate::report_host(out.summary.host.as_ref());
    if let Some(path) = &args.records {
        write_output(Some(path.as_path()), |w| {
            write_records_with_units(&out.records, &out.units, w)
        })?;
    }
    if let Some(path) = &args.speed_trace {
        let trace = out.speed_trace.as_ref().with_context(|| {
            format!(
                "--speed-trace {}: the run measured no work speed (only the synthetic \
                 workload's spin loop does, and only once a unit has run)",
                path.as_path().display()
            )
        })?;
        write_output(Some(path.as_path()), |w| {
            w.write_all(trace.to_csv().as_bytes())
        })?;
    }
    write_output(None, |w| match args.format {
        crate::simulate::SummaryFormat::Json => {
            serde_json::to_writer(&mut *w, &out.summary)?;
            writeln!(w)
        }
        crate::simulate::SummaryFormat::Table => {
            tailor_sim::write_sweep(std::slice::from_ref(&out.summary), &[out.summary.rps], 1, w)
        }
    })
    .context("cannot print the summary")
}

/// Prepares the search workload and runs it.
fn run_search(
    args: &RunArgs,
    cfg: &LiveConfig,
    count: usize,
    scheduler: Scheduler,
) -> anyhow::Result<LiveOutput> {
    let prepared = args.search.prepare()?;
    let _scheduler = SchedulerGuard::enter(scheduler)?;
    let mut queries = prepared.queries;
    let seq_ms = match &args.search_profile {
        Some(path) => {
            let profile = DemandProfile::read(path)?;
            anyhow::ensure!(
                profile.requests().len() <= queries.len(),
                "{}: {} profiled queries, but only {} queries in {}",
                path.display(),
                profile.requests().len(),
                queries.len(),
                prepared.queries_path.display()
            );
            queries.truncate(profile.requests().len());
            Some(profile.requests().iter().map(|r| r.seq_ms()).collect())
        }
        None => None,
    };
    let mut source = SearchSource::random(prepared.index, queries, seq_ms, count, cfg.seed)
        .map_err(anyhow::Error::msg)?;
    if let Some(threads) = args.tantivy_executor {
        anyhow::ensure!(threads >= 1, "--tantivy-executor must be at least 1");
        source = source
            .on_tantivy_executor(threads)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(live(args, cfg, &Arc::new(source))?)
}

/// The live run, keeping every request's unit times when records are written.
fn live<S: tailor_bench::RequestSource>(
    args: &RunArgs,
    cfg: &LiveConfig,
    source: &Arc<S>,
) -> Result<LiveOutput, tailor_bench::LiveError> {
    if args.records.is_some() {
        run_live_keeping_units(cfg, source)
    } else {
        run_live(cfg, source)
    }
}
