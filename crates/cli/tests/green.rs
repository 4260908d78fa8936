//! End-to-end tests of `tailor green` (issue 43): generate inputs, simulate every Green SLA and GreenPar policy, and refuse bad input naming the file, line and field.

use std::path::Path;

mod common;
use common::{scratch, stderr, stdout, tailor};

fn generate(dir: &Path, workload: &str, day: &str, system: &str) {
    let out = tailor(&[
        "green",
        "generate",
        "--workload",
        workload,
        "--day",
        day,
        "--system",
        system,
        "--seed",
        "1",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for f in ["jobs.csv", "solar.csv", "prediction.csv"] {
        assert!(dir.join(f).exists(), "{f}");
    }
}

fn simulate(dir: &Path, system: &str, policy: &str, extra: &[&str]) -> serde_json::Value {
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let (jobs, solar, prediction) = (path("jobs.csv"), path("solar.csv"), path("prediction.csv"));
    let mut args = vec![
        "green",
        "simulate",
        "--system",
        system,
        "--policy",
        policy,
        "--jobs",
        &jobs,
        "--solar",
        &solar,
        "--prediction",
        &prediction,
    ];
    args.extend_from_slice(extra);
    let out = tailor(&args);
    assert!(out.status.success(), "{policy}: {}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).expect("one JSON object")
}

#[test]
fn greenpar_policies_run_on_a_generated_high_day_and_save_brown_energy() {
    let dir = scratch("par");
    generate(&dir, "grid5k", "high", "par");
    let chart = dir.join("baseline.svg");
    let base = simulate(
        &dir,
        "par",
        "baseline",
        &["--chart", chart.to_str().unwrap()],
    );
    assert!(std::fs::read_to_string(&chart).unwrap().starts_with("<svg"));
    for field in ["brown_kwh", "green_kwh", "mean_runtime_h"] {
        assert!(base[field].is_number(), "{field}: {base}");
    }
    assert!(
        base.get("epochs").is_none(),
        "the profile stays out of the summary"
    );
    for policy in ["reactive", "aggressive", "offline", "nebulous"] {
        let s = simulate(&dir, "par", policy, &[]);
        let f = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap();
        assert!(f(&s, "brown_kwh") < f(&base, "brown_kwh"), "{policy}: {s}");
        assert!(
            f(&s, "mean_runtime_h") < f(&base, "mean_runtime_h"),
            "{policy}: {s}"
        );
    }
}

#[test]
fn green_sla_policies_report_profit_and_violations() {
    let dir = scratch("sla");
    generate(&dir, "grid5k", "medium", "sla");
    // The first 60 jobs keep the test quick in a debug build; the acceptance runs the
    // whole trace (docs/green.md).
    let jobs = std::fs::read_to_string(dir.join("jobs.csv")).unwrap();
    let short: String = jobs.lines().take(61).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("jobs.csv"), short).unwrap();
    for policy in ["ff", "sgp", "lp", "sa"] {
        let s = simulate(&dir, "sla", policy, &[]);
        for field in [
            "profit",
            "green_kwh",
            "brown_kwh",
            "admitted",
            "rejected",
            "violations",
        ] {
            assert!(s[field].is_number(), "{policy} {field}: {s}");
        }
        let admitted = s["admitted"].as_u64().unwrap() + s["rejected"].as_u64().unwrap();
        assert_eq!(admitted, 60, "{policy}: every job is admitted or rejected");
    }
}

#[test]
fn bad_inputs_are_refused_naming_the_file_line_and_field() {
    let dir = scratch("bad");
    generate(&dir, "intrepid", "low", "par");
    let jobs = dir.join("jobs.csv");
    let mut lines: Vec<String> = std::fs::read_to_string(&jobs)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // Line 4's runtime (the fourth field) is not a number.
    let mut fields: Vec<String> = lines[3].split(',').map(str::to_string).collect();
    fields[3] = "oops".into();
    lines[3] = fields.join(",");
    std::fs::write(&jobs, lines.join("\n") + "\n").unwrap();
    let out = tailor(&[
        "green",
        "simulate",
        "--system",
        "par",
        "--policy",
        "baseline",
        "--jobs",
        jobs.to_str().unwrap(),
        "--solar",
        dir.join("solar.csv").to_str().unwrap(),
        "--prediction",
        dir.join("prediction.csv").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("jobs.csv:4: field `runtime_h`"), "{e}");
    let out = tailor(&[
        "green",
        "generate",
        "--workload",
        "bing",
        "--day",
        "high",
        "--out-dir",
        "/tmp/x",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("grid5k, intrepid"));
    let out = tailor(&[
        "green",
        "simulate",
        "--system",
        "sla",
        "--policy",
        "greedy",
        "--jobs",
        jobs.to_str().unwrap(),
        "--solar",
        dir.join("solar.csv").to_str().unwrap(),
        "--prediction",
        dir.join("prediction.csv").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("greedy"), "{}", stderr(&out));
    let out = tailor(&[
        "green",
        "simulate",
        "--system",
        "sla",
        "--policy",
        "sa",
        "--sa-jobs",
        "0",
        "--jobs",
        "j",
        "--solar",
        "s",
        "--prediction",
        "p",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--sa-jobs") && stderr(&out).contains("`all`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_swf_trace_imports_into_jobs_that_simulate() {
    let dir = scratch("swf");
    generate(&dir, "grid5k", "high", "par");
    // Three SWF jobs (18 fields: id, submit s, wait, run s, allocated processors, ...),
    // one a partial execution (status 2), one outside a 2-hour window.
    let swf = "; a comment\n\
        1 0 5 3600 8 -1 -1 8 -1 -1 1 1 1 1 1 -1 -1 -1\n\
        2 600 5 1800 4 -1 -1 4 -1 -1 2 1 1 1 1 -1 -1 -1\n\
        3 1200 5 7200 16 -1 -1 16 -1 -1 1 1 1 1 1 -1 -1 -1\n\
        4 9000 5 3600 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n";
    let trace = dir.join("t.swf");
    std::fs::write(&trace, swf).unwrap();
    let jobs = dir.join("jobs.csv");
    let out = tailor(&[
        "green",
        "import",
        trace.to_str().unwrap(),
        "--format",
        "swf",
        "--hours",
        "2",
        "--sizing",
        "power-of-two",
        "--out",
        jobs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&jobs).unwrap();
    assert_eq!(written.lines().count(), 3, "{written}");
    assert!(stderr(&out).contains("1 partial runs, 1 outside the window"));
    let s = simulate(&dir, "par", "reactive", &[]);
    assert!(s["mean_runtime_h"].as_f64().unwrap() > 0.0, "{s}");
    let out = tailor(&[
        "green",
        "import",
        trace.to_str().unwrap(),
        "--format",
        "swf",
        "--sizing",
        "half",
        "--out",
        jobs.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--sizing half"));
}
