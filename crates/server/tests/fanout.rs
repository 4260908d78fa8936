//! `tailor fanout` over loopback replicas: it waits for every shard and merges search
//! hits by score; SingleR/SingleD reissue to the other replica and the records say so;
//! hedging starts once it has data; an unreachable replica is an error that names it (at
//! start and per query); overload gets 503 and a slow shard 504.

use std::sync::Arc;
use std::time::Duration;

mod common;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use tailor_core::{Demand, DemandModel, Policy, Reissue, ShardRecord};
use tailor_runtime::RuntimeConfig;
use tailor_server::{FanoutConfig, FanoutError, FanoutReport, Route, ServeConfig, ServedWorkload};
use tailor_workloads::search::{generated_corpus, SearchIndex};
use tailor_workloads::{Spinner, SyntheticShape};

use common::{start, HttpClient, Running};

/// One request; its status and body.
async fn send(client: &HttpClient, method: Method, url: &str, body: &str) -> (StatusCode, String) {
    let (status, _, body) = common::send(client, method, url, body).await;
    (status, body)
}

fn synthetic(work_ms: f64) -> ServedWorkload {
    ServedWorkload::Synthetic {
        demand: DemandModel::new(Demand::Const { ms: work_ms }, None).unwrap(),
        shape: SyntheticShape::amdahl(0.0),
        spinner: spinner(),
        seed: 1,
    }
}

/// One calibrated spin loop for every server of the tests.
fn spinner() -> Arc<Spinner> {
    static SPINNER: std::sync::OnceLock<Arc<Spinner>> = std::sync::OnceLock::new();
    SPINNER
        .get_or_init(|| Arc::new(Spinner::calibrate()))
        .clone()
}

fn seq() -> RuntimeConfig {
    let mut rc = RuntimeConfig::new(1, Policy::Seq);
    rc.workers = Some(1);
    rc
}

/// `shards` x `replicas` synthetic servers of `work_ms` per request.
async fn replicas(shards: usize, replicas: usize, work_ms: f64) -> Vec<Vec<Running>> {
    let mut out = Vec::new();
    for _ in 0..shards {
        let mut shard = Vec::new();
        for _ in 0..replicas {
            shard.push(start(synthetic(work_ms), seq(), ServeConfig::default()).await);
        }
        out.push(shard);
    }
    out
}

fn config(servers: &[Vec<Running>], reissue: &str) -> FanoutConfig {
    FanoutConfig {
        shards: servers
            .iter()
            .map(|s| s.iter().map(Running::base).collect())
            .collect(),
        reissue: Reissue::parse(reissue).unwrap(),
        route: Route::Random,
        cancel: true,
        max_inflight: 64,
        timeout: Duration::from_secs(10),
        hedge_period: Duration::from_secs(5),
        seed: 3,
        records: true,
        header_timeout: Duration::from_secs(5),
        body_timeout: Duration::from_secs(5),
    }
}

/// A running front end.
struct Front {
    base: String,
    stop: oneshot::Sender<()>,
    done: JoinHandle<Result<FanoutReport, FanoutError>>,
}

impl Front {
    async fn start(config: FanoutConfig) -> Front {
        let (listener, addr) = tailor_server::bind("127.0.0.1:0").await.unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(tailor_server::fanout(listener, config, async move {
            let _ = stopped.await;
        }));
        let front = Front {
            base: format!("http://{addr}"),
            stop,
            done,
        };
        // Ready once /healthz answers (the replicas are probed first).
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        for _ in 0..200 {
            let request = Request::get(format!("{}/healthz", front.base))
                .body(Full::new(Bytes::new()))
                .unwrap();
            if let Ok(Ok(r)) =
                tokio::time::timeout(Duration::from_millis(200), client.request(request)).await
            {
                if r.status().is_success() {
                    return front;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the front end did not come up");
    }

    async fn stop(self) -> FanoutReport {
        let _ = self.stop.send(());
        self.done.await.unwrap().unwrap()
    }
}

async fn stop_all(servers: Vec<Vec<Running>>) {
    for shard in servers {
        for r in shard {
            r.stop().await;
        }
    }
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shard_answers_and_records_say_who() {
    let servers = replicas(3, 2, 1.0).await;
    let front = Front::start(config(&servers, "none")).await;
    let client = client();
    for _ in 0..20 {
        let (status, body) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        let shards = answer["shards"].as_array().unwrap();
        assert_eq!(shards.len(), 3);
        for (i, s) in shards.iter().enumerate() {
            assert_eq!(s["shard"], i);
            assert_eq!(s["reissued"], false);
            // Each shard answered its own 1 ms request, and the query waited for all.
            assert!((s["work_ms"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{s}");
            // The query waited for its slowest shard.
            assert!(answer["latency_ms"].as_f64().unwrap() >= s["latency_ms"].as_f64().unwrap());
        }
    }
    let report = front.stop().await;
    assert_eq!(report.answers, [20, 0, 0]);
    assert_eq!((report.shard_requests, report.reissued), (60, 0));
    assert_eq!(report.records.len(), 60);
    let mut seen = [[0usize; 2]; 3];
    for r in &report.records {
        // A shard's latency holds its 1 ms of work. The spin loop is calibrated while the
        // other tests run, so a unit can take less wall time than asked once they stop
        // (0.74 ms seen with another job on the machine); only a loop four times as fast
        // as at calibration would bring it under a quarter.
        assert!(
            r.latency_ms >= 0.25 && r.reissued_to.is_none() && !r.reissue_won,
            "{r:?}"
        );
        assert_eq!(r.primary_ms.unwrap(), r.latency_ms);
        seen[r.shard][r.replica] += 1;
    }
    // Random routing uses both replicas of every shard.
    assert!(seen.iter().flatten().all(|&n| n > 0), "{seen:?}");
    stop_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_d_at_zero_reissues_every_request_to_the_other_replica() {
    let servers = replicas(2, 2, 2.0).await;
    let front = Front::start(config(&servers, "single-d:0")).await;
    let client = client();
    for _ in 0..10 {
        let (status, body) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let report = front.stop().await;
    assert_eq!((report.shard_requests, report.reissued), (20, 20));
    for r in &report.records {
        let to = r.reissued_to.expect("reissued");
        assert_ne!(to, r.replica, "{r:?}");
    }
    stop_all(servers).await;

    // SingleR with q = 0 never reissues.
    let servers = replicas(2, 2, 1.0).await;
    let front = Front::start(config(&servers, "single-r:0:0")).await;
    for _ in 0..10 {
        let (status, _) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK);
    }
    let report = front.stop().await;
    assert_eq!((report.shard_requests, report.reissued), (20, 0));
    stop_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reissue_escapes_a_slow_replica() {
    // Shard 0's replica 0 takes 300 ms, replica 1 takes 1 ms: with SingleD at 20 ms,
    // every query answers well before 300 ms, and the slow copies are cancelled.
    let slow = start(synthetic(300.0), seq(), ServeConfig::default()).await;
    let fast = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let mut cfg = config(&[], "single-d:20");
    cfg.shards = vec![vec![slow.base(), fast.base()]];
    let front = Front::start(cfg).await;
    let client = client();
    let mut worst: f64 = 0.0;
    for _ in 0..12 {
        let (status, body) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        worst = worst.max(answer["latency_ms"].as_f64().unwrap());
    }
    assert!(worst < 250.0, "worst {worst} ms");
    let report = front.stop().await;
    let records: Vec<&ShardRecord> = report.records.iter().collect();
    let won = records.iter().filter(|r| r.reissue_won).count();
    let to_slow = records.iter().filter(|r| r.replica == 0).count();
    assert_eq!(
        won, to_slow,
        "every first copy to the slow replica lost to its reissue"
    );
    for r in records.iter().filter(|r| r.replica == 0) {
        assert!(r.primary_ms.is_none(), "the slow copy was cancelled: {r:?}");
    }
    let slow_report = slow.stop().await;
    if to_slow > 0 {
        assert!(
            slow_report.runtime.cancelled > 0,
            "{:?}",
            slow_report.runtime
        );
    }
    fast.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hedging_starts_once_a_period_has_data() {
    let servers = replicas(1, 2, 0.5).await;
    let mut cfg = config(&servers, "hedge:50");
    cfg.hedge_period = Duration::from_millis(500);
    let front = Front::start(cfg).await;
    let client = client();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(3000) {
        let (status, _) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK);
    }
    let report = front.stop().await;
    // No hedge in the first period (no histogram yet), some later (hedge at the median).
    let first: Vec<&ShardRecord> = report
        .records
        .iter()
        .filter(|r| r.arrival_ms < 450.0)
        .collect();
    assert!(!first.is_empty() && first.iter().all(|r| r.reissued_to.is_none()));
    assert!(report.reissued > 0, "{report:?}");
    stop_all(servers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_replicas_copies_go_to_another_at_once_and_it_is_ejected() {
    // Replica 0 goes away after the start-up probe: a copy routed to it finds no
    // connection, so it goes to the live replica at once (it never reached the gone
    // one), and after five such failures in a row the gone replica gets no first copies.
    let gone = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let live = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let mut cfg = config(&[], "single-r:500:1");
    cfg.shards = vec![vec![gone.base(), live.base()]];
    let front = Front::start(cfg).await;
    gone.stop().await;
    let client = client();
    for _ in 0..30 {
        let started = std::time::Instant::now();
        let (status, body) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
    }
    let (status, health) = send(&client, Method::GET, &format!("{}/healthz", front.base), "").await;
    assert_eq!(status, StatusCode::OK, "{health}");
    let health: serde_json::Value = serde_json::from_str(&health).unwrap();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(
        health["replicas"][0]["replicas"][0]["state"], "ejected",
        "{health}"
    );
    let (status, _) = send(&client, Method::GET, &format!("{}/readyz", front.base), "").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "one live replica is enough to be ready"
    );
    let report = front.stop().await;
    assert!(
        report.records.iter().all(|r| r.replica == 1),
        "a first copy was answered by the gone replica"
    );
    live.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reissue_goes_to_an_ejected_replica() {
    // Two replicas, one gone, every request reissued at once (SingleD at 0) or hedged:
    // once the gone one is ejected, a reissue has nowhere to go and is not sent (before
    // the fix it went to the ejected replica, found no connection, and was retried on
    // the replica that already held the first copy).
    for reissue in ["single-d:0", "hedge:50"] {
        let gone = start(synthetic(1.0), seq(), ServeConfig::default()).await;
        let live = start(synthetic(1.0), seq(), ServeConfig::default()).await;
        let mut cfg = config(&[], reissue);
        cfg.shards = vec![vec![gone.base(), live.base()]];
        cfg.hedge_period = Duration::from_millis(200);
        let front = Front::start(cfg).await;
        gone.stop().await;
        let client = client();
        for i in 0..300 {
            let (status, body) =
                send(&client, Method::POST, &format!("{}/work", front.base), "").await;
            assert_eq!(status, StatusCode::OK, "{reissue} {i}: {body}");
        }
        let report = front.stop().await;
        let late = &report.records[report.records.len() - 50..];
        assert!(
            late.iter()
                .all(|r| r.reissued_to.is_none() && r.replica == 1),
            "{reissue}: {:?}",
            &late[..3]
        );
        live.stop().await;
    }
}

/// A replica that answers `/healthz` as `like` does (under an instance of its own) and
/// closes every other connection once it has read the request head: a server killed
/// while its copies were in flight.
async fn breaking_replica(like: &Running) -> (String, JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_, health) = send(
        &client(),
        Method::GET,
        &format!("{}/healthz", like.base()),
        "",
    )
    .await;
    let mut health: serde_json::Value = serde_json::from_str(&health).unwrap();
    health["instance"] = "breaking".into();
    let health = health.to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let health = health.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if head.starts_with(b"GET /healthz") {
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{health}",
                        health.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                }
                // Anything else: the connection closes with the request unanswered.
            });
        }
    });
    (base, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_whose_replica_breaks_off_goes_to_another() {
    // The breaking replica passes its health checks but never answers a copy: each of
    // its copies reached it and broke off, and goes to the live replica once, so every
    // query is answered; after five such failures in a row it is ejected.
    let live = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let (breaking, task) = breaking_replica(&live).await;
    let mut cfg = config(&[], "none");
    cfg.shards = vec![vec![breaking, live.base()]];
    let front = Front::start(cfg).await;
    let client = client();
    for _ in 0..30 {
        let (status, body) = send(&client, Method::POST, &format!("{}/work", front.base), "").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let report = front.stop().await;
    assert!(report.records.iter().all(|r| r.replica == 1));
    task.abort();
    live.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_replica_is_named() {
    // At start: a port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let servers = replicas(1, 1, 1.0).await;
    let mut cfg = config(&servers, "none");
    cfg.shards.push(vec![format!("http://{closed}")]);
    let (listener, _) = tailor_server::bind("127.0.0.1:0").await.unwrap();
    let err = tailor_server::fanout(listener, cfg, std::future::pending())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("shard 1") && err.contains(&closed.to_string()),
        "{err}"
    );

    // While serving: the replica goes away; queries get 502 naming it, not a hang.
    let front = Front::start(config(&servers, "none")).await;
    let url = servers[0][0].base();
    stop_all(servers).await;
    let client = client();
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(10),
        send(&client, Method::POST, &format!("{}/work", front.base), ""),
    )
    .await
    .expect("an answer, not a hang");
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("shard 0") && body.contains(&url), "{body}");
    front.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_and_slow_shards_are_refused_with_a_reason() {
    let servers = replicas(1, 1, 1.0).await;
    let mut cfg = config(&servers, "none");
    cfg.max_inflight = 1;
    cfg.timeout = Duration::from_millis(400);
    let front = Front::start(cfg).await;
    let client = client();
    let url = format!("{}/work", front.base);
    let long = {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move { send(&client, Method::POST, &url, r#"{"work_ms": 2000}"#).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, body) = send(&client, Method::POST, &url, "").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("--max-inflight"), "{body}");
    let (status, body) = long.await.unwrap();
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert!(
        body.contains("shard 0") && body.contains("--timeout"),
        "{body}"
    );
    // The replica's copy was cancelled, and the front end serves again.
    let (status, _) = send(&client, Method::POST, &url, "").await;
    assert_eq!(status, StatusCode::OK);
    front.stop().await;
    stop_all(servers).await;
}

fn index(dir: &std::path::Path, seed: u64) -> Arc<SearchIndex> {
    let (index, _) = SearchIndex::open_or_build(
        dir,
        "generated",
        2,
        || Ok(generated_corpus(300, seed)),
        &mut |_, _| {},
    )
    .unwrap();
    Arc::new(index)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_hits_merge_by_score_across_shards() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let holding = |shard: &str| ServeConfig {
        shard: Some(shard.into()),
        ..ServeConfig::default()
    };
    let shard0 = start(
        ServedWorkload::Search(index(a.path(), 11)),
        seq(),
        holding("0/2"),
    )
    .await;
    let shard1 = start(
        ServedWorkload::Search(index(b.path(), 12)),
        seq(),
        holding("1/2"),
    )
    .await;
    let mut cfg = config(&[], "none");
    cfg.shards = vec![vec![shard0.base()], vec![shard1.base()]];
    let front = Front::start(cfg).await;
    let client = client();
    let q = "/search?q=the&k=7";
    let (status, merged) = send(&client, Method::GET, &format!("{}{q}", front.base), "").await;
    assert_eq!(status, StatusCode::OK, "{merged}");
    let merged: serde_json::Value = serde_json::from_str(&merged).unwrap();
    let mut count = 0;
    let mut scores = Vec::new();
    for s in [&shard0, &shard1] {
        let (_, one) = send(&client, Method::GET, &format!("{}{q}", s.base()), "").await;
        let one: serde_json::Value = serde_json::from_str(&one).unwrap();
        count += one["count"].as_u64().unwrap();
        scores.extend(
            one["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["score"].as_f64().unwrap()),
        );
    }
    scores.sort_by(|x, y| y.total_cmp(x));
    scores.truncate(7);
    assert_eq!(merged["count"].as_u64().unwrap(), count);
    let got: Vec<f64> = merged["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert_eq!(got, scores);
    // A bad query is refused here, before any shard sees it.
    let (status, body) = send(
        &client,
        Method::GET,
        &format!("{}/search?k=3", front.base),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let report = front.stop().await;
    assert_eq!(report.shard_requests, 2);
    shard0.stop().await;
    shard1.stop().await;
}

// ---------------------------------------------------------------------------------------
// Topology and readiness (issue #39)
// ---------------------------------------------------------------------------------------

/// What `fanout` says when it refuses to start with `shards`.
async fn refused(shards: Vec<Vec<String>>) -> String {
    let mut cfg = config(&[], "none");
    cfg.shards = shards;
    let (listener, _) = tailor_server::bind("127.0.0.1:0").await.unwrap();
    match tailor_server::fanout(listener, cfg, async {}).await {
        Ok(_) => panic!("started"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_topologies_are_refused_naming_the_replica() {
    let a = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let b = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    // The same URL twice in a shard, or for two shards.
    let e = refused(vec![vec![a.base(), a.base()]]).await;
    assert!(e.contains(&a.base()) && e.contains("twice"), "{e}");
    let e = refused(vec![vec![a.base()], vec![a.base(), b.base()]]).await;
    assert!(e.contains(&a.base()) && e.contains("shard 0"), "{e}");
    // One server under two URLs.
    let other_name = a.base().replace("127.0.0.1", "localhost");
    let e = refused(vec![vec![a.base(), other_name.clone()]]).await;
    assert!(e.contains(&other_name) && e.contains("same server"), "{e}");
    a.stop().await;
    b.stop().await;
    // Search replicas that hold other shards than they are given for.
    let (d0, d1) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let holding = |shard: &str| ServeConfig {
        shard: Some(shard.into()),
        ..ServeConfig::default()
    };
    let s0 = start(
        ServedWorkload::Search(index(d0.path(), 11)),
        seq(),
        holding("0/2"),
    )
    .await;
    let s1 = start(
        ServedWorkload::Search(index(d1.path(), 12)),
        seq(),
        holding("1/2"),
    )
    .await;
    let e = refused(vec![vec![s1.base()], vec![s0.base()]]).await;
    assert!(
        e.contains(&s1.base()) && e.contains("holds shard 1/2"),
        "{e}"
    );
    s0.stop().await;
    s1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_live_replicas_is_not_ready() {
    let only = start(synthetic(1.0), seq(), ServeConfig::default()).await;
    let mut cfg = config(&[], "none");
    cfg.shards = vec![vec![only.base()]];
    let front = Front::start(cfg).await;
    let client = client();
    let (status, _) = send(&client, Method::GET, &format!("{}/readyz", front.base), "").await;
    assert_eq!(status, StatusCode::OK);
    only.stop().await;
    // Two failed health checks in a row eject it: about 2-3 s.
    let mut ready = StatusCode::OK;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _) = send(&client, Method::GET, &format!("{}/readyz", front.base), "").await;
        ready = status;
        if status != StatusCode::OK {
            break;
        }
    }
    assert_eq!(ready, StatusCode::SERVICE_UNAVAILABLE);
    let (_, health) = send(&client, Method::GET, &format!("{}/healthz", front.base), "").await;
    assert!(health.contains("\"down\""), "{health}");
    front.stop().await;
}
