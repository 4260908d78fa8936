//! The front end's HTTP routes: `/search` and `/work` fanned out to every shard,
//! `/healthz` and `/metrics` answered here.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{RawQuery, State as With};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use tailor_core::ShardRecord;

use super::shard::{ReplicaError, ShardRequest, ShardResponse};
use super::{Fanned, State};
use crate::routes::Reject;
use crate::{SearchAnswer, WorkAnswer};

/// The largest query body, in bytes (beyond it, 413).
pub(super) const MAX_BODY_BYTES: usize = 64 * 1024;

pub(super) fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/search", get(search))
        .route("/work", get(work).post(work))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .fallback(unknown)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// What one shard's answer was, as the front end reports it.
#[derive(Debug, Serialize)]
struct ShardSummary {
    shard: usize,
    /// The first copy's replica, from 0 within the shard.
    replica: usize,
    latency_ms: f64,
    reissued: bool,
    reissue_won: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    work_ms: Option<f64>,
}

/// One hit of the merged search answer.
#[derive(Debug, Serialize)]
struct FanoutHit {
    shard: usize,
    score: f32,
    segment: u32,
    doc: u32,
    title: String,
    snippet: String,
}

#[derive(Debug, Serialize)]
struct FanoutSearchAnswer {
    /// Matching documents over all shards.
    count: usize,
    /// The best `k` over all shards, best first.
    hits: Vec<FanoutHit>,
    latency_ms: f64,
    shards: Vec<ShardSummary>,
}

#[derive(Debug, Serialize)]
struct FanoutWorkAnswer {
    latency_ms: f64,
    shards: Vec<ShardSummary>,
}

/// Every shard's answer to one query, by shard.
struct Gathered {
    answers: Vec<ShardResponse>,
    shards: Vec<ShardSummary>,
}

/// Counts an answer and times it.
fn counted(state: &State, received: Instant, response: Response) -> Response {
    let status = response.status().as_u16();
    if let Some(class) = crate::metrics::status_class(status) {
        state
            .metrics
            .answers
            .get_or_create(&[("class", class.into())])
            .inc();
    }
    state
        .metrics
        .duration
        .observe(received.elapsed().as_secs_f64());
    response
}

/// The first line of a replica's error answer, clipped.
fn first_line(body: &Bytes) -> String {
    let text = String::from_utf8_lossy(body);
    tailor_core::clip(text.lines().next().unwrap_or("")).to_string()
}

/// Sends the query to every shard and waits for all of them (see the module summary of
/// `fanout`). Any shard's failure is the query's, named.
async fn gather(state: &Arc<State>, fanned: Fanned, received: Instant) -> Result<Gathered, Reject> {
    if state.draining.load(Ordering::Acquire) {
        return Err(Reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "the front end is shutting down".into(),
        ));
    }
    let Ok(_permit) = state.slots.clone().try_acquire_owned() else {
        return Err(Reject(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "overloaded: {} queries in flight (--max-inflight); retry later",
                state.config.max_inflight
            ),
        ));
    };
    state.metrics.inflight.inc();
    struct Leave<'a>(&'a State);
    impl Drop for Leave<'_> {
        fn drop(&mut self) {
            self.0.metrics.inflight.dec();
        }
    }
    let _leave = Leave(state);
    let query = state.queries.fetch_add(1, Ordering::AcqRel) + 1;
    // Dropping the set (a timeout, or the client gone) aborts every shard's copies.
    let mut set = tokio::task::JoinSet::new();
    let mut traces = Vec::with_capacity(state.stacks.len());
    for (shard, stack) in state.stacks.iter().enumerate() {
        let request = ShardRequest::new(
            fanned.method.clone(),
            fanned.path.clone(),
            fanned.body.clone(),
        );
        traces.push(request.trace.clone());
        state
            .metrics
            .shard_requests
            .get_or_create(&[("shard", shard.to_string())])
            .inc();
        let answer = stack.send(request);
        set.spawn(async move { (shard, answer.await) });
    }
    let timeout = state.config.timeout;
    let mut answers: Vec<Option<ShardResponse>> = (0..traces.len()).map(|_| None).collect();
    let gathered = tokio::time::timeout(timeout, async {
        while let Some(joined) = set.join_next().await {
            let (shard, answer) = joined.map_err(|e| {
                Reject(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("a shard's task failed: {e}"),
                )
            })?;
            let label = [("shard", shard.to_string())];
            match answer {
                Ok(a) => {
                    if a.copy == 1 {
                        state.metrics.reissue_wins.get_or_create(&label).inc();
                    }
                    answers[shard] = Some(a);
                }
                Err(e) => {
                    let url = e
                        .downcast_ref::<ReplicaError>()
                        .map_or_else(|| "?".to_string(), |r| r.url.clone());
                    state
                        .metrics
                        .replica_errors
                        .get_or_create(&[("replica", url)])
                        .inc();
                    tracing::debug!(shard, error = %e, "a shard request got no answer");
                    return Err(Reject(
                        StatusCode::BAD_GATEWAY,
                        format!("shard {shard}: {}", super::shard::error_chain(&*e)),
                    ));
                }
            }
        }
        Ok(())
    })
    .await;
    match gathered {
        Err(_) => {
            let missing: Vec<String> = answers
                .iter()
                .enumerate()
                .filter(|(_, a)| a.is_none())
                .map(|(s, _)| s.to_string())
                .collect();
            return Err(Reject(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "shard {} did not answer within {} ms (--timeout); the query was cancelled",
                    missing.join(", "),
                    timeout.as_millis()
                ),
            ));
        }
        Ok(Err(reject)) => return Err(reject),
        Ok(Ok(())) => {}
    }
    let answers: Vec<ShardResponse> = answers
        .into_iter()
        .map(|a| a.expect("every shard answered"))
        .collect();
    for (shard, a) in answers.iter().enumerate() {
        if !a.status.is_success() {
            let url = &state.config.shards[shard][a.replica];
            return Err(Reject(
                a.status,
                format!(
                    "shard {shard} (replica {url}) answered {}: {}",
                    a.status.as_u16(),
                    first_line(&a.body)
                ),
            ));
        }
    }
    let arrival_ms = received
        .saturating_duration_since(state.started)
        .as_secs_f64()
        * 1000.0;
    let work: Vec<Option<f64>> = answers
        .iter()
        .map(|a| {
            serde_json::from_slice::<WorkAnswer>(&a.body)
                .ok()
                .map(|w| w.work_ms)
        })
        .collect();
    let shards: Vec<ShardSummary> = answers
        .iter()
        .enumerate()
        .map(|(shard, a)| ShardSummary {
            shard,
            replica: traces[shard].first_replica(),
            latency_ms: a.latency_ms,
            reissued: traces[shard].reissued_to().is_some(),
            reissue_won: a.copy == 1,
            work_ms: work[shard],
        })
        .collect();
    if state.config.records {
        let mut records = state.records.lock().unwrap_or_else(|p| p.into_inner());
        for (shard, s) in shards.iter().enumerate() {
            records.push(ShardRecord {
                query,
                shard,
                replica: s.replica,
                arrival_ms,
                latency_ms: s.latency_ms,
                primary_ms: traces[shard].primary_ms(),
                reissued_to: traces[shard].reissued_to(),
                reissue_won: s.reissue_won,
                work_ms: s.work_ms,
            });
        }
    }
    Ok(Gathered { answers, shards })
}

async fn search(With(state): With<Arc<State>>, RawQuery(query): RawQuery) -> Response {
    let received = Instant::now();
    let answer = async {
        // Checked here, so that a bad query costs no shard a request: its parameters, and
        // its text as the replicas' parser reads it (syntax, fields, regular expressions,
        // cost); what needs the index (a term's postings) only a replica can say.
        let params = crate::search_params(query.as_deref()).map_err(Reject::bad)?;
        tailor_workloads::search::check_query(&params.text, params.fuzzy).map_err(|e| {
            Reject::bad(format!(
                "q={:?}: {}",
                tailor_core::clip(&params.text),
                tailor_core::clip(&e.replace('\n', " "))
            ))
        })?;
        let path: Arc<str> = format!("/search?{}", query.unwrap_or_default()).into();
        let fanned = Fanned {
            method: Method::GET,
            path,
            body: Bytes::new(),
        };
        let gathered = gather(&state, fanned, received).await?;
        let mut count = 0;
        let mut hits = Vec::new();
        for (shard, a) in gathered.answers.iter().enumerate() {
            let answer: SearchAnswer = serde_json::from_slice(&a.body).map_err(|e| {
                Reject(
                    StatusCode::BAD_GATEWAY,
                    format!("shard {shard}: not a search answer: {e}"),
                )
            })?;
            count += answer.count;
            hits.extend(answer.hits.into_iter().map(|h| FanoutHit {
                shard,
                score: h.score,
                segment: h.segment,
                doc: h.doc,
                title: h.title,
                snippet: h.snippet,
            }));
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.shard.cmp(&b.shard)));
        hits.truncate(params.k);
        Ok::<_, Reject>(FanoutSearchAnswer {
            count,
            hits,
            latency_ms: received.elapsed().as_secs_f64() * 1000.0,
            shards: gathered.shards,
        })
    };
    let response = match answer.await {
        Ok(a) => Json(a).into_response(),
        Err(r) => r.into_response(),
    };
    counted(&state, received, response)
}

async fn work(
    With(state): With<Arc<State>>,
    method: Method,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    let path: Arc<str> = match query {
        Some(q) => format!("/work?{q}"),
        None => "/work".to_string(),
    }
    .into();
    let fanned = Fanned { method, path, body };
    let response = match gather(&state, fanned, received).await {
        Ok(g) => Json(FanoutWorkAnswer {
            latency_ms: received.elapsed().as_secs_f64() * 1000.0,
            shards: g.shards,
        })
        .into_response(),
        Err(r) => r.into_response(),
    };
    counted(&state, received, response)
}

/// Each shard's replicas that get copies now, and the shards with one or more ejected.
fn live_replicas(state: &State) -> (Vec<serde_json::Value>, Vec<usize>, Vec<usize>) {
    let mut shards = Vec::new();
    let (mut degraded, mut dead) = (Vec::new(), Vec::new());
    for (i, stack) in state.stacks.iter().enumerate() {
        let replicas = stack.replicas();
        let states: Vec<serde_json::Value> = replicas
            .urls()
            .iter()
            .zip(replicas.health())
            .map(|(url, h)| {
                serde_json::json!({
                    "url": url,
                    "state": if h.is_up() { "up" } else { "ejected" },
                    "ejected_for_s": h.ejected_for().as_secs_f64(),
                })
            })
            .collect();
        let live = replicas.health().iter().filter(|h| h.is_up()).count();
        if live == 0 {
            dead.push(i);
        } else if live < replicas.health().len() {
            degraded.push(i);
        }
        shards.push(serde_json::json!({"shard": i, "live": live, "replicas": states}));
    }
    (shards, degraded, dead)
}

/// 200 while serving: `status` is `ok`, `degraded` (a shard has an ejected replica but
/// every shard a live one) or `down` (a shard has no live replica); 503 `draining` once
/// stopping. `replicas` gives every replica's state.
async fn healthz(With(state): With<Arc<State>>) -> Response {
    let draining = state.draining.load(Ordering::Acquire);
    let (replicas, degraded, dead) = live_replicas(&state);
    let status = match (draining, dead.is_empty(), degraded.is_empty()) {
        (true, _, _) => "draining",
        (false, false, _) => "down",
        (false, true, false) => "degraded",
        (false, true, true) => "ok",
    };
    let body = serde_json::json!({
        "status": status,
        "workload": state.workload,
        "policy": format!("fanout {}", state.config.reissue.name()),
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "shards": state.config.shards,
        "degraded_shards": degraded,
        "shards_without_live_replica": dead,
        "replicas": replicas,
    });
    let status = if draining {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

/// 200 while every shard has a live replica; 503 with the shards that have none (or while
/// stopping), so a load balancer sends no queries that would fail.
async fn readyz(With(state): With<Arc<State>>) -> Response {
    let (_, _, dead) = live_replicas(&state);
    if state.draining.load(Ordering::Acquire) {
        return Reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: shutting down".into(),
        )
        .into_response();
    }
    if !dead.is_empty() {
        let list: Vec<String> = dead.iter().map(|d| d.to_string()).collect();
        return Reject(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: shard {} has no live replica", list.join(", ")),
        )
        .into_response();
    }
    (StatusCode::OK, Json(serde_json::json!({"ready": true}))).into_response()
}

async fn metrics(With(state): With<Arc<State>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        )],
        crate::metrics::render(&state.metrics.registry),
    )
        .into_response()
}

async fn unknown(method: Method, uri: Uri) -> Reject {
    let known = ["/search", "/work", "/healthz", "/readyz", "/metrics"];
    if known.contains(&uri.path()) {
        Reject(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not allowed on {}", uri.path()),
        )
    } else {
        Reject(
            StatusCode::NOT_FOUND,
            format!(
                "no such path: {} (the paths are /search, /work, /healthz, /readyz, /metrics)",
                uri.path()
            ),
        )
    }
}
