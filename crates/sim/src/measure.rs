//! What completed requests leave behind, and how a run's output is assembled from it.

use tailor_core::{Arrivals, LatencyRecorder};

use crate::config::SimConfig;
use crate::report::{summarize, RequestRecord, SimOutput, TracePoint};

/// Measurements gathered as requests complete, whichever loop ran them.
#[derive(Debug, Default)]
pub(crate) struct Measurements {
    /// Latencies of the measured (post-warm-up) requests.
    pub(crate) latency: LatencyRecorder,
    /// (work, mean degree) of each measured request.
    pub(crate) work_degree: Vec<(f64, f64)>,
    /// Measured requests by their highest degree (index d - 1).
    pub(crate) max_degrees: Vec<usize>,
    /// Every request's latency by arrival index, kept only for phased arrivals.
    pub(crate) latencies: Vec<f64>,
    /// Every request's record, kept only when asked for.
    pub(crate) records: Vec<RequestRecord>,
    pub(crate) completed: usize,
    /// When the last request finished.
    pub(crate) end_ms: f64,
    /// Integral of the threads serving requests, in thread x ms.
    pub(crate) thread_time: f64,
    /// CPU time used, in core x ms.
    pub(crate) cpu_time: f64,
    /// The smallest and largest mean degree of the measured requests.
    pub(crate) degree_range: (f64, f64),
    /// Requests with a lower index are warm-up (looked up once).
    warmup: usize,
    /// Whether to keep every request's record (looked up once).
    keep_records: bool,
}

impl Measurements {
    pub(crate) fn new(cfg: &SimConfig) -> Self {
        Self::with_max_degree(cfg, cfg.policy.max_degree())
    }

    /// Measurements for a run whose requests reach at most `max_degree` cores.
    pub(crate) fn with_max_degree(cfg: &SimConfig, max_degree: usize) -> Self {
        let count = cfg.request_count();
        let phased = matches!(cfg.arrivals, Arrivals::Phases(_));
        Measurements {
            // Reserve at most a million up front; more grow as they come.
            work_degree: Vec::with_capacity((count - cfg.warmup_count().min(count)).min(1 << 20)),
            max_degrees: vec![0; max_degree.max(1)],
            latencies: if phased { vec![0.0; count] } else { Vec::new() },
            degree_range: (f64::INFINITY, f64::NEG_INFINITY),
            warmup: cfg.warmup_count(),
            keep_records: cfg.records,
            ..Measurements::default()
        }
    }

    /// Files one completed request (`index` from 0 in arrival order).
    #[inline]
    pub(crate) fn file(&mut self, index: usize, r: RequestRecord) {
        let latency = r.finish_ms - r.arrival_ms;
        self.completed += 1;
        self.end_ms = self.end_ms.max(r.finish_ms);
        if index >= self.warmup {
            self.latency.record(latency);
            self.work_degree.push((r.work_ms, r.mean_degree));
            self.degree_range.0 = self.degree_range.0.min(r.mean_degree);
            self.degree_range.1 = self.degree_range.1.max(r.mean_degree);
            let top = self.max_degrees.len();
            self.max_degrees[r.max_degree.clamp(1, top) - 1] += 1;
        }
        if !self.latencies.is_empty() {
            self.latencies[index] = latency;
        }
        if self.keep_records {
            self.records.push(r);
        }
    }
}

/// The run's output from its measurements and trace.
pub(crate) fn finish(cfg: &SimConfig, mut m: Measurements, trace: Vec<TracePoint>) -> SimOutput {
    m.records.sort_by_key(|r| r.request);
    let summary = summarize(cfg, &mut m);
    SimOutput {
        summary,
        records: m.records,
        trace,
    }
}
