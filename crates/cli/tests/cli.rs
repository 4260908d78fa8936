//! End-to-end tests of the `tailor` binary, by command: `plan fm`, `plan adaptive`,
//! `profile generate` and `profile describe`, `serve` and `load`, and how each reports bad
//! input.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{
    assert_refused, http_get, listening, scratch, sim, stderr, stdout, tailor, Listening,
};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

const FIG5: [&str; 12] = [
    "--max-degree",
    "3",
    "--target-parallelism",
    "6",
    "--step-ms",
    "50",
    "--max-interval-ms",
    "150",
    "--percentile",
    "0.99",
    "--max-load",
    "16",
];

fn plan_fig5(extra: &[&str]) -> Output {
    let profile = examples().join("fig5-profile.csv");
    let mut args = vec!["plan", "fm", "--profile", profile.to_str().unwrap()];
    args.extend(FIG5);
    args.extend(extra);
    tailor(&args)
}

// ---------------------------------------------------------------------------------------
// plan fm
// ---------------------------------------------------------------------------------------

#[test]
fn plan_fm_reproduces_the_shipped_figure_5_table() {
    let out = plan_fig5(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shipped = std::fs::read_to_string(examples().join("fig5-table.json")).unwrap();
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let want: serde_json::Value = serde_json::from_str(&shipped).unwrap();
    assert_eq!(got, want);
    assert_eq!(got["kind"], "fm-interval-table");
    assert_eq!(got["rows"].as_array().unwrap().len(), 16);
    assert_eq!(got["rows"][2]["intervals_ms"].as_array().unwrap().len(), 3);
}

#[test]
fn plan_fm_searches_a_ladder_of_degrees_on_request() {
    // Figure 5 with degree 2 skipped: every row spends no time at degree 2, and load 3
    // keeps the paper's own schedule, 50 ms alone then degree 3 (0, 50, 0).
    let out = plan_fig5(&["--degrees", "1,3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got["max_degree"], 3);
    for row in got["rows"].as_array().unwrap() {
        assert_eq!(row["intervals_ms"][2], 0.0, "{row}");
    }
    assert_eq!(
        got["rows"][2]["intervals_ms"],
        serde_json::json!([0.0, 50.0, 0.0])
    );
    for (ladder, needle) in [("1,2", "--degrees"), ("2,3", "--degrees"), ("1,x", "x")] {
        let out = plan_fig5(&["--degrees", ladder]);
        assert_refused(&out, needle, ladder);
    }
    assert_refused(
        &plan_fig5(&["--degrees", "1,3", "--bins", "2"]),
        "--bins",
        "a ladder with bins",
    );
}

#[test]
fn plan_fm_keeps_the_shortest_requests_sequential_on_request() {
    // Figure 5's short request takes 50 ms: with the shortest half kept sequential no row
    // adds a thread before 50 ms, where Fig. 7 starts loads 1-2 at degree 3.
    let out = plan_fig5(&["--keep-sequential", "50"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no second thread before 50 ms"),
        "{}",
        stderr(&out)
    );
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    for row in got["rows"].as_array().unwrap() {
        assert!(row["intervals_ms"][1].as_f64().unwrap() >= 50.0, "{row}");
    }
    assert_eq!(
        got["rows"][0]["intervals_ms"],
        serde_json::json!([0.0, 50.0, 0.0])
    );
    // A percent, not a fraction: 1 is 1% (the short request), 100 is every request (y).
    let row1 = |pct: &str| {
        let out = plan_fig5(&["--keep-sequential", pct]);
        let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        got["rows"][0]["intervals_ms"].clone()
    };
    assert_eq!(row1("1"), serde_json::json!([0.0, 50.0, 0.0]));
    assert_eq!(row1("100"), serde_json::json!([0.0, 150.0, 0.0]));
    for bad in ["0", "101", "1e9", "x"] {
        assert_refused(
            &plan_fig5(&["--keep-sequential", bad]),
            "--keep-sequential",
            bad,
        );
    }
}

#[test]
fn plan_fm_keeps_the_papers_literal_reading_selectable() {
    let out = plan_fig5(&["--wait-model", "paper"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shipped = std::fs::read_to_string(examples().join("fig5-table-paper.json")).unwrap();
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let want: serde_json::Value = serde_json::from_str(&shipped).unwrap();
    assert_eq!(got, want);
    // The literal reading waits v0 > 0 at load 8; the default never waits where a
    // schedule fits.
    assert!(got["rows"][7]["intervals_ms"][0].as_f64().unwrap() > 0.0);
    let default: serde_json::Value = serde_json::from_str(&stdout(&plan_fig5(&[]))).unwrap();
    assert_ne!(default, got);
}

#[test]
fn plan_fm_target_parallelism_defaults_to_the_cores() {
    let profile = examples().join("fig5-profile.csv");
    let with_cores = |cores: &str| {
        let mut args = vec!["plan", "fm", "--profile", profile.to_str().unwrap()];
        args.extend(
            FIG5.iter()
                .filter(|a| **a != "--target-parallelism" && **a != "6"),
        );
        args.extend(["--cores", cores]);
        tailor(&args)
    };
    let out = with_cores("6");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), stdout(&plan_fig5(&[])));
    let other = stdout(&with_cores("4"));
    assert!(other.contains("\"target_parallelism\": 4"), "{other}");
    // An explicit target wins over the cores.
    let out = plan_fig5(&["--cores", "4"]);
    assert_eq!(stdout(&out), stdout(&plan_fig5(&[])));
    let out = with_cores("0");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--cores 0: expected threads: an integer from 1 to 4096"),
        "{}",
        stderr(&out)
    );
    // Neither flag: the error names both.
    let mut args = vec!["plan", "fm", "--profile", profile.to_str().unwrap()];
    args.extend(
        FIG5.iter()
            .filter(|a| **a != "--target-parallelism" && **a != "6"),
    );
    let out = tailor(&args);
    assert!(!out.status.success());
    let msg = stderr(&out);
    assert!(
        msg.contains("--cores") && msg.contains("--target-parallelism"),
        "{msg}"
    );
}

#[test]
fn plan_fm_takes_its_grid_and_loads_from_the_profile_when_not_given() {
    // 200 requests of 0.5-11.9 ms, each 1.67x faster at degree 2.
    let dir = scratch("plan-fm-defaults");
    let profile = dir.join("profile.csv");
    let mut csv = String::from("request,t1_ms,t2_ms\n");
    for i in 0..200 {
        let t1 = 0.5 + f64::from(i % 100) * 0.115 + f64::from(i / 100) * 0.01;
        csv.push_str(&format!("q{i},{t1:.3},{:.3}\n", t1 * 0.6));
    }
    std::fs::write(&profile, csv).unwrap();
    let p = profile.to_str().unwrap();
    let out = tailor(&["plan", "fm", "--profile", p, "--cores", "2", "--no-check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("from the profile: "))
        .unwrap_or_else(|| panic!("no derived flags named: {err}"));
    assert_eq!(
        line,
        "--step 0.25ms --max-interval 12ms --percentile 99 --max-load 4 --degrees 1,2"
    );
    let table: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(table["step_ms"], 0.25);
    assert_eq!(table["max_interval_ms"], 12.0);
    assert_eq!(table["rows"].as_array().unwrap().len(), 4);
    // The named flags plan the same table: the defaults can be written down and repeated.
    let mut args = vec!["plan", "fm", "--profile", p, "--cores", "2", "--no-check"];
    args.extend(line.split(' '));
    let again = tailor(&args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), stdout(&out));
    assert!(
        !stderr(&again).contains("from the profile"),
        "{}",
        stderr(&again)
    );
    // A flag given wins over its default.
    let out = tailor(&[
        "plan",
        "fm",
        "--profile",
        p,
        "--cores",
        "2",
        "--no-check",
        "--max-load",
        "3",
    ]);
    let table: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(table["rows"].as_array().unwrap().len(), 3);
    assert!(!stderr(&out).contains("--max-load"), "{}", stderr(&out));
}

#[test]
fn plan_fm_writes_out_and_prints_the_papers_table_layout() {
    let dir = scratch("fm-out");
    let file = dir.join("t.json");
    let out = plan_fig5(&["--out", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(stdout(&out).is_empty());
    let table = tailor_core::IntervalTable::read(&file).unwrap();
    assert_eq!(table.rows[0].intervals_ms, vec![0.0, 0.0, 0.0]);

    let out = plan_fig5(&["--format", "table"]);
    let text = stdout(&out);
    assert!(text.contains("(0, d3)"), "{text}");
    assert!(text.contains("(e1, d1)"), "{text}");
}

#[test]
fn exhaustive_and_binned_runs_agree_with_the_fast_search() {
    let fast = stdout(&plan_fig5(&[]));
    let exhaustive = stdout(&plan_fig5(&["--method", "exhaustive"]));
    assert_eq!(fast, exhaustive);
    // Two requests in two bins are the exact problem; the report says so.
    let out = plan_fig5(&["--bins", "2", "--compare-exact"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), fast);
    let report = stderr(&out);
    assert!(
        report.contains("largest |error| of the binned prediction: 0.00%"),
        "{report}"
    );
    assert!(report.contains("optimum_tail_ms"), "{report}");
}

#[test]
fn plan_fm_rejects_bad_input_with_a_clear_error() {
    let dir = scratch("fm-bad");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "request,t1_ms,t2_ms,t3_ms\nq1,10,5,4\nq2,10,oops,4\n").unwrap();
    let mut args = vec!["plan", "fm", "--profile", bad.to_str().unwrap()];
    args.extend(FIG5);
    let out = tailor(&args);
    assert!(!out.status.success());
    let msg = stderr(&out);
    assert!(
        msg.contains("bad.csv:3: field `t2_ms`: not a number"),
        "{msg}"
    );

    // A parameter out of range names its flag.
    let out = plan_fig5(&["--percentile", "1.5"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--percentile"), "{}", stderr(&out));
    // A missing file names the file.
    let out = tailor(&[
        "plan",
        "fm",
        "--profile",
        "/nonexistent/p.csv",
        "--max-degree",
        "1",
        "--target-parallelism",
        "1",
        "--step-ms",
        "1",
        "--max-interval-ms",
        "1",
        "--percentile",
        "0.9",
        "--max-load",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("/nonexistent/p.csv"));
    // Too few degrees profiled.
    let profile = examples().join("fig5-profile.csv");
    let out = tailor(&[
        "plan",
        "fm",
        "--profile",
        profile.to_str().unwrap(),
        "--max-degree",
        "4",
        "--target-parallelism",
        "6",
        "--step-ms",
        "50",
        "--max-interval-ms",
        "150",
        "--percentile",
        "0.99",
        "--max-load",
        "4",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("only up to degree 3"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------------------
// plan adaptive
// ---------------------------------------------------------------------------------------

#[test]
fn plan_adaptive_writes_a_degree_table() {
    let profile = examples().join("lucene-profile.csv");
    let out = tailor(&[
        "plan",
        "adaptive",
        "--profile",
        profile.to_str().unwrap(),
        "--max-degree",
        "4",
        "--target-parallelism",
        "15",
        "--max-load",
        "30",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = tailor_core::AdaptiveTable::parse(&stdout(&out), "stdout").unwrap();
    assert_eq!(table.rows.len(), 30);
    assert_eq!(table.rows[0].degree, 4);
    assert_eq!(table.rows[29].degree, 1);
}

// ---------------------------------------------------------------------------------------
// profile generate / describe
// ---------------------------------------------------------------------------------------

#[test]
fn generated_profiles_repeat_by_seed_and_read_back() {
    let args = |seed: &'static str| {
        vec![
            "profile",
            "generate",
            "--demand",
            "shape:bing",
            "--requests",
            "300",
            "--max-degree",
            "4",
            "--seed",
            seed,
        ]
    };
    let a = stdout(&tailor(&args("1")));
    let b = stdout(&tailor(&args("1")));
    let c = stdout(&tailor(&args("2")));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let p = tailor_core::DemandProfile::parse(&a, "generated").unwrap();
    assert_eq!(p.requests().len(), 300);
    assert_eq!(p.max_degree(), 4);

    let dir = scratch("gen");
    let file = dir.join("p.csv");
    std::fs::write(&file, &a).unwrap();
    let out = tailor(&["profile", "describe", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("requests        300"));
}

#[test]
fn profile_generate_rejects_a_bad_demand() {
    let out = tailor(&[
        "profile",
        "generate",
        "--demand",
        "shape:nope",
        "--requests",
        "3",
        "--max-degree",
        "2",
        "--seed",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("shape:nope"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------
// simulate
// ---------------------------------------------------------------------------------------

/// `tailor simulate` on 4 cores with exponential 10 ms work at 200 rps, unless `extra`
/// gives `--cores` or `--rps` itself; `extra` starts with the policy.

#[test]
fn simulate_prints_one_run_summary_with_the_spec_fields() {
    let out = sim(&["seq", "--target-ms", "30"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1);
    let s: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in [
        "engine",
        "policy",
        "cores",
        "rps",
        "requests",
        "completed",
        "rejected",
        "latency_ms",
        "target_ms",
        "miss_ratio",
        "cpu_utilization",
        "mean_threads",
        "mean_degree",
    ] {
        assert!(s.get(field).is_some(), "missing {field}");
    }
    for field in ["mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(s["latency_ms"][field].as_f64().unwrap() > 0.0, "{field}");
    }
    assert_eq!(s["engine"], "sim");
    assert_eq!(s["completed"], 4000);
    assert_eq!(s["target_ms"], 30.0);
    assert!(s["miss_ratio"].as_f64().unwrap() > 0.0);
    // Same seed, same run.
    assert_eq!(stdout(&sim(&["seq", "--target-ms", "30"])), text);
}

#[test]
fn simulate_sweeps_policies_and_loads() {
    let out = sim(&["seq", "--policy", "fix:2", "--rps", "100:300:100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("p99 latency (ms)"), "{text}");
    assert!(text.contains("fix:2"));
    assert!(text.contains("300.0"));
    let out = sim(&[
        "seq",
        "--policy",
        "fix:2",
        "--rps",
        "100:300:100",
        "--format",
        "json",
    ]);
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    assert!(lines
        .iter()
        .any(|s| s["policy"] == "fix:2" && s["rps"] == 300.0));
}

#[test]
fn simulate_writes_records_and_trace() {
    let dir = scratch("sim-files");
    let records = dir.join("r.csv");
    let trace = dir.join("t.csv");
    let out = sim(&[
        "fix:2",
        "--records",
        records.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = std::fs::read_to_string(&records).unwrap();
    assert!(r.starts_with("request,arrival_ms,start_ms,finish_ms,work_ms,max_degree"));
    assert_eq!(r.lines().count(), 4001);
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(t.starts_with("time_ms,in_system,running,threads"));
    assert!(t.lines().count() > 100);
}

#[test]
fn simulate_refuses_bad_arguments_naming_them() {
    for (extra, needle) in [
        (vec!["lifo"], "policy \"lifo\""),
        (vec!["seq", "--rps", "0"], "--rps"),
        (vec!["seq", "--rps", "900"], "overload"),
        (vec!["seq", "--cores", "0"], "--cores"),
        (
            vec!["seq", "--cores", "2@1.5"],
            "core speeds are for the heterogeneous-core policies",
        ),
        (vec!["fm"], "--table"),
        (
            vec!["seq", "--policy", "fix:2", "--records", "x.csv"],
            "single run",
        ),
        (
            vec!["fix:5", "--speedup", "table:1,1.5"],
            "known only up to degree 2",
        ),
    ] {
        assert_refused(&sim(&extra), needle, &format!("{extra:?}"));
    }
}

#[test]
fn plan_rc_finds_a_threshold_by_simulation() {
    let out = tailor(&[
        "plan",
        "rc",
        "--demand",
        "exp:10",
        "--cores",
        "4",
        "--rps",
        "200",
        "--max-degree",
        "2",
        "--requests",
        "4000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(plan["kind"], "rc-threshold");
    assert_eq!(plan["degree"], 2);
    let policy = plan["policy"].as_str().unwrap();
    assert!(policy.starts_with("rc:"), "{policy}");
    // The plan's policy runs as is.
    assert!(sim(&[policy]).status.success());
}

use common::StderrLines;

/// Starts `tailor serve` on a free port with `flags`; returns it, its address and the
/// rest of its stderr.
fn spawn_serve(flags: &[&str]) -> (std::process::Child, String, StderrLines) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let Listening { addr, rest, .. } = listening(&mut server);
    (server, addr, rest)
}

fn signal(child: &std::process::Child, name: &str) {
    let sent = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// `tailor serve` on a free port: it prints where it listens, answers, and on SIGTERM
/// stops and exits 0; `tailor load` against it prints a summary with engine `http`.
#[test]
fn serve_answers_then_exits_0_on_sigterm() {
    let (mut server, addr, lines) = spawn_serve(&[
        "--workload",
        "synthetic:const:1",
        "--policy",
        "seq",
        "--spin-rate",
        "100",
    ]);
    let answer = http_get(&addr, "/healthz");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let load = tailor(&[
        "load",
        "--format",
        "json",
        "--url",
        &format!("http://{addr}"),
        "--rps",
        "200",
        "--requests",
        "40",
    ]);
    assert!(load.status.success(), "{}", stderr(&load));
    let summary: serde_json::Value = serde_json::from_str(stdout(&load).trim()).unwrap();
    assert_eq!(summary["engine"], "http");
    assert_eq!(summary["completed"], 40);
    assert_eq!(summary["unavailable"], 0);
    signal(&server, "-TERM");
    let status = server.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("stopped") && l.contains("40 completed")),
        "{rest:?}"
    );
}

/// A second SIGTERM ends the server at once (status 130), though the first one's drain
/// would wait for a 30 s request (issue #23).
#[test]
fn a_second_sigterm_exits_at_once() {
    use std::io::Write;
    let (mut server, addr, _lines) = spawn_serve(&[
        "--workload",
        "synthetic:const:1",
        "--policy",
        "seq",
        "--workers",
        "1",
        "--drain-s",
        "60",
    ]);
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    let body = r#"{"work_ms": 30000}"#;
    write!(
        stream,
        "POST /work HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Wait until the request runs (a busy machine may take a while to accept it): with
    // nothing in flight the first signal's drain would end the server at once, with 0.
    let waiting = std::time::Instant::now();
    while !http_get(&addr, "/metrics").contains("\ntailor_load 1")
        && waiting.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let started = std::time::Instant::now();
    signal(&server, "-TERM");
    std::thread::sleep(std::time::Duration::from_millis(200));
    signal(&server, "-TERM");
    let status = server.wait().unwrap();
    let took = started.elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(took.as_secs_f64() < 10.0, "exited after {took:?}");
}

#[test]
fn plan_tail_control_writes_the_spec_table_and_refuses_overload() {
    let dir = scratch("tc");
    let dist = dir.join("d.csv");
    std::fs::write(&dist, "work_ms,probability\n1,0.8\n3,0.1\n9,0.1\n").unwrap();
    let d = dist.to_str().unwrap();
    let common = ["plan", "tail-control", "--distribution", d, "--cores", "2"];
    let out = tailor(
        &[
            &common[..],
            &["--rps", "500", "--target-ms", "6.25", "--max-active", "4"],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let table: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(table["kind"], "tail-control-thresholds");
    assert_eq!(table["cores"], 2);
    let rows = table["rows"].as_array().unwrap();
    let thresholds: Vec<f64> = rows
        .iter()
        .map(|r| r["threshold_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(thresholds, [9.0, 9.0, 3.0, 1.0]);
    assert_eq!(rows[2]["active"], 3);
    let out = tailor(
        &[
            &common[..],
            &["--rps", "1000", "--target-ms", "6.25", "--max-active", "4"],
        ]
        .concat(),
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("overload"), "{}", stderr(&out));
}

#[test]
fn work_stealing_policies_simulate_and_run_with_a_planned_table() {
    let dir = scratch("steal");
    let table = dir.join("tc.json");
    let t = table.to_str().unwrap();
    let out = tailor(&[
        "plan",
        "tail-control",
        "--demand",
        "lognormal:10:13",
        "--samples",
        "5000",
        "--cores",
        "4",
        "--rps",
        "240",
        "--target-ms",
        "15",
        "--max-active",
        "16",
        "--out",
        t,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Every work-stealing policy simulates; the summary names it, counts serializations
    // and gives the miss ratio for the target.
    for policy in [
        "steal-first",
        "admit-first",
        "random-admit",
        "tail-control",
        "tail-control-clairvoyant",
    ] {
        let out = sim(&[
            policy,
            "--table",
            t,
            "--cores",
            "4",
            "--rps",
            "240",
            "--target-ms",
            "15",
        ]);
        assert!(out.status.success(), "{policy}: {}", stderr(&out));
        let s: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(s["policy"], policy);
        assert_eq!(s["completed"], 4000);
        assert!(s["miss_ratio"].as_f64().unwrap() > 0.0);
        assert!(s["serialized"].as_u64().is_some());
    }
    // Without its table, tail-control is refused with the command that makes one.
    let out = sim(&["tail-control"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("plan tail-control"),
        "{}",
        stderr(&out)
    );
    // A short live run on the executor, and on the rayon peer.
    for policy in ["tail-control", "rayon"] {
        let out = tailor(&[
            "run",
            "--workload",
            "synthetic:exp:2",
            "--policy",
            policy,
            "--table",
            t,
            "--cores",
            "2",
            "--rps",
            "100",
            "--requests",
            "60",
            "--seed",
            "3",
            "--spin-rate",
            "300",
        ]);
        assert!(out.status.success(), "{policy}: {}", stderr(&out));
        let s: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(s["policy"], policy);
        assert_eq!(s["completed"], 60);
    }
}

/// `GET /profile` serves the requests served so far as profile CSV, and nothing with
/// `--profile-window 0`.
#[test]
fn serve_profiles_what_it_served_unless_told_not_to() {
    for (window, served) in [("8", true), ("0", false)] {
        let (mut server, addr, _lines) = spawn_serve(&[
            "--workload",
            "synthetic:const:1",
            "--policy",
            "seq",
            "--spin-rate",
            "100",
            "--profile-window",
            window,
        ]);
        let load = tailor(&[
            "load",
            "--format",
            "json",
            "--url",
            &format!("http://{addr}"),
            "--rps",
            "200",
            "--requests",
            "20",
        ]);
        assert!(load.status.success(), "{}", stderr(&load));
        let answer = http_get(&addr, "/profile?degrees=2");
        signal(&server, "-TERM");
        assert_eq!(server.wait().unwrap().code(), Some(0));
        if served {
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            let body = answer.split("\r\n\r\n").nth(1).unwrap();
            let rows: Vec<&str> = body.lines().filter(|l| !l.is_empty()).collect();
            assert_eq!(rows[0], "request,t1_ms,t2_ms", "{body}");
            assert_eq!(rows.len(), 1 + 8, "the window keeps the last 8: {body}");
        } else {
            assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        }
    }
}

/// `tailor serve` with an FM table and no `--quantum-ms` self-schedules at the table's
/// grid step, and says so; `--quantum-ms` still wins.
#[test]
fn serve_takes_the_quantum_from_the_fm_tables_step() {
    use std::io::{BufRead, BufReader};
    let table = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fig5-table.json"
    );
    for (extra, expected) in [
        (&[][..], "self-scheduling quantum 50 ms"),
        (&["--quantum-ms", "2"][..], "self-scheduling quantum 2 ms"),
    ] {
        let mut server = Command::new(env!("CARGO_BIN_EXE_tailor"))
            .args(["serve", "--listen", "127.0.0.1:0", "--workload"])
            .args(["synthetic:const:1", "--policy", "fm", "--table", table])
            .args(extra)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut seen = Vec::new();
        for line in BufReader::new(server.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            let listening = line.contains("http://");
            seen.push(line);
            if listening {
                break;
            }
        }
        signal(&server, "-TERM");
        assert_eq!(server.wait().unwrap().code(), Some(0));
        assert!(seen.iter().any(|l| l.contains(expected)), "{seen:?}");
    }
}
