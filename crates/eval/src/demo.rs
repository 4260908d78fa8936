//! `tailor demo`: the search service end to end, phase by phase.
//!
//! Profile the prepared queries, plan FM and Adaptive, run SEQ, FIX-2, tantivy's own
//! executor, Adaptive and FM live at several loads, project to bigger servers, and print
//! and chart the tail latencies.

use std::path::PathBuf;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tailor_bench::{run_live, LiveConfig, Scheduler, SchedulerGuard, SearchSource};
use tailor_core::{Arrivals, DemandProfile, Dissolve, Policy, Tables, ThreadModel};
use tailor_plan::WaitModel;
use tailor_sim::PoolModel;
use tailor_workloads::search::PreparedSearch;

use crate::bootstrap::Bootstrap;
use crate::demo_keep::{keep_plans, load_command, serve_command};
use crate::demo_profile::query_profile;
use crate::demo_report::{print_results, write_chart, Results};
use crate::demo_setup::{costs_of, delivered_costs, plan, probe_capacity, projection_calibration};
use crate::error::{Context, EvalError};
use crate::projection::{
    check_degree2, projected_profile, projection_degree, simulate_peers, simulate_projection,
    PeerKind, TargetChoice,
};
use crate::spread::Spread;
use crate::verdict::{cell, noise_of, verdict, Cell, LoadVerdict, Run};
use crate::Bars;

/// How the demo prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoFormat {
    /// A table for people.
    Table,
    /// One run summary JSON per line.
    Json,
}

/// What `tailor demo` runs: its flags as plain values (shared/spec/cli.md; the flags'
/// help says more about each).
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// How the results are printed.
    pub format: DemoFormat,
    /// Queries to profile; the live runs draw from these.
    pub profiled: usize,
    /// Runs per query and degree in the profile.
    pub repeat: usize,
    /// Loads, as fractions of SEQ's capacity (cores / mean query time).
    pub loads: Vec<f64>,
    /// Seconds of arrivals in each live run.
    pub seconds: f64,
    /// Rounds: each runs every policy at every load once, in a shuffled order.
    pub rounds: usize,
    /// Times a run that met noise is repeated before it is kept and flagged.
    pub retries: usize,
    /// Requests in each projected (simulated) run.
    pub projected_requests: usize,
    /// Cores to plan for and measure against.
    pub cores: usize,
    /// SEQ's live capacity in queries per second, which the loads are fractions of;
    /// `None` measures it with a short SEQ run at half the profile's capacity.
    pub capacity: Option<f64>,
    /// FM's target parallelism (`None`: the cores).
    pub target_parallelism: Option<f64>,
    /// How FM's planner counts waits.
    pub wait_model: WaitModel,
    /// How FM's planner and the simulator charge a query's threads at degree d.
    pub thread_model: ThreadModel,
    /// How the executor-style peer's pool is modelled in the projection; the check at
    /// this machine's cores shows the other model beside it.
    pub executor_model: PoolModel,
    /// The projection's machine, a calibration from `tailor calibrate`; `None`
    /// calibrates from this run's own live SEQ runs (or, failing that, uses the fluid
    /// model with `thread_model`).
    pub calibration: Option<PathBuf>,
    /// FM's and Adaptive's target parallelism in the projection.
    pub projected_target: TargetChoice,
    /// Use a query profile even when it was measured under bad conditions.
    pub accept_noisy_profile: bool,
    /// How the operating system schedules the live runs' request threads.
    pub scheduler: Scheduler,
    /// Seed of the arrivals and of the queries each request runs.
    pub seed: u64,
    /// Where the chart, the JSON lines, the profile and the tables go.
    pub out_dir: PathBuf,
    /// The search flags as given, for the `tailor serve` command the demo prints.
    pub search_flags: Vec<String>,
}

/// The demo's phases, as its progress lines count them (`[i/6] ...`); the binary prints
/// the first (corpus, index and queries), [`run_demo`] the rest.
pub const DEMO_PHASES: usize = 6;

/// The core counts the demo projects to.
pub(crate) const PROJECTED_CORES: [usize; 2] = [16, 64];

/// The policies compared, in table order: (label, POLICY, tantivy executor threads).
pub(crate) const POLICIES: [(&str, &str, Option<usize>); 5] = [
    ("SEQ", "seq", None),
    ("FIX-2", "fix:2", None),
    ("executor", "seq", Some(2)),
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

/// Prints phase `i` of the demo's [`DEMO_PHASES`] on stderr.
fn phase(i: usize, what: &str) {
    eprintln!("[{i}/{DEMO_PHASES}] {what}");
}

/// Runs the demo from phase 2 on the `prepared` search (its index and queries): profiles,
/// plans, runs live, projects, and prints and keeps the results in `config.out_dir`.
/// `bars` draws the progress of the long phases.
pub fn run_demo(
    config: &DemoConfig,
    prepared: &PreparedSearch,
    bars: Bars<'_>,
) -> Result<(), EvalError> {
    let cores = config.cores;
    phase(
        2,
        "profiling the queries alone at degrees 1 and 2 (tailor profile)",
    );
    let measured = query_profile(
        prepared,
        config.profiled,
        config.repeat,
        cores,
        config.accept_noisy_profile,
        bars,
    )?;
    let profile = measured.profile;
    let mean = profile.requests().iter().map(|r| r.seq_ms()).sum::<f64>()
        / profile.requests().len() as f64;
    eprintln!("    {}", Shape::of(&profile));

    phase(
        3,
        "planning FM (tailor plan fm) and Adaptive (tailor plan adaptive)",
    );
    let tables = plan(config, &profile, cores)?;
    let plans = keep_plans(&config.out_dir, &profile, &tables)?;
    eprintln!(
        "    kept {}, {} and {}",
        plans.profile.display(),
        plans.fm.display(),
        plans.adaptive.display()
    );
    let scheduler = config.scheduler;

    // The loads are fractions of SEQ's live capacity, given or probed.
    let profiled_capacity = cores as f64 * 1000.0 / mean;
    let capacity = match config.capacity {
        Some(c) => {
            eprintln!(
                "    capacity: {c:.1} queries/s, as given (the profile alone says \
                 {profiled_capacity:.0})"
            );
            c
        }
        None => {
            let _scheduler = SchedulerGuard::enter(scheduler)?;
            probe_capacity(config, prepared, &profile, profiled_capacity)?
        }
    };
    let rates: Vec<f64> = config.loads.iter().map(|l| l * capacity).collect();
    phase(
        4,
        &format!(
            "live runs: {} policies x {} loads, {} s each (loads are fractions of SEQ's live \
             capacity, {capacity:.0} queries/s on {cores} cores)",
            POLICIES.len(),
            rates.len(),
            config.seconds
        ),
    );
    eprintln!("    {}", scheduler.describe());
    let (runs, repeated) = live_rounds(config, prepared, &profile, &tables, &rates, bars)?;

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
        projection_calibration(config, &profile, &runs[0], segments)?;
    eprintln!("    {calibration_note}");
    let projections = PROJECTED_CORES
        .iter()
        .map(|&c| {
            simulate_projection(
                &projected,
                &measured.units,
                c,
                &config.loads,
                config.projected_requests,
                config.seed,
                config.thread_model,
                calibration.clone(),
                (config.executor_model, config.projected_target),
            )
            .map(|projection| (c, projection))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The simulator at this machine's cores, the live runs' rates and tables: the check
    // of the model the projection rests on.
    // The executor's cells also get the other pool model, after the policies' own.
    let mut home_peers = POLICIES
        .iter()
        .map(|&(label, spec, executor)| {
            let kind = match executor {
                Some(_) => PeerKind::Executor(config.executor_model),
                None => PeerKind::Policy(Policy::parse(spec, &tables)?),
            };
            Ok((label.to_string(), kind))
        })
        .collect::<Result<Vec<_>, EvalError>>()?;
    let other = other_pool(config.executor_model);
    home_peers.push((
        format!("executor: {}", pool_name(other)),
        PeerKind::Executor(other),
    ));
    // Queries cost more in a running service than alone (wake-ups, hand-offs, two cores
    // sharing caches), not always the same, and not the same at every load: the simulator
    // draws each query's cost at a load from SEQ's measured service times over the
    // profiled t1 at that load.
    let pooled = delivered_costs(&profile, &runs[0], &config.loads, config.seed);
    // A load where SEQ measured nothing takes the pooled costs (and reports their mean).
    let costs: Vec<Spread> = runs[0]
        .iter()
        .map(|at_load| costs_of(&profile, at_load, config.seed).unwrap_or_else(|| pooled.clone()))
        .collect();
    let delivered: Vec<f64> = costs.iter().map(Spread::mean).collect();
    let home = simulate_peers(
        &profile,
        &measured.units,
        &costs,
        cores,
        &rates,
        home_peers.clone(),
        (config.projected_requests, config.seed),
        (config.thread_model, None),
    )?;
    // The model before 2026-11-25 late, beside it: costs pooled over the loads up to 75%.
    let home_pooled = simulate_peers(
        &profile,
        &measured.units,
        std::slice::from_ref(&pooled),
        cores,
        &rates,
        home_peers[..POLICIES.len()].to_vec(),
        (config.projected_requests, config.seed),
        (config.thread_model, None),
    )?;

    phase(6, "results");
    let boot = Bootstrap {
        seed: config.seed,
        ..Bootstrap::default()
    };
    let cells: ByCell<Cell> = runs
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
            verdict(config.loads[l], rates[l], &runs[fm][l], &peers, &boot)
        })
        .collect();
    let results = Results {
        config,
        rates: &rates,
        runs: &runs,
        cells: &cells,
        verdicts: &verdicts,
        home: &home,
        home_pooled: &home_pooled,
        delivered: &delivered,
        pooled: &pooled,
        projections: &projections,
        degree,
        calibration_note: &calibration_note,
    };
    print_results(&results)?;
    write_chart(&results);
    eprintln!(
        "serve the search with FM and this table (its quantum is the table's step, {} ms):\n  \
         {}\nand drive it open loop from another terminal, here at 60% of SEQ's capacity:\n  {}",
        STEP_MS,
        serve_command(&plans, cores, &config.search_flags),
        load_command(&prepared.queries_path, 0.6 * capacity, 20.0)
    );
    Ok(())
}

/// The live runs: `config.rounds` rounds, each running every policy at every one of
/// `rates` once in a shuffled order, a noisy run repeated up to `config.retries` times.
/// Returns runs[p][l], policy p's runs at load l (one per round), and how many runs of
/// each cell were repeated.
fn live_rounds(
    config: &DemoConfig,
    prepared: &PreparedSearch,
    profile: &DemandProfile,
    tables: &Tables,
    rates: &[f64],
    bars: Bars<'_>,
) -> Result<(ByCell<Vec<Run>>, ByCell<usize>), EvalError> {
    let seq_ms: Vec<f64> = profile.requests().iter().map(|r| r.seq_ms()).collect();
    let queries = truncated(prepared, seq_ms.len());
    let one_run = |p: usize, rps: f64, seed: u64| -> Result<Run, EvalError> {
        let (label, spec, executor) = POLICIES[p];
        let count = ((rps * config.seconds) as usize).max(200);
        // tantivy's executor and the runtime start their threads in this scope.
        let _scheduler = SchedulerGuard::enter(config.scheduler)?;
        let cfg = live_config(config.cores, Policy::parse(spec, tables)?, rps, count, seed);
        let mut source = SearchSource::random(
            prepared.index.clone(),
            queries.clone(),
            Some(seq_ms.clone()),
            count,
            seed,
        )
        .map_err(EvalError::Search)?;
        if let Some(threads) = executor {
            source = source
                .on_tantivy_executor(threads)
                .map_err(EvalError::Search)?;
        }
        let mut out = run_live(&cfg, &Arc::new(source))
            .context_with(|| format!("{label} at {rps:.0} queries/s"))?;
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
    let total = (config.rounds * POLICIES.len() * rates.len()) as u64;
    let bar = bars("running", total);
    let mut runs: ByCell<Vec<Run>> = (0..POLICIES.len())
        .map(|_| (0..rates.len()).map(|_| Vec::new()).collect())
        .collect();
    let mut repeated = vec![vec![0usize; rates.len()]; POLICIES.len()];
    let mut order: Vec<(usize, usize)> = (0..rates.len())
        .flat_map(|l| (0..POLICIES.len()).map(move |p| (p, l)))
        .collect();
    let mut done = 0;
    for round in 0..config.rounds {
        // Every policy sees the same arrivals and queries within a round; rounds differ.
        let seed = config.seed.wrapping_mul(1_000).wrapping_add(round as u64);
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        for &(p, l) in &order {
            let mut run = one_run(p, rates[l], seed)?;
            let mut tries = 0;
            while let Some(why) = run.noise.as_ref().filter(|_| tries < config.retries) {
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
            bar.set(done, total);
        }
    }
    bar.finish();
    Ok((runs, repeated))
}

/// A value per cell: `[p][l]` for policy p (in `POLICIES`' order) at load l.
pub(crate) type ByCell<T> = Vec<Vec<T>>;

/// The pool model shown beside `model` in the check at this machine's cores.
fn other_pool(model: PoolModel) -> PoolModel {
    match model {
        PoolModel::Rayon => PoolModel::Fifo,
        PoolModel::Fifo => PoolModel::Rayon,
    }
}

/// A pool model's name, as `--executor-model` spells it.
pub(crate) fn pool_name(model: PoolModel) -> &'static str {
    match model {
        PoolModel::Rayon => "rayon",
        PoolModel::Fifo => "fifo",
    }
}

/// The executor-style pool model the live executor's cells get beside the configured one.
pub(crate) fn other_pool_name(model: PoolModel) -> &'static str {
    pool_name(other_pool(model))
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
