//! End-to-end tests of the `tailor` binary, by command: `plan fm`, `plan adaptive`,
//! `profile generate` and `profile describe`, and how each reports bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .output()
        .expect("the tailor binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A scratch directory unique to one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tailor-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
