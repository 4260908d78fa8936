//! `tailor simulate`'s fan-out flags (issue #24): shards, replicas, reissue, replica noise.
//!
//! Also the value parsers and the replica choice that `plan reissue` and `serve` share.

use clap::{Args, ValueEnum};
use tailor_core::{Noise, Reissue};
use tailor_sim::{FanoutConfig, Select, SimConfig};

use crate::bounds;

/// Fan-out over replicated shards: thread-pool policies only.
#[derive(Debug, Args)]
pub(crate) struct FanoutArgs {
    /// Fan each query out to S shards (one request per shard, each drawing its own work
    /// from DEMAND); the query answers when every shard has. --rps and --requests are
    /// then queries.
    #[arg(long, value_parser = bounds::SHARDS)]
    pub(crate) shards: Option<usize>,
    /// Replicas of each shard, each a server of --cores cores running --policy.
    #[arg(long, value_parser = bounds::REPLICAS, default_value_t = 1, requires = "shards")]
    replicas: usize,
    /// When a shard request is sent again to another replica: none, single-d:D_MS,
    /// single-r:D_MS:Q (SingleR: with probability Q after D_MS), hedge:PERCENTILE (after
    /// that percentile of the shard's latencies over the previous --hedge-period, as
    /// `tailor fanout` hedges).
    #[arg(long, default_value = "none", value_parser = parse_reissue, requires = "shards")]
    reissue: Reissue,
    /// Replica stalls: RATE_PER_S:LENGTH_MS (stall starts a Poisson process per replica).
    #[arg(long, value_parser = parse_noise, requires = "shards")]
    noise: Option<Noise>,
    /// How the front end picks a shard's replica (as `tailor fanout --route`; `--select`
    /// is an older name).
    #[arg(long = "route", alias = "select", value_enum, default_value_t = Pick::Random, requires = "shards")]
    select: Pick,
    /// Let the losing copy of a reissued request run to its end instead of cancelling it.
    #[arg(long, requires = "shards")]
    no_cancel: bool,
    /// Hedging: the length of a period of each shard's latency histogram; hedges use the
    /// previous period's percentile once it has 100 latencies, as `tailor fanout` does
    /// [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = bounds::duration, requires = "shards")]
    hedge_period: Option<std::time::Duration>,
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
    pub(crate) fn config(&self, server: SimConfig) -> Option<FanoutConfig> {
        let shards = self.shards?;
        let mut cfg = FanoutConfig::new(server, shards, self.replicas);
        cfg.reissue = self.reissue;
        cfg.noise = self.noise;
        cfg.hedge_period_ms = self
            .hedge_period
            .map_or(tailor_sim::DEFAULT_HEDGE_PERIOD_MS, |d| {
                1000.0 * d.as_secs_f64()
            });
        cfg.select = match self.select {
            Pick::Random => Select::Random,
            Pick::LeastLoaded => Select::LeastLoaded,
        };
        cfg.cancel = !self.no_cancel;
        cfg.records = cfg.server.records;
        Some(cfg)
    }
}
