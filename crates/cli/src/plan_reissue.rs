//! `tailor plan reissue`: SingleR's delay and probability from a shard log (Kaler, He
//! and Elnikety, SPAA 2017; crates/plan/src/reissue.rs), and, with `--adapt`, adapted
//! by simulation to the reissue the plan causes (or, with `--measured`, one step of that
//! adaptation from rates logged under earlier plans).

use anyhow::Context;
use clap::Args;
use rayon::prelude::*;
use serde_json::{json, Value};
use tailor_core::{
    Arrivals, Demand, DemandModel, LatencyStats, Noise, Reissue, ShardLog, Speedup, Tables,
};
use tailor_plan::{
    adapt_reissue, next_multiplier, plan_reissue, AdaptParams, AdaptStep, AdaptedPlan, Measured,
    ReissueParams, ReissuePlan,
};
use tailor_sim::{simulate_fanout, FanoutConfig, Select, SimConfig};

use crate::simulate::parse_uniform_cores;
use crate::simulate_fanout::{parse_noise, Pick};
use crate::{bounds, AnyPolicy, PathArg};

#[derive(Debug, Args)]
pub(crate) struct ReissueArgs {
    /// Shard log CSV with `shard` and `latency_ms` (and `primary_ms` where a first copy
    /// may have been cancelled): `tailor simulate --shards ... --records FILE`.
    #[arg(long)]
    records: PathArg,
    /// The most reissues per shard request, from 0 to 1 (0.05: 5%).
    #[arg(long, value_parser = bounds::FRACTION0)]
    budget: f64,
    /// The query percentile to minimize, in percent (99) or as a fraction (0.99).
    #[arg(long, default_value = "99", value_parser = bounds::percent)]
    percentile: f64,
    /// The shards a query waits for (default: as many as the log names); with --adapt,
    /// also the shards simulated.
    #[arg(long, value_parser = bounds::SHARDS)]
    shards: Option<usize>,
    /// Adapt the plan to the reissue it causes: plan for a multiple of the budget,
    /// simulate the fan-out below under the plan, and search the multiple until the
    /// simulated reissue rate is within --band of the budget. Needs --replicas, --cores,
    /// --demand and --rps, as `tailor simulate --shards` takes them.
    #[arg(long)]
    adapt: bool,
    /// One step of the same adaptation from rates logged under earlier plans, each
    /// MULTIPLIER:RATE (the plan's `budget_multiplier` and the reissue rate measured under
    /// it), always planned from the same --records: prints the plan to run next, or the
    /// chosen one. Repeat for every plan run so far; none gives the first (1).
    #[arg(long, value_name = "MULTIPLIER:RATE", value_parser = parse_measured, conflicts_with = "adapt")]
    measured: Vec<(f64, f64)>,
    /// With --adapt or --measured: the band the adapted plan's reissue rate must end in,
    /// LOW:HIGH, fractions of the budget (by default within 10% of it, never above).
    #[arg(long, default_value = "0.9:1", value_parser = parse_band)]
    band: (f64, f64),
    /// With --adapt: the most plans the adaptation measures.
    #[arg(long, default_value_t = AdaptParams::default().max_trials, value_parser = bounds::COUNT)]
    max_trials: usize,
    #[command(flatten)]
    sim: AdaptSimArgs,
}

/// The fan-out simulated under each candidate plan (`--adapt`): the flags of `tailor
/// simulate --shards`.
#[derive(Debug, Args)]
struct AdaptSimArgs {
    /// Replicas of each shard.
    #[arg(long, value_parser = bounds::REPLICAS, requires = "adapt")]
    replicas: Option<usize>,
    /// Cores of each replica.
    #[arg(long, requires = "adapt")]
    cores: Option<String>,
    /// Each replica's thread-pool POLICY (seq, fix:N, interval:D_MS:N, rc:T:N, adaptive,
    /// fm).
    #[arg(long, default_value = "seq")]
    policy: String,
    /// Table files for fm and adaptive.
    #[arg(long = "table", requires = "adapt")]
    tables: Vec<PathArg>,
    /// DEMAND of each shard request.
    #[arg(long, requires = "adapt")]
    demand: Option<String>,
    /// SPEEDUP (default: each request's own for profiles and shapes, linear otherwise).
    #[arg(long, requires = "adapt")]
    speedup: Option<String>,
    /// ARRIVALS of queries.
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Queries per second.
    #[arg(long, value_parser = bounds::RPS, requires = "adapt")]
    rps: Option<f64>,
    /// Queries per simulation.
    #[arg(long, default_value_t = 100_000, value_parser = bounds::REQUESTS)]
    requests: usize,
    /// Seed of the first simulation; every candidate runs the same seeds (common random
    /// numbers), so the search sees the plans' differences, not the seeds'.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulate each candidate with seeds SEED..SEED+N-1: the rate is their mean, the
    /// percentile their median.
    #[arg(long, default_value_t = 1, value_parser = bounds::SEEDS)]
    seeds: usize,
    /// Replica stalls: RATE_PER_S:LENGTH_MS.
    #[arg(long, value_parser = parse_noise, requires = "adapt")]
    noise: Option<Noise>,
    /// How the front end picks a shard's replica.
    #[arg(long, value_enum, default_value_t = Pick::Random)]
    select: Pick,
    /// Let the losing copy of a reissued request run to its end.
    #[arg(long, requires = "adapt")]
    no_cancel: bool,
}

fn parse_pair(text: &str, what: &str) -> Result<(f64, f64), String> {
    let number = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    match text.split_once(':').map(|(a, b)| (number(a), number(b))) {
        Some((Some(a), Some(b))) => Ok((a, b)),
        _ => Err(format!("expected {what}, found {:?}", bounds::clip(text))),
    }
}

fn parse_band(text: &str) -> Result<(f64, f64), String> {
    let (low, high) = parse_pair(text, "LOW:HIGH")?;
    if low > 0.0 && low <= high && high <= 1.0 {
        Ok((low, high))
    } else {
        Err(format!(
            "the band's fractions of the budget must have 0 < LOW <= HIGH <= 1, found {text}"
        ))
    }
}

fn parse_measured(text: &str) -> Result<(f64, f64), String> {
    let (m, rate) = parse_pair(text, "MULTIPLIER:RATE")?;
    if m > 0.0 && (0.0..=1.0).contains(&rate) {
        Ok((m, rate))
    } else {
        Err(format!(
            "the multiplier must be above 0 and the rate from 0 to 1, found {text}"
        ))
    }
}

/// The plan's policy string, its delay rounded up and its probability down, so that it
/// parses back and stays within the budget (fewer requests are still out at a later d).
fn rounded(plan: &ReissuePlan) -> (f64, f64, String) {
    let d_ms = (plan.d_ms * 1e4).ceil() / 1e4;
    let q = (plan.q * 1e4).floor() / 1e4;
    (d_ms, q, format!("single-r:{d_ms}:{q}"))
}

/// The summary's latency at `percentile`, where the summary has it.
fn at_percentile(latency: &LatencyStats, percentile: f64) -> Option<f64> {
    [
        (50.0, latency.p50),
        (90.0, latency.p90),
        (99.0, latency.p99),
        (99.9, latency.p999),
    ]
    .into_iter()
    .find(|&(p, _)| (p - percentile).abs() < 1e-9)
    .map(|(_, v)| v)
}

pub(crate) fn reissue(args: ReissueArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.percentile < 100.0,
        "--percentile {}: a reissue plan minimizes a percentile below 100",
        args.percentile
    );
    let log = ShardLog::read(&args.records)?;
    let shards = args.shards.unwrap_or(log.shards);
    let params = ReissueParams {
        budget: args.budget,
        percentile: args.percentile,
        shards,
    };
    let adapt = AdaptParams {
        band: args.band,
        max_trials: args.max_trials,
    };
    let (plan, adapted) = if args.adapt {
        let simulate = fanout(&args, shards)?;
        let seeds: Vec<u64> = (0..args.sim.seeds as u64)
            .map(|i| args.sim.seed.wrapping_add(i))
            .collect();
        let percentile = args.percentile;
        let mut tried = 0;
        let measure = |plan: &ReissuePlan| -> anyhow::Result<Measured> {
            let (_, _, policy) = rounded(plan);
            let reissue = Reissue::parse(&policy)?;
            let runs = seeds
                .par_iter()
                .map(|&seed| simulate(reissue, seed))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let rate = runs.iter().map(|r| r.0).sum::<f64>() / runs.len() as f64;
            let mut tails: Vec<f64> = runs.iter().filter_map(|r| r.1).collect();
            tails.sort_by(f64::total_cmp);
            let tail = tails.get(tails.len() / 2).copied().unwrap_or(f64::NAN);
            tried += 1;
            eprintln!(
                "trial {tried}: {policy} (predicted on the log: {:.2}%): reissue rate {:.2}%{}",
                100.0 * plan.predicted_rate,
                100.0 * rate,
                if tail.is_nan() {
                    String::new()
                } else {
                    format!(", p{percentile} {tail:.2} ms")
                }
            );
            Ok(Measured {
                reissue_rate: rate,
                percentile_ms: tail,
            })
        };
        let adapted = adapt_reissue(&log.answered_ms, &log.censored_ms, params, adapt, measure)?;
        let chosen = adapted.chosen().plan.clone();
        (chosen, Some(adapted_json(&adapted, &args, &seeds)))
    } else if !args.measured.is_empty() {
        logged(&log, params, adapt, &args.measured)?
    } else {
        let plan = plan_reissue(&log.answered_ms, &log.censored_ms, params)?;
        (plan, None)
    };
    let (d_ms, q, policy) = rounded(&plan);
    let mut out = json!({
        "kind": "reissue-plan",
        "policy": policy,
        "d_ms": d_ms,
        "q": q,
        "budget": args.budget,
        "percentile": args.percentile,
        "shards": shards,
        "shard_percentile": plan.shard_percentile,
        "predicted_shard_ms": plan.predicted_ms,
        "predicted_reissue_rate": plan.predicted_rate,
        "single_d": plan.single_d.map(|(d, t)| json!({
            "policy": format!("single-d:{}", (d * 1e4).ceil() / 1e4),
            "d_ms": d,
            "predicted_shard_ms": t,
        })),
        "no_reissue_shard_ms": plan.no_reissue_ms,
        "samples": log.answered_ms.len() + log.censored_ms.len(),
        "censored": log.censored_ms.len(),
        "model": "X and the reissue's Y i.i.d. from the log (the paper's simplified model; \
                  cancelled first copies by Kaplan-Meier); query percentile k planned as the \
                  shards' k^(1/S)",
    });
    if let Some(adapted) = adapted {
        out["adapt"] = adapted;
    }
    println!("{out}");
    Ok(())
}

/// `--measured`: the next plan of the search, or the chosen one, from the rates logged
/// under the plans so far.
fn logged(
    log: &ShardLog,
    params: ReissueParams,
    adapt: AdaptParams,
    measured: &[(f64, f64)],
) -> anyhow::Result<(ReissuePlan, Option<Value>)> {
    let adapt = AdaptParams {
        // Every rate given counts; one more step may be asked for.
        max_trials: adapt.max_trials.max(measured.len() + 1),
        ..adapt
    };
    let (status, multiplier) = match next_multiplier(params.budget, adapt, measured) {
        AdaptStep::Try(m) => ("try", m),
        AdaptStep::Done(i) => ("done", measured[i].0),
        AdaptStep::Stuck(i) => ("stuck", measured[i].0),
    };
    let planned = ReissueParams {
        budget: (multiplier * params.budget).min(1.0),
        ..params
    };
    let plan = plan_reissue(&log.answered_ms, &log.censored_ms, planned)?;
    let out = json!({
        "mode": "logged",
        "status": status,
        "budget_multiplier": multiplier,
        "planned_budget": planned.budget,
        "band": [adapt.band.0, adapt.band.1],
        "measured": measured.iter().map(|&(m, r)| json!({"multiplier": m, "reissue_rate": r})).collect::<Vec<_>>(),
    });
    Ok((plan, Some(out)))
}

/// The adaptation's JSON: the chosen multiplier and what it measured, and every trial.
fn adapted_json(adapted: &AdaptedPlan, args: &ReissueArgs, seeds: &[u64]) -> Value {
    let chosen = adapted.chosen();
    let tail = |v: f64| (!v.is_nan()).then_some(v);
    json!({
        "mode": "simulated",
        "within_band": adapted.within_band,
        "band": [args.band.0, args.band.1],
        "budget_multiplier": chosen.multiplier,
        "planned_budget": (chosen.multiplier * args.budget).min(1.0),
        "measured_reissue_rate": chosen.measured.reissue_rate,
        "measured_percentile_ms": tail(chosen.measured.percentile_ms),
        "iterations": adapted.trials.len(),
        "seeds": seeds,
        "requests": args.sim.requests,
        "rps": args.sim.rps,
        "trials": adapted.trials.iter().map(|t| json!({
            "multiplier": t.multiplier,
            "policy": rounded(&t.plan).2,
            "predicted_reissue_rate": t.plan.predicted_rate,
            "reissue_rate": t.measured.reissue_rate,
            "percentile_ms": tail(t.measured.percentile_ms),
        })).collect::<Vec<_>>(),
    })
}

/// A simulated run's reissue rate and query percentile (where the summary has it).
type Outcome = anyhow::Result<(f64, Option<f64>)>;

/// The fan-out of `--adapt`, checked once: a function from a reissue policy and a seed to
/// the simulated reissue rate and query percentile.
fn fanout(
    args: &ReissueArgs,
    shards: usize,
) -> anyhow::Result<impl Fn(Reissue, u64) -> Outcome + Sync + '_> {
    let sim = &args.sim;
    let need = |flag: &str| format!("--adapt simulates the fan-out and needs {flag}");
    let replicas = sim.replicas.with_context(|| need("--replicas"))?;
    let cores = parse_uniform_cores(sim.cores.as_deref().with_context(|| need("--cores"))?)?;
    let rps = sim.rps.with_context(|| need("--rps"))?;
    let demand = Demand::parse(sim.demand.as_deref().with_context(|| need("--demand"))?)?;
    let speedup = sim.speedup.as_deref().map(Speedup::parse).transpose()?;
    let demand = DemandModel::new(demand, speedup)?;
    let arrivals = Arrivals::parse(&sim.arrivals)?;
    let tables = Tables::read(&sim.tables)?;
    let AnyPolicy::Threads(policy) = AnyPolicy::parse(&sim.policy, &tables)? else {
        anyhow::bail!(
            "--policy {}: the fan-out runs thread-pool policies (seq, fix, interval, rc, \
             adaptive, fm)",
            sim.policy
        );
    };
    let config = move |reissue: Reissue, seed: u64| {
        let server = SimConfig::new(
            cores,
            policy.clone(),
            demand.clone(),
            arrivals.clone(),
            rps,
            sim.requests,
            seed,
        );
        let mut cfg = FanoutConfig::new(server, shards, replicas);
        cfg.reissue = reissue;
        cfg.noise = sim.noise;
        cfg.select = match sim.select {
            Pick::Random => Select::Random,
            Pick::LeastLoaded => Select::LeastLoaded,
        };
        cfg.cancel = !sim.no_cancel;
        cfg
    };
    // Refuse bad settings once, before the search.
    config(Reissue::SingleD { d_ms: 1.0 }, sim.seed)
        .validate()
        .context("--adapt")?;
    let percentile = args.percentile;
    Ok(move |reissue: Reissue, seed: u64| {
        let out = simulate_fanout(&config(reissue, seed))?;
        let rate = out.summary.reissue_rate.unwrap_or(0.0);
        Ok((rate, at_percentile(&out.summary.latency_ms, percentile)))
    })
}
