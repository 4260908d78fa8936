//! What a run produces: the run summary, per-request records and the thread trace.

use std::io::{self, Write};

use tailor_core::{degree_stats, phase_stats, Arrivals, RunSummary};

use crate::config::SimConfig;
use crate::measure::Measurements;

/// Everything a simulation produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// The run summary (shared/spec/formats.md).
    pub summary: RunSummary,
    /// One record per request, in arrival order (warm-up included), when the run asked
    /// for records.
    pub records: Vec<RequestRecord>,
    /// Requests and threads over time, when the run asked for a trace.
    pub trace: Vec<TracePoint>,
}

/// One request's history.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// 1-based arrival order.
    pub request: usize,
    /// Intended arrival time.
    pub arrival_ms: f64,
    /// When it started executing.
    pub start_ms: f64,
    /// When it finished.
    pub finish_ms: f64,
    /// Its sequential work.
    pub work_ms: f64,
    /// The highest degree it ran at.
    pub max_degree: usize,
    /// Its degree averaged over its execution time.
    pub mean_degree: f64,
    /// Whether its threads were boosted.
    pub boosted: bool,
}

/// The system's state from `time_ms` until the next point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TracePoint {
    /// When the state began.
    pub time_ms: f64,
    /// Requests in the system (waiting or running).
    pub in_system: usize,
    /// Requests running.
    pub running: usize,
    /// Threads serving requests.
    pub threads: usize,
    /// Of those, boosted threads.
    pub boosted_threads: usize,
}

/// Writes per-request records as CSV (shared/spec/formats.md, extra columns after).
pub fn write_records(records: &[RequestRecord], mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "request,arrival_ms,start_ms,finish_ms,work_ms,max_degree,latency_ms,mean_degree,boosted"
    )?;
    for r in records {
        writeln!(
            out,
            "{},{:.6},{:.6},{:.6},{:.6},{},{:.6},{:.4},{}",
            r.request,
            r.arrival_ms,
            r.start_ms,
            r.finish_ms,
            r.work_ms,
            r.max_degree,
            r.finish_ms - r.arrival_ms,
            r.mean_degree,
            r.boosted
        )?;
    }
    Ok(())
}

/// Writes the trace as CSV, one row per change.
pub fn write_trace(trace: &[TracePoint], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "time_ms,in_system,running,threads,boosted_threads")?;
    for p in trace {
        writeln!(
            out,
            "{:.6},{},{},{},{}",
            p.time_ms, p.in_system, p.running, p.threads, p.boosted_threads
        )?;
    }
    Ok(())
}

pub(crate) fn summarize(cfg: &SimConfig, m: &mut Measurements) -> RunSummary {
    let end = m.end_ms;
    let mut by_work = std::mem::take(&mut m.work_degree);
    let degrees = degree_stats(&mut by_work, m.degree_range.0 == m.degree_range.1);
    let measured = by_work.len().max(1) as f64;
    RunSummary {
        engine: "sim".into(),
        policy: cfg.policy.name(),
        cores: cfg.cores,
        rps: cfg.sustained_rps(),
        requests: cfg.request_count(),
        completed: m.completed,
        rejected: 0,
        latency_ms: m.latency.stats(),
        target_ms: cfg.target_ms,
        miss_ratio: cfg.target_ms.map(|t| m.latency.miss_ratio(t)),
        cpu_utilization: if end > 0.0 {
            m.cpu_time / (cfg.cores as f64 * end)
        } else {
            0.0
        },
        mean_threads: if end > 0.0 { m.thread_time / end } else { 0.0 },
        mean_degree: degrees.mean,
        warmup: cfg.warmup_count(),
        mean_degree_shortest_5pct: degrees.shortest_5pct,
        mean_degree_longest_5pct: degrees.longest_5pct,
        degree_distribution: m.max_degrees.iter().map(|c| *c as f64 / measured).collect(),
        seed: cfg.seed,
        serialized: None,
        energy: None,
        migrations_per_request: None,
        transitions_per_request: None,
        epochs: Vec::new(),
        host: None,
        shards: None,
        replicas: None,
        reissue: None,
        reissue_rate: None,
        phases: match &cfg.arrivals {
            Arrivals::Phases(phases) => phase_stats(phases, &m.latencies),
            _ => Vec::new(),
        },
    }
}

/// Adds `point` to a fluid model's trace, replacing the last point when both fall at the
/// same time (within `eps` ms): events that tie leave one point, the state after them.
pub(crate) fn push_trace_point(trace: &mut Vec<TracePoint>, point: TracePoint, eps: f64) {
    match trace.last_mut() {
        Some(last) if (last.time_ms - point.time_ms).abs() <= eps => *last = point,
        _ => trace.push(point),
    }
}
