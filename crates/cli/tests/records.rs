//! `tailor run --records` with unit times, and `tailor profile from-records`.

mod common;

use common::{assert_refused, scratch, stderr, tailor};

/// A live run's records carry each request's unit times; a profile built from them has
/// one row per request, t1 at least most of its work, and a shorter t2 (the work splits
/// into units).
#[test]
fn a_live_runs_records_become_a_profile() {
    let dir = scratch("records");
    let records = dir.join("records.csv");
    let profile = dir.join("profile.csv");
    let run = tailor(&[
        "run",
        "--workload",
        "synthetic:const:2",
        "--policy",
        "seq",
        "--rps",
        "100",
        "--requests",
        "40",
        "--seed",
        "1",
        "--records",
        records.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = std::fs::read_to_string(&records).unwrap();
    assert!(
        text.lines().next().unwrap().ends_with(",units_ms,merge_ms"),
        "{text}"
    );
    let built = tailor(&[
        "profile",
        "from-records",
        records.to_str().unwrap(),
        "--degrees",
        "1..2",
        "--out",
        profile.to_str().unwrap(),
    ]);
    assert!(built.status.success(), "{}", stderr(&built));
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&profile)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 40, "{}", stderr(&built));
    // t1 is measured (a busy machine stretches it; no upper bound), at least most of the
    // 2 ms of spinning; t2 is list-scheduled from the same units.
    for r in &rows {
        assert!(r[0] > 1.0, "t1 {r:?}");
        assert!(r[1] < r[0], "t2 below t1: {r:?}");
    }
    // Records from the simulator carry no unit times: refused, with the reason.
    let sim_records = dir.join("sim.csv");
    let sim = tailor(&[
        "simulate",
        "--cores",
        "2",
        "--policy",
        "seq",
        "--demand",
        "exp:5",
        "--arrivals",
        "poisson",
        "--rps",
        "100",
        "--requests",
        "50",
        "--seed",
        "1",
        "--records",
        sim_records.to_str().unwrap(),
    ]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    let refused = tailor(&["profile", "from-records", sim_records.to_str().unwrap()]);
    assert_refused(&refused, "no `units_ms`", "records without unit times");
}
