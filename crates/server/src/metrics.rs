//! `GET /metrics` of `tailor serve` and `tailor fanout`, through the Prometheus project's
//! Rust client (`prometheus-client`), in the Prometheus text exposition format (0.0.4).
//!
//! What the HTTP side counts lives in a registry; what the runtime counts is read from
//! its snapshot at each scrape and encoded as constant metrics by a collector.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::registry::Registry;
use std::time::Duration;

use tailor_runtime::MetricsSnapshot;

/// The `Content-Type` of the exposition.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds of the latency histograms' buckets, in seconds: 1, 2 and 5 in each decade
/// from 0.1 ms to 10 s (and +Inf, which the client adds), so that a p99 of 10-90 ms falls
/// between bounds at most 2.5x apart. `ServeConfig::latency_buckets_s` replaces them.
pub const DEFAULT_LATENCY_BUCKETS_S: [f64; 16] = [
    0.000_1, 0.000_2, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
    10.0,
];

/// Checks histogram bucket bounds: at least one, each finite and positive, strictly
/// increasing. The error names the first bad bound by its position (from 1).
pub fn check_buckets(bounds: &[f64]) -> Result<(), String> {
    if bounds.is_empty() {
        return Err("no bucket bounds".into());
    }
    for (i, b) in bounds.iter().enumerate() {
        if !(b.is_finite() && *b > 0.0) {
            return Err(format!("bound {}: {b} is not a positive number", i + 1));
        }
        if i > 0 && *b <= bounds[i - 1] {
            return Err(format!(
                "bound {}: {b} is not above the one before it, {}",
                i + 1,
                bounds[i - 1]
            ));
        }
    }
    Ok(())
}

/// A label set of one `(name, value)` pair.
pub(crate) type Label = [(&'static str, String); 1];

/// The status class of an HTTP status, as the `class` label writes it.
pub(crate) fn status_class(status: u16) -> Option<&'static str> {
    match status {
        200..=299 => Some("2xx"),
        400..=499 => Some("4xx"),
        500..=599 => Some("5xx"),
        _ => None,
    }
}

/// A latency histogram with [`DEFAULT_LATENCY_BUCKETS_S`].
pub(crate) fn latency_histogram() -> Histogram {
    Histogram::new(DEFAULT_LATENCY_BUCKETS_S)
}

/// Encodes `registry` in the text format.
pub(crate) fn render(registry: &Registry) -> String {
    let mut out = String::with_capacity(4096);
    prometheus_client::encoding::prometheus_text::encode(&mut out, registry)
        .expect("writing to a String cannot fail");
    out
}

/// The process's CPU time, read at each scrape.
#[derive(Debug, Default)]
pub(crate) struct ProcessCpu;

impl Collector for ProcessCpu {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        constant(
            &mut encoder,
            "process_cpu_seconds",
            "CPU time of the process, user and system.",
            ConstCounter::new(tailor_bench::process_cpu_seconds()),
        )
    }
}

/// Encodes one constant metric.
fn constant<M: EncodeMetric + TypedMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric: M,
) -> Result<(), std::fmt::Error> {
    let descriptor = encoder.encode_descriptor(name, help, None, M::TYPE)?;
    metric.encode(descriptor)
}

/// Encodes a family of constant counters, one per label value.
fn counters(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &'static str,
    values: &[(String, u64)],
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, ConstCounter::<u64>::TYPE)?;
    for (value, n) in values {
        let labels: Label = [(label, value.clone())];
        ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// A `prometheus-client` collector of a tailor runtime's metrics, for an embedder's own
/// registry: at each scrape it reads a [`MetricsSnapshot`] from `read` (say,
/// `move || runtime.metrics()`) and encodes its gauges and counters, as `tailor serve`'s
/// `/metrics` shows them.
///
/// ```
/// use prometheus_client::registry::Registry;
/// use tailor_core::Policy;
/// use tailor_runtime::{Runtime, RuntimeConfig};
/// use tailor_server::RuntimeCollector;
///
/// let runtime = std::sync::Arc::new(Runtime::start(RuntimeConfig::new(2, Policy::Seq)).unwrap());
/// let mut registry = Registry::default();
/// let rt = runtime.clone();
/// registry.register_collector(Box::new(RuntimeCollector::new(move || rt.metrics())));
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains("tailor_load 0"));
/// ```
pub struct RuntimeCollector<F> {
    read: F,
}

impl<F: Fn() -> MetricsSnapshot> RuntimeCollector<F> {
    /// A collector that reads the runtime's metrics with `read` at each scrape.
    pub fn new(read: F) -> Self {
        RuntimeCollector { read }
    }
}

impl<F> std::fmt::Debug for RuntimeCollector<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeCollector")
    }
}

impl<F> Collector for RuntimeCollector<F>
where
    F: Fn() -> MetricsSnapshot + Send + Sync + 'static,
{
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_runtime(&(self.read)(), encoder)
    }
}

/// The policy's swaps and age at one scrape.
#[derive(Debug)]
struct PolicySwaps((u64, Duration));

impl Collector for PolicySwaps {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (swaps, age) = self.0;
        constant(
            &mut encoder,
            "tailor_policy_swaps",
            "Policies (FM tables) swapped in while serving (Runtime::set_policy).",
            ConstCounter::new(swaps),
        )?;
        constant(
            &mut encoder,
            "tailor_policy_age_seconds",
            "Seconds since the policy in force was started or swapped in.",
            ConstGauge::new(age.as_secs_f64()),
        )
    }
}

/// The runtime's metrics at one scrape.
#[derive(Debug)]
struct RuntimeMetrics(MetricsSnapshot);

impl Collector for RuntimeMetrics {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_runtime(&self.0, encoder)
    }
}

/// Encodes a snapshot of the runtime's metrics.
fn encode_runtime(
    rt: &MetricsSnapshot,
    mut encoder: DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let gauges = [
        (
            "tailor_load",
            "Requests in the runtime now, waiting or running.",
            rt.load,
        ),
        (
            "tailor_queue_length",
            "Requests waiting for admission now.",
            rt.waiting,
        ),
        (
            "tailor_threads_in_use",
            "Pool threads working on a request now.",
            rt.threads_in_use,
        ),
        (
            "tailor_boosted_threads",
            "Threads reserved for boosted requests now.",
            rt.boosted_threads,
        ),
    ];
    for (name, help, value) in gauges {
        constant(&mut encoder, name, help, ConstGauge::new(value as i64))?;
    }
    counters(
        &mut encoder,
        "tailor_requests",
        "Requests the runtime ended, by outcome.",
        "outcome",
        &[
            ("completed".into(), rt.completed),
            ("failed".into(), rt.failed),
            ("cancelled".into(), rt.cancelled),
        ],
    )?;
    constant(
        &mut encoder,
        "tailor_rejected",
        "Requests refused at submission (queue full or shutting down).",
        ConstCounter::new(rt.rejected),
    )?;
    let degrees: Vec<(String, u64)> = rt
        .degree_counts
        .iter()
        .enumerate()
        .map(|(d, n)| ((d + 1).to_string(), *n))
        .collect();
    counters(
        &mut encoder,
        "tailor_request_degree",
        "Finished requests by the highest number of threads they ran on.",
        "degree",
        &degrees,
    )
}

/// Why a compute request got no answer from its work, as `tailor_rejections_total`'s
/// `reason` label writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// The admission queue was at its bound (503).
    QueueFull,
    /// The server was shutting down (503).
    ShuttingDown,
    /// Cancelled unfinished at the drain deadline (503).
    Cancelled,
    /// Not answered within --request-timeout (504).
    Deadline,
}

impl Rejection {
    const ALL: [Rejection; 4] = [
        Rejection::QueueFull,
        Rejection::ShuttingDown,
        Rejection::Cancelled,
        Rejection::Deadline,
    ];

    fn label(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue_full",
            Rejection::ShuttingDown => "shutting_down",
            Rejection::Cancelled => "cancelled",
            Rejection::Deadline => "deadline",
        }
    }
}

/// What `tailor serve`'s HTTP side counts; the runtime's metrics come from its snapshot.
#[derive(Debug)]
pub(crate) struct HttpMetrics {
    registry: Registry,
    /// Answers by status class.
    answers: Family<Label, Counter>,
    /// 503s.
    unavailable: Counter,
    /// Requests that got no answer from their work, by reason.
    rejections: Family<Label, Counter>,
    /// Time to answer /search and /work.
    duration: Histogram,
    /// Time from a compute request's arrival to its first thread.
    queue_wait: Histogram,
    /// Re-planning periods by outcome (`--replan-every`).
    replans: Family<Label, Counter>,
}

impl HttpMetrics {
    /// The HTTP side's metrics, with latency histograms over `buckets_s` (checked by
    /// [`check_buckets`]) and `tailor_build_info` naming `policy`.
    pub(crate) fn new(policy: &str, buckets_s: &[f64]) -> Self {
        let answers = Family::<Label, Counter>::default();
        let unavailable = Counter::default();
        let rejections = Family::<Label, Counter>::default();
        let duration = Histogram::new(buckets_s.iter().copied());
        let queue_wait = Histogram::new(buckets_s.iter().copied());
        let build = Family::<[(&'static str, String); 2], Gauge>::default();
        build
            .get_or_create(&[
                ("version", env!("CARGO_PKG_VERSION").to_string()),
                ("policy", policy.to_string()),
            ])
            .set(1);
        let mut registry = Registry::default();
        registry.register(
            "tailor_build_info",
            "Always 1: the version of tailor and the policy this server runs.",
            build,
        );
        registry.register(
            "tailor_request_duration_seconds",
            "Time from receiving a /search or /work request to its answer.",
            duration.clone(),
        );
        registry.register(
            "tailor_queue_wait_seconds",
            "Time from a /search or /work request's arrival to its first thread: the wait \
             for admission (the bounded queue, FM's delay v0).",
            queue_wait.clone(),
        );
        registry.register(
            "tailor_http_responses",
            "HTTP answers by status class.",
            answers.clone(),
        );
        registry.register(
            "tailor_http_unavailable",
            "503 answers: the admission queue was full, or the server was shutting down.",
            unavailable.clone(),
        );
        registry.register(
            "tailor_rejections",
            "Compute requests answered without their work, by reason: queue_full and \
             shutting_down (503 at submission), cancelled (503 at the drain deadline), \
             deadline (504 past --request-timeout).",
            rejections.clone(),
        );
        let replans = Family::<Label, Counter>::default();
        registry.register(
            "tailor_replans",
            "Re-planning periods of the FM table (--replan-every), by outcome: swapped (the \
             new table is in use), kept (the guard's simulation kept the old one), \
             unchanged (the new table decides as the old), skipped (too few requests \
             served, or planning failed).",
            replans.clone(),
        );
        registry.register_collector(Box::new(ProcessCpu));
        for class in ["2xx", "4xx", "5xx"] {
            let _ = answers.get_or_create(&[("class", class.into())]);
        }
        for reason in Rejection::ALL {
            let _ = rejections.get_or_create(&[("reason", reason.label().into())]);
        }
        for outcome in ["swapped", "kept", "unchanged", "skipped"] {
            let _ = replans.get_or_create(&[("outcome", outcome.into())]);
        }
        HttpMetrics {
            registry,
            answers,
            unavailable,
            rejections,
            duration,
            queue_wait,
            replans,
        }
    }

    /// Counts a re-planning period by its outcome's label.
    pub(crate) fn replanned(&self, outcome: &'static str) {
        self.replans
            .get_or_create(&[("outcome", outcome.into())])
            .inc();
    }

    /// Counts a compute request answered without its work.
    pub(crate) fn rejected(&self, why: Rejection) {
        self.rejections
            .get_or_create(&[("reason", why.label().into())])
            .inc();
    }

    /// Times a compute request's wait for admission.
    pub(crate) fn waited(&self, wait: Duration) {
        self.queue_wait.observe(wait.as_secs_f64());
    }
}

impl HttpMetrics {
    /// Counts an answer; `took` is set for compute requests, which the histogram times.
    pub(crate) fn answered(&self, status: u16, took: Option<Duration>) {
        if let Some(class) = status_class(status) {
            self.answers.get_or_create(&[("class", class.into())]).inc();
        }
        if status == 503 {
            self.unavailable.inc();
        }
        if let Some(took) = took {
            self.duration.observe(took.as_secs_f64());
        }
    }

    /// Answers so far by class 2xx, 4xx, 5xx.
    pub(crate) fn answers(&self) -> [u64; 3] {
        ["2xx", "4xx", "5xx"].map(|c| self.answers.get_or_create(&[("class", c.into())]).get())
    }

    /// The exposition text: the HTTP side's registry, then the runtime's snapshot.
    /// `swaps`: the policies swapped in so far and the age of the one in force
    /// (`Runtime::policy_swaps`).
    pub(crate) fn render(&self, rt: &MetricsSnapshot, swaps: (u64, Duration)) -> String {
        let mut runtime = Registry::default();
        runtime.register_collector(Box::new(RuntimeMetrics(rt.clone())));
        runtime.register_collector(Box::new(PolicySwaps(swaps)));
        let mut out = render(&self.registry);
        out.push_str(&render(&runtime));
        out
    }
}
