//! `tailor plan reissue`: SingleR's delay and probability from a shard log (Kaler, He
//! and Elnikety, SPAA 2017; crates/plan/src/reissue.rs).

use clap::Args;
use serde_json::json;
use tailor_core::ShardLog;
use tailor_plan::{plan_reissue, ReissueParams};

use crate::{bounds, PathArg};

#[derive(Debug, Args)]
pub(crate) struct ReissueArgs {
    /// Shard log CSV with `shard` and `latency_ms` (and `primary_ms` where a first copy
    /// may have been cancelled): `tailor simulate --shards ... --records FILE`.
    #[arg(long)]
    records: PathArg,
    /// The most reissues per shard request, from 0 to 1 (0.05: 5%).
    #[arg(long, value_parser = bounds::FRACTION0)]
    budget: f64,
    /// The query percentile to minimize.
    #[arg(long, default_value_t = 99.0, value_parser = bounds::PERCENTILE)]
    percentile: f64,
    /// The shards a query waits for (default: as many as the log names).
    #[arg(long, value_parser = bounds::SHARDS)]
    shards: Option<usize>,
}

pub(crate) fn reissue(args: ReissueArgs) -> anyhow::Result<()> {
    let log = ShardLog::read(&args.records)?;
    let shards = args.shards.unwrap_or(log.shards);
    let plan = plan_reissue(
        &log.answered_ms,
        &log.censored_ms,
        ReissueParams {
            budget: args.budget,
            percentile: args.percentile,
            shards,
        },
    )?;
    // Rounded so that the policy string parses back and stays within the budget: the
    // delay up (fewer requests are still out), the probability down.
    let d_ms = (plan.d_ms * 1e4).ceil() / 1e4;
    let q = (plan.q * 1e4).floor() / 1e4;
    let out = json!({
        "kind": "reissue-plan",
        "policy": format!("single-r:{d_ms}:{q}"),
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
    println!("{out}");
    Ok(())
}
