//! `tailor serve` against hostile clients (issue #23): stalled bodies are cut off so new
//! clients get in, a client that goes away cancels its work, the deadline cancels a
//! request that runs over, and queries that would scan the term dictionary too often are
//! refused naming the limit.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use tailor_core::{Demand, DemandModel, Policy};
use tailor_runtime::RuntimeConfig;

use common::Running;
use tailor_server::{ServeConfig, ServedWorkload};
use tailor_workloads::search::{generated_corpus, SearchIndex};
use tailor_workloads::{Spinner, SyntheticShape};

async fn start(workload: ServedWorkload, workers: usize, config: ServeConfig) -> Running {
    let mut rc = RuntimeConfig::new(2, Policy::Seq);
    rc.workers = Some(workers);
    rc.queue_bound = 16;
    common::start(workload, rc, config).await
}

fn synthetic(shape: SyntheticShape) -> ServedWorkload {
    ServedWorkload::Synthetic {
        demand: DemandModel::new(Demand::Const { ms: 1.0 }, None).unwrap(),
        shape,
        spinner: Arc::new(Spinner::calibrate()),
        seed: 1,
    }
}

/// Sends `request` on a fresh connection and reads the answer's status line and body
/// until the server closes the connection.
async fn exchange(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn post_work(work_ms: f64) -> String {
    let body = format!("{{\"work_ms\": {work_ms}}}");
    format!(
        "POST /work HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_are_cut_off_and_new_clients_get_in() {
    let config = ServeConfig {
        max_connections: 50,
        body_timeout: Duration::from_secs(2),
        ..ServeConfig::default()
    };
    let server = start(synthetic(SyntheticShape::amdahl(0.0)), 1, config).await;
    let began = Instant::now();
    // 60 clients send a head announcing 1,000 bytes, one byte of it, and go silent.
    let mut stalled = Vec::new();
    for _ in 0..60 {
        let mut s = TcpStream::connect(&server.addr).await.unwrap();
        s.write_all(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{")
            .await
            .unwrap();
        stalled.push(s);
    }
    let (status, text) = exchange(
        &server.addr,
        "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    let answered = began.elapsed();
    assert_eq!(status, 200, "{text}");
    // Without a body timeout the 50 slots would stay held for as long as the clients
    // like; with it, the first 50 are cut off after 2 s and the last 10 after 4.
    assert!(
        answered < Duration::from_secs(4),
        "healthz after {answered:?}"
    );
    let mut first_answer = None;
    for mut s in stalled {
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(6), s.read_to_end(&mut buf)).await;
        assert!(read.is_ok(), "a stalled connection is still open after 6 s");
        first_answer.get_or_insert(String::from_utf8_lossy(&buf).into_owned());
    }
    assert!(began.elapsed() < Duration::from_secs(7));
    let first = first_answer.unwrap();
    assert!(first.starts_with("HTTP/1.1 408"), "{first}");
    server.stop().await;
}

/// Reads what a connection gets until it closes, within `wait`; `None` if it stays open.
async fn answer_within(s: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut buf = Vec::new();
    tokio::time::timeout(wait, s.read_to_end(&mut buf))
        .await
        .ok()
        .map(|_| String::from_utf8_lossy(&buf).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_stalls_gets_a_408_at_its_timeout() {
    let config = ServeConfig {
        header_timeout: Duration::from_secs(1),
        ..ServeConfig::default()
    };
    let server = start(synthetic(SyntheticShape::amdahl(0.0)), 1, config).await;
    let began = Instant::now();
    let mut slow = TcpStream::connect(&server.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost")
        .await
        .unwrap();
    let got = answer_within(&mut slow, Duration::from_secs(3))
        .await
        .expect("closed");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("request head"), "{got}");
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(2),
        "{took:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_bound_the_slowest_clients_are_shed_and_a_prompt_one_gets_in() {
    // Eight connections at most; sixteen hostile clients, trickling a head, stalling a
    // body or sending only blank lines, with timeouts far away. A prompt client still gets in at once,
    // and every hostile client that was shed got a 408.
    let config = ServeConfig {
        max_connections: 8,
        header_timeout: Duration::from_secs(30),
        body_timeout: Duration::from_secs(30),
        ..ServeConfig::default()
    };
    let server = start(synthetic(SyntheticShape::amdahl(0.0)), 1, config).await;
    let mut hostile = Vec::new();
    for i in 0..16 {
        let mut s = TcpStream::connect(&server.addr).await.unwrap();
        // Blank lines before a request line are no head (RFC 9112, section 2.2): such a
        // client is as slow as one trickling its head.
        let sent: &[u8] = match i % 3 {
            0 => b"GET /healthz HTTP/1.1\r\nHo",
            1 => b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{",
            _ => b"\r\n\r\n\r\n",
        };
        s.write_all(sent).await.unwrap();
        hostile.push(s);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let began = Instant::now();
    let (status, text) = exchange(
        &server.addr,
        "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    // The first nine were shed (the oldest first) as the others came: answered 408.
    let mut shed = 0;
    for s in hostile.iter_mut().take(9) {
        let got = answer_within(s, Duration::from_secs(2))
            .await
            .expect("shed and closed");
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(got.contains("slowest client"), "{got}");
        shed += 1;
    }
    assert_eq!(shed, 9);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_work() {
    let server = start(
        synthetic(SyntheticShape::amdahl(0.0)),
        1,
        ServeConfig::default(),
    )
    .await;
    let mut gone = TcpStream::connect(&server.addr).await.unwrap();
    gone.write_all(post_work(2000.0).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(gone);
    let sent = Instant::now();
    let (status, text) = exchange(&server.addr, &post_work(1.0)).await;
    let took = sent.elapsed();
    assert_eq!(status, 200, "{text}");
    // Without cancellation it would wait for the rest of the 2,000 ms request.
    assert!(
        took < Duration::from_millis(1000),
        "answered after {took:?}"
    );
    let report = server.stop().await;
    assert_eq!(report.runtime.cancelled, 1);
    assert_eq!(report.runtime.completed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_cancels_a_request_that_runs_over() {
    let config = ServeConfig {
        request_timeout: Duration::from_millis(300),
        ..ServeConfig::default()
    };
    // Half the work serial: the merge stops too.
    let server = start(synthetic(SyntheticShape::amdahl(0.5)), 1, config).await;
    let sent = Instant::now();
    let (status, text) = exchange(&server.addr, &post_work(3000.0)).await;
    assert_eq!(status, 504, "{text}");
    assert!(text.contains("--request-timeout"), "{text}");
    assert!(sent.elapsed() < Duration::from_millis(1500));
    let (status, _) = exchange(&server.addr, &post_work(1.0)).await;
    assert_eq!(status, 200);
    assert!(
        sent.elapsed() < Duration::from_millis(2000),
        "{:?}",
        sent.elapsed()
    );
    let report = server.stop().await;
    assert_eq!(report.runtime.cancelled, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_over_the_cost_bound_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = SearchIndex::open_or_build(
        dir.path(),
        "generated",
        4,
        || Ok(generated_corpus(600, 11)),
        &mut |_, _| {},
    )
    .unwrap();
    let server = start(
        ServedWorkload::Search(Arc::new(index)),
        2,
        ServeConfig::default(),
    )
    .await;
    let get =
        |q: String| format!("GET /search?q={q} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let heavy: String = (b'a'..=b'z')
        .map(|c| format!("body:/.*{}.*/+", c as char))
        .collect();
    let (status, text) = exchange(&server.addr, &get(heavy)).await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("26 regular-expression or prefix terms; at most 2"),
        "{text}"
    );
    let (status, text) = exchange(&server.addr, &get("body:/.*a.*/+horse".into())).await;
    assert_eq!(status, 200, "{text}");
    let (status, text) = exchange(&server.addr, &get("a+b+c+d+e+f+g+h+i&fuzzy=1".into())).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("at most 8"), "{text}");
    server.stop().await;
}
