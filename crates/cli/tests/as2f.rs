//! End-to-end tests of the heterogeneous-core family: `plan eetl`, `simulate --cores COUNT@SPEED` with its policies, and how they report bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .output()
        .expect("the tailor binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tailor-as2f-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const DEMAND: &str = "lognormal:60:60";

fn plan(dir: &Path, target: &str) -> String {
    let path = dir.join(format!("eetl-{target}.json"));
    let out = tailor(&[
        "plan",
        "eetl",
        "--demand",
        DEMAND,
        "--cores",
        "8@1,1@2",
        "--target-ms",
        target,
        "--rps",
        "10:100",
        "--window",
        "500",
        "--epochs",
        "12",
        "--samples",
        "5000",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("low-load thresholds t*"));
    path.to_str().unwrap().to_string()
}

#[test]
fn eetl_plans_and_every_policy_simulates_with_energy() {
    let dir = scratch("sweep");
    let table = plan(&dir, "200");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&table).unwrap()).unwrap();
    assert_eq!(plan["kind"], "eetl-controller");
    assert_eq!(plan["gains"].as_array().unwrap().len(), 3);
    assert!(plan["gains"][2]["rps_below"].is_null());
    let out = tailor(&[
        "simulate",
        "--cores",
        "8@1,1@2",
        "--demand",
        DEMAND,
        "--arrivals",
        "poisson",
        "--rps",
        "20:60:40",
        "--requests",
        "3000",
        "--seed",
        "1",
        "--target-ms",
        "200",
        "--table",
        &table,
        "--format",
        "json",
        "--policy",
        "eetl:200",
        "--policy",
        "rtl",
        "--policy",
        "ee",
        "--policy",
        "oblivious",
        "--policy",
        "rc-hetero:150",
        "--policy",
        "s2f:80",
        "--policy",
        "reactive:200",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 14);
    for r in &runs {
        assert_eq!(r["completed"], 3000);
        assert_eq!(r["cores"], 9);
        let e = &r["energy"];
        assert!(e["per_request"].as_f64().unwrap() > 0.0);
        assert!(e["normalized"].as_f64().unwrap() > 0.0);
    }
    // Within a sweep that has EE, energy is normalized to EE at the lowest load.
    let ee20 = runs
        .iter()
        .find(|r| r["policy"] == "ee" && r["rps"] == 20.0)
        .unwrap();
    assert!((ee20["energy"]["normalized"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    assert!(ee20["energy"]["baseline"]
        .as_str()
        .unwrap()
        .contains("ee at 20"));
    // The controlled ones report their epochs (window 500: six per run).
    let eetl = runs.iter().find(|r| r["policy"] == "eetl:200").unwrap();
    assert_eq!(eetl["epochs"].as_array().unwrap().len(), 6);
}

#[test]
fn bad_heterogeneous_input_is_named() {
    let dir = scratch("bad");
    let table = plan(&dir, "200");
    let sim = |cores: &str, policy: &str, extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--cores",
            cores,
            "--demand",
            DEMAND,
            "--arrivals",
            "poisson",
            "--rps",
            "20",
            "--requests",
            "100",
            "--seed",
            "1",
            "--policy",
            policy,
        ];
        args.extend(extra.iter().copied());
        let out = tailor(&args);
        assert!(!out.status.success(), "{cores} {policy} should fail");
        text(&out.stderr)
    };
    // Speeds other than 1 need a heterogeneous policy.
    assert!(sim("8@1,1@2", "seq", &[]).contains("heterogeneous-core policies"));
    // EETL needs its table, for its own target.
    assert!(sim("8@1,1@2", "eetl:200", &[]).contains("tailor plan eetl"));
    assert!(sim("8@1,1@2", "eetl:150", &["--table", &table]).contains("200 ms target"));
    // Fixed thresholds must match the core types.
    assert!(sim("8@1,1@2", "s2f:10:20", &[]).contains("core types need 1"));
    assert!(sim("8@1,2x", "ee", &[]).contains("--cores"));
    // Overload counts the cores' speeds: 9 cores of total speed 10.
    assert!(sim("8@1,1@2", "ee", &["overload"]).contains("overload"));
    // The planner refuses one core type and a bad load range.
    let out = tailor(&[
        "plan",
        "eetl",
        "--demand",
        DEMAND,
        "--cores",
        "4",
        "--target-ms",
        "200",
        "--rps",
        "10:50",
    ]);
    assert!(text(&out.stderr).contains("at least two core types"));
    let out = tailor(&[
        "plan",
        "eetl",
        "--demand",
        DEMAND,
        "--cores",
        "8@1,1@2",
        "--target-ms",
        "200",
        "--rps",
        "50:10",
    ]);
    assert!(text(&out.stderr).contains("--rps"));
    // Live runs need the cores' speeds, and speeds need a heterogeneous policy.
    let run = |policy: &str, cores: Option<&str>| {
        let mut args = vec![
            "run",
            "--workload",
            "synthetic:exp:1",
            "--policy",
            policy,
            "--rps",
            "10",
            "--requests",
            "5",
            "--seed",
            "1",
        ];
        if let Some(c) = cores {
            args.extend(["--cores", c]);
        }
        text(&tailor(&args).stderr)
    };
    assert!(run("rtl", None).contains("--cores COUNT@SPEED"));
    assert!(run("seq", Some("1@1,1@2")).contains("heterogeneous-core policies"));
}

#[test]
fn every_heterogeneous_policy_runs_live_on_two_cores() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return; // one slow and one fast core need two CPUs
    }
    let dir = scratch("live");
    let table = dir.join("eetl-50.json");
    let out = tailor(&[
        "plan",
        "eetl",
        "--demand",
        "lognormal:5:5",
        "--cores",
        "1@1,1@2",
        "--target-ms",
        "50",
        "--rps",
        "10:100",
        "--window",
        "100",
        "--epochs",
        "8",
        "--samples",
        "1000",
        "--out",
        table.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for policy in [
        "eetl:50",
        "rtl",
        "ee",
        "s2f:2",
        "reactive:50",
        "oblivious",
        "rc-hetero:0.5",
    ] {
        // No emulation: the test checks the placement, not the speeds.
        let out = tailor(&[
            "run",
            "--workload",
            "asian:0.05",
            "--policy",
            policy,
            "--cores",
            "1@1,1@2",
            "--emulation-period-us",
            "0",
            "--rps",
            "100",
            "--requests",
            "60",
            "--seed",
            "1",
            "--target-ms",
            "50",
            "--table",
            table.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{policy}: {}", text(&out.stderr));
        let s: serde_json::Value =
            serde_json::from_str(text(&out.stdout).lines().last().unwrap()).unwrap();
        assert_eq!(s["completed"], 60, "{policy}");
        assert!(
            s["energy"]["per_request"].as_f64().unwrap() > 0.0,
            "{policy}"
        );
        if policy == "oblivious" {
            assert_eq!(s["migrations_per_request"], 0.0);
        }
    }
}

#[test]
fn eetl_plants_are_identified_from_live_open_loop_runs() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return; // one slow and one fast core need two CPUs
    }
    let dir = scratch("identify");
    // The plan for 1@1,1@2 at 30 ms with epochs of `window` requests; from the simulator,
    // or from `live` runs.
    let plan_with = |out: &Path, window: &str, live: Option<&str>| {
        let mut args = vec![
            "plan",
            "eetl",
            "--demand",
            "lognormal:4:4",
            "--cores",
            "1@1,1@2",
            "--target-ms",
            "30",
            "--rps",
            "50:150",
            "--intervals",
            "1",
            "--window",
            window,
            "--epochs",
            "8",
            "--samples",
            "1000",
            "--out",
            out.to_str().unwrap(),
        ];
        if let Some(runs) = live {
            args.extend(["--live-runs", runs]);
        }
        tailor(&args)
    };
    let plan = |out: &Path, live: Option<&str>| plan_with(out, "100", live);
    let sim_plan = dir.join("sim.json");
    let out = plan(&sim_plan, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = |extra: &[&str], file: &Path| {
        let mut args = vec![
            "run",
            "--workload",
            "synthetic:lognormal:2:2",
            "--policy",
            "eetl:30",
            "--table",
            sim_plan.to_str().unwrap(),
            "--cores",
            "1@1,1@2",
            "--emulation-period-us",
            "0",
            "--rps",
            "100",
            "--requests",
            "1000",
            "--seed",
            "3",
        ];
        args.extend(extra);
        let out = tailor(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        std::fs::write(file, &out.stdout).unwrap();
        serde_json::from_str::<serde_json::Value>(text(&out.stdout).lines().last().unwrap())
            .unwrap()
    };
    let open = dir.join("open.json");
    let s = run(&["--open-loop"], &open);
    assert_eq!(s["policy"], "open-loop:eetl:30");
    assert_eq!(s["completed"], 1000);
    // The thresholds follow the identification schedule, not the controller: several
    // levels of t*, each held two epochs.
    let t_star: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sim_plan).unwrap()).unwrap();
    let t_star = t_star["thresholds_ms"][0].as_f64().unwrap();
    let z: Vec<f64> = s["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["thresholds_ms"][0].as_f64().unwrap() / t_star)
        .collect();
    assert!(z.len() >= 9, "{z:?}");
    assert!(z.iter().all(|v| [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .any(|l| (l - v).abs() < 1e-9)));
    assert!(z.iter().any(|v| *v != z[0]), "{z:?}");

    let live_plan = dir.join("live.json");
    let out = plan(&live_plan, Some(open.to_str().unwrap()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&live_plan).unwrap()).unwrap();
    assert_eq!(p["gains"][0]["rps_tuned"], 100.0);
    // A closed-loop run, or too few files, are refused with a reason.
    let closed = dir.join("closed.json");
    run(&[], &closed);
    let out = plan(&dir.join("x.json"), Some(closed.to_str().unwrap()));
    assert!(
        text(&out.stderr).contains("not an open-loop run"),
        "{}",
        text(&out.stderr)
    );
    // Epochs of another window than the plan's are refused.
    let out = plan_with(&dir.join("x.json"), "300", Some(open.to_str().unwrap()));
    assert!(
        text(&out.stderr).contains("--window 300"),
        "{}",
        text(&out.stderr)
    );
    let both = format!("{},{}", open.display(), open.display());
    let out = plan(&dir.join("x.json"), Some(&both));
    assert!(text(&out.stderr).contains("one open-loop run per interval"));
    // --open-loop is EETL's.
    let out = tailor(&[
        "run",
        "--workload",
        "synthetic:exp:1",
        "--policy",
        "rtl",
        "--cores",
        "1@1,1@2",
        "--rps",
        "10",
        "--requests",
        "5",
        "--seed",
        "1",
        "--open-loop",
    ]);
    assert!(text(&out.stderr).contains("--open-loop identifies EETL"));
}
