//! `tailor load` against a server that is not tailor's: Python's `http.server`, whose
//! access log counts what arrived.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

mod common;
use common::{stderr, stdout, tailor};

/// `python3 -m http.server` on a free port, serving a scratch folder: the child and its
/// base URL; `None` where python3 is missing.
fn http_server(name: &str) -> Option<(Child, String)> {
    let dir = std::env::temp_dir().join(format!("tailor-load-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "hello\n").unwrap();
    let mut child = Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // "Serving HTTP on 127.0.0.1 port 45678 (http://127.0.0.1:45678/) ..."
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Some((child, format!("http://127.0.0.1:{port}/")))
}

/// The server's access log: one line per request it answered.
fn stop(mut child: Child) -> Vec<String> {
    child.kill().ok();
    let out = child.wait_with_output().unwrap();
    stderr(&out)
        .lines()
        .filter(|l| l.contains("\"GET /"))
        .map(str::to_string)
        .collect()
}

#[test]
fn any_http_server_gets_exactly_the_run_and_a_readable_summary_and_hgrm() {
    let Some((server, url)) = http_server("human") else {
        eprintln!("python3 is missing: skipped");
        return;
    };
    let hgrm = std::env::temp_dir().join(format!("tailor-load-{}.hgrm", std::process::id()));
    let each_path = std::env::temp_dir().join(format!("tailor-load-{}.txt", std::process::id()));
    let out = tailor(&[
        "load",
        "-R",
        "200",
        "-d",
        "2s",
        "-c",
        "4",
        "--hgrm",
        hgrm.to_str().unwrap(),
        "--latencies",
        each_path.to_str().unwrap(),
        &url,
    ]);
    let log = stop(server);
    let summary = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    for needle in [
        "p50",
        "p90",
        "p99 ",
        "p99.9",
        "achieved",
        "requests/s",
        "generator  late by",
    ] {
        assert!(summary.contains(needle), "{needle}: {summary}");
    }
    // "N requests to URL ...": what the server logged, no more (no /healthz, no /metrics)
    // and no less.
    let sent: usize = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!((300..=500).contains(&sent), "{summary}");
    assert_eq!(log.len(), sent, "{summary}\n{log:?}");
    assert!(
        summary.contains(&format!("answers    {sent} 2xx")),
        "{summary}"
    );
    // The .hgrm: HdrHistogram's percentile distribution, ending at the measured count.
    let h = std::fs::read_to_string(&hgrm).unwrap();
    let header: Vec<&str> = h.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    );
    let rows: Vec<Vec<f64>> = h
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    let last = rows.last().unwrap();
    assert_eq!(last[1], 1.0);
    let measured = sent - sent / 20;
    assert_eq!(last[2] as usize, measured, "{h}");
    assert!(
        h.contains(&format!("Total count    = {measured:>12}")),
        "{h}"
    );
    // --latencies: the same measured requests one by one; their maximum is the histogram's
    // within its 3 significant digits.
    let each: Vec<f64> = std::fs::read_to_string(&each_path)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(each.len(), measured);
    assert!(each.iter().all(|&ms| ms > 0.0), "{each:?}");
    let max = each.iter().cloned().fold(0.0, f64::max);
    assert!(
        (max - last[0]).abs() <= 0.001 * last[0] + 0.001,
        "{max} vs {}",
        last[0]
    );
    std::fs::remove_file(&hgrm).ok();
    std::fs::remove_file(&each_path).ok();
}

#[test]
fn json_summaries_count_requests_and_bad_input_is_refused() {
    let Some((server, url)) = http_server("json") else {
        eprintln!("python3 is missing: skipped");
        return;
    };
    let out = tailor(&[
        "load",
        "--rate",
        "100",
        "-n",
        "50",
        "--format",
        "json",
        "-H",
        "X-Test: 1",
        &url,
    ]);
    let log = stop(server);
    assert!(out.status.success(), "{}", stderr(&out));
    let last = stdout(&out).lines().last().unwrap().to_string();
    let s: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(s["requests"], 50);
    assert_eq!(s["completed"], 50);
    assert_eq!(log.len(), 50);
    assert!(s["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    assert!(s["generator_lateness_ms"]["max"].as_f64().is_some());
    assert!(s["achieved_rps"].as_f64().unwrap() > 0.0);
    // Bad input: each refused with what is wrong, nothing sent.
    for (args, needle) in [
        (
            vec!["load", "-R", "10", "-d", "1s", "https://127.0.0.1:1/"],
            "https",
        ),
        (
            vec!["load", "-R", "10", "-d", "soon", "http://127.0.0.1:1/"],
            "with its unit",
        ),
        (
            vec!["load", "-R", "10", "http://127.0.0.1:1/"],
            "--duration",
        ),
        (vec!["load", "-d", "1s", "http://127.0.0.1:1/"], "--rate"),
        (
            vec![
                "load",
                "-R",
                "10",
                "-d",
                "1s",
                "-H",
                "nocolon",
                "http://127.0.0.1:1/",
            ],
            "Name: value",
        ),
        (
            vec![
                "load",
                "-R",
                "10",
                "-d",
                "1s",
                "--body",
                "/nonexistent/x",
                "http://127.0.0.1:1/",
            ],
            "--body",
        ),
    ] {
        let out = tailor(&args);
        assert!(!out.status.success(), "{args:?}");
        let e = stderr(&out);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn a_replay_sends_each_request_with_its_content_at_its_time() {
    let Some((server, url)) = http_server("replay") else {
        eprintln!("python3 is missing: skipped");
        return;
    };
    let file = std::env::temp_dir().join(format!("tailor-replay-{}.jsonl", std::process::id()));
    let lines: String = (0..20)
        .map(|i| {
            format!(
                "{{\"at_ms\": {}, \"method\": \"GET\", \"path\": \"/?i={i}\", \"headers\": {{\"X-I\": \"{i}\"}}}}\n",
                10 * i
            )
        })
        .collect();
    std::fs::write(&file, lines).unwrap();
    let out = tailor(&[
        "load",
        "--replay",
        file.to_str().unwrap(),
        "--format",
        "json",
        &url,
    ]);
    let log = stop(server);
    assert!(out.status.success(), "{}", stderr(&out));
    // Every line arrived once, with its own path (the server logs in arrival order; at
    // 10 ms apart they cannot pass one another on one connection each).
    let paths: Vec<String> = log
        .iter()
        .filter_map(|l| l.split('"').nth(1))
        .map(|r| r.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort_by_key(|p| p.trim_start_matches("/?i=").parse::<u32>().unwrap_or(99));
    assert_eq!(
        sorted,
        (0..20).map(|i| format!("/?i={i}")).collect::<Vec<_>>()
    );
    let last = stdout(&out).lines().last().unwrap().to_string();
    let s: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(s["requests"], 20);
    // 19 gaps of 10 ms: the replay's own rate, 100 a second.
    assert!((s["rps"].as_f64().unwrap() - 100.0).abs() < 1e-6, "{s}");
    // Bad lines are named: no time, or a time that falls.
    std::fs::write(&file, "{\"method\": \"GET\", \"path\": \"/\"}\n").unwrap();
    let out = tailor(&["load", "--replay", file.to_str().unwrap(), &url]);
    assert!(!out.status.success() && stderr(&out).contains(":1: a replay's line needs"));
    std::fs::remove_file(&file).ok();
}
