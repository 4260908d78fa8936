//! `tailor load`: an open-loop HTTP load client over a bounded pool of keep-alive
//! connections. Each request's latency runs from its intended send time, as in wrk2, so
//! a slow server cannot slow the offered load down (no coordinated omission).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Semaphore};

use tailor_core::{
    phase_stats, workload_rngs, ArrivalError, Arrivals, DemandModel, LatencyRecorder, LatencyStats,
    RunSummary,
};

/// What each request asks for.
#[derive(Debug, Clone)]
pub enum Target {
    /// `GET /search` with one of these (q, fuzzy, k), drawn uniformly per request.
    Search(Vec<(String, u8, usize)>),
    /// `POST /work` with an empty body: the server draws the work from its demand.
    Work,
    /// `POST /work` with `{"work_ms": X}`, X drawn here (seeded by the run's seed): with
    /// one demand, from it; with several, one per phase of [`Arrivals::Phases`], the i-th
    /// phase's requests from the i-th, so that a run's demand can drift (issue 41).
    DrawnWork(Vec<DemandModel>),
    /// Any HTTP service: one of these requests, drawn uniformly per request, sent as
    /// given (no `/healthz` check; `cpu_utilization` is then 0, unknown, and the cores
    /// are this machine's).
    Raw(Vec<RawRequest>),
    /// Any HTTP service: these requests, each sent at its own time (ms from the start), in
    /// order; the arrivals and the rate are the replay's.
    Replay(Vec<(f64, RawRequest)>),
}

/// One request of a [`Target::Raw`] load.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRequest {
    /// The method.
    pub method: Method,
    /// The path and query, from `/`.
    pub path: String,
    /// The body, sent with `content-type: application/json` when not empty and no
    /// header sets the content type.
    pub body: Bytes,
    /// Headers to send, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl RawRequest {
    /// `POST path` with `body` as JSON.
    pub fn json_post(path: String, body: &serde_json::Value) -> RawRequest {
        RawRequest {
            method: Method::POST,
            path,
            body: Bytes::from(body.to_string()),
            headers: Vec::new(),
        }
    }

    /// The request as one of `parse_lines`'s JSON lines: a body that is JSON is written as
    /// JSON, any other as a string, an empty one left out.
    pub fn to_json_line(&self) -> serde_json::Value {
        let mut line = serde_json::json!({"method": self.method.as_str(), "path": self.path});
        if !self.headers.is_empty() {
            line["headers"] = self
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.to_string(), serde_json::Value::String(value))
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        if !self.body.is_empty() {
            line["body"] = serde_json::from_slice(&self.body).unwrap_or_else(|_| {
                serde_json::Value::String(String::from_utf8_lossy(&self.body).into_owned())
            });
        }
        line
    }

    /// Parses JSON lines, one request each: `{"method": "POST", "path": "/index/_search",
    /// "body": {...}}`, "body" optional (a JSON value is sent as JSON, a string as its
    /// text), "headers" optional (`{"Name": "value"}`). Errors name `file` and the line;
    /// blank lines are skipped.
    pub fn parse_lines(text: &str, file: &str) -> Result<Vec<RawRequest>, String> {
        let lines = parse_json_lines(text, file)?;
        if let Some((n, _)) = lines.iter().find(|(_, (at, _))| at.is_some()) {
            return Err(format!(
                "{file}:{n}: \"at_ms\" is a replay's; give the file with --replay"
            ));
        }
        Ok(lines.into_iter().map(|(_, (_, r))| r).collect())
    }

    /// Parses a replay: JSON lines as [`RawRequest::parse_lines`] reads them, each with
    /// `"at_ms"`, its send time from the replay's start; the times must not fall.
    pub fn parse_replay(text: &str, file: &str) -> Result<Vec<(f64, RawRequest)>, String> {
        let mut out = Vec::new();
        let mut last = 0.0;
        for (n, (at, r)) in parse_json_lines(text, file)? {
            let at = at.ok_or_else(|| format!("{file}:{n}: a replay's line needs \"at_ms\""))?;
            if !(at.is_finite() && at >= last && at <= 86_400_000.0) {
                return Err(format!(
                    "{file}:{n}: \"at_ms\" must be a time in ms from 0 to a day, not below the \
                     line before's ({last}); found {at}"
                ));
            }
            last = at;
            out.push((at, r));
        }
        Ok(out)
    }
}

/// Parses `parse_lines`' JSON lines with their line numbers and `at_ms`, if any.
#[allow(clippy::type_complexity)]
fn parse_json_lines(
    text: &str,
    file: &str,
) -> Result<Vec<(usize, (Option<f64>, RawRequest))>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        method: String,
        path: String,
        #[serde(default)]
        body: Option<serde_json::Value>,
        #[serde(default)]
        headers: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        at_ms: Option<f64>,
    }
    let clip = |t: &str| tailor_core::clip(t).to_string();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{file}:{}", i + 1);
        let l: Line = serde_json::from_str(line).map_err(|e| {
            format!(r#"{at}: expected {{"method": ..., "path": "/...", "body": ...}}: {e}"#)
        })?;
        let method = Method::from_bytes(l.method.as_bytes())
            .map_err(|_| format!("{at}: bad method {:?}", clip(&l.method)))?;
        if !l.path.starts_with('/') {
            return Err(format!(
                "{at}: the path must start with /, found {:?}",
                clip(&l.path)
            ));
        }
        if l.path.contains('#') || format!("http://h{}", l.path).parse::<hyper::Uri>().is_err() {
            return Err(format!(
                "{at}: {:?} is not a path the client can send (spaces or a #fragment?)",
                clip(&l.path)
            ));
        }
        let body = match l.body {
            None => Bytes::new(),
            Some(serde_json::Value::String(text)) => Bytes::from(text),
            Some(value) => Bytes::from(value.to_string()),
        };
        let headers = l
            .headers
            .iter()
            .map(|(name, value)| crate::parse_header(&format!("{name}: {value}"), &at))
            .collect::<Result<_, _>>()?;
        out.push((
            i + 1,
            (
                l.at_ms,
                RawRequest {
                    method,
                    path: l.path,
                    body,
                    headers,
                },
            ),
        ));
    }
    if out.is_empty() {
        return Err(format!("{file}: no requests"));
    }
    Ok(out)
}

/// A load run's settings.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The server's base URL, `http://host:port`.
    pub url: String,
    /// The requests.
    pub target: Target,
    /// The arrival process.
    pub arrivals: Arrivals,
    /// Offered load, requests per second.
    pub rps: f64,
    /// Requests in the run (phases fix their own count), unless `duration` is given.
    pub requests: usize,
    /// Send for this long instead: every arrival drawn before it (not with phases).
    pub duration: Option<Duration>,
    /// Seed of the arrivals and of the queries drawn.
    pub seed: u64,
    /// Connections open at most.
    pub connections: usize,
    /// A request not answered within this counts as a timeout.
    pub timeout: Duration,
    /// Warm-up requests left out of the statistics; `None` means 5%.
    pub warmup: Option<usize>,
    /// Keep each measured latency in the summary (`measured_latencies_ms`), not only the
    /// histogram.
    pub keep_latencies: bool,
}

/// Why a load run could not run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A setting is out of range.
    #[error("{0}")]
    BadConfig(String),
    /// The arrivals could not be generated.
    #[error(transparent)]
    Arrivals(#[from] ArrivalError),
    /// The server did not answer `/healthz` as a tailor server does.
    #[error("{url}: {reason}")]
    Server {
        /// What was asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
}

/// `tailor load`'s output: the run summary of `tailor run`, with engine `http`, plus the
/// answers that were not results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSummary {
    /// The same summary as `tailor run`'s. Latency is of the 2xx answers; `rejected`
    /// counts 503s; the utilization is the server process's CPU time (from its
    /// `/metrics`) over the run's wall time and its cores; the degree figures are of the
    /// highest degree per request, from the server's degree counters; `mean_threads` is
    /// not observable from outside and is 0.
    #[serde(flatten)]
    pub run: RunSummary,
    /// 503 answers: queue full, or shutting down.
    pub unavailable: u64,
    /// Other non-2xx answers.
    pub errors: u64,
    /// Requests with no answer: connection failures and timeouts.
    pub failed: u64,
    /// Of which timeouts.
    pub timeouts: u64,
    /// The client's own CPU time over the run's wall time and the server's cores: on a
    /// machine shared with the server, what the client took from it.
    pub client_cpu_utilization: f64,
    /// Answers (of any status) per second of the run, from the first intended send to
    /// the last answer.
    #[serde(default)]
    pub achieved_rps: f64,
    /// That span, seconds.
    #[serde(default)]
    pub duration_s: f64,
    /// How late the generator released requests after their intended times: its own
    /// precision, which latencies include (they run from the intended time).
    #[serde(default)]
    pub generator_lateness_ms: LatencyStats,
    /// The measured requests' latencies, for `--hgrm`.
    #[serde(skip)]
    pub latency_histogram: Option<LatencyRecorder>,
    /// The same latencies one by one, in the order of the requests' intended send times,
    /// for `--latencies` (empty unless the config's `keep_latencies`).
    #[serde(skip)]
    pub measured_latencies_ms: Vec<f64>,
}

/// What `/healthz` says.
#[derive(Debug, Deserialize)]
struct Health {
    workload: String,
    policy: String,
    cores: usize,
}

/// How one request ended.
enum Outcome {
    Answer(StatusCode, f64),
    Timeout,
    Failed,
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn fetch(
    client: &HttpClient,
    method: Method,
    url: &str,
    body: Bytes,
    headers: &[(HeaderName, HeaderValue)],
) -> Result<(StatusCode, Bytes), String> {
    let mut request = Request::builder().method(method).uri(url);
    let typed = headers
        .iter()
        .any(|(name, _)| name == hyper::header::CONTENT_TYPE);
    if !body.is_empty() && !typed {
        request = request.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request.body(Full::new(body)).map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(&format!(": {s}"));
            source = s.source();
        }
        text
    })?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// The server's counters that the summary uses.
#[derive(Debug, Clone, Copy)]
struct ServerCounters {
    cpu_s: f64,
    degrees: [f64; 64],
}

impl Default for ServerCounters {
    fn default() -> Self {
        ServerCounters {
            cpu_s: 0.0,
            degrees: [0.0; 64],
        }
    }
}

async fn scrape(client: &HttpClient, base: &str) -> ServerCounters {
    let mut c = ServerCounters::default();
    let Ok((_, body)) = fetch(
        client,
        Method::GET,
        &format!("{base}/metrics"),
        Bytes::new(),
        &[],
    )
    .await
    else {
        return c;
    };
    for line in String::from_utf8_lossy(&body).lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        if name == "process_cpu_seconds_total" {
            c.cpu_s = v;
        } else if let Some(d) = name
            .strip_prefix("tailor_request_degree_total{degree=\"")
            .and_then(|r| r.strip_suffix("\"}"))
            .and_then(|d| d.parse::<usize>().ok())
        {
            if (1..=64).contains(&d) {
                c.degrees[d - 1] = v;
            }
        }
    }
    c
}

/// Asks a tailor server's `/healthz` and checks that it serves what `target` sends.
async fn check_health(
    client: &HttpClient,
    base: &str,
    target: &Target,
) -> Result<Health, LoadError> {
    let health_url = format!("{base}/healthz");
    let server = |reason: String| LoadError::Server {
        url: health_url.clone(),
        reason,
    };
    let (status, body) = fetch(client, Method::GET, &health_url, Bytes::new(), &[])
        .await
        .map_err(|e| server(format!("no answer: {e}")))?;
    if !status.is_success() {
        return Err(server(format!("answered {status}")));
    }
    let health: Health = serde_json::from_slice(&body)
        .map_err(|e| server(format!("not a tailor server's health answer: {e}")))?;
    match (target, health.workload.as_str()) {
        (Target::Search(_), "search")
        | (Target::Work | Target::DrawnWork(_), "synthetic")
        | (Target::Raw(_) | Target::Replay(_), _) => {}
        (Target::Search(_), other) => {
            return Err(server(format!(
                "the server runs --workload {other}; queries need --workload search"
            )))
        }
        (Target::Work | Target::DrawnWork(_), other) => {
            return Err(server(format!(
                "the server runs --workload {other}; give it queries with --queries FILE"
            )))
        }
    }
    Ok(health)
}

/// For each of `count` requests, the index of its arrival phase (all 0 without phases).
fn phase_indices(arrivals: &Arrivals, count: usize) -> Vec<usize> {
    match arrivals {
        Arrivals::Phases(phases) => phases
            .iter()
            .enumerate()
            .flat_map(|(k, p)| std::iter::repeat_n(k, p.count))
            .chain(std::iter::repeat(phases.len().saturating_sub(1)))
            .take(count)
            .collect(),
        _ => vec![0; count],
    }
}

/// Runs a load test against a `tailor serve` at `cfg.url` (or, with [`Target::Raw`], any
/// HTTP service).
pub async fn run_load(cfg: &LoadConfig) -> Result<LoadSummary, LoadError> {
    if cfg.connections == 0 {
        return Err(LoadError::BadConfig(
            "--connections must be at least 1".into(),
        ));
    }
    if let Target::Search(queries) = &cfg.target {
        if queries.is_empty() {
            return Err(LoadError::BadConfig("no queries to send".into()));
        }
    }
    let base = cfg.url.trim_end_matches('/').to_string();
    let client: HttpClient = Client::builder(crate::executor())
        .pool_max_idle_per_host(cfg.connections)
        .build_http();
    let health = match &cfg.target {
        Target::Raw(_) | Target::Replay(_) => {
            let empty = match &cfg.target {
                Target::Raw(raw) => raw.is_empty(),
                Target::Replay(replay) => replay.is_empty(),
                _ => false,
            };
            if empty {
                return Err(LoadError::BadConfig("no requests to send".into()));
            }
            Health {
                workload: "raw".into(),
                policy: "raw".into(),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            }
        }
        _ => check_health(&client, &base, &cfg.target).await?,
    };

    let (mut arrival_rng, mut pick_rng) = workload_rngs(cfg.seed);
    let arrivals = match (&cfg.target, cfg.duration) {
        (Target::Replay(replay), _) => replay.iter().map(|(at, _)| *at).collect(),
        (_, Some(d)) => {
            if cfg.arrivals.fixed_count().is_some() {
                return Err(LoadError::BadConfig(
                    "phased arrivals fix their own length: give no duration with them".into(),
                ));
            }
            let end_ms = d.as_secs_f64() * 1000.0;
            if let Arrivals::Trace(times) = &cfg.arrivals {
                // A trace's own times, up to the duration.
                times.iter().copied().filter(|&t| t < end_ms).collect()
            } else {
                let expected = cfg.rps * d.as_secs_f64();
                if expected > tailor_core::MAX_REQUESTS as f64 {
                    return Err(LoadError::BadConfig(format!(
                    "{} requests/s for {:.0} s are {expected:.0} requests, more than a run may \
                     send ({}); lower the rate or the duration",
                    cfg.rps,
                    d.as_secs_f64(),
                    tailor_core::MAX_REQUESTS
                )));
                }
                // Enough arrivals to pass the duration at the offered rate, then cut there.
                let mut enough = (cfg.rps * d.as_secs_f64() * 1.25 + 64.0).ceil() as usize;
                loop {
                    let mut drawn = cfg.arrivals.generate(cfg.rps, enough, &mut arrival_rng)?;
                    if drawn.last().is_some_and(|&t| t >= end_ms) || drawn.len() < enough {
                        drawn.retain(|&t| t < end_ms);
                        break drawn;
                    }
                    enough *= 2;
                    (arrival_rng, pick_rng) = workload_rngs(cfg.seed);
                }
            }
        }
        (_, None) => {
            let count = cfg.arrivals.fixed_count().unwrap_or(cfg.requests);
            cfg.arrivals.generate(cfg.rps, count, &mut arrival_rng)?
        }
    };
    let count = arrivals.len();
    let warmup = cfg.warmup.unwrap_or(count / 20).min(count);
    let phase_of = phase_indices(&cfg.arrivals, count);
    if let Target::DrawnWork(demands) = &cfg.target {
        let phases = phase_of.last().map_or(1, |p| p + 1);
        if demands.is_empty() || (demands.len() > 1 && demands.len() != phases) {
            return Err(LoadError::BadConfig(format!(
                "{} work demands for {phases} arrival phase(s): give one, or one per phase",
                demands.len()
            )));
        }
    }
    type Prepared = (Method, String, Bytes, Vec<(HeaderName, HeaderValue)>);
    let requests: Arc<Vec<Prepared>> = Arc::new(
        (0..count)
            .map(|i| match &cfg.target {
                Target::Search(queries) => {
                    let (q, fuzzy, k) = &queries[pick_rng.random_range(0..queries.len())];
                    let query = serde_urlencoded::to_string([
                        ("q", q.clone()),
                        ("k", k.to_string()),
                        ("fuzzy", fuzzy.to_string()),
                    ])
                    .expect("strings encode");
                    (
                        Method::GET,
                        format!("{base}/search?{query}"),
                        Bytes::new(),
                        Vec::new(),
                    )
                }
                Target::Work => (
                    Method::POST,
                    format!("{base}/work"),
                    Bytes::new(),
                    Vec::new(),
                ),
                Target::DrawnWork(demands) => {
                    let demand = &demands[phase_of[i].min(demands.len() - 1)];
                    let work_ms = demand.sample(&mut pick_rng).work_ms.min(crate::MAX_WORK_MS);
                    let body = serde_json::json!({ "work_ms": work_ms }).to_string();
                    (
                        Method::POST,
                        format!("{base}/work"),
                        Bytes::from(body),
                        Vec::new(),
                    )
                }
                Target::Replay(replay) => {
                    let r = &replay[i].1;
                    (
                        r.method.clone(),
                        format!("{base}{}", r.path),
                        r.body.clone(),
                        r.headers.clone(),
                    )
                }
                Target::Raw(raw) => {
                    let r = &raw[pick_rng.random_range(0..raw.len())];
                    (
                        r.method.clone(),
                        format!("{base}{}", r.path),
                        r.body.clone(),
                        r.headers.clone(),
                    )
                }
            })
            .collect(),
    );

    // Any HTTP service gets only the run's requests: no /metrics before or after.
    let raw = matches!(cfg.target, Target::Raw(_) | Target::Replay(_));
    let before = if raw {
        ServerCounters::default()
    } else {
        scrape(&client, &base).await
    };
    let client_cpu_before = tailor_bench::process_cpu_seconds();
    let t0 = Instant::now() + Duration::from_millis(20);
    // The client's own stalls and steal: an HTTP server on the same machine shares them.
    let meter = tailor_bench::HostMeter::start(t0)
        .map_err(|e| LoadError::BadConfig(format!("cannot start the hiccup meter: {e}")))?;
    let (to_sender, mut released) = mpsc::unbounded_channel::<(usize, Instant)>();
    let generator = {
        let arrivals = arrivals.clone();
        std::thread::Builder::new()
            .name("tailor-load-generator".into())
            .spawn(move || {
                tailor_bench::release_at(t0, &arrivals, |i, intended| {
                    let _ = to_sender.send((i, intended));
                })
            })
            .map_err(|e| LoadError::BadConfig(format!("cannot start the generator: {e}")))?
    };
    let slots = Arc::new(Semaphore::new(cfg.connections));
    let (to_results, mut results) = mpsc::unbounded_channel::<(usize, Outcome)>();
    while let Some((i, intended)) = released.recv().await {
        let (client, slots, requests, to_results) = (
            client.clone(),
            slots.clone(),
            requests.clone(),
            to_results.clone(),
        );
        let timeout = cfg.timeout;
        tokio::spawn(async move {
            // The timeout runs from the intended send time: waiting for a connection
            // counts.
            let deadline = tokio::time::Instant::from_std(intended + timeout);
            let sent = async {
                let _slot = slots.acquire_owned().await.expect("never closed");
                let (method, url, body, headers) = &requests[i];
                fetch(&client, method.clone(), url, body.clone(), headers).await
            };
            let outcome = match tokio::time::timeout_at(deadline, sent).await {
                Ok(Ok((status, _))) => {
                    Outcome::Answer(status, intended.elapsed().as_secs_f64() * 1000.0)
                }
                Ok(Err(_)) => Outcome::Failed,
                Err(_) => Outcome::Timeout,
            };
            let _ = to_results.send((i, outcome));
        });
    }
    drop(to_results);
    let lateness_us = generator.join().map(|(late, _)| late).unwrap_or_default();
    let mut latency = LatencyRecorder::default();
    // Each request's latency in arrival order for the phases' statistics; a request
    // without a 2xx answer counts at the timeout.
    let timeout_ms = cfg.timeout.as_secs_f64() * 1000.0;
    let mut latencies = vec![timeout_ms; count];
    let mut measured = vec![false; count];
    let (mut completed, mut unavailable, mut errors, mut failed, mut timeouts) = (0, 0, 0, 0, 0);
    let mut last = t0;
    let mut last_answer = t0;
    while let Some((i, outcome)) = results.recv().await {
        last = Instant::now();
        if matches!(outcome, Outcome::Answer(..)) {
            last_answer = last;
        }
        match outcome {
            Outcome::Answer(status, ms) if status.is_success() => {
                completed += 1;
                latencies[i] = ms;
                if i >= warmup {
                    latency.record(ms);
                    measured[i] = true;
                }
            }
            Outcome::Answer(StatusCode::SERVICE_UNAVAILABLE, _) => unavailable += 1,
            Outcome::Answer(..) => errors += 1,
            Outcome::Timeout => {
                failed += 1;
                timeouts += 1;
            }
            Outcome::Failed => failed += 1,
        }
    }
    let host = meter.stop();
    let wall = last.saturating_duration_since(t0).as_secs_f64().max(1e-9);
    let client_cpu = tailor_bench::process_cpu_seconds() - client_cpu_before;
    let after = if raw {
        ServerCounters::default()
    } else {
        scrape(&client, &base).await
    };
    let mut lateness = LatencyRecorder::default();
    for us in &lateness_us {
        lateness.record(us / 1000.0);
    }
    let degree_counts: Vec<f64> = (0..64)
        .map(|d| (after.degrees[d] - before.degrees[d]).max(0.0))
        .collect();
    let top = degree_counts
        .iter()
        .rposition(|&n| n > 0.0)
        .map_or(1, |d| d + 1);
    let finished: f64 = degree_counts.iter().sum();
    let mean_degree = if finished > 0.0 {
        degree_counts
            .iter()
            .enumerate()
            .map(|(d, n)| (d + 1) as f64 * n)
            .sum::<f64>()
            / finished
    } else {
        0.0
    };
    let run = RunSummary {
        engine: "http".into(),
        policy: health.policy,
        cores: health.cores,
        rps: match &cfg.target {
            // The replay's own rate: its gaps over its span.
            Target::Replay(_) => {
                let span_s = (arrivals.last().copied().unwrap_or(0.0)
                    - arrivals.first().copied().unwrap_or(0.0))
                    / 1000.0;
                if span_s > 0.0 {
                    (count - 1) as f64 / span_s
                } else {
                    0.0
                }
            }
            _ => cfg.arrivals.sustained_rps(cfg.rps),
        },
        requests: count,
        completed,
        rejected: unavailable as usize,
        latency_ms: latency.stats(),
        target_ms: None,
        miss_ratio: None,
        cpu_utilization: (after.cpu_s - before.cpu_s).max(0.0)
            / (wall * health.cores.max(1) as f64),
        mean_threads: 0.0,
        mean_degree,
        warmup,
        mean_degree_shortest_5pct: 0.0,
        mean_degree_longest_5pct: 0.0,
        degree_distribution: degree_counts[..top]
            .iter()
            .map(|n| n / finished.max(1.0))
            .collect(),
        seed: cfg.seed,
        serialized: None,
        energy: None,
        migrations_per_request: None,
        transitions_per_request: None,
        epochs: Vec::new(),
        host: Some(host.stats(f64::NEG_INFINITY, f64::INFINITY)),
        shards: None,
        replicas: None,
        reissue: None,
        reissue_rate: None,
        phases: match &cfg.arrivals {
            Arrivals::Phases(phases) => phase_stats(phases, &latencies),
            _ => Vec::new(),
        },
    };
    let answered = completed + unavailable as usize + errors as usize;
    let answering_s = last_answer
        .saturating_duration_since(t0)
        .as_secs_f64()
        .max(1e-9);
    Ok(LoadSummary {
        achieved_rps: answered as f64 / answering_s,
        duration_s: answering_s,
        generator_lateness_ms: lateness.stats(),
        latency_histogram: Some(latency),
        measured_latencies_ms: if cfg.keep_latencies {
            latencies
                .iter()
                .zip(&measured)
                .filter(|(_, &m)| m)
                .map(|(&ms, _)| ms)
                .collect()
        } else {
            Vec::new()
        },
        run,
        unavailable: unavailable as u64,
        errors,
        failed,
        timeouts,
        client_cpu_utilization: client_cpu / (wall * health.cores.max(1) as f64),
    })
}
