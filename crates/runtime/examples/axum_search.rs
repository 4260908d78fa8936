//! An axum service whose searches run on the tailor runtime through `RuntimeLayer`.
//!
//! `GET /search?q=WORDS` counts the documents of an in-memory corpus that hold every word
//! and returns the first ten of them. The handler parses the query (ordinary async code);
//! the inner tower service turns it into a [`job_fn`] job of 16 units, one slice of the
//! corpus each, merged in unit order; the [`RuntimeService`] runs the job on the runtime,
//! whose policy decides how many threads a request gets. While the runtime's admission
//! queue is full the service is not ready and the handler answers 503 without queueing.
//!
//! ```text
//! cargo run -p tailor-runtime --example axum_search                  # 127.0.0.1:0
//! cargo run -p tailor-runtime --example axum_search -- 127.0.0.1:8080
//! cargo run -p tailor-runtime --example axum_search -- --self-test 5
//! ```
//!
//! `--self-test N` serves on a free port, sends N concurrent requests over raw HTTP/1.1,
//! checks every answer is a 200 with a count, and exits 0 (1 if one is not).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use tailor_runtime::{
    job_fn, Policy, Runtime, RuntimeConfig, RuntimeLayer, RuntimeService, RuntimeServiceError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::{Layer, Service, ServiceExt};

/// Documents in the corpus, and units (slices) per search.
const DOCS: usize = 60_000;
const UNITS: usize = 16;
/// Hits returned per search.
const HITS: usize = 10;

const VOCABULARY: [&str; 32] = [
    "tail", "latency", "request", "thread", "core", "queue", "load", "policy", "degree", "merge",
    "unit", "search", "index", "segment", "query", "score", "boost", "delay", "admit", "exit",
    "pool", "steal", "worker", "budget", "profile", "table", "interval", "quantum", "server",
    "client", "burst", "spike",
];

/// A deterministic corpus: `DOCS` documents of 12 words each (an xorshift generator).
fn corpus() -> Vec<Vec<&'static str>> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..DOCS)
        .map(|_| {
            (0..12)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    VOCABULARY[(x % VOCABULARY.len() as u64) as usize]
                })
                .collect()
        })
        .collect()
}

/// A search's answer: matching documents, and the first [`HITS`] of them.
#[derive(Debug, Default)]
struct Hits {
    count: usize,
    first: Vec<usize>,
}

/// The inner service: a query (lower-case words) becomes a job over the corpus. Its
/// futures are `Send`, as axum's handlers need.
fn search_service(
    corpus: Arc<Vec<Vec<&'static str>>>,
) -> impl Service<
    Vec<String>,
    Response = impl tailor_runtime::Job<Output = Hits>,
    Error = Infallible,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    tower::service_fn(move |words: Vec<String>| {
        let corpus = corpus.clone();
        async move {
            let slice = corpus.len().div_ceil(UNITS);
            Ok(job_fn(
                UNITS,
                move |unit| {
                    let end = ((unit + 1) * slice).min(corpus.len());
                    let mut hits = Hits::default();
                    for id in (unit * slice).min(end)..end {
                        if words.iter().all(|w| corpus[id].contains(&w.as_str())) {
                            hits.count += 1;
                            if hits.first.len() < HITS {
                                hits.first.push(id);
                            }
                        }
                    }
                    hits
                },
                |parts: Vec<Hits>| {
                    let mut all = Hits::default();
                    for part in parts {
                        all.count += part.count;
                        let room = HITS - all.first.len();
                        all.first.extend(part.first.into_iter().take(room));
                    }
                    all
                },
            ))
        }
    })
}

/// The value of `q` in a query string, `+` and `%XX` decoded.
fn query_param(query: &str) -> Option<String> {
    let raw = query.split('&').find_map(|pair| pair.strip_prefix("q="))?;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `GET /search`: parse, then run the search through the runtime service.
async fn search<S>(service: RuntimeService<S>, uri: Uri) -> Response
where
    RuntimeService<S>: Service<Vec<String>, Response = Hits, Error = RuntimeServiceError>,
{
    let words: Vec<String> = uri
        .query()
        .and_then(query_param)
        .map(|q| q.split_whitespace().map(str::to_lowercase).collect())
        .unwrap_or_default();
    if words.is_empty() {
        let body = json!({ "error": "give words to search for: /search?q=tail+latency" });
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    // `oneshot` waits for `poll_ready`, which fails at once while the queue is full.
    match service.oneshot(words.clone()).await {
        Ok(hits) => {
            Json(json!({ "q": words, "count": hits.count, "first": hits.first })).into_response()
        }
        Err(e @ (RuntimeServiceError::Overloaded | RuntimeServiceError::ShuttingDown)) => {
            (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response()
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The app: the runtime behind `/search`.
fn app(runtime: Arc<Runtime>) -> Router {
    let service = RuntimeLayer::new(runtime).layer(search_service(Arc::new(corpus())));
    Router::new().route("/search", get(move |uri: Uri| search(service.clone(), uri)))
}

/// One raw HTTP/1.1 GET; returns the status line and the body.
async fn get_raw(addr: SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response.lines().next().unwrap_or_default().to_string();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// Sends `n` concurrent searches to `addr`; true if every one came back 200 with a count.
async fn self_test(addr: SocketAddr, n: usize) -> bool {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let words = [
                VOCABULARY[i % VOCABULARY.len()],
                VOCABULARY[(i * 7 + 3) % VOCABULARY.len()],
            ];
            let path = format!("/search?q={}+{}", words[0], words[1]);
            tokio::spawn(async move { (path.clone(), get_raw(addr, &path).await) })
        })
        .collect();
    let mut ok = true;
    for call in calls {
        match call.await {
            Ok((path, Ok((status, body)))) => {
                let good = status.starts_with("HTTP/1.1 200") && body.contains("\"count\"");
                println!("{path}: {status}: {body}");
                ok &= good;
            }
            Ok((path, Err(e))) => {
                println!("{path}: {e}");
                ok = false;
            }
            Err(e) => {
                println!("a request task failed: {e}");
                ok = false;
            }
        }
    }
    ok
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (addr, test) = match args.as_slice() {
        [] => ("127.0.0.1:0".to_string(), None),
        [flag, n] if flag == "--self-test" => {
            ("127.0.0.1:0".to_string(), Some(n.parse::<usize>()?))
        }
        [addr] if !addr.starts_with('-') => (addr.clone(), None),
        _ => return Err("usage: axum_search [ADDR] | axum_search --self-test N".into()),
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut config = RuntimeConfig::new(
        cores,
        Policy::Fix {
            degree: cores.min(4),
        },
    );
    // A short queue, so that overload answers 503 quickly instead of queueing.
    config.queue_bound = 64;
    let runtime = Arc::new(Runtime::start(config)?);
    let listener = TcpListener::bind(&addr).await?;
    let bound = listener.local_addr()?;
    println!("listening on http://{bound}/search?q=tail+latency");
    let app = app(runtime.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let Some(n) = test else {
        server.await??;
        return Ok(());
    };
    let ok = self_test(bound, n).await;
    server.abort();
    // The runtime counts a request just after its handle resolves.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while runtime.metrics().load > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let metrics = runtime.metrics();
    println!(
        "self-test: {n} requests, {} completed, {} rejected: {}",
        metrics.completed,
        metrics.rejected,
        if ok { "ok" } else { "FAILED" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
