//! `GET /metrics` of `tailor serve` and `tailor fanout`, through the Prometheus project's
//! Rust client (`prometheus-client`), in the Prometheus text exposition format (0.0.4).
//!
//! What the HTTP side counts lives in a registry; what the runtime counts is read from
//! its snapshot at each scrape and encoded as constant metrics by a collector.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::registry::Registry;
use std::time::Duration;

use tailor_runtime::MetricsSnapshot;

/// The `Content-Type` of the exposition.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds of the latency histograms' buckets, in seconds: 0.25 ms to 10 s (and
/// +Inf, which the client adds).
pub(crate) const BUCKETS_S: [f64; 15] = [
    0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

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

/// A latency histogram with [`BUCKETS_S`].
pub(crate) fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS_S)
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

/// The runtime's metrics at one scrape.
#[derive(Debug)]
struct RuntimeMetrics(MetricsSnapshot);

impl Collector for RuntimeMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rt = &self.0;
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
}

/// What `tailor serve`'s HTTP side counts; the runtime's metrics come from its snapshot.
#[derive(Debug)]
pub(crate) struct HttpMetrics {
    registry: Registry,
    /// Answers by status class.
    answers: Family<Label, Counter>,
    /// 503s.
    unavailable: Counter,
    /// Time to answer /search and /work.
    duration: Histogram,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        let answers = Family::<Label, Counter>::default();
        let unavailable = Counter::default();
        let duration = latency_histogram();
        let mut registry = Registry::default();
        registry.register(
            "tailor_request_duration_seconds",
            "Time from receiving a /search or /work request to its answer.",
            duration.clone(),
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
        registry.register_collector(Box::new(ProcessCpu));
        for class in ["2xx", "4xx", "5xx"] {
            let _ = answers.get_or_create(&[("class", class.into())]);
        }
        HttpMetrics {
            registry,
            answers,
            unavailable,
            duration,
        }
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
    pub(crate) fn render(&self, rt: &MetricsSnapshot) -> String {
        let mut runtime = Registry::default();
        runtime.register_collector(Box::new(RuntimeMetrics(rt.clone())));
        let mut out = render(&self.registry);
        out.push_str(&render(&runtime));
        out
    }
}
