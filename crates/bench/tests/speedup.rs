//! The synthetic workload's speedup as measured on this machine. It is alone in its test
//! binary: cargo runs test binaries one after another, so no other test shares the cores.

use tailor_bench::{measure_profile, ProfileConfig, SyntheticSource};
use tailor_core::{Demand, DemandModel, Speedup, SpeedupSpec};
use tailor_workloads::{Spinner, SyntheticShape};

fn demand(spec: &str) -> DemandModel {
    DemandModel::new(
        Demand::parse(spec).unwrap(),
        Some(SpeedupSpec::Curve(Speedup::Linear)),
    )
    .unwrap()
}

#[test]
fn the_measured_speedup_at_degree_2_matches_the_requested_one() {
    // Tolerant by design: this machine is shared (a vCPU stolen for a moment slows the
    // degree-2 runs only), so the check is the median of nine requests each measured 5
    // times, against a 10% band, and it only needs 2 cores.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: fewer than 2 cores");
        return;
    }
    let shape = SyntheticShape::amdahl(0.05);
    let cfg = ProfileConfig {
        requests: 9,
        max_degree: 2,
        repeat: 5,
    };
    let source = SyntheticSource::new(&demand("const:20"), shape, Spinner::calibrate(), 9, 1);
    let profile = measure_profile(&cfg, &source, |_, _| {}).unwrap();
    let mut speedups: Vec<f64> = profile.requests().iter().map(|r| r.speedup(2)).collect();
    speedups.sort_by(f64::total_cmp);
    let measured = speedups[speedups.len() / 2];
    let requested = shape.speedup(20.0, 2);
    assert!(
        (measured - requested).abs() / requested <= 0.10,
        "measured s(2) = {measured:.3}, requested {requested:.3}"
    );
}
