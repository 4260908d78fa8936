//! One shard's tower stack in the front end: the replicas as a service that routes each
//! copy of a shard request, under a reissue policy (none, SingleD, SingleR, or tower's
//! `hedge` layer as Dean's hedged requests).
//!
//! SingleR (Kaler, He and Elnikety, "Optimal Reissue Policies for Reducing Tail Latency",
//! SPAA 2017, §3) decides once per shard request, when it is sent, whether it may be
//! reissued (probability q); if so and no answer has come d ms later, a second copy goes
//! to another replica and the first answer wins. SingleD is q = 1. The logic is the
//! public [`crate::SingleRLayer`]'s; this module gives it the shard's policy. Hedging
//! (Dean and Barroso, "The Tail at Scale", CACM 2013) reissues every request still out at
//! the P-th percentile of recent latencies: tower's `Hedge`, whose percentile comes from
//! a histogram of the previous period's latencies, in whole ms rounded up.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use prometheus_client::metrics::counter::Counter;
use rand::RngExt;
use tokio::sync::Semaphore;
use tower::hedge::Hedge;
use tower::{BoxError, Service};

use tailor_core::{Reissue, Rng, HEDGE_MIN_SAMPLES};

use crate::singler::ReissuePolicy;

use super::health::ReplicaHealth;

/// How the front end picks the replica of a shard request's first copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Uniformly at random.
    Random,
    /// The replica with the fewest of this front end's requests outstanding (ties at
    /// random).
    LeastLoaded,
}

impl Route {
    /// Parses `random` or `least-loaded`.
    pub fn parse(text: &str) -> Result<Route, String> {
        match text {
            "random" => Ok(Route::Random),
            "least-loaded" => Ok(Route::LeastLoaded),
            other => Err(format!(
                "--route {other:?}: expected random or least-loaded"
            )),
        }
    }
}

/// What the copies of one shard request share.
#[derive(Debug)]
pub(crate) struct Trace {
    /// When the first copy was sent.
    pub(crate) sent: Instant,
    /// The first copy's replica, `usize::MAX` until it is sent.
    pub(crate) first: AtomicUsize,
    /// The second copy's replica, `usize::MAX` unless it was sent.
    pub(crate) second: AtomicUsize,
    /// The first copy's own latency in ns, 0 until it answered.
    pub(crate) primary_ns: AtomicU64,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            sent: Instant::now(),
            first: AtomicUsize::new(usize::MAX),
            second: AtomicUsize::new(usize::MAX),
            primary_ns: AtomicU64::new(0),
        }
    }

    /// The replica the second copy went to, if one was sent.
    pub(crate) fn reissued_to(&self) -> Option<usize> {
        Some(self.second.load(Ordering::Acquire)).filter(|&r| r != usize::MAX)
    }

    /// The first copy's replica.
    pub(crate) fn first_replica(&self) -> usize {
        self.first.load(Ordering::Acquire)
    }

    /// The first copy's own latency, if it answered.
    pub(crate) fn primary_ms(&self) -> Option<f64> {
        let ns = self.primary_ns.load(Ordering::Acquire);
        (ns > 0).then(|| ns as f64 / 1e6)
    }
}

/// One copy of a shard request.
#[derive(Debug, Clone)]
pub(crate) struct ShardRequest {
    pub(crate) method: Method,
    /// Path and query string, as the replicas serve them.
    pub(crate) path: Arc<str>,
    pub(crate) body: Bytes,
    pub(crate) trace: Arc<Trace>,
    /// 0 for the first copy, 1 for the reissue.
    copy: u8,
}

impl ShardRequest {
    pub(crate) fn new(method: Method, path: Arc<str>, body: Bytes) -> ShardRequest {
        ShardRequest {
            method,
            path,
            body,
            trace: Arc::new(Trace::new()),
            copy: 0,
        }
    }

    /// The second copy.
    fn reissue(&self) -> ShardRequest {
        ShardRequest {
            copy: 1,
            ..self.clone()
        }
    }
}

/// A replica's answer to one copy.
#[derive(Debug, Clone)]
pub(crate) struct ShardResponse {
    /// The replica, from 0 within the shard.
    pub(crate) replica: usize,
    /// Which copy answered: 0 the first, 1 the reissue.
    pub(crate) copy: u8,
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
    /// From the first copy's sending to this answer, in ms.
    pub(crate) latency_ms: f64,
}

/// A copy that got no answer: the replica named could not be reached, or broke off.
#[derive(Debug, thiserror::Error)]
#[error("replica {url}: {reason}")]
pub(crate) struct ReplicaError {
    pub(crate) url: String,
    pub(crate) reason: String,
    /// Whether no HTTP answer came back: no connection could be made, or the connection
    /// broke before the answer was whole (a replica killed mid-request). The fan-out's
    /// requests (searches, synthetic work) change nothing at the replica, so such a copy
    /// may go to another replica once, as Envoy's `connect-failure` and `reset` retries do.
    transport: bool,
}

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A shard's replicas as one service: it routes each copy and sends it over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct Replicas(Arc<ReplicasInner>);

#[derive(Debug)]
struct ReplicasInner {
    urls: Vec<String>,
    /// This front end's copies outstanding at each replica.
    outstanding: Vec<AtomicUsize>,
    route: Route,
    rng: Mutex<Rng>,
    client: HttpClient,
    /// When a losing copy is left to finish (`--no-cancel`): permits for such copies,
    /// shared by every shard, and how long one may run. A copy that finds no permit is
    /// cancellable like any other.
    detached: Option<(Arc<Semaphore>, Duration)>,
    /// Second copies sent.
    reissues: Counter,
    /// Each replica's health (`health.rs`).
    health: Vec<ReplicaHealth>,
    /// First copies routed to each replica (before any retry elsewhere).
    firsts: Vec<Counter>,
}

/// How losing copies end.
#[derive(Debug, Clone)]
pub(crate) enum Losers {
    /// Dropped: the connection closes, which cancels the copy at the replica.
    Cancel,
    /// Left to finish, at most this many at once (over every shard), each for at most
    /// this long.
    Finish(Arc<Semaphore>, Duration),
}

/// A copy outstanding at replica `.1`: counted when made, released when dropped.
struct Outstanding(Arc<ReplicasInner>, usize);

impl Outstanding {
    fn new(inner: Arc<ReplicasInner>, replica: usize) -> Outstanding {
        inner.outstanding[replica].fetch_add(1, Ordering::AcqRel);
        Outstanding(inner, replica)
    }
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.outstanding[self.1].fetch_sub(1, Ordering::AcqRel);
    }
}

impl Replicas {
    /// `reissues` counts the second copies this shard sends; `health` is each replica's.
    pub(crate) fn new(
        urls: Vec<String>,
        route: Route,
        seed: u64,
        client: HttpClient,
        losers: Losers,
        (reissues, health, firsts): (Counter, Vec<ReplicaHealth>, Vec<Counter>),
    ) -> Replicas {
        Replicas(Arc::new(ReplicasInner {
            health,
            firsts,
            outstanding: urls.iter().map(|_| AtomicUsize::new(0)).collect(),
            urls,
            route,
            rng: Mutex::new(tailor_core::seeded_rng(seed)),
            client,
            detached: match losers {
                Losers::Cancel => None,
                Losers::Finish(permits, limit) => Some((permits, limit)),
            },
            reissues,
        }))
    }

    /// Each replica's health, by replica.
    pub(crate) fn health(&self) -> &[ReplicaHealth] {
        &self.0.health
    }

    /// The replicas' URLs.
    pub(crate) fn urls(&self) -> &[String] {
        &self.0.urls
    }

    /// Whether a replica other than `copy`'s first copy's is live: where a reissue may go.
    pub(crate) fn live_other(&self, first: usize) -> bool {
        (0..self.0.urls.len()).any(|r| r != first && self.0.health[r].is_up())
    }

    /// The replica for a copy, counted as outstanding there before the routing lock is
    /// released: by the route among the live replicas not in `avoid` (for a reissue the
    /// first copy's; for a retry both copies'). A first copy (nothing to avoid) goes to
    /// any replica when none is live; a reissue or a retry finds none (`None`): no copy
    /// goes to an ejected replica while its shard has a live one, nor twice to one.
    fn pick(&self, avoid: &[usize]) -> Option<Outstanding> {
        let inner = &self.0;
        let candidates: Vec<usize> = (0..inner.urls.len())
            .filter(|r| !avoid.contains(r) && inner.health[*r].is_up())
            .collect();
        let candidates = match (candidates.is_empty(), avoid.is_empty()) {
            (false, _) => candidates,
            (true, true) => (0..inner.urls.len()).collect(),
            (true, false) => return None,
        };
        let mut rng = inner.rng.lock().unwrap_or_else(|p| p.into_inner());
        let replica = match inner.route {
            Route::Random => candidates[rng.random_range(0..candidates.len())],
            Route::LeastLoaded => {
                let least = candidates
                    .iter()
                    .map(|&r| inner.outstanding[r].load(Ordering::Acquire))
                    .min()
                    .unwrap_or(0);
                let ties: Vec<usize> = candidates
                    .into_iter()
                    .filter(|&r| inner.outstanding[r].load(Ordering::Acquire) == least)
                    .collect();
                ties[rng.random_range(0..ties.len())]
            }
        };
        Some(Outstanding::new(self.0.clone(), replica))
    }
}

impl Service<ShardRequest> for Replicas {
    type Response = ShardResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ShardResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Bounded above: the front end admits at most --max-inflight queries.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: ShardRequest) -> Self::Future {
        // Counted from now, so that the next pick sees it; released when the copy ends or
        // is dropped, polled or not.
        let first = request.trace.first_replica();
        let picked = if request.copy == 0 {
            self.pick(&[])
        } else {
            self.pick(&[first])
        };
        let Some(outstanding) = picked else {
            // A reissue with no live replica but the first copy's: SingleR and the hedge
            // policy ask `live_other` first, so this is only a race with an ejection.
            return Box::pin(std::future::ready(Err(BoxError::from(
                "no live replica other than the first copy's for the reissue",
            ))));
        };
        let replica = outstanding.1;
        if request.copy == 0 {
            request.trace.first.store(replica, Ordering::Release);
            self.0.firsts[replica].inc();
        } else {
            request.trace.second.store(replica, Ordering::Release);
            self.0.reissues.inc();
        }
        let replicas = self.clone();
        let exchange = async move {
            let first = exchange(&outstanding, &request).await;
            match first {
                // No answer (no connection, or one that broke): the copy goes once to a
                // live replica that holds neither copy, if the shard has one.
                Err(e) if e.transport => {
                    let other = if request.copy == 0 {
                        request.trace.reissued_to()
                    } else {
                        Some(request.trace.first_replica())
                    };
                    let avoid: Vec<usize> = [Some(replica), other].into_iter().flatten().collect();
                    let Some(retry) = replicas.pick(&avoid) else {
                        return Err(e);
                    };
                    drop(outstanding);
                    if request.copy == 0 {
                        request.trace.first.store(retry.1, Ordering::Release);
                    } else {
                        request.trace.second.store(retry.1, Ordering::Release);
                    }
                    exchange(&retry, &request).await
                }
                other => other,
            }
        };
        let detached = self.0.detached.as_ref().and_then(|(permits, limit)| {
            permits
                .clone()
                .try_acquire_owned()
                .ok()
                .map(|p| (p, *limit))
        });
        match detached {
            None => Box::pin(async move { exchange.await.map_err(BoxError::from) }),
            Some((permit, limit)) => {
                // Left to finish: dropping the join handle does not stop the task, which
                // holds its permit until it ends or its time is up.
                let task = tokio::spawn(async move {
                    let _permit = permit;
                    tokio::time::timeout(limit, exchange).await
                });
                Box::pin(async move {
                    match task.await.map_err(BoxError::from)? {
                        Ok(answer) => answer.map_err(BoxError::from),
                        Err(_) => Err(BoxError::from("the copy ran out of time")),
                    }
                })
            }
        }
    }
}

/// Sends one copy to the replica `outstanding` holds and records the outcome in its
/// health.
async fn exchange(
    outstanding: &Outstanding,
    request: &ShardRequest,
) -> Result<ShardResponse, ReplicaError> {
    let (inner, replica) = (&outstanding.0, outstanding.1);
    let url = &inner.urls[replica];
    let failed = |reason: String, transport: bool| ReplicaError {
        url: url.clone(),
        reason,
        transport,
    };
    let answer = async {
        let http = Request::builder()
            .method(request.method.clone())
            .uri(format!("{url}{}", request.path))
            .body(Full::new(request.body.clone()))
            .map_err(|e| failed(e.to_string(), false))?;
        let response = inner
            .client
            .request(http)
            .await
            .map_err(|e| failed(error_chain(&e), true))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(format!("the answer broke off: {e}"), true))?
            .to_bytes();
        Ok((status, body))
    }
    .await;
    let good = matches!(&answer, Ok((status, _))
        if !status.is_server_error() || *status == StatusCode::SERVICE_UNAVAILABLE);
    if inner.health[replica].record(good) {
        tracing::warn!(replica = %url, "ejected after consecutive failures");
    }
    let (status, body) = answer?;
    let ns = request.trace.sent.elapsed().as_nanos().max(1) as u64;
    if request.copy == 0 {
        request.trace.primary_ns.store(ns, Ordering::Release);
    }
    Ok(ShardResponse {
        replica,
        copy: request.copy,
        status,
        body,
        latency_ms: ns as f64 / 1e6,
    })
}

/// An error and its sources on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// tower's hedge policy for shard requests: every request may be hedged once, to
/// another live replica (asked when the hedge is due; without one, the first copy's
/// answer is awaited).
#[derive(Debug, Clone)]
pub(crate) struct HedgeAnother(Replicas);

impl tower::hedge::Policy<ShardRequest> for HedgeAnother {
    fn clone_request(&self, request: &ShardRequest) -> Option<ShardRequest> {
        Some(request.reissue())
    }

    fn can_retry(&self, request: &ShardRequest) -> bool {
        self.0.live_other(request.trace.first_replica())
    }
}

/// SingleR's policy for shard requests (the public [`crate::SingleRLayer`] does the
/// rest): the reissue goes to another replica, only while one is live; an answer that
/// failed or is a 5xx does not win while the other copy may still answer well (tower's
/// hedge returns whichever ends first, failure or not).
#[derive(Debug, Clone)]
pub(crate) struct ReissueElsewhere(Replicas);

impl ReissuePolicy<ShardRequest, ShardResponse, BoxError> for ReissueElsewhere {
    fn clone_request(&self, request: &ShardRequest) -> Option<ShardRequest> {
        Some(request.reissue())
    }

    fn can_reissue(&self, request: &ShardRequest) -> bool {
        self.0.live_other(request.trace.first_replica())
    }

    fn is_good(&self, answer: &Result<ShardResponse, BoxError>) -> bool {
        matches!(answer, Ok(a) if !a.status.is_server_error())
    }
}

/// SingleR over a shard's replicas: see the module's summary.
pub(crate) type SingleR = crate::singler::SingleR<Replicas, ReissueElsewhere>;

/// A shard's stack under one reissue policy.
pub(crate) enum ShardStack {
    Plain(Replicas),
    SingleR(SingleR),
    /// tower's `Hedge` is not `Clone`; its services are always ready, so it is called
    /// under a lock that is never held across an await. Beside it, the replicas it wraps.
    Hedge(Mutex<Hedge<Replicas, HedgeAnother>>, Replicas),
}

impl ShardStack {
    /// The stack for `reissue` over `replicas`; `hedge_period` is the hedge histogram's.
    /// Fails on a SingleR delay that is negative or not a number, or a q outside [0, 1].
    pub(crate) fn new(
        replicas: Replicas,
        reissue: Reissue,
        seed: u64,
        hedge_period: Duration,
    ) -> Result<ShardStack, String> {
        let single_r = |d_ms: f64, q: f64| {
            let delay = Duration::try_from_secs_f64(d_ms / 1000.0)
                .map_err(|_| format!("reissue delay {d_ms} ms: expected a number of ms from 0"))?;
            let policy = ReissueElsewhere(replicas.clone());
            SingleR::new(replicas.clone(), delay, q, seed, policy)
                .map(ShardStack::SingleR)
                .map_err(|e| e.to_string())
        };
        Ok(match reissue {
            Reissue::None => ShardStack::Plain(replicas),
            Reissue::SingleD { d_ms } => single_r(d_ms, 1.0)?,
            Reissue::SingleR { d_ms, q } => single_r(d_ms, q)?,
            Reissue::Hedge { percentile } => ShardStack::Hedge(
                Mutex::new(Hedge::new(
                    replicas.clone(),
                    HedgeAnother(replicas.clone()),
                    HEDGE_MIN_SAMPLES as u64,
                    (percentile / 100.0) as f32,
                    hedge_period,
                )),
                replicas,
            ),
        })
    }

    /// The shard's replicas.
    pub(crate) fn replicas(&self) -> &Replicas {
        match self {
            ShardStack::Plain(r) => r,
            ShardStack::SingleR(s) => s.get_ref(),
            ShardStack::Hedge(_, r) => r,
        }
    }

    /// Sends a shard request; resolves to the first answer.
    pub(crate) fn send(
        &self,
        request: ShardRequest,
    ) -> Pin<Box<dyn Future<Output = Result<ShardResponse, BoxError>> + Send>> {
        match self {
            ShardStack::Plain(replicas) => replicas.clone().call(request),
            ShardStack::SingleR(single) => single.clone().call(request),
            ShardStack::Hedge(hedge, _) => {
                let mut hedge = hedge.lock().unwrap_or_else(|p| p.into_inner());
                let mut cx = Context::from_waker(std::task::Waker::noop());
                match hedge.poll_ready(&mut cx) {
                    Poll::Ready(Ok(())) => Box::pin(hedge.call(request)),
                    Poll::Ready(Err(e)) => Box::pin(std::future::ready(Err(e))),
                    Poll::Pending => Box::pin(std::future::ready(Err(BoxError::from(
                        "the hedging layer was not ready",
                    )))),
                }
            }
        }
    }
}
