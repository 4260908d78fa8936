//! tailor's networked service: the runtime behind an HTTP/1.1 server, and the open-loop
//! HTTP client that loads it.
//!
//! [`serve`] answers the contract of shared/spec/http.md: `GET /search`, `GET|POST /work`,
//! `GET /healthz` and `GET /metrics`, and `GET /readyz` beside them. Connections, parsing and answers live on a small
//! tokio runtime; every request's compute is a job on the tailor [`Runtime`], whose
//! [`Handle`](tailor_runtime::Handle) the handler awaits, so no async worker thread ever
//! runs a search or spins. Beyond the runtime's bounded admission queue the server answers
//! 503 at once; connections are bounded too, so memory stays bounded under any offered
//! load. On shutdown it stops accepting, lets accepted requests finish until a deadline,
//! then cancels the rest, each of which still gets an answer (503).
//!
//! [`fanout`] is a partition-aggregate front end over `serve`s that each hold one shard,
//! with reissue policies across each shard's replicas (issue #24). Its SingleR is public as
//! [`SingleRLayer`], a tower layer for any service ([`singler`]).
//!
//! [`run_load`] is the client: requests released at their intended times by the same
//! precise generator as `tailor run`, sent over a bounded pool of keep-alive connections,
//! each latency counted from the intended send time (no coordinated omission, as wrk2).

mod accept;
mod fanout;
mod load;
mod load_targets;
mod metrics;
mod profile;
pub mod replan;
mod routes;
mod signal;
pub mod singler;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;

use tailor_core::{DemandModel, Rng};
use tailor_runtime::{MetricsSnapshot, Runtime, Shutdown};
use tailor_workloads::search::SearchIndex;
use tailor_workloads::{Spinner, SyntheticShape};

pub use fanout::{fanout, FanoutConfig, FanoutError, FanoutReport, Route};
pub use load::{run_load, LoadConfig, LoadError, LoadSummary, RawRequest, Target};
pub use load_targets::{parse_header, split_url};
pub use metrics::{check_buckets, RuntimeCollector, DEFAULT_LATENCY_BUCKETS_S};
pub use replan::{ReplanConfig, ReplanOutcome};
pub use routes::{
    search_params, SearchAnswer, SearchHit, SearchParams, WorkAnswer, MAX_K, MAX_QUERY_BYTES,
    MAX_WORK_MS,
};
pub use signal::shutdown_signal;
pub use singler::{CloneRequest, InvalidProbability, ReissuePolicy, SingleR, SingleRLayer};

/// What the server computes.
pub enum ServedWorkload {
    /// `GET /search`: queries on a tantivy index.
    Search(Arc<SearchIndex>),
    /// `GET|POST /work`: synthetic CPU-bound requests; without a body, the work is drawn
    /// from `demand` with a generator seeded by `seed`.
    Synthetic {
        /// Where drawn work comes from.
        demand: DemandModel,
        /// How a request splits into units.
        shape: SyntheticShape,
        /// The calibrated spin loop.
        spinner: Arc<Spinner>,
        /// Seed of the drawn work.
        seed: u64,
    },
}

impl ServedWorkload {
    /// Its name, as `/healthz` reports it.
    fn name(&self) -> &'static str {
        match self {
            ServedWorkload::Search(_) => "search",
            ServedWorkload::Synthetic { .. } => "synthetic",
        }
    }
}

/// The server's settings besides the runtime.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Request bodies over this many bytes get 413.
    pub max_body_bytes: usize,
    /// Connections open at once; at the bound the slowest client is shed (a 408), or
    /// when every connection is busy the new one gets 503.
    pub max_connections: usize,
    /// A request head not complete this long after its connection opened is answered
    /// 408; on a kept-alive connection, the connection is closed.
    pub header_timeout: Duration,
    /// How long accepted requests may run after a shutdown signal before the rest are
    /// cancelled.
    pub drain: Duration,
    /// A request not answered this long after its head arrived is cancelled and answered
    /// 504: its body, its wait for admission and its work all count.
    pub request_timeout: Duration,
    /// A request body that sends nothing for this long is given up (408) and its
    /// connection closed.
    pub body_timeout: Duration,
    /// The shard this server holds, `I/S` (`--shard`), which `/healthz` reports so that a
    /// fan-out front end can check its topology; `None` for the whole corpus.
    pub shard: Option<String>,
    /// Upper bounds, in seconds, of the buckets of `/metrics`' latency and queue-wait
    /// histograms ([`DEFAULT_LATENCY_BUCKETS_S`] by default; [`check_buckets`] says
    /// what is allowed).
    pub latency_buckets_s: Vec<f64>,
    /// Re-plan the FM table from the served requests every so often ([`replan`]); the
    /// runtime's policy must be FM.
    pub replan: Option<ReplanConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_body_bytes: 64 * 1024,
            max_connections: 1024,
            drain: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            shard: None,
            latency_buckets_s: DEFAULT_LATENCY_BUCKETS_S.to_vec(),
            replan: None,
        }
    }
}

/// What the handlers share.
pub(crate) struct State {
    runtime: Runtime,
    workload: ServedWorkload,
    config: ServeConfig,
    cores: usize,
    /// The generator of drawn synthetic work.
    draws: Mutex<Rng>,
    /// Set once a shutdown signal has come: `/healthz` and `/readyz` answer 503.
    draining: AtomicBool,
    metrics: metrics::HttpMetrics,
    /// A random name for this process, which `/healthz` reports: one server given to a
    /// front end under two URLs shows up as the same instance.
    instance: String,
}

/// How a server's run ended.
#[derive(Debug, Clone)]
pub struct ServeReport {
    /// The runtime's metrics at the end: every accepted request completed, failed or
    /// cancelled.
    pub runtime: MetricsSnapshot,
    /// Whether the drain deadline passed and unfinished requests were cancelled.
    pub cancelled_at_deadline: bool,
    /// HTTP answers by status class: 2xx, 4xx, 5xx.
    pub answers: [u64; 3],
}

/// Serves on `listener` until `shutdown` resolves, then drains (see the crate's
/// summary). `runtime` runs the compute; `cores` is what `/healthz` reports.
pub async fn serve(
    listener: TcpListener,
    runtime: Runtime,
    cores: usize,
    workload: ServedWorkload,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<ServeReport> {
    check_buckets(&config.latency_buckets_s).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("latency buckets: {e}"),
        )
    })?;
    if config.replan.is_some() && !matches!(*runtime.policy(), tailor_core::Policy::Fm { .. }) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "re-planning plans FM tables, but the policy is {}",
                runtime.policy().name()
            ),
        ));
    }
    let seed = match &workload {
        ServedWorkload::Synthetic { seed, .. } => *seed,
        ServedWorkload::Search(_) => 0,
    };
    let metrics = metrics::HttpMetrics::new(&runtime.policy().name(), &config.latency_buckets_s);
    let state = Arc::new(State {
        runtime,
        workload,
        cores,
        draws: Mutex::new(tailor_core::workload_rngs(seed).1),
        draining: AtomicBool::new(false),
        metrics,
        instance: instance_name(),
        config,
    });
    let app = routes::router(state.clone());
    let limits = accept::Limits {
        max_connections: state.config.max_connections,
        header_timeout: state.config.header_timeout,
        body_timeout: state.config.body_timeout,
        max_body_bytes: state.config.max_body_bytes,
    };
    let replanning = state
        .config
        .replan
        .clone()
        .map(|cfg| tokio::spawn(replan_loop(state.clone(), cfg)));
    let graceful = accept::accept_until(listener, app.clone(), limits, shutdown).await;
    state.draining.store(true, Ordering::Release);
    if let Some(task) = replanning {
        // A search under way finishes on its own thread; its state reference is awaited
        // below like a connection's.
        task.abort();
        let _ = task.await;
    }
    // Idle keep-alive connections close now; busy ones after their answer.
    let deadline = state.config.drain;
    let drained = tokio::time::timeout(deadline, graceful.shutdown()).await;
    let cancelled_at_deadline = drained.is_err();
    if cancelled_at_deadline {
        // The rest are cancelled; their handlers answer 503 and their connections close.
        state.runtime.cancel_unfinished();
        let started = Instant::now();
        while state.runtime.metrics().load > 0 && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Give the handlers a moment to write their answers.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answers = state.metrics.answers();
    drop(app);
    // Join the runtime's threads once no connection holds the state any more; a client
    // that keeps a dead connection open does not hold the exit up for long.
    let runtime = match sole_owner(state, Duration::from_secs(1)).await {
        Ok(state) => {
            tokio::task::spawn_blocking(move || state.runtime.shutdown(Shutdown::Cancel))
                .await
                .map_err(std::io::Error::other)?
                .metrics
        }
        Err(state) => {
            state.runtime.cancel_unfinished();
            state.runtime.metrics()
        }
    };
    Ok(ServeReport {
        runtime,
        cancelled_at_deadline,
        answers,
    })
}

/// Re-plans every `cfg.every` until the server drains, logging and counting each outcome.
async fn replan_loop(state: Arc<State>, cfg: ReplanConfig) {
    let mut last = (Instant::now(), state.runtime.metrics().completed);
    let mut rps = None;
    loop {
        tokio::time::sleep(cfg.every).await;
        if state.draining.load(Ordering::Acquire) {
            return;
        }
        let (now, completed) = (Instant::now(), state.runtime.metrics().completed);
        let elapsed = now.saturating_duration_since(last.0).as_secs_f64();
        if elapsed > 0.0 {
            rps = Some(completed.saturating_sub(last.1) as f64 / elapsed);
        }
        last = (now, completed);
        let shared = state.clone();
        let min_requests = cfg.min_requests;
        let outcome = tokio::task::spawn_blocking(move || {
            replan::replan_once(&shared.runtime, shared.cores, min_requests, rps)
        })
        .await;
        match outcome {
            Ok(outcome) => {
                state.metrics.replanned(outcome.label());
                tracing::info!("{outcome}");
            }
            Err(e) => {
                state.metrics.replanned("skipped");
                tracing::error!("re-planning failed: {e}");
            }
        }
    }
}

/// This process's name for `/healthz`: its process id and start time in ns since the
/// epoch, unique on a host.
fn instance_name() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{since:x}", std::process::id())
}

/// The state itself once connection tasks have dropped their references, within `wait`.
async fn sole_owner(mut state: Arc<State>, wait: Duration) -> Result<State, Arc<State>> {
    let started = Instant::now();
    loop {
        match Arc::try_unwrap(state) {
            Ok(s) => return Ok(s),
            Err(shared) if started.elapsed() >= wait => return Err(shared),
            Err(shared) => {
                state = shared;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// Binds `addr` (port 0 picks a free one) and returns the listener and its address.
pub async fn bind(addr: &str) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// The executor the client's connection pool spawns on.
pub(crate) fn executor() -> TokioExecutor {
    TokioExecutor::new()
}
