//! Tests of the live heterogeneous-core runtime: placement, failures, refusals, and DVFS cores.

use super::*;

/// Spins for `ms` per unit, `units` units; tells RC its work when `hint`. With a
/// `gate`, its first unit waits until the gate opens.
struct Spin {
    units: usize,
    ms: f64,
    panic: bool,
    hint: bool,
    gate: Option<Arc<std::sync::atomic::AtomicBool>>,
}

fn spin(units: usize, ms: f64) -> Spin {
    Spin {
        units,
        ms,
        panic: false,
        hint: true,
        gate: None,
    }
}

impl Job for Spin {
    type Part = ();
    type Output = usize;
    fn units(&self) -> usize {
        self.units
    }
    fn run(&self, unit: usize) {
        assert!(!self.panic, "boom");
        if let (0, Some(gate)) = (unit, &self.gate) {
            while !gate.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
        let until = Instant::now() + Duration::from_secs_f64(self.ms / 1000.0);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    fn merge(&self, parts: Vec<()>) -> usize {
        parts.len()
    }
    fn demand_hint_ms(&self) -> Option<f64> {
        self.hint.then_some(self.units as f64 * self.ms)
    }
}

fn runtime(policy: HeteroPolicy) -> S2fRuntime {
    S2fRuntime::start(S2fConfig {
        cores: CoreSet::parse("1@1,1@2").unwrap(),
        cpus: vec![0, 1],
        policy,
        seed: 1,
        emulation: None,
        max_active: 100,
        open_loop: None,
        dvfs: None,
    })
    .unwrap()
}

#[test]
fn every_request_completes_or_fails_alone_and_long_ones_migrate() {
    let rt = runtime(HeteroPolicy::Fixed(vec![5.0]));
    let now = Instant::now();
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let job = Spin {
                panic: i == 3,
                ..spin(10, 1.0)
            };
            rt.submit_at(job, now, true).unwrap()
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.wait()).collect();
    for (i, r) in results.iter().enumerate() {
        match r {
            Ok(done) => assert_eq!(done.output, 10),
            Err(RequestError::Panicked(m)) => {
                assert_eq!(i, 3);
                assert!(m.contains("boom"));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let report = rt.drain();
    assert_eq!(report.metrics.completed, 5);
    assert_eq!(report.metrics.failed, 1);
    // 10 ms requests pass the 5 ms threshold, so some moved to the fast core.
    assert!(report.migrations > 0);
    assert!(report.busy_ms[1] > 0.0);
    assert!(report.energy > report.dynamic_energy);
}

#[test]
fn bad_configurations_are_refused() {
    let cfg = |cpus: Vec<usize>, policy| S2fConfig {
        cores: CoreSet::parse("1@1,1@2").unwrap(),
        cpus,
        policy,
        seed: 1,
        emulation: None,
        max_active: 10,
        open_loop: None,
        dvfs: None,
    };
    assert!(S2fRuntime::start(cfg(vec![0], HeteroPolicy::Rtl)).is_err());
    assert!(S2fRuntime::start(cfg(vec![0, 0], HeteroPolicy::Rtl)).is_err());
    // RC without the work of a request refuses that request.
    let rc = S2fRuntime::start(cfg(vec![0, 1], HeteroPolicy::RcHetero(5.0))).unwrap();
    let blind = Spin {
        hint: false,
        ..spin(1, 0.1)
    };
    assert!(matches!(
        rc.submit_at(blind, Instant::now(), true),
        Err(S2fError::NoDemandHint)
    ));
    assert_eq!(rc.drain().metrics.completed, 0);
}

/// Runs `jobs` submitted at once and returns the report. Each waits at a gate until
/// all are in, so that the first ones hold their cores however slowly the
/// submitting thread runs (on a busy machine it could otherwise see each finish
/// before it submits the next).
fn run_all(policy: HeteroPolicy, jobs: Vec<Spin>) -> S2fReport {
    let rt = runtime(policy);
    let gate = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let now = Instant::now();
    let handles: Vec<_> = jobs
        .into_iter()
        .map(|j| {
            let job = Spin {
                gate: Some(gate.clone()),
                ..j
            };
            rt.submit_at(job, now, true).unwrap()
        })
        .collect();
    gate.store(true, Ordering::Release);
    for h in handles {
        assert!(h.wait().is_ok());
    }
    rt.drain()
}

#[test]
fn oblivious_places_once_and_never_migrates() {
    let report = run_all(
        HeteroPolicy::Oblivious,
        (0..8).map(|_| spin(4, 1.0)).collect(),
    );
    assert_eq!(report.metrics.completed, 8);
    assert_eq!(report.migrations, 0);
    assert!(report.epochs.is_empty());
}

#[test]
fn rc_keeps_short_requests_off_the_fast_core_and_moves_long_ones_up() {
    // 2 ms of machine time is 4 ms of work on the speed-1 core: under a 5 ms bound.
    let short = run_all(
        HeteroPolicy::RcHetero(5.0),
        (0..4).map(|_| spin(2, 1.0)).collect(),
    );
    assert_eq!(short.metrics.completed, 4);
    assert_eq!(short.busy_ms[1], 0.0, "short requests ran on the fast core");
    let long = run_all(
        HeteroPolicy::RcHetero(5.0),
        (0..4).map(|_| spin(5, 1.0)).collect(),
    );
    assert_eq!(long.metrics.completed, 4);
    assert!(long.busy_ms[1] > 0.0);
    assert!(
        long.migrations > 0,
        "no long request moved up from the slow core"
    );
}

fn dvfs_runtime(policy: &str) -> Result<S2fRuntime, S2fError> {
    S2fRuntime::start(S2fConfig {
        cores: CoreSet::parse("1@1").unwrap(),
        cpus: vec![0],
        policy: HeteroPolicy::Ee,
        seed: 1,
        emulation: Some((Duration::from_micros(250), Duration::ZERO)),
        max_active: 10,
        open_loop: None,
        dvfs: Some(DvfsLive {
            chip: DvfsCores::new(1, tailor_core::PStates::parse("1:1,2:8").unwrap()),
            policy: DvfsPolicy::parse(policy, None).unwrap(),
        }),
    })
}

#[test]
fn a_dvfs_core_steps_up_when_its_request_passes_the_threshold() {
    // 20 units of 1 ms (wall time: the spin does not slow down), threshold 5 ms: the
    // core starts slow, and after the unit that passes 5 ms it runs at the top.
    let rt = dvfs_runtime("s2f-dvfs:5").unwrap();
    let h = rt.submit_at(spin(20, 1.0), Instant::now(), true).unwrap();
    assert_eq!(h.wait().unwrap().output, 20);
    let report = rt.drain();
    assert_eq!(report.transitions, 1);
    assert_eq!(report.busy_ms.len(), 2);
    assert!(report.busy_ms[0] >= 4.0, "{:?}", report.busy_ms);
    assert!(report.busy_ms[1] >= 5.0, "{:?}", report.busy_ms);
    // Energy: busy ms times each state's power; static 2 per busy core at the top, 1 at
    // half speed (it follows voltage).
    let expect = report.busy_ms[0] * 2.0 + report.busy_ms[1] * 10.0;
    assert!((report.energy - expect).abs() < 1e-9);
    // max never leaves the top.
    let rt = dvfs_runtime("max").unwrap();
    let h = rt.submit_at(spin(5, 1.0), Instant::now(), true).unwrap();
    h.wait().unwrap();
    let report = rt.drain();
    assert_eq!((report.transitions, report.busy_ms[0]), (0, 0.0));
}

#[test]
fn all_core_governors_and_mismatched_dvfs_cores_are_refused_live() {
    let e = dvfs_runtime("schedutil").err().unwrap().to_string();
    assert!(e.contains("simulate"), "{e}");
    let e = S2fRuntime::start(S2fConfig {
        cores: CoreSet::parse("2@1").unwrap(),
        cpus: vec![0, 1],
        policy: HeteroPolicy::Ee,
        seed: 1,
        emulation: Some((Duration::from_micros(250), Duration::ZERO)),
        max_active: 10,
        open_loop: None,
        dvfs: Some(DvfsLive {
            chip: DvfsCores::new(1, tailor_core::PStates::parse("1:1,2:8").unwrap()),
            policy: DvfsPolicy::Max,
        }),
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("identical cores"), "{e}");
}
