//! End-to-end tests of the DVFS family (issue 42): `plan eetl --pstates`, `simulate --cores N --pstates` with each policy, and how they report bad input.

use std::path::PathBuf;
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
    let dir = std::env::temp_dir().join(format!("tailor-dvfs-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const DEMAND: &str = "lognormal:60:60";
const PSTATES: &str = "1:1,1.5:3.375,2:8";

fn plan(path: &str, cores: &[&str]) -> Output {
    let mut args = vec![
        "plan",
        "eetl",
        "--demand",
        DEMAND,
        "--target-ms",
        "200",
        "--rps",
        "10:100",
        "--window",
        "500",
        "--epochs",
        "12",
        "--samples",
        "5000",
        "--out",
        path,
    ];
    args.extend_from_slice(cores);
    tailor(&args)
}

fn simulate(extra: &[&str]) -> Output {
    let mut args = vec![
        "simulate",
        "--demand",
        DEMAND,
        "--arrivals",
        "poisson",
        "--requests",
        "3000",
        "--seed",
        "1",
        "--target-ms",
        "200",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    tailor(&args)
}

#[test]
fn every_dvfs_policy_simulates_with_energy_and_eetl_dvfs_saves_it() {
    let dir = scratch("sweep");
    let table = dir.join("eetl-dvfs.json");
    let table = table.to_str().unwrap();
    let out = plan(table, &["--cores", "9", "--pstates", PSTATES]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(table).unwrap()).unwrap();
    assert_eq!(plan["cores"], "9");
    assert_eq!(plan["pstates"], PSTATES);
    assert_eq!(plan["thresholds_ms"].as_array().unwrap().len(), 2);
    let out = simulate(&[
        "--cores",
        "9",
        "--pstates",
        PSTATES,
        "--table",
        table,
        "--rps",
        "20",
        "--policy",
        "eetl-dvfs:200",
        "--policy",
        "tl-dvfs",
        "--policy",
        "pegasus:200",
        "--policy",
        "schedutil",
        "--policy",
        "max",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 5);
    let energy = |name: &str| {
        let r = runs.iter().find(|r| r["policy"] == name).unwrap();
        let e = &r["energy"];
        assert_eq!(e["busy_share"].as_array().unwrap().len(), 3, "{name}");
        (
            e["per_request"].as_f64().unwrap(),
            e["normalized"].as_f64().unwrap(),
        )
    };
    let (max, max_norm) = energy("max");
    assert!(
        (max_norm - 1.0).abs() < 1e-9,
        "normalized to max: {max_norm}"
    );
    assert_eq!(energy("tl-dvfs").0, max);
    let (eetl, _) = energy("eetl-dvfs:200");
    assert!(eetl < 0.8 * max, "eetl-dvfs {eetl} against max {max}");
    assert!(eetl < energy("pegasus:200").0 && eetl < energy("schedutil").0);
}

#[test]
fn plans_and_policies_must_match_their_cores() {
    let dir = scratch("mismatch");
    let amp = dir.join("amp.json");
    let amp = amp.to_str().unwrap();
    assert!(plan(amp, &["--cores", "8@1,1@2"]).status.success());
    let dvfs = dir.join("dvfs.json");
    let dvfs = dvfs.to_str().unwrap();
    assert!(plan(dvfs, &["--cores", "9", "--pstates", "1:1,2:8"])
        .status
        .success());
    let refused = |extra: &[&str], why: &str| {
        let out = simulate(extra);
        assert!(!out.status.success(), "{extra:?} ran");
        let e = text(&out.stderr);
        assert!(e.contains(why), "{extra:?}: {e}");
    };
    let on = |cores: &'static str, pstates: Option<&'static str>| {
        let mut v = vec!["--rps", "20", "--cores", cores];
        if let Some(p) = pstates {
            v.extend_from_slice(&["--pstates", p]);
        }
        v
    };
    // An asymmetric plan for eetl-dvfs, and a DVFS plan for eetl.
    let mut a = on("9", Some("1:1,2:8"));
    a.extend_from_slice(&["--table", amp, "--policy", "eetl-dvfs:200"]);
    refused(&a, "planned for core types");
    let mut b = on("8@1,1@2", None);
    b.extend_from_slice(&["--table", dvfs, "--policy", "eetl:200"]);
    refused(&b, "planned for DVFS P-states");
    // A DVFS plan for other P-states or another count.
    let mut c = on("9", Some(PSTATES));
    c.extend_from_slice(&["--table", dvfs, "--policy", "eetl-dvfs:200"]);
    refused(&c, "plan one for these cores");
    let mut v = on("9", Some("1:1,2:8"));
    v.extend_from_slice(&[
        "--static-power",
        "fixed",
        "--table",
        dvfs,
        "--policy",
        "eetl-dvfs:200",
    ]);
    refused(&v, "static power voltage");
    let mut d = on("4", Some("1:1,2:8"));
    d.extend_from_slice(&["--table", dvfs, "--policy", "eetl-dvfs:200"]);
    refused(&d, "plan one for these cores");
    // P-states without a DVFS policy, a DVFS policy without P-states, bad tables.
    let mut e = on("9", Some("1:1,2:8"));
    e.extend_from_slice(&["--policy", "seq"]);
    refused(&e, "P-states are for the DVFS policies");
    let mut f = on("9", None);
    f.extend_from_slice(&["--policy", "schedutil"]);
    refused(&f, "needs --pstates");
    let mut g = on("9", Some("1:1,2:0.5"));
    g.extend_from_slice(&["--policy", "max"]);
    refused(&g, "a faster state costs more");
    let mut h = on("9", Some("1:1,2:8"));
    h.extend_from_slice(&["--policy", "s2f-dvfs:10:20"]);
    refused(&h, "2 P-states need 1");
    // The planner refuses a table whose slow state costs more per unit of work.
    let out = plan(
        dir.join("x.json").to_str().unwrap(),
        &[
            "--cores",
            "1",
            "--pstates",
            "1:3.2,2:8",
            "--static-power",
            "fixed",
        ],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot save energy"));
    // A negative change cost.
    let out = tailor(&[
        "simulate",
        "--cores",
        "9",
        "--pstates",
        "1:1,2:8",
        "--policy",
        "max",
        "--demand",
        DEMAND,
        "--arrivals",
        "poisson",
        "--rps",
        "20",
        "--requests",
        "500",
        "--seed",
        "1",
        "--transition-us=-3",
    ]);
    assert!(!out.status.success());
    // The older spelling is read as --transition -3us, which the error names.
    let err = text(&out.stderr);
    assert!(
        err.contains("--transition -3us") && err.contains("with its unit"),
        "{err}"
    );
}
