//! Many runs: one run on whichever engine its policy needs, and a sweep's results for people.
//!
//! `tailor simulate` builds a [`SimRun`] per policy, load and seed, normalizes the
//! energy of heterogeneous-core runs as the dissertation does, and prints the policy x
//! load table of [`write_sweep`].

use std::io::{self, Write};

use tailor_core::{RunSummary, ShardRecord};

use crate::{
    simulate, simulate_dvfs, simulate_fanout, simulate_hetero, simulate_steal, DvfsSimConfig,
    FanoutConfig, HeteroSimConfig, SimConfig, SimError, SimOutput, StealSimConfig,
};

/// One simulated run, on the engine its policy needs.
#[derive(Debug, Clone)]
pub enum SimRun {
    /// A thread-pool policy on one server ([`simulate`]).
    Threads(SimConfig),
    /// A thread-pool policy on every replica behind a fan-out ([`simulate_fanout`]).
    Fanout(FanoutConfig),
    /// A work-stealing policy ([`simulate_steal`]).
    Steal(StealSimConfig),
    /// A heterogeneous-core policy ([`simulate_hetero`]).
    Hetero(HeteroSimConfig),
    /// A DVFS policy ([`simulate_dvfs`]).
    Dvfs(DvfsSimConfig),
}

impl SimRun {
    /// The server's settings (a fan-out's: each replica's).
    pub fn base(&self) -> &SimConfig {
        match self {
            SimRun::Threads(cfg) => cfg,
            SimRun::Fanout(f) => &f.server,
            SimRun::Steal(s) => &s.base,
            SimRun::Hetero(h) => &h.base,
            SimRun::Dvfs(d) => &d.base,
        }
    }

    /// The policy's name, as summaries give it.
    pub fn policy_name(&self) -> String {
        match self {
            SimRun::Threads(cfg) => cfg.policy.name(),
            SimRun::Fanout(f) => f.server.policy.name(),
            SimRun::Steal(s) => s.policy.name().to_string(),
            SimRun::Hetero(h) => h.policy.name(),
            SimRun::Dvfs(d) => d.policy.name(),
        }
    }

    /// Refuses settings the engine cannot run: the fan-out's own checks, the server's
    /// otherwise.
    pub fn validate(&self) -> Result<(), SimError> {
        match self {
            SimRun::Fanout(f) => f.validate(),
            other => other.base().validate(),
        }
    }

    /// Runs it: the output (a fan-out's summary, with no request records or trace) and
    /// a fan-out's shard records (none for the other engines).
    pub fn simulate(&self) -> Result<(SimOutput, Vec<ShardRecord>), SimError> {
        Ok(match self {
            SimRun::Threads(cfg) => (simulate(cfg)?, Vec::new()),
            SimRun::Fanout(f) => {
                let o = simulate_fanout(f)?;
                let output = SimOutput {
                    summary: o.summary,
                    records: Vec::new(),
                    trace: Vec::new(),
                };
                (output, o.records)
            }
            SimRun::Steal(s) => (simulate_steal(s)?, Vec::new()),
            SimRun::Hetero(h) => (simulate_hetero(h)?, Vec::new()),
            SimRun::Dvfs(d) => (simulate_dvfs(d)?, Vec::new()),
        })
    }
}

/// Normalizes energy as the dissertation does (ch. 5, §5.3.1): to EE's energy per
/// request at the lowest load, when the sweep has EE (per seed). A DVFS sweep without
/// EE normalizes to `max`'s at the lowest load instead (issue 42 compares against it).
/// Otherwise the summaries keep their own baseline.
pub fn normalize_to_ee(summaries: &mut [RunSummary]) {
    let bases_of = |name: &str| -> Vec<(u64, f64, f64)> {
        summaries
            .iter()
            .filter(|s| s.policy == name)
            .filter_map(|s| s.energy.as_ref().map(|e| (s.seed, s.rps, e.per_request)))
            .collect()
    };
    let (mut name, mut bases) = ("ee", bases_of("ee"));
    if bases.is_empty() {
        (name, bases) = ("max", bases_of("max"));
    }
    for s in summaries.iter_mut() {
        let lowest = bases
            .iter()
            .filter(|b| b.0 == s.seed)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(&(_, rps, base)), Some(e)) = (lowest, s.energy.as_mut()) {
            e.normalized = e.per_request / base;
            e.baseline = format!("{name} at {rps} rps");
        }
    }
}

/// The policy x load table of p99 and mean latency, each the median over the seeds.
pub fn write_sweep(
    summaries: &[RunSummary],
    rps_list: &[f64],
    seeds: usize,
    w: &mut dyn Write,
) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::{Arrivals, Demand, DemandModel, Policy};

    #[test]
    fn the_median_takes_the_middle_two_of_an_even_count() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn a_sweep_prints_one_row_per_rate_and_the_median_over_seeds() {
        let demand = DemandModel::new(Demand::parse("exp:5").unwrap(), None).unwrap();
        let run = |rps: f64, seed: u64| {
            let cfg = SimConfig::new(
                2,
                Policy::Seq,
                demand.clone(),
                Arrivals::Poisson,
                rps,
                500,
                seed,
            );
            let run = SimRun::Threads(cfg);
            run.validate().unwrap();
            assert_eq!(run.policy_name(), "seq");
            run.simulate().unwrap().0.summary
        };
        let summaries = vec![run(50.0, 1), run(50.0, 2), run(100.0, 1), run(100.0, 2)];
        let mut text = Vec::new();
        write_sweep(&summaries, &[50.0, 100.0], 2, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.starts_with("p99 latency (ms), median of 2 seeds\n"),
            "{text}"
        );
        let p99 = median(summaries[2..].iter().map(|s| s.latency_ms.p99).collect());
        assert!(
            text.contains(&format!("{:>8.1}  {p99:>6.1}\n", 100.0)),
            "{text}"
        );
        // No target and no energy: those tables are left out.
        assert!(!text.contains("target misses") && !text.contains("energy"));
    }
}
