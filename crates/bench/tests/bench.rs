//! Integration tests of the harness: a small live run. (The measured speedup has its own
//! test binary, `speedup.rs`, so that nothing else runs beside it.)

use std::sync::Arc;

use tailor_bench::{run_live, LiveConfig, SyntheticSource};
use tailor_core::{Arrivals, Demand, DemandModel, Policy, Speedup, SpeedupSpec};
use tailor_workloads::{Spinner, SyntheticShape};

fn demand(spec: &str) -> DemandModel {
    DemandModel::new(
        Demand::parse(spec).unwrap(),
        Some(SpeedupSpec::Curve(Speedup::Linear)),
    )
    .unwrap()
}

#[test]
fn a_live_run_completes_every_request_and_reports_them() {
    let cfg = LiveConfig {
        cores: 2,
        policy: Policy::Fix { degree: 2 },
        arrivals: Arrivals::Poisson,
        rps: 200.0,
        requests: 300,
        seed: 3,
        quantum_ms: 5.0,
        target_ms: Some(50.0),
        warmup: Some(20),
        workers: None,
        guard: true,
        steal: None,
        dissolve: tailor_core::Dissolve::Prompt,
        rayon: false,
        hetero: None,
    };
    let source = Arc::new(SyntheticSource::new(
        &demand("exp:2"),
        SyntheticShape::amdahl(0.1),
        Spinner::calibrate(),
        300,
        3,
    ));
    let out = run_live(&cfg, &source).unwrap();
    let s = &out.summary;
    assert_eq!(s.engine, "live");
    assert_eq!((s.requests, s.completed, s.rejected), (300, 300, 0));
    assert_eq!(out.records.len(), 300);
    assert_eq!(out.release_error_us.len(), 300);
    assert!(s.latency_ms.p99 >= s.latency_ms.p50 && s.latency_ms.p50 > 0.0);
    assert!((s.degree_distribution.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!(s.miss_ratio.is_some());
    // Records follow the arrivals drawn from the seed: the same as the simulator's.
    assert!(out
        .records
        .windows(2)
        .all(|w| w[0].arrival_ms <= w[1].arrival_ms));
    // An overloaded setting is refused before anything runs.
    let overload = LiveConfig { rps: 5000.0, ..cfg };
    assert!(run_live(&overload, &source).is_err());
    // A source with fewer requests than the run is refused too.
    let long = LiveConfig {
        requests: 301,
        ..overload
    };
    assert!(run_live(&long, &source).is_err());
}

/// Requests that do not tell their work in advance.
struct Blind;

struct BlindJob;

impl tailor_core::Job for BlindJob {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        1
    }
    fn run(&self, _unit: usize) {}
    fn merge(&self, _parts: Vec<()>) {}
}

impl tailor_bench::RequestSource for Blind {
    type Job = BlindJob;
    fn len(&self) -> usize {
        10
    }
    fn job(&self, _i: usize) -> BlindJob {
        BlindJob
    }
    fn work_ms(&self, _i: usize) -> Option<f64> {
        None
    }
}

#[test]
fn clairvoyant_rc_is_refused_for_requests_that_hide_their_work() {
    let cfg = LiveConfig {
        cores: 2,
        policy: Policy::Seq,
        arrivals: Arrivals::Poisson,
        rps: 100.0,
        requests: 10,
        seed: 1,
        quantum_ms: 5.0,
        target_ms: None,
        warmup: Some(0),
        workers: None,
        guard: true,
        steal: None,
        dissolve: tailor_core::Dissolve::Prompt,
        rayon: false,
        hetero: Some(tailor_bench::HeteroLive {
            cores: tailor_core::CoreSet::parse("1@1,1@2").unwrap(),
            policy: tailor_core::HeteroPolicy::RcHetero(5.0),
            emulation: None,
            open_loop: None,
            dvfs: None,
        }),
    };
    let err = run_live(&cfg, &Arc::new(Blind)).unwrap_err().to_string();
    assert!(err.contains("rc-hetero is clairvoyant"), "{err}");
}
