//! `tailor fanout`: a partition-aggregate front end over replicated shards (issue #24).
//!
//! Each query goes to one replica of every shard and is answered when all shards have
//! answered (Dean and Barroso, "The Tail at Scale", CACM 2013): `GET /search` merges the
//! shards' hits by score, `GET|POST /work` reports each shard's answer. A shard request
//! may be reissued to another replica of its shard (see [`shard`]'s policies); the first
//! answer wins and the other copy is dropped, which closes its connection and cancels
//! it at the replica (or, with `cancel: false`, left to finish: at most `max_inflight`
//! such copies at once, each for at most `timeout`; beyond that they are cancelled).
//!
//! Everything is bounded: at most `max_inflight` queries are in the front end (beyond
//! it, 503 at once), each for at most `timeout` (then 504). A replica that cannot be
//! reached makes its shard's answer, and the query's, a 502 that names it.

mod health;
mod routes;
mod shard;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use hyper_util::client::legacy::Client;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use tailor_core::{Reissue, ShardRecord};

use crate::metrics::{latency_histogram, Label, ProcessCpu};
pub use shard::Route;
use shard::{error_chain, HttpClient, Losers, Replicas, ShardStack};

/// The front end's settings.
#[derive(Debug, Clone)]
pub struct FanoutConfig {
    /// Per shard, its replicas' base URLs (`http://host:port`).
    pub shards: Vec<Vec<String>>,
    /// When a shard request is sent again.
    pub reissue: Reissue,
    /// Which replica a first copy goes to.
    pub route: Route,
    /// Whether the losing copy is cancelled (its connection closed) or left to finish.
    pub cancel: bool,
    /// Queries in the front end at most; beyond it, 503 at once.
    pub max_inflight: usize,
    /// A query not answered within this is answered 504.
    pub timeout: Duration,
    /// The period of tower's hedge histogram: hedging uses the previous period's
    /// latencies, and starts once a period has seen 100.
    pub hedge_period: Duration,
    /// Seed of the routing and of SingleR's draws.
    pub seed: u64,
    /// Keep one record per shard request.
    pub records: bool,
    /// A request head not complete this long after its connection opened is answered
    /// 408 (as `serve`'s).
    pub header_timeout: Duration,
    /// A request body that sends nothing for this long is answered 408.
    pub body_timeout: Duration,
}

/// Why the front end could not start.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    /// A setting is out of range.
    #[error("{0}")]
    BadConfig(String),
    /// A replica did not answer `/healthz` as a tailor server does.
    #[error("shard {shard}, replica {url}: {reason}")]
    Replica {
        /// The shard, from 0.
        shard: usize,
        /// The replica's URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
}

/// How the front end's run ended.
#[derive(Debug, Clone)]
pub struct FanoutReport {
    /// HTTP answers to queries by status class: 2xx, 4xx, 5xx.
    pub answers: [u64; 3],
    /// Shard requests sent, and of those reissued.
    pub shard_requests: u64,
    /// Shard requests whose second copy was sent.
    pub reissued: u64,
    /// One record per shard request of an answered query, by query in the order the
    /// queries were answered, then by shard (when asked for).
    pub records: Vec<ShardRecord>,
}

/// What `/healthz` of a replica says (`shard` and `instance` since issue #39; a server
/// without them is taken on trust).
#[derive(Debug, Deserialize)]
struct Health {
    workload: String,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default)]
    instance: Option<String>,
}

/// The front end's metrics.
#[derive(Debug)]
struct FanoutMetrics {
    registry: Registry,
    answers: Family<Label, Counter>,
    duration: Histogram,
    shard_requests: Family<Label, Counter>,
    reissued: Family<Label, Counter>,
    reissue_wins: Family<Label, Counter>,
    replica_errors: Family<Label, Counter>,
    inflight: Gauge,
    replica_up: Family<Label, Gauge>,
    ejections: Family<Label, Counter>,
    first_copies: Family<Label, Counter>,
}

impl Default for FanoutMetrics {
    fn default() -> Self {
        let m = FanoutMetrics {
            registry: Registry::default(),
            answers: Family::default(),
            duration: latency_histogram(),
            shard_requests: Family::default(),
            reissued: Family::default(),
            reissue_wins: Family::default(),
            replica_errors: Family::default(),
            inflight: Gauge::default(),
            replica_up: Family::default(),
            ejections: Family::default(),
            first_copies: Family::default(),
        };
        let mut registry = Registry::default();
        registry.register(
            "tailor_fanout_query_duration_seconds",
            "Time from receiving a query to its answer, all shards answered.",
            m.duration.clone(),
        );
        registry.register(
            "tailor_http_responses",
            "HTTP answers to /search and /work by status class.",
            m.answers.clone(),
        );
        registry.register(
            "tailor_fanout_shard_requests",
            "Shard requests sent, by shard.",
            m.shard_requests.clone(),
        );
        registry.register(
            "tailor_fanout_reissues",
            "Shard requests whose second copy was sent, by shard.",
            m.reissued.clone(),
        );
        registry.register(
            "tailor_fanout_reissue_wins",
            "Shard requests answered first by their second copy, by shard.",
            m.reissue_wins.clone(),
        );
        registry.register(
            "tailor_fanout_replica_errors",
            "Copies that got no answer from their replica, by replica URL.",
            m.replica_errors.clone(),
        );
        registry.register(
            "tailor_fanout_replica_up",
            "1 while a replica gets copies, 0 while it is ejected, by replica URL.",
            m.replica_up.clone(),
        );
        registry.register(
            "tailor_fanout_first_copies",
            "First copies of shard requests routed to each replica, by replica URL (a copy \
             that gets no answer, for want of a connection or because it broke, then goes \
             to another).",
            m.first_copies.clone(),
        );
        registry.register(
            "tailor_fanout_replica_ejections",
            "Times a replica was ejected (consecutive failures or failed health checks), by \
             replica URL.",
            m.ejections.clone(),
        );
        registry.register(
            "tailor_fanout_queries_in_flight",
            "Queries in the front end now.",
            m.inflight.clone(),
        );
        registry.register_collector(Box::new(ProcessCpu));
        for class in ["2xx", "4xx", "5xx"] {
            let _ = m.answers.get_or_create(&[("class", class.into())]);
        }
        FanoutMetrics { registry, ..m }
    }
}

/// What the handlers share.
struct State {
    stacks: Vec<ShardStack>,
    config: FanoutConfig,
    /// The replicas' workload, as they report it.
    workload: String,
    slots: Arc<Semaphore>,
    started: Instant,
    queries: AtomicUsize,
    draining: AtomicBool,
    metrics: FanoutMetrics,
    records: Mutex<Vec<ShardRecord>>,
}

fn client(max_inflight: usize) -> HttpClient {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(Duration::from_secs(2)));
    Client::builder(crate::executor())
        .pool_max_idle_per_host(max_inflight)
        // Below `serve`'s 10 s idle limit, so a pooled connection is not reused just as
        // the replica closes it.
        .pool_idle_timeout(Duration::from_secs(5))
        .pool_timer(hyper_util::rt::TokioTimer::new())
        .build(connector)
}

/// Asks every replica's `/healthz`; all must answer, with the same workload, and the
/// topology must hold: no URL twice, no server twice under two URLs, and a search replica
/// that says which shard it holds must hold the one it is given for.
async fn probe(config: &FanoutConfig, client: &HttpClient) -> Result<String, FanoutError> {
    let mut workload: Option<(String, String)> = None;
    let mut seen_urls: Vec<(String, usize)> = Vec::new();
    let mut instances: Vec<(String, String)> = Vec::new();
    let count = config.shards.len();
    for (shard, urls) in config.shards.iter().enumerate() {
        for url in urls {
            let normal = url.trim_end_matches('/').to_string();
            if let Some((_, other)) = seen_urls.iter().find(|(u, _)| *u == normal) {
                return Err(FanoutError::Replica {
                    shard,
                    url: url.clone(),
                    reason: if *other == shard {
                        "given twice for this shard: a reissue to another replica would go to \
                         the same server"
                            .into()
                    } else {
                        format!("also given for shard {other}: one server cannot hold two shards")
                    },
                });
            }
            seen_urls.push((normal, shard));
            let failed = |reason: String| FanoutError::Replica {
                shard,
                url: url.clone(),
                reason,
            };
            let request = hyper::Request::get(format!("{url}/healthz"))
                .body(http_body_util::Full::new(Bytes::new()))
                .map_err(|e| failed(format!("not a URL: {e}")))?;
            let answer = tokio::time::timeout(Duration::from_secs(5), async {
                let response = client.request(request).await.map_err(|e| error_chain(&e))?;
                let status = response.status();
                let body = http_body_util::BodyExt::collect(response.into_body())
                    .await
                    .map_err(|e| e.to_string())?
                    .to_bytes();
                Ok::<_, String>((status, body))
            })
            .await
            .map_err(|_| failed("no answer to /healthz within 5 s".into()))?
            .map_err(|e| failed(format!("unreachable: {e}")))?;
            if !answer.0.is_success() {
                return Err(failed(format!("/healthz answered {}", answer.0)));
            }
            let health: Health = serde_json::from_slice(&answer.1)
                .map_err(|e| failed(format!("not a tailor server's /healthz: {e}")))?;
            if let Some(id) = &health.instance {
                if let Some((_, other)) = instances.iter().find(|(i, _)| i == id) {
                    return Err(failed(format!(
                        "is the same server as {other} (instance {id}): every replica must be \
                         a server of its own"
                    )));
                }
                instances.push((id.clone(), url.clone()));
            }
            if health.workload == "search" {
                let want = format!("{shard}/{count}");
                match &health.shard {
                    Some(held) if *held != want => {
                        return Err(failed(format!(
                            "holds shard {held} but is given as shard {want} (--shard groups \
                             are in shard order)"
                        )))
                    }
                    None if count > 1 && health.instance.is_some() => {
                        return Err(failed(format!(
                            "holds the whole corpus, not shard {want}: start it with \
                             `tailor serve --shard {want}`"
                        )))
                    }
                    _ => {}
                }
            }
            match &workload {
                None => workload = Some((health.workload, url.clone())),
                Some((w, first)) if *w != health.workload => {
                    return Err(failed(format!(
                        "serves {}, but {first} serves {w}: every replica must serve the same \
                         workload",
                        health.workload
                    )))
                }
                Some(_) => {}
            }
        }
    }
    Ok(workload.map(|(w, _)| w).unwrap_or_default())
}

fn check(config: &FanoutConfig) -> Result<(), FanoutError> {
    let bad = |m: String| Err(FanoutError::BadConfig(m));
    if config.shards.is_empty() {
        return bad("no shards: give --shard URL,URL,... once per shard".into());
    }
    for (i, urls) in config.shards.iter().enumerate() {
        if urls.is_empty() {
            return bad(format!("shard {i} has no replicas"));
        }
        if let Some(u) = urls.iter().find(|u| !u.starts_with("http://")) {
            return bad(format!(
                "shard {i}: replica {u:?}: expected http://HOST:PORT"
            ));
        }
    }
    if config.max_inflight == 0 {
        return bad("--max-inflight must be at least 1".into());
    }
    if config.timeout < Duration::from_millis(1) {
        return bad("--timeout must be at least 1ms".into());
    }
    if config.header_timeout < Duration::from_millis(1)
        || config.body_timeout < Duration::from_millis(1)
    {
        return bad("--header-timeout and --body-timeout must be at least 1ms".into());
    }
    if config.hedge_period < Duration::from_millis(1) {
        return bad("--hedge-period must be at least 1ms".into());
    }
    if config.records && !config.cancel {
        return bad(
            "--records with --no-cancel: a losing first copy would end after its record is \
             written and look cancelled to `plan reissue`; record with cancellation on"
                .into(),
        );
    }
    Ok(())
}

/// Serves the front end on `listener` until `shutdown` resolves, then lets queries in
/// flight finish (at most `timeout`). Fails before serving if a replica does not answer.
pub async fn fanout(
    listener: TcpListener,
    config: FanoutConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<FanoutReport, FanoutError> {
    check(&config)?;
    let http = client(config.max_inflight);
    let workload = probe(&config, &http).await?;
    let metrics = FanoutMetrics::default();
    let losers = if config.cancel {
        Losers::Cancel
    } else {
        Losers::Finish(
            Arc::new(Semaphore::new(config.max_inflight)),
            config.timeout,
        )
    };
    let stacks = config
        .shards
        .iter()
        .enumerate()
        .map(|(i, urls)| {
            let seed = config.seed.wrapping_add(i as u64 * 0x9e37_79b9);
            let urls: Vec<String> = urls
                .iter()
                .map(|u| u.trim_end_matches('/').to_string())
                .collect();
            let health = urls
                .iter()
                .map(|u| {
                    health::ReplicaHealth::new(
                        metrics
                            .replica_up
                            .get_or_create(&[("replica", u.clone())])
                            .clone(),
                        metrics
                            .ejections
                            .get_or_create(&[("replica", u.clone())])
                            .clone(),
                    )
                })
                .collect();
            let reissued = metrics
                .reissued
                .get_or_create(&[("shard", i.to_string())])
                .clone();
            let firsts = urls
                .iter()
                .map(|u| {
                    metrics
                        .first_copies
                        .get_or_create(&[("replica", u.clone())])
                        .clone()
                })
                .collect();
            let replicas = Replicas::new(
                urls,
                config.route,
                seed,
                http.clone(),
                losers.clone(),
                (reissued, health, firsts),
            );
            ShardStack::new(replicas, config.reissue, seed ^ 1, config.hedge_period)
                .map_err(FanoutError::BadConfig)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let state = Arc::new(State {
        stacks,
        workload,
        slots: Arc::new(Semaphore::new(config.max_inflight)),
        started: Instant::now(),
        queries: AtomicUsize::new(0),
        draining: AtomicBool::new(false),
        metrics,
        records: Mutex::new(Vec::new()),
        config,
    });
    tracing::info!(
        shards = state.config.shards.len(),
        reissue = %state.config.reissue.name(),
        workload = %state.workload,
        "every replica answered /healthz"
    );
    if state.config.reissue != Reissue::None {
        for (i, shard) in state.config.shards.iter().enumerate() {
            if shard.len() < 2 {
                tracing::warn!(
                    shard = i,
                    "the shard has one replica: its requests are never reissued (a reissue \
                     goes to another replica)"
                );
            }
        }
    }
    let checks = tokio::spawn(health_checks(state.clone(), http.clone()));
    let app = routes::router(state.clone());
    // Each connection carries one query at a time: twice the in-flight bound (at least
    // 64) leaves room for idle keep-alive connections and for the 503s beyond it.
    let connections = (2 * state.config.max_inflight).max(64);
    let limits = crate::accept::Limits {
        max_connections: connections,
        header_timeout: state.config.header_timeout,
        body_timeout: state.config.body_timeout,
        max_body_bytes: routes::MAX_BODY_BYTES,
    };
    let graceful = crate::accept::accept_until(listener, app, limits, shutdown).await;
    state.draining.store(true, Ordering::Release);
    let _ = tokio::time::timeout(state.config.timeout, graceful.shutdown()).await;
    checks.abort();
    let answers = ["2xx", "4xx", "5xx"].map(|c| {
        state
            .metrics
            .answers
            .get_or_create(&[("class", c.into())])
            .get()
    });
    let sum = |f: &Family<Label, Counter>| -> u64 {
        (0..state.config.shards.len())
            .map(|s| f.get_or_create(&[("shard", s.to_string())]).get())
            .sum()
    };
    let shard_requests = sum(&state.metrics.shard_requests);
    let reissued = sum(&state.metrics.reissued);
    let records = std::mem::take(&mut *state.records.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(FanoutReport {
        answers,
        shard_requests,
        reissued,
        records,
    })
}

/// Active health checks (`health.rs`): every replica's `/healthz`, every
/// [`health::PROBE_INTERVAL`], each within [`health::PROBE_TIMEOUT`], for as long as the
/// front end runs.
async fn health_checks(state: Arc<State>, client: HttpClient) {
    let mut tick = tokio::time::interval(health::PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut checks = tokio::task::JoinSet::new();
        for (shard, stack) in state.stacks.iter().enumerate() {
            for (replica, url) in stack.replicas().urls().iter().enumerate() {
                let (client, url) = (client.clone(), url.clone());
                checks.spawn(async move {
                    let good = tokio::time::timeout(health::PROBE_TIMEOUT, async {
                        let request = hyper::Request::get(format!("{url}/healthz"))
                            .body(http_body_util::Full::new(Bytes::new()))
                            .ok()?;
                        let response = client.request(request).await.ok()?;
                        Some(response.status().is_success())
                    })
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(false);
                    (shard, replica, url, good)
                });
            }
        }
        while let Some(Ok((shard, replica, url, good))) = checks.join_next().await {
            let health = &state.stacks[shard].replicas().health()[replica];
            match health.probed(good, Instant::now()) {
                Some(true) => tracing::info!(shard, replica = %url, "back in service"),
                Some(false) => {
                    tracing::warn!(shard, replica = %url, "ejected: health checks failed")
                }
                None => {}
            }
        }
    }
}

/// A query's method, path and body, as each shard gets it.
#[derive(Debug, Clone)]
struct Fanned {
    method: Method,
    path: Arc<str>,
    body: Bytes,
}
