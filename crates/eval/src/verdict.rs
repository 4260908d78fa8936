//! `tailor demo`'s verdict: FM's p99 against the best peer's at each load.
//!
//! Each cell's runs are pooled over rounds, with bootstrap intervals of its p99 and mean.

use tailor_core::{HostStats, LatencyRecorder, RunSummary};

use crate::bootstrap::{mean_ci, quantile_ci, ratio_to_best_ci, Bootstrap, Estimate, Verdict};

/// One live run: its summary and its measured latencies in arrival order.
pub(crate) struct Run {
    pub(crate) summary: RunSummary,
    pub(crate) latencies: Vec<f64>,
    /// Why the run counts as noisy, if it does.
    pub(crate) noise: Option<String>,
    /// Each measured request's profiled t1 and service time (start to finish), ms.
    pub(crate) executions: Vec<(f64, f64)>,
}

/// Why a run counts as noisy, from its host figures over `wall_ms`, or `None`.
pub(crate) fn noise_of(summary: &RunSummary, wall_ms: f64) -> Option<String> {
    summary.host?.noise(wall_ms, summary.cores)
}

/// One policy at one load over the rounds.
pub(crate) struct Cell {
    pub(crate) p99: Estimate,
    pub(crate) mean: Estimate,
    /// Runs kept (measured in a quiet state, or kept after their retries; see `noisy`).
    pub(crate) runs: usize,
    /// Runs kept although still noisy after their retries.
    pub(crate) noisy: usize,
    /// Runs repeated because they were noisy.
    pub(crate) repeated: usize,
}

/// The runs' latencies, one list per run, as the bootstrap takes them.
fn samples(runs: &[Run]) -> Vec<Vec<f64>> {
    runs.iter().map(|r| r.latencies.clone()).collect()
}

/// The bootstrap of one cell's runs.
pub(crate) fn cell(runs: &[Run], repeated: usize, cfg: &Bootstrap) -> Cell {
    let samples = samples(runs);
    Cell {
        p99: quantile_ci(&samples, 0.99, cfg),
        mean: mean_ci(&samples, cfg),
        runs: runs.len(),
        noisy: runs.iter().filter(|r| r.noise.is_some()).count(),
        repeated,
    }
}

/// FM's p99 over the best peer's at one load, with the verdict.
pub(crate) struct LoadVerdict {
    pub(crate) load: f64,
    pub(crate) rps: f64,
    pub(crate) ratio: Estimate,
    pub(crate) verdict: Verdict,
}

/// The verdict at one load: `ours` against `peers`, each a list of runs.
pub(crate) fn verdict(
    load: f64,
    rps: f64,
    ours: &[Run],
    peers: &[&[Run]],
    cfg: &Bootstrap,
) -> LoadVerdict {
    let peer_samples: Vec<Vec<Vec<f64>>> = peers.iter().map(|p| samples(p)).collect();
    let peer_refs: Vec<&[Vec<f64>]> = peer_samples.iter().map(|p| p.as_slice()).collect();
    let ratio = ratio_to_best_ci(&samples(ours), &peer_refs, 0.99, cfg);
    LoadVerdict {
        load,
        rps,
        ratio,
        verdict: Verdict::of(&ratio),
    }
}

/// The demo's last JSON line (shared/spec/cli.md), with the scheduler the live runs had
/// (`fair` or `rr`).
pub(crate) fn verdict_json(loads: &[LoadVerdict], scheduler: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "verdict",
        "scheduler": scheduler,
        "loads": loads.iter().map(|v| serde_json::json!({
            "load": v.load,
            "rps": v.rps,
            "fm_vs_best": v.ratio.value,
            "ci": [v.ratio.low, v.ratio.high],
            "verdict": v.verdict.name(),
        })).collect::<Vec<_>>(),
    })
}

/// One summary for a cell's runs: the first run's fields, with the requests counted and
/// the latencies taken over all its rounds, CPU and threads averaged.
pub(crate) fn pooled_summary(runs: &[Run]) -> RunSummary {
    let mut summary = runs[0].summary.clone();
    let n = runs.len() as f64;
    summary.requests = runs.iter().map(|r| r.summary.requests).sum();
    summary.completed = runs.iter().map(|r| r.summary.completed).sum();
    summary.rejected = runs.iter().map(|r| r.summary.rejected).sum();
    summary.warmup = runs.iter().map(|r| r.summary.warmup).sum();
    summary.cpu_utilization = runs.iter().map(|r| r.summary.cpu_utilization).sum::<f64>() / n;
    summary.mean_threads = runs.iter().map(|r| r.summary.mean_threads).sum::<f64>() / n;
    summary.mean_degree = runs.iter().map(|r| r.summary.mean_degree).sum::<f64>() / n;
    let mut recorder = LatencyRecorder::default();
    for latency in runs.iter().flat_map(|r| &r.latencies) {
        recorder.record(*latency);
    }
    summary.latency_ms = recorder.stats();
    summary.host = runs
        .iter()
        .filter_map(|r| r.summary.host)
        .reduce(|a, b| HostStats {
            steal_ms: a.steal_ms.zip(b.steal_ms).map(|(x, y)| x + y),
            other_cpu_ms: a.other_cpu_ms.zip(b.other_cpu_ms).map(|(x, y)| x + y),
            max_hiccup_ms: a.max_hiccup_ms.max(b.max_hiccup_ms),
            hiccup_ms: a.hiccup_ms + b.hiccup_ms,
            work_scale: None,
        });
    summary
}

/// A cell's JSON line: the pooled summary plus its intervals and how many runs were
/// repeated or flagged for noise.
pub(crate) fn cell_json(runs: &[Run], cell: &Cell) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(pooled_summary(runs))?;
    let object = value
        .as_object_mut()
        .expect("a run summary is a JSON object");
    object.insert(
        "p99_ci_ms".into(),
        serde_json::json!([cell.p99.low, cell.p99.high]),
    );
    object.insert(
        "mean_ci_ms".into(),
        serde_json::json!([cell.mean.low, cell.mean.high]),
    );
    object.insert("rounds".into(), cell.runs.into());
    object.insert("repeated_runs".into(), cell.repeated.into());
    object.insert("noisy_runs".into(), cell.noisy.into());
    Ok(value)
}
