//! `tailor plan eetl`: EETL's low-load thresholds and gain-scheduled PI controller, identified and tuned on the simulator.

use anyhow::Context;
use clap::Args;
use tailor_core::{
    seeded_rng, Arrivals, CoreSet, Demand, DemandModel, EetlPlan, GainSet, HeteroPolicy,
    EETL_PLAN_KIND,
};
use tailor_plan::{identify_first_order, pole_placement, LowLoad};
use tailor_sim::{simulate_hetero, HeteroSimConfig, SimConfig};

use crate::{interactive, write_output, PathArg};

#[derive(Debug, Args)]
pub(crate) struct EetlArgs {
    /// DEMAND of the requests, as work on a speed-1 core (e.g. scale:0.22:shape:lucene).
    #[arg(long)]
    demand: String,
    /// The cores, COUNT@SPEED,... (e.g. 8@1,1@2).
    #[arg(long)]
    cores: String,
    /// The p99 target, ms.
    #[arg(long)]
    target_ms: f64,
    /// The load range A:B (requests per second) that the gain schedule covers.
    #[arg(long)]
    rps: String,
    /// Load intervals, one PI controller each (§5.1.2 uses 3).
    #[arg(long, default_value_t = 3)]
    intervals: usize,
    /// Requests per measurement window and control epoch (§5.2.4: 2000).
    #[arg(long, default_value_t = 2000)]
    window: usize,
    /// Work samples for the low-load problem.
    #[arg(long, default_value_t = 20_000)]
    samples: usize,
    /// Grid step for all but the last threshold, ms (the last is exact).
    #[arg(long, default_value_t = 1.0)]
    step_ms: f64,
    /// Open-loop epochs simulated per load interval to identify the plant.
    #[arg(long, default_value_t = 40)]
    epochs: usize,
    /// The closed loop's pole: the fraction of the error left after one epoch. Closer
    /// to 1 is slower and lets less of each window's noise through to the thresholds.
    #[arg(long, default_value_t = 0.9)]
    rho: f64,
    /// Steer each window's p99 this fraction below the target: windows of 2000 requests
    /// scatter around the setpoint, and the tail over all of them sits above their
    /// median.
    #[arg(long, default_value_t = 0.03)]
    margin: f64,
    /// Seed for the samples and the identification runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the plan here instead of stdout.
    #[arg(long)]
    out: Option<PathArg>,
}

/// The input levels of the identification runs, as fractions of t*.
const LEVELS: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

pub(crate) fn eetl(args: EetlArgs) -> anyhow::Result<()> {
    let cores = CoreSet::parse(&args.cores)?;
    anyhow::ensure!(
        cores.types().len() >= 2,
        "--cores {}: EETL needs at least two core types",
        cores.spec()
    );
    anyhow::ensure!(
        args.target_ms.is_finite() && args.target_ms > 0.0,
        "--target-ms: must be a positive number"
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
    anyhow::ensure!(
        args.step_ms.is_finite() && args.step_ms > 0.0,
        "--step-ms: must be positive"
    );
    let demand = DemandModel::new(Demand::parse(&args.demand)?, None)?;
    let work: Vec<f64> = demand
        .sample_many(args.samples, &mut seeded_rng(args.seed))
        .iter()
        .map(|d| d.work_ms)
        .collect();
    let speeds: Vec<f64> = cores.types().iter().map(|t| t.speed).collect();
    let powers: Vec<f64> = (0..speeds.len()).map(|k| cores.busy_power(k)).collect();
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
    let mut gains = Vec::new();
    for i in 0..args.intervals {
        let rps = lo + (i as f64 + 0.5) * width;
        if interactive() {
            eprintln!(
                "identifying the plant at {rps:.1} rps ({} of {})",
                i + 1,
                args.intervals
            );
        }
        let (a, b, c) = identify(&args, &cores, &demand, &low.thresholds, rps)?;
        // Steady state at the setpoint y* = -margin: (1 - a) y* = b z + c.
        let z_steady = if b > 1e-6 {
            (((1.0 - a) * -args.margin - c) / b).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let (kp, ki, kd) = if b > 1e-6 {
            pole_placement(a, b, args.rho)
        } else {
            eprintln!(
                "warning: at {rps:.1} rps the thresholds barely move the tail (b = {b:.3}); \
                 using a slow integral controller (Ki 0.1)"
            );
            (0.0, 0.1, 0.0)
        };
        eprintln!(
            "  {rps:.1} rps: model y = {a:.3} y' + {b:.3} z' + {c:.3}; Kp {kp:.3}, Ki {ki:.3}, \
             Kd {kd}; steady z {z_steady:.2}"
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
        cores: cores.spec(),
        thresholds_ms: low.thresholds,
        z_max: 1.0,
        window: args.window,
        gains,
    };
    write_output(args.out.as_deref(), |w| plan.write(w))
}

/// Simulates `epochs` open-loop epochs at `rps` with z from a seeded sequence of
/// [`LEVELS`], and fits y_k = a y_{k-1} + b z_{k-1} + c to the relative p99 error of
/// each epoch (the first, from an empty system, is left out). Returns (a, b, c), a
/// clamped to [0, 0.9].
fn identify(
    args: &EetlArgs,
    cores: &CoreSet,
    demand: &DemandModel,
    t_star: &[f64],
    rps: f64,
) -> anyhow::Result<(f64, f64, f64)> {
    // Each level held two epochs, in a seeded shuffled order.
    let mut state = args.seed ^ 0x4545_544C;
    let z: Vec<f64> = (0..args.epochs + 3)
        .map(|k| {
            if k % 2 == 0 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            LEVELS[((state >> 33) % LEVELS.len() as u64) as usize]
        })
        .collect();
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
    let out = simulate_hetero(&HeteroSimConfig {
        base,
        cores: cores.clone(),
        policy: HeteroPolicy::Fixed(steps[0].clone()),
        open_loop: Some((args.window, steps)),
    })
    .with_context(|| format!("identifying the plant at {rps:.1} rps"))?;
    let y: Vec<f64> = out
        .summary
        .epochs
        .iter()
        .map(|e| (e.p99_ms - args.target_ms) / args.target_ms)
        .collect();
    // Epoch j ran with z[j]; in controller time that input is u_{j-1}, set when epoch
    // j - 1 closed. Leave out epoch 0 (from an empty system): y'[i] = y[i + 1] ran with
    // z[i + 1], so u'[i - 1] = z[i + 1].
    let m = y.len().min(z.len() - 1);
    anyhow::ensure!(
        m >= 6,
        "identifying the plant at {rps:.1} rps: too few epochs ({m})"
    );
    let u: Vec<f64> = (0..m - 1).map(|i| z[i + 2]).collect();
    let (a, b, c) = identify_first_order(&u, &y[1..m])
        .context("the identification run's inputs did not vary; raise --epochs")?;
    Ok((a.clamp(0.0, 0.9), b, c))
}
