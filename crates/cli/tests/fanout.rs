//! End-to-end tests of fan-out over replicated shards (issue #24): `simulate --shards`
//! and `plan reissue`, and how each reports bad input.

mod common;

use common::{assert_refused, scratch, sim, stderr, stdout, tailor};

/// `simulate --shards S --replicas R` (shared/spec/cli.md, "Fan-out and reissue"): the
/// summary adds `reissue_rate`, the records have a line per shard request, and fan-out
/// settings without `--shards`, or with a work-stealing policy, are refused.
#[test]
fn simulate_fans_out_over_replicated_shards() {
    let dir = scratch("fanout");
    let records = dir.join("shards.csv");
    let out = sim(&[
        "seq",
        "--shards",
        "5",
        "--replicas",
        "2",
        "--reissue",
        "single-r:12:0.5",
        "--noise",
        "1:40",
        "--records",
        records.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["completed"], 4000);
    assert_eq!(summary["shards"], 5);
    assert_eq!(summary["replicas"], 2);
    assert_eq!(summary["reissue"], "single-r:12:0.5");
    let rate = summary["reissue_rate"].as_f64().unwrap();
    assert!(rate > 0.0 && rate < 0.5, "{rate}");
    let text = std::fs::read_to_string(&records).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in ["query", "shard", "replica", "latency_ms", "reissued"] {
        assert!(header.contains(&column), "{header:?} lacks {column}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 4000 * 5);
    let reissued = header.iter().position(|c| *c == "reissued").unwrap();
    let count = rows
        .iter()
        .filter(|r| r.split(',').nth(reissued) == Some("true"))
        .count();
    assert!((count as f64 / rows.len() as f64 - rate).abs() < 1e-9);
    for (extra, needle) in [
        (vec!["seq", "--reissue", "single-d:5"], "--shards"),
        (vec!["steal-first", "--shards", "2"], "thread-pool policies"),
        (
            vec![
                "seq",
                "--shards",
                "2",
                "--replicas",
                "1",
                "--reissue",
                "hedge:95",
            ],
            "2 replicas",
        ),
        (
            vec![
                "seq",
                "--shards",
                "2",
                "--replicas",
                "2",
                "--reissue",
                "single-r:5:2",
            ],
            "from 0 to 1",
        ),
        (vec!["seq", "--shards", "0"], "--shards 0"),
    ] {
        assert_refused(&sim(&extra), needle, &format!("{extra:?}"));
    }
}

/// `plan reissue --records FILE --budget B` reads a shard log and prints the SingleR
/// policy string, which `simulate --reissue` takes back, within the budget.
#[test]
fn plan_reissue_prints_a_single_r_policy_within_the_budget() {
    let dir = scratch("reissue");
    let records = dir.join("log.csv");
    // 4 shards x 2 replicas with stalls, given extra flags.
    let fanned = |extra: &[&str]| {
        let mut args = vec!["seq", "--shards", "4", "--replicas", "2", "--noise", "2:60"];
        args.extend(extra);
        sim(&args)
    };
    let log = fanned(&["--records", records.to_str().unwrap()]);
    assert!(log.status.success(), "{}", stderr(&log));
    let out = tailor(&[
        "plan",
        "reissue",
        "--records",
        records.to_str().unwrap(),
        "--budget",
        "0.05",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let policy = plan["policy"].as_str().unwrap();
    assert!(policy.starts_with("single-r:"), "{plan}");
    assert_eq!(plan["shards"], 4);
    assert!(plan["q"].as_f64().unwrap() <= 1.0);
    assert!(plan["predicted_reissue_rate"].as_f64().unwrap() <= 0.05 + 1e-12);
    assert!(
        plan["predicted_shard_ms"].as_f64().unwrap()
            <= plan["no_reissue_shard_ms"].as_f64().unwrap()
    );
    let rerun = fanned(&["--reissue", policy]);
    assert!(rerun.status.success(), "{}", stderr(&rerun));
    for (args, needle) in [
        (vec!["--budget", "0.05"], "--records"),
        (
            vec!["--records", "/nonexistent.csv", "--budget", "0.05"],
            "/nonexistent.csv",
        ),
        (
            vec!["--records", records.to_str().unwrap(), "--budget", "2"],
            "--budget 2",
        ),
    ] {
        let mut all = vec!["plan", "reissue"];
        all.extend(args.iter().copied());
        assert_refused(&tailor(&all), needle, &format!("{args:?}"));
    }
}

#[test]
fn serve_refuses_bad_noise_and_shards_before_it_starts() {
    for (args, needle) in [
        (vec!["--noise", "2"], "RATE_PER_S:LENGTH_MS"),
        (vec!["--noise", "2:0"], "LENGTH_MS"),
        (vec!["--noise", "x:5"], "RATE_PER_S"),
        (vec!["--shard", "2/2"], "from 0 to 1"),
        (vec!["--shard", "0/0"], "from 1 to"),
    ] {
        let mut all = vec![
            "serve",
            "--workload",
            "synthetic:const:1",
            "--policy",
            "seq",
            "--listen",
            "127.0.0.1:0",
        ];
        all.extend(args.iter().copied());
        assert_refused(&tailor(&all), needle, &format!("{args:?}"));
    }
}

use common::StderrLines;

/// Starts `tailor ARGS --listen 127.0.0.1:0`; returns it, its address and its stderr.
fn spawn(args: &[&str]) -> (std::process::Child, String, StderrLines) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let common::Listening { addr, rest, .. } = common::listening(&mut child);
    (child, addr, rest)
}

/// A child process that is killed when dropped unless it has ended: a failed assertion
/// leaves none behind.
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn terminate(child: &mut std::process::Child) -> Option<i32> {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    child.wait().unwrap().code()
}

/// `tailor fanout` over two `tailor serve`s (one shard of two replicas): `tailor load`
/// drives it, every query is answered, SingleD at 0 ms reissues every shard request to
/// the other replica, the records it writes on SIGTERM plan with `plan reissue`; a
/// replica nobody serves stops it at start with the replica named.
#[test]
fn fanout_front_end_answers_reissues_and_logs() {
    let serve = [
        "serve",
        "--workload",
        "synthetic:const:1",
        "--policy",
        "seq",
        "--workers",
        "1",
        "--spin-rate",
        "100",
    ];
    // Their stderr stays open (a service whose stderr is closed fails on its next log).
    let (a, a_addr, _a_log) = spawn(&serve);
    let (b, b_addr, _b_log) = spawn(&serve);
    let (mut a, mut b) = (Proc(a), Proc(b));
    let records = scratch("fanout-front-end").join("records.csv");
    let records_arg = records.to_str().unwrap();
    let (front, addr, lines) = spawn(&[
        "fanout",
        "--shard",
        &format!("http://{a_addr},http://{b_addr}"),
        "--reissue",
        "single-d:0",
        "--records",
        records_arg,
    ]);
    let mut front = Proc(front);
    let load = tailor(&[
        "load",
        "--format",
        "json",
        "--url",
        &format!("http://{addr}"),
        "--rps",
        "100",
        "--requests",
        "30",
    ]);
    assert!(load.status.success(), "{}", stderr(&load));
    let summary: serde_json::Value = serde_json::from_str(stdout(&load).trim()).unwrap();
    assert_eq!(summary["completed"], 30, "{summary}");
    assert_eq!(summary["policy"], "fanout single-d:0");
    assert_eq!(terminate(&mut front.0), Some(0));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("30 shard requests, 30 reissued")),
        "{rest:?}"
    );
    let text = std::fs::read_to_string(&records).unwrap();
    assert_eq!(text.lines().count(), 31, "{text}");
    assert!(text.lines().skip(1).all(|l| l.contains(",true,")), "{text}");
    let plan = tailor(&[
        "plan",
        "reissue",
        "--records",
        records_arg,
        "--budget",
        "0.05",
    ]);
    // Both copies go out at once, so either may win: the planner reads the log and
    // plans, or says that too many first copies were cancelled.
    assert!(
        stdout(&plan).contains("single-r:") || stderr(&plan).contains("never answered"),
        "{}",
        stderr(&plan)
    );

    // A replica that is not there: refused at start, named.
    let gone = format!("http://{b_addr}");
    assert_eq!(terminate(&mut b.0), Some(0));
    let out = tailor(&[
        "fanout",
        "--listen",
        "127.0.0.1:0",
        "--shard",
        &format!("http://{a_addr}"),
        "--shard",
        &gone,
    ]);
    assert_refused(&out, &gone, "a replica that is gone");
    assert!(stderr(&out).contains("shard 1"), "{}", stderr(&out));
    assert_eq!(terminate(&mut a.0), Some(0));
    for (args, needle) in [
        (vec!["--shard", "localhost:1"], "http://"),
        (
            vec!["--shard", "http://127.0.0.1:1", "--reissue", "often"],
            "reissue",
        ),
        (
            vec!["--shard", "http://127.0.0.1:1", "--route", "nearest"],
            "--route",
        ),
        (
            vec![
                "--shard",
                "http://127.0.0.1:1",
                "--no-cancel",
                "--records",
                "x.csv",
            ],
            "--no-cancel",
        ),
        (
            vec![
                "--shard",
                "http://127.0.0.1:1",
                "--hedge-period-s",
                "0.0000001",
            ],
            "--hedge-period must be at least 1ms",
        ),
    ] {
        let mut all = vec!["fanout", "--listen", "127.0.0.1:0"];
        all.extend(args.iter().copied());
        assert_refused(&tailor(&all), needle, &format!("{args:?}"));
    }
}

/// `tailor load --raw` drives any HTTP service with the requests of a file (here a
/// `tailor serve`, through its own routes), and names the line of a bad request.
#[test]
fn load_sends_raw_requests_and_names_bad_lines() {
    let (server, addr, _log) = spawn(&[
        "serve",
        "--workload",
        "synthetic:const:1",
        "--policy",
        "seq",
        "--spin-rate",
        "100",
    ]);
    let mut server = Proc(server);
    let dir = scratch("load-raw");
    let raw = dir.join("requests.jsonl");
    std::fs::write(
        &raw,
        "{\"method\": \"POST\", \"path\": \"/work\", \"body\": {\"work_ms\": 0.5}}\n\n{\"method\": \"GET\", \"path\": \"/healthz\"}\n",
    )
    .unwrap();
    let url = format!("http://{addr}");
    let load = tailor(&[
        "load",
        "--format",
        "json",
        "--url",
        &url,
        "--raw",
        raw.to_str().unwrap(),
        "--rps",
        "200",
        "--requests",
        "40",
    ]);
    assert!(load.status.success(), "{}", stderr(&load));
    let summary: serde_json::Value = serde_json::from_str(stdout(&load).trim()).unwrap();
    assert_eq!(summary["completed"], 40, "{summary}");
    assert_eq!(summary["policy"], "raw", "{summary}");
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"method\": \"GET\", \"path\": \"/healthz\"}\n{\"method\": \"GET\", \"path\": \"healthz\"}\n",
    )
    .unwrap();
    let out = tailor(&[
        "load",
        "--format",
        "json",
        "--url",
        &url,
        "--raw",
        bad.to_str().unwrap(),
        "--rps",
        "10",
        "--requests",
        "5",
    ]);
    assert_refused(
        &out,
        "bad.jsonl:2: the path must start with /",
        "a relative path",
    );
    assert_eq!(terminate(&mut server.0), Some(0));
}

#[test]
fn load_prints_the_requests_it_would_send() {
    let dir = scratch("load-print");
    let raw = dir.join("requests.jsonl");
    let lines = [
        r#"{"method": "POST", "path": "/i/_search", "body": {"query": {"match_all": {}}}}"#,
        r#"{"method": "GET", "path": "/_cat/indices"}"#,
        r#"{"method": "POST", "path": "/x", "body": "not json"}"#,
    ];
    std::fs::write(&raw, lines.join("\n") + "\n").unwrap();
    let out = tailor(&["load", "--raw", raw.to_str().unwrap(), "--print-requests"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let given: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(printed, given, "the lines round-trip");

    let queries = dir.join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"kind\":\"term\",\"term\":\"horse\"}\n{\"kind\":\"fuzzy\",\"term\":\"horse\",\"distance\":1}\n",
    )
    .unwrap();
    let out = tailor(&[
        "load",
        "--format",
        "json",
        "--queries",
        queries.to_str().unwrap(),
        "--opensearch",
        "gcide",
        "--print-requests",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(printed.len(), 2);
    for p in &printed {
        assert_eq!(p["method"], "POST");
        assert_eq!(p["path"], "/gcide/_search?request_cache=false");
        assert!(p["body"]["query"].is_object(), "{p}");
    }
    assert!(
        printed[1]["body"]["query"]["fuzzy"].is_object(),
        "{}",
        printed[1]
    );

    // Nothing to print without --raw or --opensearch; nothing to send with --print-requests.
    let out = tailor(&[
        "load",
        "--format",
        "json",
        "--queries",
        queries.to_str().unwrap(),
        "--print-requests",
    ]);
    assert_refused(
        &out,
        "--print-requests needs --raw FILE",
        "a tailor query file alone",
    );
    let out = tailor(&[
        "load",
        "--format",
        "json",
        "--raw",
        raw.to_str().unwrap(),
        "--print-requests",
        "--url",
        "http://127.0.0.1:1",
    ]);
    assert!(
        !out.status.success(),
        "--url with --print-requests is refused"
    );
}
