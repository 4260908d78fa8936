//! `GET /metrics`: the server's and the runtime's metrics in the Prometheus text
//! exposition format (version 0.0.4).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tailor_runtime::MetricsSnapshot;

/// Upper bounds of the latency histogram's buckets, in seconds: 0.25 ms to 10 s.
const BUCKETS_S: [f64; 16] = [
    0.000_25,
    0.000_5,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    f64::INFINITY,
];

/// Counters the HTTP side keeps; the runtime's come from its own snapshot.
#[derive(Debug, Default)]
pub(crate) struct HttpMetrics {
    /// Answers by status class 2xx, 4xx, 5xx.
    answers: [AtomicU64; 3],
    /// 503s.
    unavailable: AtomicU64,
    /// Per bucket, answers of /search and /work no longer than its bound (not cumulative).
    buckets: [AtomicU64; BUCKETS_S.len()],
    /// Their total time, in nanoseconds.
    sum_ns: AtomicU64,
}

impl HttpMetrics {
    /// Counts an answer; `took` is set for compute requests, which the histogram times.
    pub(crate) fn answered(&self, status: u16, took: Option<Duration>) {
        let class = match status {
            200..=299 => Some(0),
            400..=499 => Some(1),
            500..=599 => Some(2),
            _ => None,
        };
        if let Some(c) = class {
            self.answers[c].fetch_add(1, Ordering::Relaxed);
        }
        if status == 503 {
            self.unavailable.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(took) = took {
            let s = took.as_secs_f64();
            let i = BUCKETS_S
                .iter()
                .position(|&b| s <= b)
                .unwrap_or(BUCKETS_S.len() - 1);
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
            self.sum_ns
                .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// Answers so far by class 2xx, 4xx, 5xx.
    pub(crate) fn answers(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.answers[i].load(Ordering::Relaxed))
    }

    /// The exposition text.
    pub(crate) fn render(&self, rt: &MetricsSnapshot) -> String {
        let mut out = String::with_capacity(4096);
        // The latency histogram: cumulative buckets, then the sum and count.
        let mut cumulative = 0u64;
        let mut samples: Vec<(String, f64)> = BUCKETS_S
            .iter()
            .zip(&self.buckets)
            .map(|(bound, n)| {
                cumulative += n.load(Ordering::Relaxed);
                (
                    format!("_bucket{{le=\"{}\"}}", number(*bound)),
                    cumulative as f64,
                )
            })
            .collect();
        samples.push((
            "_sum".into(),
            self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
        ));
        samples.push(("_count".into(), cumulative as f64));
        // The suffixes go on the name, so write this family by hand.
        let name = "tailor_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from receiving a /search or /work request to its answer."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (suffix, value) in &samples {
            let (suffix, labels) = suffix.split_at(suffix.find('{').unwrap_or(suffix.len()));
            let _ = writeln!(out, "{name}{suffix}{labels} {}", number(*value));
        }
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {}", number(*value));
            }
        };
        let classes = ["2xx", "4xx", "5xx"];
        family(
            "tailor_http_responses_total",
            "counter",
            "HTTP answers by status class.",
            &classes
                .iter()
                .zip(self.answers())
                .map(|(c, n)| (format!("{{class=\"{c}\"}}"), n as f64))
                .collect::<Vec<_>>(),
        );
        family(
            "tailor_http_unavailable_total",
            "counter",
            "503 answers: the admission queue was full, or the server was shutting down.",
            &[(
                String::new(),
                self.unavailable.load(Ordering::Relaxed) as f64,
            )],
        );
        family(
            "tailor_load",
            "gauge",
            "Requests in the runtime now, waiting or running.",
            &[(String::new(), rt.load as f64)],
        );
        family(
            "tailor_queue_length",
            "gauge",
            "Requests waiting for admission now.",
            &[(String::new(), rt.waiting as f64)],
        );
        family(
            "tailor_threads_in_use",
            "gauge",
            "Pool threads working on a request now.",
            &[(String::new(), rt.threads_in_use as f64)],
        );
        family(
            "tailor_boosted_threads",
            "gauge",
            "Threads reserved for boosted requests now.",
            &[(String::new(), rt.boosted_threads as f64)],
        );
        family(
            "tailor_requests_total",
            "counter",
            "Requests the runtime ended, by outcome.",
            &[
                ("{outcome=\"completed\"}".to_string(), rt.completed as f64),
                ("{outcome=\"failed\"}".to_string(), rt.failed as f64),
                ("{outcome=\"cancelled\"}".to_string(), rt.cancelled as f64),
            ],
        );
        family(
            "tailor_rejected_total",
            "counter",
            "Requests refused at submission (queue full or shutting down).",
            &[(String::new(), rt.rejected as f64)],
        );
        family(
            "tailor_request_degree_total",
            "counter",
            "Finished requests by the highest number of threads they ran on.",
            &rt.degree_counts
                .iter()
                .enumerate()
                .map(|(d, n)| (format!("{{degree=\"{}\"}}", d + 1), *n as f64))
                .collect::<Vec<_>>(),
        );
        family(
            "process_cpu_seconds_total",
            "counter",
            "CPU time of the server process, user and system.",
            &[(String::new(), tailor_bench::process_cpu_seconds())],
        );
        out
    }
}

/// A sample value as Prometheus writes it.
fn number(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".into()
    } else {
        format!("{v}")
    }
}
