//! End-to-end tests of `plan reissue --adapt` and `--measured` (issue #39): the plan
//! adapted to the reissue it causes, and how the adaptation's flags report bad input.

mod common;

use common::{assert_refused, scratch, stderr, stdout, tailor};

/// The fan-out both tests log and adapt on: 5 shards x 3 replicas of 4 cores with
/// stalls, at about 47% utilization, 3,000 queries.
const FANOUT: [&str; 12] = [
    "--replicas",
    "3",
    "--cores",
    "4",
    "--demand",
    "lognormal:2:3",
    "--noise",
    "2:50",
    "--rps",
    "3000",
    "--requests",
    "3000",
];

/// Logs the fan-out without reissue and returns the log's path.
fn log(name: &str) -> String {
    let records = scratch(name).join("log.csv");
    let mut args = vec![
        "simulate",
        "--shards",
        "5",
        "--policy",
        "seq",
        "--arrivals",
        "poisson",
        "--seed",
        "1000",
        "--records",
        records.to_str().unwrap(),
    ];
    args.extend(FANOUT);
    let out = tailor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    records.to_str().unwrap().to_string()
}

/// `--adapt` simulates the plans it tries and ends with a measured rate within the band
/// of the budget; the chosen plan is the one measured last, and simulating it again on
/// the same seed reissues exactly at the rate reported.
#[test]
fn adapt_spends_the_budget_in_simulation() {
    let records = log("adapt");
    let mut args = vec![
        "plan",
        "reissue",
        "--records",
        &records,
        "--budget",
        "0.05",
        "--adapt",
        "--seed",
        "1001",
    ];
    args.extend(FANOUT);
    let out = tailor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("trial 1: single-r:"),
        "{}",
        stderr(&out)
    );
    let plan: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let adapt = &plan["adapt"];
    assert_eq!(adapt["mode"], "simulated", "{plan}");
    assert_eq!(adapt["within_band"], true, "{plan}");
    let rate = adapt["measured_reissue_rate"].as_f64().unwrap();
    assert!((0.045..=0.05).contains(&rate), "{plan}");
    let trials = adapt["trials"].as_array().unwrap();
    assert_eq!(trials.len() as u64, adapt["iterations"].as_u64().unwrap());
    assert_eq!(trials[0]["multiplier"], 1.0);
    assert!(
        trials.iter().any(|t| t["policy"] == plan["policy"]),
        "{plan}"
    );
    // The measured rate is the simulator's, for the policy printed.
    let policy = plan["policy"].as_str().unwrap();
    let mut rerun = vec![
        "simulate",
        "--shards",
        "5",
        "--policy",
        "seq",
        "--arrivals",
        "poisson",
        "--seed",
        "1001",
        "--reissue",
        policy,
    ];
    rerun.extend(FANOUT);
    let out = tailor(&rerun);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["reissue_rate"].as_f64().unwrap(), rate);
    assert_eq!(
        summary["latency_ms"]["p99"],
        adapt["measured_percentile_ms"]
    );
}

/// `--measured` takes one step of the search from logged rates: a plan that spent half
/// the budget asks for a plan at about twice it, and a rate in the band ends the search
/// on that plan.
#[test]
fn measured_rates_step_the_search() {
    let records = log("measured");
    let step = |measured: &[&str]| {
        let mut args = vec!["plan", "reissue", "--records", &records, "--budget", "0.05"];
        for m in measured {
            args.extend(["--measured", m]);
        }
        let out = tailor(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    let next = step(&["1:0.025"]);
    assert_eq!(next["adapt"]["status"], "try", "{next}");
    let m = next["adapt"]["budget_multiplier"].as_f64().unwrap();
    assert!((m - 1.9).abs() < 1e-9, "{next}");
    assert!((next["predicted_reissue_rate"].as_f64().unwrap() - 0.095).abs() < 1e-3);
    let done = step(&["1:0.025", "1.9:0.048"]);
    assert_eq!(done["adapt"]["status"], "done", "{done}");
    assert_eq!(done["policy"], next["policy"], "{done}");
}

#[test]
fn adaptation_flags_are_checked() {
    let records = log("flags");
    let base = ["plan", "reissue", "--records", &records, "--budget", "0.05"];
    for (extra, needle) in [
        (vec!["--adapt"], "--replicas"),
        (
            vec![
                "--adapt",
                "--replicas",
                "3",
                "--cores",
                "4",
                "--demand",
                "exp:2",
            ],
            "--rps",
        ),
        (vec!["--rps", "100"], "--adapt"),
        (vec!["--band", "0.9:1.1"], "0 < LOW <= HIGH <= 1"),
        (vec!["--measured", "1"], "MULTIPLIER:RATE"),
        (vec!["--measured", "1:0.02", "--adapt"], "--adapt"),
        (
            vec![
                "--adapt",
                "--replicas",
                "3",
                "--cores",
                "4",
                "--demand",
                "exp:2",
                "--rps",
                "100",
                "--policy",
                "steal-first",
            ],
            "thread-pool",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(extra.iter().copied());
        assert_refused(&tailor(&args), needle, &format!("{extra:?}"));
    }
}
