//! `tailor plan eetl`: EETL's low-load thresholds and gain-scheduled PI controller, identified on the simulator or on live open-loop runs, and tuned.

use anyhow::Context;
use clap::Args;
use tailor_bench::OPEN_LOOP_PREFIX;
use tailor_core::{
    identify_schedule, seeded_rng, Arrivals, CoreSet, Demand, DemandModel, DvfsCores, DvfsPolicy,
    EetlPlan, GainSet, HeteroPolicy, PStates, RunSummary, StaticRule, EETL_PLAN_KIND,
};
use tailor_plan::{design_interval, identify_open_loop, ArxFit, LowLoad};
use tailor_sim::{
    simulate_dvfs, simulate_hetero, DvfsSimConfig, HeteroSimConfig, SimConfig, SimOutput,
    DEFAULT_TRANSITION_MS,
};

use crate::bounds;
use crate::{interactive, write_output, PathArg};

#[derive(Debug, Args)]
pub(crate) struct EetlArgs {
    /// DEMAND of the requests, as work on a speed-1 core (e.g. scale:0.22:shape:lucene).
    #[arg(long)]
    demand: String,
    /// The cores, COUNT@SPEED,... (e.g. 8@1,1@2); with --pstates, a count.
    #[arg(long)]
    cores: String,
    /// DVFS cores: each core's P-states S1:P1,S2:P2,..., in place of core
    /// types; the thresholds are then one per faster state, for eetl-dvfs:T.
    #[arg(long)]
    pstates: Option<String>,
    /// With --pstates: how static power follows the P-state (voltage, fixed or busy:W;
    /// as `tailor simulate --static-power`).
    #[arg(long, default_value = "voltage", requires = "pstates")]
    static_power: String,
    /// The p99 target, e.g. 100ms.
    #[arg(long = "target", value_name = "DURATION", value_parser = bounds::TIME)]
    target_ms: f64,
    /// The load range A:B (requests per second) that the gain schedule covers.
    #[arg(long)]
    rps: String,
    /// Load intervals, one PI controller each (§5.1.2 uses 3).
    #[arg(long, default_value_t = 3, value_parser = bounds::COUNT)]
    intervals: usize,
    /// Requests per measurement window and control epoch (§5.2.4: 2000).
    #[arg(long, default_value_t = 2000, value_parser = bounds::COUNT)]
    window: usize,
    /// Work samples for the low-load problem.
    #[arg(long, default_value_t = 20_000, value_parser = bounds::COUNT)]
    samples: usize,
    /// Grid step for all but the last threshold (the last is exact).
    #[arg(long = "step", value_name = "DURATION", default_value = "1ms", value_parser = bounds::TIME)]
    step_ms: f64,
    /// Open-loop epochs simulated per load interval to identify the plant.
    #[arg(long, default_value_t = 40, value_parser = bounds::COUNT)]
    epochs: usize,
    /// The closed loop's pole: the fraction of the error left after one epoch. Closer
    /// to 1 is slower and lets less of each window's noise through to the thresholds.
    #[arg(long, default_value_t = 0.9, value_parser = bounds::FRACTION)]
    rho: f64,
    /// Steer each window's p99 this fraction below the target: windows of 2000 requests
    /// scatter around the setpoint, and the tail over all of them sits above their
    /// median.
    #[arg(long, default_value_t = 0.03, value_parser = bounds::FRACTION0)]
    margin: f64,
    /// Identify the plant from live open-loop runs instead of the simulator: one
    /// `tailor run --policy eetl:T --table PLAN --open-loop` summary per load interval,
    /// in interval order, each at a load inside its interval (its mid-point is best).
    /// PLAN must have this plan's t*; the thresholds still come from --demand.
    #[arg(long, value_delimiter = ',', value_name = "FILE,...")]
    live_runs: Vec<PathArg>,
    /// Seed for the samples and the identification runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the plan here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
}

/// What the plan is for: asymmetric cores, or DVFS cores.
enum Machine {
    Amp(CoreSet),
    Dvfs(DvfsCores),
}

impl Machine {
    fn parse(args: &EetlArgs) -> anyhow::Result<Machine> {
        let Some(pstates) = &args.pstates else {
            let cores = CoreSet::parse(&args.cores)?;
            anyhow::ensure!(
                cores.types().len() >= 2,
                "--cores {}: EETL needs at least two core types",
                cores.spec()
            );
            return Ok(Machine::Amp(cores));
        };
        let count = CoreSet::parse(&args.cores)
            .ok()
            .filter(CoreSet::is_uniform_unit)
            .map(|c| c.total())
            .with_context(|| format!("--cores {}: with --pstates, a count of cores", args.cores))?;
        let chip = DvfsCores {
            static_rule: StaticRule::parse(&args.static_power)?,
            ..DvfsCores::new(count, PStates::parse(pstates)?)
        };
        anyhow::ensure!(
            chip.pstates.states().len() >= 2,
            "--pstates {}: EETL needs at least two P-states",
            chip.pstates.spec()
        );
        anyhow::ensure!(
            chip.efficient(),
            "--pstates {}: with static power {}, a slower state does not always cost less \
             energy per unit of work, so slow-to-fast cannot save energy; drop the states \
             that cost more than a faster one",
            chip.pstates.spec(),
            chip.static_rule.name()
        );
        Ok(Machine::Dvfs(chip))
    }

    fn levels(&self) -> (Vec<f64>, Vec<f64>) {
        match self {
            Machine::Amp(c) => (
                c.types().iter().map(|t| t.speed).collect(),
                (0..c.types().len()).map(|k| c.busy_power(k)).collect(),
            ),
            Machine::Dvfs(d) => (
                d.pstates.speeds(),
                (0..d.pstates.states().len())
                    .map(|k| d.busy_power(k))
                    .collect(),
            ),
        }
    }

    fn total(&self) -> usize {
        match self {
            Machine::Amp(c) => c.total(),
            Machine::Dvfs(d) => d.count,
        }
    }

    /// The open-loop run that identifies the plant.
    fn simulate(
        &self,
        base: SimConfig,
        open_loop: (usize, Vec<Vec<f64>>),
    ) -> Result<SimOutput, tailor_sim::SimError> {
        let first = open_loop.1[0].clone();
        match self {
            Machine::Amp(cores) => simulate_hetero(&HeteroSimConfig {
                base,
                cores: cores.clone(),
                policy: HeteroPolicy::Fixed(first),
                open_loop: Some(open_loop),
            }),
            Machine::Dvfs(chip) => simulate_dvfs(&DvfsSimConfig {
                base,
                cores: chip.clone(),
                policy: DvfsPolicy::Fixed(first),
                transition_ms: DEFAULT_TRANSITION_MS,
                rate_limit_ms: tailor_core::SCHEDUTIL_RATE_LIMIT_MS,
                open_loop: Some(open_loop),
            }),
        }
    }
}

pub(crate) fn eetl(args: EetlArgs) -> anyhow::Result<()> {
    let cores = Machine::parse(&args)?;
    anyhow::ensure!(
        args.live_runs.is_empty() || matches!(cores, Machine::Amp(_)),
        "--live-runs: live open-loop identification is for core types, not --pstates"
    );
    let (lo, hi) = args
        .rps
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<f64>().ok()?, b.parse::<f64>().ok()?)))
        .filter(|(a, b)| a.is_finite() && *a > 0.0 && b > a)
        .with_context(|| format!("--rps: expected A:B with 0 < A < B, found {:?}", args.rps))?;
    anyhow::ensure!(args.intervals >= 1, "--intervals: must be at least 1");
    anyhow::ensure!(
        args.window >= 100,
        "--window: must be at least 100 requests"
    );
    anyhow::ensure!(args.samples >= 100, "--samples: must be at least 100");
    anyhow::ensure!(args.epochs >= 8, "--epochs: must be at least 8");
    anyhow::ensure!(
        args.rho >= 0.0 && args.rho < 1.0,
        "--rho: must be in [0, 1)"
    );
    anyhow::ensure!(
        args.margin >= 0.0 && args.margin < 0.5,
        "--margin: must be in [0, 0.5)"
    );
    let demand = DemandModel::new(Demand::parse(&args.demand)?, None)?;
    let work: Vec<f64> = demand
        .sample_many(args.samples, &mut seeded_rng(args.seed))
        .iter()
        .map(|d| d.work_ms)
        .collect();
    let (speeds, powers) = cores.levels();
    let low = LowLoad {
        work: &work,
        speeds: &speeds,
        powers: &powers,
        target_ms: args.target_ms,
        percentile: 0.99,
    }
    .solve(args.step_ms)?;
    eprintln!(
        "low-load thresholds t* = {:?} ms: p99 {:.1} ms, {:.1} energy per request{}",
        low.thresholds
            .iter()
            .map(|t| (t * 10.0).round() / 10.0)
            .collect::<Vec<_>>(),
        low.tail_ms,
        low.energy,
        if low.feasible {
            ""
        } else {
            " (the target is out of reach even at low load; thresholds are 0)"
        }
    );
    let width = (hi - lo) / args.intervals as f64;
    anyhow::ensure!(
        args.live_runs.is_empty() || args.live_runs.len() == args.intervals,
        "--live-runs: {} files for {} load intervals; give one open-loop run per interval",
        args.live_runs.len(),
        args.intervals
    );
    let mut gains = Vec::new();
    for i in 0..args.intervals {
        let (from, to) = (lo + i as f64 * width, lo + (i + 1) as f64 * width);
        let (rps, fit) = match args.live_runs.get(i) {
            Some(path) => {
                let Machine::Amp(amp) = &cores else {
                    unreachable!("checked above: live runs are for core types")
                };
                let (rps, y, z) = live_epochs(path, &args, amp, &low.thresholds)?;
                if !(from..=to).contains(&rps) {
                    eprintln!(
                        "warning: {} ran at {rps:.1} rps, outside load interval {} \
                         ({from:.1} to {to:.1} rps)",
                        path.display(),
                        i + 1
                    );
                }
                let fit = identify_open_loop(&y, &z)
                    .with_context(|| format!("identifying the plant from {}", path.display()))?;
                (rps, fit)
            }
            None => {
                let rps = lo + (i as f64 + 0.5) * width;
                if interactive() {
                    eprintln!(
                        "identifying the plant at {rps:.1} rps ({} of {})",
                        i + 1,
                        args.intervals
                    );
                }
                (rps, identify(&args, &cores, &demand, &low.thresholds, rps)?)
            }
        };
        let ArxFit { a, b, c, b_se, .. } = fit;
        let d = design_interval(&fit, args.margin, args.rho);
        if d.robust {
            eprintln!(
                "warning: at {rps:.1} rps the thresholds' effect on the tail, b = {b:.3} \
                 (standard error {b_se:.3}), is not clear of the epochs' noise; designing at \
                 the safe end of b ± 2 standard errors (docs/as2f.md, section 5)"
            );
        }
        let (kp, ki, kd, z_steady) = (d.kp, d.ki, 0.0, d.z_steady);
        eprintln!(
            "  {rps:.1} rps: model y = {a:.3} y' + {b:.3} (±{b_se:.3}) z' + {c:.3}; Kp {kp:.3}, \
             Ki {ki:.3}, Kd {kd}; steady z {z_steady:.2}"
        );
        gains.push(GainSet {
            rps_below: (i + 1 < args.intervals).then(|| lo + (i + 1) as f64 * width),
            rps_tuned: rps,
            kp,
            ki,
            kd,
            model_a: a,
            model_b: b,
            z_steady,
        });
    }
    let plan = EetlPlan {
        kind: EETL_PLAN_KIND.into(),
        target_ms: args.target_ms,
        setpoint_ms: args.target_ms * (1.0 - args.margin),
        cores: match &cores {
            Machine::Amp(c) => c.spec(),
            Machine::Dvfs(d) => d.count.to_string(),
        },
        pstates: match &cores {
            Machine::Amp(_) => None,
            Machine::Dvfs(d) => Some(d.pstates.spec()),
        },
        static_power: match &cores {
            Machine::Amp(_) => None,
            Machine::Dvfs(d) => Some(d.static_rule.name()),
        },
        thresholds_ms: low.thresholds,
        z_max: 1.0,
        window: args.window,
        gains,
    };
    write_output(args.out.as_deref(), |w| plan.write(w))
}

/// Simulates `epochs` open-loop epochs at `rps` with z from the seeded identification
/// schedule, and fits y_k = a y_{k-1} + b z_{k-1} + c to the relative p99 error of each
/// epoch. Returns the fit.
fn identify(
    args: &EetlArgs,
    cores: &Machine,
    demand: &DemandModel,
    t_star: &[f64],
    rps: f64,
) -> anyhow::Result<ArxFit> {
    let z = identify_schedule(args.seed, args.epochs + 3);
    let steps: Vec<Vec<f64>> = z
        .iter()
        .map(|zk| t_star.iter().map(|t| t * zk).collect())
        .collect();
    let mut base = SimConfig::new(
        cores.total(),
        tailor_core::Policy::Seq,
        demand.clone(),
        Arrivals::Poisson,
        rps,
        args.window * (args.epochs + 1),
        args.seed,
    );
    base.warmup = Some(0);
    let out = cores
        .simulate(base, (args.window, steps))
        .with_context(|| format!("identifying the plant at {rps:.1} rps"))?;
    let y: Vec<f64> = out
        .summary
        .epochs
        .iter()
        .map(|e| (e.p99_ms - args.target_ms) / args.target_ms)
        .collect();
    identify_open_loop(&y, &z).with_context(|| format!("identifying the plant at {rps:.1} rps"))
}

/// A live open-loop run's epochs as the identification's data: (its load, each epoch's
/// relative p99 error, the z in force during each epoch). The summary gives the
/// thresholds set at the end of each epoch, so epoch j ran with epoch j - 1's; z is read
/// back against this plan's t*, which must be the run's.
fn live_epochs(
    path: &std::path::Path,
    args: &EetlArgs,
    cores: &CoreSet,
    t_star: &[f64],
) -> anyhow::Result<(f64, Vec<f64>, Vec<f64>)> {
    let where_ = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {where_}"))?;
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .with_context(|| format!("{where_}: empty; expected a `tailor run` summary"))?;
    let run: RunSummary = serde_json::from_str(line)
        .with_context(|| format!("{where_}: not a `tailor run` summary"))?;
    anyhow::ensure!(
        run.policy.starts_with(OPEN_LOOP_PREFIX),
        "{where_}: policy {:?} is not an open-loop run; make one with `tailor run --policy \
         eetl:T --table PLAN --open-loop`",
        run.policy
    );
    anyhow::ensure!(
        run.cores == cores.total(),
        "{where_}: ran on {} cores, but --cores {} has {}",
        run.cores,
        cores.spec(),
        cores.total()
    );
    anyhow::ensure!(
        run.epochs.len().abs_diff(run.completed / args.window) <= 1,
        "{where_}: {} epochs for {} completed requests, so its epochs were not --window {} \
         requests long; give --window the window of the plan it ran with",
        run.epochs.len(),
        run.completed,
        args.window
    );
    let scale = t_star.iter().copied().fold(0.0, f64::max);
    anyhow::ensure!(
        scale > 0.0,
        "--live-runs: t* is 0 (the target is out of reach at low load), so there is no z \
         to identify"
    );
    let mut z = Vec::with_capacity(run.epochs.len() + 1);
    for (k, e) in run.epochs.iter().enumerate() {
        let zk = e.thresholds_ms.iter().copied().fold(0.0, f64::max) / scale;
        let fits = e.thresholds_ms.len() == t_star.len()
            && e.thresholds_ms
                .iter()
                .zip(t_star)
                .all(|(t, s)| (t - zk * s).abs() <= 1e-6 * (1.0 + s));
        anyhow::ensure!(
            fits && zk <= 1.0 + 1e-9,
            "{where_}: epoch {} thresholds {:?} are not z · t* for this plan's t* = {:?}; \
             run it with a plan from the same --demand, --cores and --target",
            k + 1,
            e.thresholds_ms,
            t_star
        );
        // Epoch 0's input is never used by the fit; epoch k + 1 ran with epoch k's.
        if k == 0 {
            z.push(zk);
        }
        z.push(zk);
    }
    let y = run
        .epochs
        .iter()
        .map(|e| (e.p99_ms - args.target_ms) / args.target_ms)
        .collect();
    Ok((run.rps, y, z))
}
