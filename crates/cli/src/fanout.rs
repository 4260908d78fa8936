//! `tailor fanout`: the partition-aggregate front end over `tailor serve --shard I/S`
//! replicas, with reissue across each shard's replicas (issue #24).

use std::time::Duration;

use anyhow::Context;
use clap::Args;

use tailor_core::Reissue;
use tailor_server::{FanoutConfig, Route};

use crate::{bounds, write_output, PathArg};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor fanout --upstream http://127.0.0.1:8081,http://127.0.0.1:8082 \\
      --upstream http://127.0.0.1:8083,http://127.0.0.1:8084 \\
      --reissue single-r:12:0.05")]
pub(crate) struct FanoutArgs {
    /// One shard's replicas, comma-separated base URLs; repeat once per shard, in shard
    /// order (`--upstream http://127.0.0.1:8081,http://127.0.0.1:8082 --upstream ...`).
    /// `--shard` is an older name for it (elsewhere `--shard I/S` picks a corpus shard).
    #[arg(
        long = "upstream",
        alias = "shard",
        value_name = "URL,URL,...",
        required = true
    )]
    shards: Vec<String>,
    /// Address to listen on; port 0 picks a free one (the address is printed).
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
    /// none, single-d:D_MS, single-r:D_MS:Q (`tailor plan reissue` computes D and Q), or
    /// hedge:PERCENTILE (tower's hedge layer).
    #[arg(long, default_value = "none")]
    reissue: String,
    /// Which replica a shard request's first copy goes to: random, or least-loaded (the
    /// fewest of this front end's requests outstanding).
    #[arg(long, default_value = "random")]
    route: String,
    /// Let the losing copy finish instead of cancelling it (closing its connection).
    #[arg(long)]
    no_cancel: bool,
    /// Queries in the front end at most; beyond it, 503 at once.
    #[arg(long, default_value_t = 256, value_parser = bounds::COUNT)]
    max_inflight: usize,
    /// A query not answered within this long gets 504 and its shard requests are
    /// cancelled.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = bounds::duration)]
    timeout: Duration,
    /// Hedging: the length of a period of the latency histogram; hedges use the previous
    /// period's percentile and start once a period has seen 100 shard requests.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = bounds::duration)]
    hedge_period: Duration,
    /// Seed of the routing and of SingleR's draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How long a request head may take to arrive before it is answered 408 (at the
    /// connection bound the slowest client is shed at once).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = bounds::duration)]
    header_timeout: Duration,
    /// How long a request body may send nothing before it is answered 408.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = bounds::duration)]
    body_timeout: Duration,
    /// Write one CSV line per shard request of each answered query when stopped, in
    /// `tailor simulate --shards --records`' format (`tailor plan reissue` reads it).
    #[arg(long)]
    records: Option<PathArg>,
}

pub(crate) fn fanout(args: FanoutArgs) -> anyhow::Result<()> {
    let reissue = Reissue::parse(&args.reissue)?;
    let route = Route::parse(&args.route).map_err(anyhow::Error::msg)?;
    let shards: Vec<Vec<String>> = args
        .shards
        .iter()
        .map(|s| {
            s.split(',')
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty())
                .collect()
        })
        .collect();
    let config = FanoutConfig {
        shards,
        reissue,
        route,
        cancel: !args.no_cancel,
        max_inflight: args.max_inflight,
        timeout: args.timeout,
        hedge_period: args.hedge_period,
        seed: args.seed,
        records: args.records.is_some(),
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
    };
    let io = crate::serve::io_runtime(false)?;
    let report = io.block_on(async {
        let (listener, addr) = tailor_server::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        // Signals are watched before the address is announced (as in serve).
        let stop = tailor_server::shutdown_signal();
        tracing::info!(
            "fanning out to {} shards with reissue {} on http://{addr} (SIGINT or SIGTERM stops it)",
            config.shards.len(),
            config.reissue.name()
        );
        tailor_server::fanout(listener, config, stop)
            .await
            .context("the front end could not start")
    })?;
    tracing::info!(
        "stopped; answers: {} 2xx, {} 4xx, {} 5xx; {} shard requests, {} reissued",
        report.answers[0],
        report.answers[1],
        report.answers[2],
        report.shard_requests,
        report.reissued
    );
    if let Some(path) = &args.records {
        write_output(Some(path), |w| {
            tailor_core::write_shard_records(&report.records, w)
        })?;
        tracing::info!(
            "{} shard records written to {}",
            report.records.len(),
            path.display()
        );
    }
    Ok(())
}
