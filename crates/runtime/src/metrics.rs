//! Live metrics: load, threads, boosting, degrees and latency, readable at any time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use tailor_core::{LatencyRecorder, LatencyStats};

/// Counters the runtime updates as it works. Reading them takes no lock except for the
/// latency histogram.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// Requests in the system: waiting or running (the policies' load).
    pub(crate) load: AtomicUsize,
    pub(crate) threads_in_use: AtomicUsize,
    /// The most pool threads ever working on requests at once.
    pub(crate) peak_threads_in_use: AtomicUsize,
    pub(crate) boosted_threads: AtomicUsize,
    pub(crate) completed: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    /// Completed requests by their highest degree (index d - 1).
    pub(crate) degrees: Vec<AtomicU64>,
    /// Latency of the measured requests.
    pub(crate) latency: Mutex<LatencyRecorder>,
}

impl Metrics {
    pub(crate) fn new(max_degree: usize) -> Metrics {
        Metrics {
            load: AtomicUsize::new(0),
            threads_in_use: AtomicUsize::new(0),
            peak_threads_in_use: AtomicUsize::new(0),
            boosted_threads: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            degrees: (0..max_degree.max(1)).map(|_| AtomicU64::new(0)).collect(),
            latency: Mutex::new(LatencyRecorder::default()),
        }
    }

    pub(crate) fn snapshot(&self, waiting: usize) -> MetricsSnapshot {
        let latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        MetricsSnapshot {
            load: self.load.load(Ordering::Relaxed),
            waiting,
            threads_in_use: self.threads_in_use.load(Ordering::Relaxed),
            peak_threads_in_use: self.peak_threads_in_use.load(Ordering::Relaxed),
            boosted_threads: self.boosted_threads.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            degree_counts: self
                .degrees
                .iter()
                .map(|d| d.load(Ordering::Relaxed))
                .collect(),
            measured: latency.count(),
            latency_ms: latency.stats(),
        }
    }
}

/// A reading of the live metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    /// Requests in the system now: waiting or running.
    pub load: usize,
    /// Requests waiting for admission now (the bounded queue and FM's delay).
    pub waiting: usize,
    /// Pool threads working on a request now.
    pub threads_in_use: usize,
    /// The most pool threads that ever worked on requests at once (under FM's core
    /// guard, at most the cores).
    pub peak_threads_in_use: usize,
    /// Threads reserved for boosted requests now.
    pub boosted_threads: usize,
    /// Requests that completed with a result.
    pub completed: u64,
    /// Requests that completed with a panic.
    pub failed: u64,
    /// Requests refused at submission.
    pub rejected: u64,
    /// Requests cancelled at shutdown.
    pub cancelled: u64,
    /// `degree_counts[d - 1]`: finished requests whose highest degree was d.
    pub degree_counts: Vec<u64>,
    /// Requests in the latency histogram.
    pub measured: u64,
    /// Latency of the measured requests, from their arrival.
    pub latency_ms: LatencyStats,
}
