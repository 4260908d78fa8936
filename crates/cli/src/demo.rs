//! `tailor demo`: the search service end to end. Index GCIDE with tantivy, generate and
//! profile queries, plan FM and Adaptive, run SEQ, FIX-2, tantivy's own executor,
//! Adaptive and FM live at five loads, and print and chart the tail latencies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tailor_bench::{run_live, LiveConfig, SchedulerGuard, SearchSource};
use tailor_core::{Arrivals, Bootstrap, DemandProfile, Dissolve, Estimate, Policy};
use tailor_sim::PoolModel;
use tailor_workloads::search::{PreparedSearch, GCIDE_DICT};

use crate::bounds;
use crate::chart::{write_charts, Panel, Series};
use crate::demo_profile::query_profile;
use crate::demo_report::{
    print_home_check, print_projection, print_table, threads_note, within_15,
};
use crate::demo_setup::{costs_of, delivered_costs, plan, probe_capacity, projection_calibration};
use crate::plan::{Threads, Waits};
use crate::progress::Bar;
use crate::projection::{
    check_degree2, projected_profile, projection_degree, simulate_peers, simulate_projection,
    PeerKind, TargetChoice,
};
use crate::scheduler::{describe, SchedulerArg};
use crate::search::SearchArgs;
use crate::spread::Spread;
use crate::verdict::{cell, cell_json, noise_of, verdict, verdict_json, Cell, LoadVerdict, Run};

/// How the demo prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DemoFormat {
    /// A table for people.
    Table,
    /// One run summary JSON per line.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// table (for people) or json (one run summary per line).
    #[arg(long, value_enum, default_value_t = DemoFormat::Table)]
    pub(crate) format: DemoFormat,
    #[command(flatten)]
    pub(crate) search: SearchArgs,
    /// Queries to profile; the live runs draw from these.
    #[arg(long, default_value_t = 400, value_parser = bounds::COUNT)]
    pub(crate) profiled: usize,
    /// Runs per query and degree in the profile (the FM paper used at least 10).
    #[arg(long, default_value_t = 10, value_parser = bounds::COUNT)]
    pub(crate) repeat: usize,
    /// Loads, as fractions of SEQ's capacity (cores / mean query time).
    #[arg(long, value_delimiter = ',', default_values_t = [0.3, 0.45, 0.6, 0.75, 0.9])]
    pub(crate) loads: Vec<f64>,
    /// Seconds of arrivals in each live run.
    #[arg(long, default_value_t = 1.5, value_parser = bounds::SECONDS)]
    pub(crate) seconds: f64,
    /// Rounds: each runs every policy at every load once, in a shuffled order, so that a
    /// slow minute of the machine falls on all policies alike. Eight rounds of 1.5 s
    /// rather than four of 3 s: the intervals rest on how much the runs differ, which
    /// four rounds estimate poorly; with alike policies and 10% drift between runs, four
    /// called FM "worse" in 17 of 300 simulated loads, eight in 1 (docs/demo.md,
    /// "Intervals and the verdict").
    #[arg(long, default_value_t = 8, value_parser = bounds::COUNT)]
    pub(crate) rounds: usize,
    /// Times a run that met noise (other programs or the hypervisor taking over 5% of
    /// the cores, or a stall over 10 ms) is repeated before it is kept and flagged.
    #[arg(long, default_value_t = 2, value_parser = bounds::COUNT0)]
    pub(crate) retries: usize,
    /// A shorter demo (within about 3 minutes once built and profiled): 2 rounds of
    /// 2-second runs at 30%, 60% and 90% load, and 5,000 requests per projected run.
    /// Overrides --rounds, --seconds, --loads and --projected-requests.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Requests in each projected (simulated) run.
    #[arg(long, default_value_t = 20_000, value_parser = bounds::REQUESTS)]
    pub(crate) projected_requests: usize,
    /// Cores to plan for and measure against (default: the machine's).
    #[arg(long, value_parser = bounds::THREADS)]
    pub(crate) cores: Option<usize>,
    /// SEQ's live capacity in queries per second, which the loads are fractions of
    /// (default: measured by a short SEQ run at half the profile's capacity). Set it to
    /// repeat an earlier run's rates exactly.
    #[arg(long, value_parser = bounds::RPS)]
    pub(crate) capacity: Option<f64>,
    /// FM's target parallelism (default: the cores; in simulation of the demo's profile
    /// on 2 cores, 2 gave a lower p99 than 3 or 4 at every load).
    #[arg(long, value_parser = bounds::POSITIVE)]
    pub(crate) target_parallelism: Option<f64>,
    /// How FM's planner counts waits (see `tailor plan fm --help`).
    #[arg(long, value_enum, default_value_t = Waits::Running)]
    pub(crate) wait_model: Waits,
    /// How FM's planner and the simulator charge a query's threads at degree d: `busy`
    /// (the default here: tailor's runtime lets a thread leave a query with no segment
    /// left, so s(d) threads are busy on average) or `held` (d threads, the FM paper's
    /// Eq. 2).
    #[arg(long, value_enum, default_value_t = Threads::Busy)]
    pub(crate) thread_model: Threads,
    /// How the executor-style peer's pool is modelled in the projection: `rayon` (the
    /// default: per-thread deques, steals, scopes that nest, as tantivy's executor gets
    /// them from rayon) or `fifo` (one first-in, first-out queue of every unit, an
    /// optimistic peer). The check at this machine's cores shows both.
    #[arg(long, value_enum, default_value_t = ExecutorModel::Rayon)]
    pub(crate) executor_model: ExecutorModel,
    /// The projection's machine: a calibration from `tailor calibrate` (say, of a real
    /// 16-core machine). Default: calibrated from this run's own live SEQ runs, its
    /// per-core prices carried to the projected cores; if that cannot be done, the fluid
    /// model with --thread-model.
    #[arg(long, value_name = "FILE")]
    pub(crate) calibration: Option<PathBuf>,
    /// FM's and Adaptive's target parallelism in the projection: `cores` (the planners'
    /// default) or `search` (as the FM paper chose it, by trying 1 to 1.75 times the
    /// cores in simulation, and up to 3 times when 1.75 wins; docs/demo.md, "Target parallelism in the projection").
    #[arg(long, value_enum, default_value_t = TargetChoice::Cores)]
    pub(crate) projected_target: TargetChoice,
    /// Use a query profile even when it was measured under bad conditions (other
    /// programs or the hypervisor taking over 5% of the cores, or a stall over 10 ms).
    #[arg(long)]
    pub(crate) accept_noisy_profile: bool,
    /// How the operating system schedules the live runs' request threads: `fair` (the
    /// default, SCHED_OTHER, what a service gets), `rr` (SCHED_RR below the harness's
    /// threads; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO 4) or `auto` (rr where allowed).
    /// On this project's 2-core VM the fair scheduler left a core idle while a request
    /// thread waited for about 10% of a run's time, which the simulator does not model;
    /// under rr the kernel's real-time throttling stalls runs near full load
    /// (docs/demo.md, "2026-11-25 afternoon: the fair scheduler leaves a core idle").
    #[arg(long, value_enum, default_value_t = SchedulerArg::Fair)]
    pub(crate) scheduler: SchedulerArg,
    /// Seed of the arrivals and of the queries each request runs.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Where the chart (latency.png, latency.svg), the JSON lines (demo.jsonl), the
    /// profile (profile.csv) and the tables (fm-table.json, adaptive-table.json) go; the
    /// demo ends by printing the `tailor serve` command that runs FM with them.
    #[arg(long, default_value = "tailor-demo")]
    pub(crate) out_dir: PathBuf,
}

/// How the executor-style peer's pool is modelled (`tailor_sim::PoolModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExecutorModel {
    /// rayon's scheduling.
    Rayon,
    /// One first-in, first-out queue.
    Fifo,
}

impl ExecutorModel {
    fn pool(self) -> PoolModel {
        match self {
            ExecutorModel::Rayon => PoolModel::Rayon,
            ExecutorModel::Fifo => PoolModel::Fifo,
        }
    }

    /// The other model, simulated beside it in the check at this machine's cores.
    fn other(self) -> ExecutorModel {
        match self {
            ExecutorModel::Rayon => ExecutorModel::Fifo,
            ExecutorModel::Fifo => ExecutorModel::Rayon,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ExecutorModel::Rayon => "rayon",
            ExecutorModel::Fifo => "fifo",
        }
    }
}

/// The core counts the demo projects to.
const PROJECTED_CORES: [usize; 2] = [16, 64];

/// The policies compared, in table order: (label, POLICY, tantivy executor threads).
pub(crate) const POLICIES: [(&str, &str, Option<usize>); 5] = [
    ("SEQ", "seq", None),
    ("FIX-2", "fix:2", None),
    ("tantivy-executor-2", "seq", Some(2)),
    ("Adaptive", "adaptive", None),
    ("FM", "fm", None),
];

/// The highest load at which the simulator is checked against the live cells (issue #22:
/// within 15% up to 75% of capacity), and up to which SEQ's runs give the costs pooled
/// over the loads (the model shown beside the per-load one).
pub(crate) const MODEL_CHECK_MAX_LOAD: f64 = 0.75;

/// FM's grid step and self-scheduling quantum, in ms: queries take 0.1 to 20 ms, so the
/// paper's 5 ms would be longer than most of them.
pub(crate) const STEP_MS: f64 = tailor_plan::FINEST_STEP_MS;

pub(crate) fn run(mut args: DemoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    if args.quick {
        args.rounds = 2;
        args.seconds = 2.0;
        args.loads = vec![0.3, 0.6, 0.9];
        args.projected_requests = 5_000;
    }
    anyhow::ensure!(args.rounds >= 1, "--rounds must be at least 1");
    anyhow::ensure!(args.profiled >= 10, "--profiled must be at least 10");
    anyhow::ensure!(
        args.seconds.is_finite() && args.seconds > 0.0,
        "--seconds must be positive"
    );
    for &load in &args.loads {
        anyhow::ensure!(
            load > 0.0 && load < 1.0,
            "--loads: {load} is not a fraction of capacity in (0, 1)"
        );
    }
    let cores = args
        .cores
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let phases = 6;
    let phase = |i: usize, what: &str| eprintln!("[{i}/{phases}] {what}");

    phase(1, "corpus, index and queries");
    ensure_corpus(&args.search)?;
    let prepared = args.search.prepare()?;

    phase(
        2,
        "profiling the queries alone at degrees 1 and 2 (tailor profile)",
    );
    let measured = query_profile(
        &prepared,
        args.profiled,
        args.repeat,
        cores,
        args.accept_noisy_profile,
    )?;
    let profile = measured.profile;
    let mean = profile.requests().iter().map(|r| r.seq_ms()).sum::<f64>()
        / profile.requests().len() as f64;
    eprintln!("    {}", Shape::of(&profile));

    phase(
        3,
        "planning FM (tailor plan fm) and Adaptive (tailor plan adaptive)",
    );
    let tables = plan(&args, &profile, cores)?;
    let plans = crate::demo_keep::keep_plans(&args.out_dir, &profile, &tables)?;
    eprintln!(
        "    kept {}, {} and {}",
        plans.profile.display(),
        plans.fm.display(),
        plans.adaptive.display()
    );
    let scheduler = args.scheduler.resolve()?;

    // The loads are fractions of SEQ's live capacity, given or probed.
    let profiled_capacity = cores as f64 * 1000.0 / mean;
    let capacity = match args.capacity {
        Some(c) => {
            anyhow::ensure!(
                c.is_finite() && c > 0.0,
                "--capacity must be a positive number of queries per second, found {c}"
            );
            eprintln!(
                "    capacity: {c:.1} queries/s, as given (the profile alone says \
                 {profiled_capacity:.0})"
            );
            c
        }
        None => {
            let _scheduler = SchedulerGuard::enter(scheduler)?;
            probe_capacity(&args, &prepared, &profile, cores, profiled_capacity)?
        }
    };
    let rates: Vec<f64> = args.loads.iter().map(|l| l * capacity).collect();
    phase(
        4,
        &format!(
            "live runs: {} policies x {} loads, {} s each (loads are fractions of SEQ's live \
             capacity, {capacity:.0} queries/s on {cores} cores)",
            POLICIES.len(),
            rates.len(),
            args.seconds
        ),
    );
    eprintln!("    {}", describe(scheduler));
    let seq_ms: Vec<f64> = profile.requests().iter().map(|r| r.seq_ms()).collect();
    let queries = truncated(&prepared, seq_ms.len());
    let one_run = |p: usize, rps: f64, seed: u64| -> anyhow::Result<Run> {
        let (label, spec, executor) = POLICIES[p];
        let count = ((rps * args.seconds) as usize).max(200);
        // tantivy's executor and the runtime start their threads in this scope.
        let _scheduler = SchedulerGuard::enter(scheduler)?;
        let cfg = live_config(cores, Policy::parse(spec, &tables)?, rps, count, seed);
        let mut source = SearchSource::random(
            prepared.index.clone(),
            queries.clone(),
            Some(seq_ms.clone()),
            count,
            seed,
        )
        .map_err(anyhow::Error::msg)?;
        if let Some(threads) = executor {
            source = source
                .on_tantivy_executor(threads)
                .map_err(anyhow::Error::msg)?;
        }
        let mut out = run_live(&cfg, &Arc::new(source))
            .with_context(|| format!("{label} at {rps:.0} queries/s"))?;
        out.summary.policy = label.to_lowercase();
        let measured = &out.records[out.summary.warmup.min(out.records.len())..];
        let latencies: Vec<f64> = measured
            .iter()
            .map(|r| r.finish_ms - r.arrival_ms)
            .collect();
        let wall_ms = out.records.iter().map(|r| r.finish_ms).fold(0.0, f64::max);
        let noise = noise_of(&out.summary, wall_ms);
        let executions = measured
            .iter()
            .map(|r| (r.work_ms, r.finish_ms - r.start_ms))
            .collect();
        Ok(Run {
            summary: out.summary,
            latencies,
            noise,
            executions,
        })
    };
    let bar = Bar::new(
        "running",
        (args.rounds * POLICIES.len() * rates.len()) as u64,
    );
    // runs[p][l]: policy p's runs at load l, one per round.
    let mut runs: Vec<Vec<Vec<Run>>> = (0..POLICIES.len())
        .map(|_| (0..rates.len()).map(|_| Vec::new()).collect())
        .collect();
    let mut repeated = vec![vec![0usize; rates.len()]; POLICIES.len()];
    let mut order: Vec<(usize, usize)> = (0..rates.len())
        .flat_map(|l| (0..POLICIES.len()).map(move |p| (p, l)))
        .collect();
    let mut done = 0;
    for round in 0..args.rounds {
        // Every policy sees the same arrivals and queries within a round; rounds differ.
        let seed = args.seed.wrapping_mul(1_000).wrapping_add(round as u64);
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        for &(p, l) in &order {
            let mut run = one_run(p, rates[l], seed)?;
            let mut tries = 0;
            while let Some(why) = run.noise.as_ref().filter(|_| tries < args.retries) {
                bar.println(format!(
                    "    {} at {:.0} queries/s, round {}: {why}; running it again",
                    POLICIES[p].0,
                    rates[l],
                    round + 1
                ));
                repeated[p][l] += 1;
                tries += 1;
                run = one_run(p, rates[l], seed)?;
            }
            if let Some(why) = &run.noise {
                bar.println(format!(
                    "    {} at {:.0} queries/s, round {}: {why}; kept and flagged",
                    POLICIES[p].0,
                    rates[l],
                    round + 1
                ));
            }
            runs[p][l].push(run);
            done += 1;
            bar.set(done);
        }
    }
    bar.finish();

    phase(
        5,
        &format!(
            "projection to {} cores: each query's time at degree d from its segment times, \
             then the simulator",
            PROJECTED_CORES.map(|c| c.to_string()).join(" and ")
        ),
    );
    let check = check_degree2(&profile, &measured.units);
    eprintln!(
        "    predicted against measured degree-2 times: median error {:.1}% on the longest \
         {} queries, {:.1}% on all",
        100.0 * check.longest_median_error,
        check.longest,
        100.0 * check.all_median_error
    );
    let degree = projection_degree(&measured.units);
    let projected = projected_profile(&profile, &measured.units, degree)?;
    let segments = measured
        .units
        .first()
        .map_or(1, |u| u.units_ms.len())
        .max(1);
    let (calibration, calibration_note) =
        projection_calibration(&args, &profile, &runs[0], segments)?;
    eprintln!("    {calibration_note}");
    let projections = PROJECTED_CORES
        .iter()
        .map(|&c| {
            simulate_projection(
                &projected,
                &measured.units,
                c,
                &args.loads,
                args.projected_requests,
                args.seed,
                args.thread_model.into(),
                calibration.clone(),
                (args.executor_model.pool(), args.projected_target),
            )
            .map(|projection| (c, projection))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // The simulator at this machine's cores, the live runs' rates and tables: the check
    // of the model the projection rests on.
    // The executor's cells also get the other pool model, after the policies' own.
    let mut home_peers = POLICIES
        .iter()
        .map(|&(label, spec, executor)| {
            let kind = match executor {
                Some(_) => PeerKind::Executor(args.executor_model.pool()),
                None => PeerKind::Policy(Policy::parse(spec, &tables)?),
            };
            Ok((label.to_string(), kind))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let other = args.executor_model.other();
    home_peers.push((
        format!("executor: {}", other.name()),
        PeerKind::Executor(other.pool()),
    ));
    let executor_cell = POLICIES
        .iter()
        .position(|p| p.2.is_some())
        .expect("the executor is a policy of the demo");
    // Queries cost more in a running service than alone (wake-ups, hand-offs, two cores
    // sharing caches), not always the same, and not the same at every load: the simulator
    // draws each query's cost at a load from SEQ's measured service times over the
    // profiled t1 at that load.
    let pooled = delivered_costs(&profile, &runs[0], &args.loads, args.seed);
    // A load where SEQ measured nothing takes the pooled costs (and reports their mean).
    let costs: Vec<Spread> = runs[0]
        .iter()
        .map(|at_load| costs_of(&profile, at_load, args.seed).unwrap_or_else(|| pooled.clone()))
        .collect();
    let delivered: Vec<f64> = costs.iter().map(Spread::mean).collect();
    let home = simulate_peers(
        &profile,
        &measured.units,
        &costs,
        cores,
        &rates,
        home_peers.clone(),
        (args.projected_requests, args.seed),
        (args.thread_model.into(), None),
    )?;
    // The model before 2026-11-25 late, beside it: costs pooled over the loads up to 75%.
    let home_pooled = simulate_peers(
        &profile,
        &measured.units,
        std::slice::from_ref(&pooled),
        cores,
        &rates,
        home_peers[..POLICIES.len()].to_vec(),
        (args.projected_requests, args.seed),
        (args.thread_model.into(), None),
    )?;

    phase(6, "results");
    let boot = Bootstrap {
        seed: args.seed,
        ..Bootstrap::default()
    };
    let cells: Vec<Vec<Cell>> = runs
        .iter()
        .zip(&repeated)
        .map(|(by_load, reps)| {
            by_load
                .iter()
                .zip(reps)
                .map(|(r, &n)| cell(r, n, &boot))
                .collect()
        })
        .collect();
    let fm = POLICIES.len() - 1;
    let verdicts: Vec<LoadVerdict> = (0..rates.len())
        .map(|l| {
            let peers: Vec<&[Run]> = runs[..fm].iter().map(|r| r[l].as_slice()).collect();
            verdict(args.loads[l], rates[l], &runs[fm][l], &peers, &boot)
        })
        .collect();
    // The JSON lines, printed with --format json and always kept next to the chart.
    let mut json_lines = Vec::new();
    for (p, by_load) in runs.iter().enumerate() {
        for (l, r) in by_load.iter().enumerate() {
            let mut line = cell_json(r, &cells[p][l])?;
            line["sim_p99_ms"] = home[p].1[l].as_ref().map(|sim| sim.latency_ms.p99).into();
            if p == executor_cell {
                line["sim_executor_model"] = args.executor_model.name().into();
                line[format!("sim_p99_ms_{}", other.name())] = home[POLICIES.len()].1[l]
                    .as_ref()
                    .map(|sim| sim.latency_ms.p99)
                    .into();
            }
            line["sim_work_scale"] = delivered[l].into();
            line["sim_p99_ms_pooled_costs"] = home_pooled[p].1[l]
                .as_ref()
                .map(|sim| sim.latency_ms.p99)
                .into();
            line["sim_work_scale_pooled"] = pooled.mean().into();
            json_lines.push(line.to_string());
        }
    }
    for (_, projection) in &projections {
        for (label, by_load) in &projection.runs {
            let target = match label.as_str() {
                "FM" => Some(&projection.fm_target),
                "Adaptive" => Some(&projection.adaptive_target),
                _ => None,
            };
            for summary in by_load {
                let mut line = serde_json::to_value(summary)?;
                if let Some(target) = target {
                    line["target"] = target.json(args.projected_target);
                }
                line["model"] = calibration_note.clone().into();
                json_lines.push(line.to_string());
            }
        }
    }
    json_lines.push(verdict_json(&verdicts, scheduler.name()).to_string());
    match args.format {
        DemoFormat::Json => {
            for line in &json_lines {
                println!("{line}");
            }
        }
        DemoFormat::Table => {
            print_table(&rates, &args.loads, &cells, &verdicts);
            println!();
            println!("{}", threads_note(args.thread_model));
            println!("live runs: {}", describe(scheduler));
            let live_cell: Vec<usize> = (0..POLICIES.len()).chain([executor_cell]).collect();
            print_home_check(cores, &delivered, &args.loads, &cells, &home, &live_cell);
            let (within, checked) = within_15(&args.loads, &cells, &home_pooled, &live_cell);
            println!(
                "with each query's costs pooled over the loads up to {:.0}% ({:.2} on average; \
                 the model before 2026-11-25 late): {within} of {checked}",
                100.0 * MODEL_CHECK_MAX_LOAD,
                pooled.mean()
            );
            println!();
            println!("projection model: {calibration_note}");
            for (c, projection) in &projections {
                print_projection(*c, degree, &args.loads, projection);
            }
        }
    }
    let kept = args.out_dir.join("demo.jsonl");
    let written = std::fs::create_dir_all(&args.out_dir)
        .and_then(|()| std::fs::write(&kept, json_lines.join("\n") + "\n"));
    match written {
        Ok(()) => eprintln!("results: {}", kept.display()),
        Err(e) => eprintln!("tailor: cannot write {}: {e}", kept.display()),
    }
    let percent = |load: f64| 100.0 * load;
    let mut panels = vec![Panel {
        title: format!("live, {cores} cores (95% intervals)"),
        x_desc: "load (% of SEQ's capacity)".into(),
        y_desc: "p99 latency (ms)".into(),
        series: POLICIES
            .iter()
            .zip(&cells)
            .map(|((label, _, _), cells)| Series {
                label: label.to_string(),
                points: args
                    .loads
                    .iter()
                    .zip(cells)
                    .map(|(&l, c)| (percent(l), c.p99))
                    .collect(),
            })
            .collect(),
    }];
    for (c, projection) in &projections {
        panels.push(Panel {
            title: format!("projected, {c} cores (simulator)"),
            x_desc: "load (% of SEQ's capacity)".into(),
            y_desc: "p99 latency (ms)".into(),
            series: projection
                .runs
                .iter()
                .map(|(label, by_load)| Series {
                    label: label.clone(),
                    points: args
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
    match write_charts(&args.out_dir, &panels) {
        Ok(paths) => {
            for p in paths {
                eprintln!("chart: {}", p.display());
            }
        }
        Err(e) => eprintln!("tailor: no chart: {e:#}"),
    }
    eprintln!(
        "serve the search with FM and this table (its quantum is the table's step, {} ms):\n  \
         {}\nand drive it open loop from another terminal, here at 60% of SEQ's capacity:\n  {}",
        STEP_MS,
        crate::demo_keep::serve_command(&plans, cores, &args.search.flags()),
        crate::demo_keep::load_command(&prepared.queries_path, 0.6 * capacity, 20.0)
    );
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A live run of the search service: Poisson arrivals, FM's quantum, the defaults
/// otherwise.
pub(crate) fn live_config(
    cores: usize,
    policy: Policy,
    rps: f64,
    requests: usize,
    seed: u64,
) -> LiveConfig {
    LiveConfig {
        cores,
        policy,
        arrivals: Arrivals::Poisson,
        rps,
        requests,
        seed,
        quantum_ms: STEP_MS,
        target_ms: None,
        warmup: None,
        workers: None,
        guard: true,
        steal: None,
        dissolve: Dissolve::Prompt,
        rayon: false,
        hetero: None,
    }
}

/// The first `count` queries: the profiled ones.
pub(crate) fn truncated(
    prepared: &PreparedSearch,
    count: usize,
) -> Vec<tailor_workloads::search::QuerySpec> {
    prepared.queries.iter().take(count).cloned().collect()
}

/// Installs GCIDE when it is missing and no corpus was given, where apt-get can.
fn ensure_corpus(search: &SearchArgs) -> anyhow::Result<()> {
    if search.has_corpus() || Path::new(GCIDE_DICT).exists() {
        return Ok(());
    }
    let how = "install it with `sudo apt-get install dict-gcide` (Debian, Ubuntu), or pass \
               your own corpus with --corpus FILE";
    if !Path::new("/usr/bin/apt-get").exists() {
        anyhow::bail!("the GCIDE corpus ({GCIDE_DICT}) is missing and apt-get is not here: {how}");
    }
    eprintln!("    GCIDE is missing: running apt-get install dict-gcide");
    let status = std::process::Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "dict-gcide"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(std::process::Stdio::null())
        .status()
        .context("cannot run apt-get")?;
    anyhow::ensure!(
        status.success() && Path::new(GCIDE_DICT).exists(),
        "apt-get could not install dict-gcide ({status}): {how}"
    );
    Ok(())
}

/// What the issue asks of a search profile: a heavy tail and a good speedup for the
/// long queries.
pub(crate) struct Shape {
    queries: usize,
    median_ms: f64,
    p99_ms: f64,
    /// Sum of t1 over sum of t2 for the longest 10% of queries by t1.
    longest_speedup2: f64,
}

impl Shape {
    pub(crate) fn of(profile: &DemandProfile) -> Shape {
        let mut rows: Vec<(f64, f64)> = profile
            .requests()
            .iter()
            .map(|r| (r.seq_ms(), r.seq_ms() / r.speedup(2)))
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let t1: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let long = &rows[rows.len() - (rows.len() / 10).max(1)..];
        Shape {
            queries: rows.len(),
            median_ms: tailor_core::exact_quantile(&t1, 0.5),
            p99_ms: tailor_core::exact_quantile(&t1, 0.99),
            longest_speedup2: long.iter().map(|r| r.0).sum::<f64>()
                / long.iter().map(|r| r.1).sum::<f64>(),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} queries at degree 1: median {:.2} ms, p99 {:.2} ms (p99/median {:.1}); \
             speedup at degree 2 of the longest 10%: {:.2}",
            self.queries,
            self.median_ms,
            self.p99_ms,
            self.p99_ms / self.median_ms,
            self.longest_speedup2
        )
    }
}
