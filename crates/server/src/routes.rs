//! The HTTP routes of shared/spec/http.md, and their one-line error answers.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, RawQuery, State as With};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use tailor_runtime::{Done, RequestError, SubmitError};
use tailor_workloads::search::{SearchJob, SearchResult, TOP_K};
use tailor_workloads::SyntheticJob;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::metrics::Rejection;
use crate::{ServedWorkload, State};

/// The largest `k` a search may ask for.
pub const MAX_K: usize = 1000;
/// The largest `work_ms` a synthetic request may ask for.
pub const MAX_WORK_MS: f64 = 60_000.0;
/// The longest query text, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// The deepest nesting of parentheses in a query (the parser recurses on each).
const MAX_QUERY_DEPTH: usize = 32;

/// One hit of `GET /search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// BM25 score.
    pub score: f32,
    /// The segment the document is in.
    pub segment: u32,
    /// Its id within the segment.
    pub doc: u32,
    /// Its title.
    pub title: String,
    /// A highlighted fragment of its body.
    pub snippet: String,
}

/// The answer of `GET /search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchAnswer {
    /// Matching documents in all.
    pub count: usize,
    /// The best `k`, best first.
    pub hits: Vec<SearchHit>,
    /// Time from the request's arrival at the server to its result, in ms.
    pub latency_ms: f64,
    /// The highest number of threads it ran on.
    pub degree: usize,
}

impl SearchAnswer {
    /// The answer for a search's result (latency and degree left at zero).
    pub fn of(result: &SearchResult) -> SearchAnswer {
        SearchAnswer {
            count: result.count,
            hits: result
                .hits
                .iter()
                .map(|h| SearchHit {
                    score: h.score,
                    segment: h.address.segment_ord,
                    doc: h.address.doc_id,
                    title: h.title.clone(),
                    snippet: h.snippet.clone(),
                })
                .collect(),
            latency_ms: 0.0,
            degree: 0,
        }
    }
}

/// The answer of `GET|POST /work`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkAnswer {
    /// The request's sequential work.
    pub work_ms: f64,
    /// Time from its arrival at the server to its end, in ms.
    pub latency_ms: f64,
    /// Of which it waited for admission, in ms.
    pub queue_ms: f64,
    /// The highest number of threads it ran on.
    pub degree: usize,
}

/// A one-line error answer.
pub(crate) struct Reject(pub(crate) StatusCode, pub(crate) String);

impl Reject {
    pub(crate) fn bad(reason: impl Into<String>) -> Reject {
        Reject(StatusCode::BAD_REQUEST, reason.into())
    }
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        let mut response = (self.0, format!("{}\n", self.1)).into_response();
        if self.0 == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

pub(crate) fn router(state: Arc<State>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/search", get(search).fallback(wrong_method))
        .route("/work", get(work).post(work).fallback(wrong_method))
        .route("/healthz", get(healthz).fallback(wrong_method))
        .route("/readyz", get(readyz).fallback(wrong_method))
        .route("/metrics", get(metrics).fallback(wrong_method))
        .route("/profile", get(profile).fallback(wrong_method))
        .fallback(unknown_path)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), count))
        // Outermost last: every request gets an `x-request-id` (a client's own is kept),
        // is traced in a span that carries it (tower-http's TraceLayer: a line per request
        // at TAILOR_LOG=debug), and its answer carries the id back.
        .layer(PropagateRequestIdLayer::new(REQUEST_ID.clone()))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(SetRequestIdLayer::new(REQUEST_ID.clone(), MakeRequestUuid))
        .with_state(state)
}

/// The header that carries a request's id.
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A request's tracing span, with its id.
fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::debug_span!("request", id, method = %request.method(), uri = %request.uri())
}

/// Holds every request to the deadline (504 past it; dropping the handler cancels its
/// work, see `compute`), counts every answer by status class, and times the answers of
/// compute requests.
async fn count(
    With(state): With<Arc<State>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let received = Instant::now();
    let timed = matches!(request.uri().path(), "/search" | "/work");
    let deadline = state.config.request_timeout;
    let response = match tokio::time::timeout(deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            if timed {
                state.metrics.rejected(Rejection::Deadline);
            }
            Reject(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "deadline: not answered within {} s (--request-timeout); the request was \
                 cancelled",
                    deadline.as_secs_f64()
                ),
            )
            .into_response()
        }
    };
    state.metrics.answered(
        response.status().as_u16(),
        timed.then(|| received.elapsed()),
    );
    response
}

async fn unknown_path(uri: Uri) -> Reject {
    Reject(
        StatusCode::NOT_FOUND,
        format!(
            "no such path: {} (the paths are /search, /work, /healthz, /readyz, /metrics, /profile)",
            uri.path()
        ),
    )
}

async fn wrong_method(method: Method, uri: Uri) -> Response {
    let allow = if uri.path() == "/work" {
        "GET, POST"
    } else {
        "GET"
    };
    let mut response = Reject(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} is not allowed on {}; use {allow}", method, uri.path()),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The URL's parameters, or a 400 naming what is malformed.
fn params(query: Option<String>) -> Result<Vec<(String, String)>, Reject> {
    serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
        .map_err(|e| Reject::bad(format!("malformed query string: {e}")))
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// An integer parameter in `range`, or its default.
fn int_param(
    params: &[(String, String)],
    name: &str,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, Reject> {
    let Some(text) = param(params, name) else {
        return Ok(default);
    };
    match text.trim().parse::<usize>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(Reject::bad(format!(
            "{name}={:?}: expected an integer from {} to {}",
            tailor_core::clip(text),
            range.start(),
            range.end()
        ))),
    }
}

/// Submits a job and awaits it; refusals and cancellations become 503s, panics 500s.
/// The handle cancels the job if this future is dropped first: when the client goes away
/// (hyper drops the handler of a closed connection) or the deadline passes, the work
/// stops at its next unit boundary.
async fn compute<J: tailor_core::Job>(
    state: &State,
    job: J,
    received: Instant,
) -> Result<Done<J::Output>, Reject> {
    let handle = state
        .runtime
        .submit_at(job, received, true)
        .map(|h| h.cancel_on_drop())
        .map_err(|e| match e {
            SubmitError::QueueFull => {
                state.metrics.rejected(Rejection::QueueFull);
                Reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "overloaded: the admission queue is full; retry later".into(),
                )
            }
            SubmitError::ShuttingDown => {
                state.metrics.rejected(Rejection::ShuttingDown);
                Reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is shutting down".into(),
                )
            }
        })?;
    let done = handle.await.map_err(|e| match e {
        RequestError::Cancelled => {
            state.metrics.rejected(Rejection::Cancelled);
            Reject(
                StatusCode::SERVICE_UNAVAILABLE,
                "cancelled: the server is shutting down and this request did not finish in time"
                    .into(),
            )
        }
        RequestError::Panicked(why) => Reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request failed: {}", why.replace('\n', " ")),
        ),
    })?;
    let t = &done.timing;
    state
        .metrics
        .waited(t.start.saturating_duration_since(t.arrival));
    Ok(done)
}

fn not_started_with(what: &str, workload: &ServedWorkload) -> Reject {
    Reject(
        StatusCode::NOT_FOUND,
        format!(
            "{what} is not served here: this server runs --workload {}",
            workload.name()
        ),
    )
}

async fn search(
    With(state): With<Arc<State>>,
    RawQuery(query): RawQuery,
) -> Result<Json<SearchAnswer>, Reject> {
    let received = Instant::now();
    let ServedWorkload::Search(index) = &state.workload else {
        return Err(not_started_with("/search", &state.workload));
    };
    let SearchParams { text, k, fuzzy } = search_params_or_reject(query.as_deref())?;
    // Parsing builds regular expressions' automata, which can take a while: off the I/O
    // thread.
    let parse = {
        let (index, text) = (index.clone(), text.clone());
        tokio::task::spawn_blocking(move || index.parse_query(&text, fuzzy))
    };
    let parsed = parse
        .await
        .map_err(|e| {
            Reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("parsing failed: {e}"),
            )
        })?
        .map_err(|e| {
            Reject::bad(format!(
                "q={:?}: {}",
                tailor_core::clip(&text),
                tailor_core::clip(&e.replace('\n', " "))
            ))
        })?;
    let job = SearchJob::new(index.clone(), parsed, None).with_k(k);
    let done = compute(&state, job, received).await?;
    let result = done.output.map_err(|e| {
        Reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("search failed: {}", e.replace('\n', " ")),
        )
    })?;
    let mut answer = SearchAnswer::of(&result);
    answer.latency_ms = done.timing.latency_ms();
    answer.degree = done.timing.max_degree;
    Ok(Json(answer))
}

/// The parameters of `GET /search`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchParams {
    /// The query text, in tantivy's query language.
    pub text: String,
    /// How many hits to return.
    pub k: usize,
    /// Edits a body term may be away from the query's (0, 1 or 2).
    pub fuzzy: u8,
}

/// Reads and checks the query string of `GET /search`: `q` present, not empty, at most
/// [`MAX_QUERY_BYTES`] long and nested at most 32 parentheses deep; `k` and `fuzzy` in
/// range. The query's syntax and its cost bound are checked when it is parsed. Errors
/// quote at most 80 characters of a value.
pub fn search_params(query: Option<&str>) -> Result<SearchParams, String> {
    search_params_or_reject(query).map_err(|r| r.1)
}

fn search_params_or_reject(query: Option<&str>) -> Result<SearchParams, Reject> {
    let params = params(query.map(str::to_string))?;
    let text = match param(&params, "q") {
        None => return Err(Reject::bad("missing parameter q (the query text)")),
        Some(q) if q.trim().is_empty() => return Err(Reject::bad("empty parameter q")),
        Some(q) => q,
    };
    if text.len() > MAX_QUERY_BYTES {
        return Err(Reject::bad(format!(
            "q is {} bytes long; at most {MAX_QUERY_BYTES}",
            text.len()
        )));
    }
    let depth = text
        .chars()
        .scan(0i64, |d, c| {
            *d += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            Some(*d)
        })
        .max()
        .unwrap_or(0);
    if depth > MAX_QUERY_DEPTH as i64 {
        return Err(Reject::bad(format!(
            "q nests parentheses {depth} deep; at most {MAX_QUERY_DEPTH}"
        )));
    }
    let k = int_param(&params, "k", TOP_K, 1..=MAX_K)?;
    let fuzzy = int_param(&params, "fuzzy", 0, 0..=2)? as u8;
    Ok(SearchParams {
        text: text.to_string(),
        k,
        fuzzy,
    })
}

/// The optional body of `/work`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkBody {
    work_ms: f64,
}

async fn work(
    With(state): With<Arc<State>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<WorkAnswer>, Reject> {
    let received = Instant::now();
    let body = body.map_err(|e| {
        let status = e.status();
        let why = e.body_text();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Reject(status, format!("body: {why}"))
        } else {
            // A body that stalled past --body-timeout, or broke off.
            Reject(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "body: could not be read ({}); the connection closes",
                    why.replace('\n', " ")
                ),
            )
        }
    })?;
    let ServedWorkload::Synthetic {
        demand,
        shape,
        spinner,
        ..
    } = &state.workload
    else {
        return Err(not_started_with("/work", &state.workload));
    };
    let work_ms = if body.iter().all(u8::is_ascii_whitespace) {
        let mut rng = state.draws.lock().unwrap_or_else(|e| e.into_inner());
        demand.sample(&mut rng).work_ms
    } else {
        let parsed: WorkBody = serde_json::from_slice(&body).map_err(|e| {
            Reject::bad(format!(
                "body: expected {{\"work_ms\": X}}: {}",
                e.to_string().replace('\n', " ")
            ))
        })?;
        if !(parsed.work_ms.is_finite() && parsed.work_ms >= 0.0 && parsed.work_ms <= MAX_WORK_MS) {
            return Err(Reject::bad(format!(
                "work_ms {}: expected a number from 0 to {MAX_WORK_MS}",
                parsed.work_ms
            )));
        }
        parsed.work_ms
    };
    let job = SyntheticJob::new(work_ms, *shape, spinner.clone());
    let done = compute(&state, job, received).await?;
    let t = done.timing;
    Ok(Json(WorkAnswer {
        work_ms,
        latency_ms: t.latency_ms(),
        queue_ms: t.start.saturating_duration_since(t.arrival).as_secs_f64() * 1000.0,
        degree: t.max_degree,
    }))
}

async fn healthz(With(state): With<Arc<State>>) -> Response {
    let draining = state.draining.load(Ordering::Acquire);
    let body = serde_json::json!({
        "status": if draining { "draining" } else { "ok" },
        "workload": state.workload.name(),
        "policy": state.runtime.policy().name(),
        "cores": state.cores,
        "shard": state.config.shard,
        "instance": state.instance,
    });
    let status = if draining {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

/// Readiness, as an orchestrator probes it: 200 while the server takes new requests, 503
/// once it drains. (`/healthz` answers the same here, where the index is ready before the
/// server listens; it stays for shared/spec/http.md.)
async fn readyz(With(state): With<Arc<State>>) -> Response {
    if state.draining.load(Ordering::Acquire) {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "draining"})),
        )
            .into_response()
    } else {
        (StatusCode::OK, Json(serde_json::json!({"status": "ready"}))).into_response()
    }
}

/// The runtime's rolling profile of served requests as tailor's profile CSV, degrees
/// 1..=`degrees` (default: the cores), the higher ones predicted by list scheduling.
async fn profile(
    With(state): With<Arc<State>>,
    RawQuery(query): RawQuery,
) -> Result<Response, Reject> {
    let params = params(query)?;
    let degrees = int_param(&params, "degrees", state.cores.clamp(1, 64), 1..=64)?;
    let served = state.runtime.served();
    let profile = crate::profile::served_profile(&served, degrees)
        .map_err(|e| {
            Reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the profile: {e}"),
            )
        })?
        .ok_or_else(|| {
            Reject(
                StatusCode::NOT_FOUND,
                "no served requests recorded yet (or the runtime keeps none: profile window 0)"
                    .into(),
            )
        })?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/csv; charset=utf-8"),
        )],
        crate::profile::csv(&profile),
    )
        .into_response())
}

async fn metrics(With(state): With<Arc<State>>) -> Response {
    let text = state
        .metrics
        .render(&state.runtime.metrics(), state.runtime.policy_swaps());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        )],
        text,
    )
        .into_response()
}
