//! Sequential requests on DVFS cores: exact single-request cases of each policy, transitions, energy, and a cross-check against the asymmetric-core engine.

use tailor_core::{
    Arrivals, CoreSet, Demand, DemandModel, DvfsCores, DvfsPolicy, HeteroPolicy, PStates, Policy,
    PELT_HALF_LIFE_MS,
};
use tailor_sim::{
    simulate_dvfs, simulate_hetero, DvfsSimConfig, HeteroSimConfig, SimConfig, SimOutput,
};

fn base(demand: Demand, arrivals: Arrivals, n: usize, cores: usize) -> SimConfig {
    let demand = DemandModel::new(demand, None).expect("demand");
    let mut base = SimConfig::new(cores, Policy::Seq, demand, arrivals, 5.0, n, 3);
    base.warmup = Some(0);
    base.records = true;
    base.target_ms = Some(100.0);
    base
}

fn run(pstates: &str, count: usize, policy: &str, transition_ms: f64, b: SimConfig) -> SimOutput {
    simulate_dvfs(&DvfsSimConfig {
        base: b,
        cores: DvfsCores::new(count, PStates::parse(pstates).unwrap()),
        policy: DvfsPolicy::parse(policy, None).unwrap(),
        transition_ms,
        rate_limit_ms: 0.5,
        open_loop: None,
    })
    .expect("runs")
}

/// One request at a time: `n` of `work` ms, a second apart.
fn spaced(work: f64, n: usize, cores: usize) -> SimConfig {
    base(
        Demand::Const { ms: work },
        Arrivals::Trace((0..n).map(|i| i as f64 * 1000.0).collect()),
        n,
        cores,
    )
}

fn latencies(out: &SimOutput) -> Vec<f64> {
    out.records
        .iter()
        .map(|r| r.finish_ms - r.arrival_ms)
        .collect()
}

#[test]
fn max_and_tl_dvfs_run_at_the_top_and_pay_its_power() {
    let max = run("1:1,2:8", 2, "max", 0.02, spaced(100.0, 20, 2));
    assert!(latencies(&max).iter().all(|l| (l - 50.0).abs() < 1e-9));
    // Static power is a fifth of the chip's peak: 0.25 * 8 = 2 per busy core at the top.
    let e = max.summary.energy.as_ref().unwrap();
    assert!((e.per_request - 50.0 * 10.0).abs() < 1e-6, "{e:?}");
    assert_eq!(e.busy_share, vec![0.0, 1.0]);
    // tl-dvfs is max: idle cores are power-gated, so holding the top costs nothing.
    let tl = run("1:1,2:8", 2, "tl-dvfs", 0.02, spaced(100.0, 20, 2));
    assert_eq!(latencies(&tl), latencies(&max));
    assert_eq!(tl.summary.energy, max.summary.energy);
    assert_eq!(max.summary.transitions_per_request, Some(0.0));
}

#[test]
fn a_core_steps_up_at_the_threshold_and_the_change_runs_slow() {
    // 40 ms at speed 1 (40 work), 20 us changing at speed 1, then 59.98 work at 2.
    let out = run("1:1,2:8", 1, "s2f-dvfs:40", 0.02, spaced(100.0, 20, 1));
    for l in latencies(&out) {
        assert!((l - (40.02 + 59.98 / 2.0)).abs() < 1e-9, "{l}");
    }
    // Up once per request, and down at each request after the first.
    assert_eq!(out.summary.transitions_per_request, Some(39.0 / 20.0));
    // Energy, static power following voltage (2 at the top, 1 at half speed): 40 ms at
    // (1 + 1), 20 us and 29.99 ms at (8 + 2). The step back down comes when the next
    // request lands on the core still at the top: 20 us at speed 1 but the top's power,
    // 8 more per ms, for 19 of the 20.
    let e = out.summary.energy.as_ref().unwrap();
    let expect = 40.0 * 2.0 + (0.02 + 29.99) * 10.0 + 0.02 * 8.0 * 19.0 / 20.0;
    assert!((e.per_request - expect).abs() < 1e-6, "{e:?}");
    // With free changes, exactly the asymmetric engine's 1 slow + 1 fast core with one
    // request at a time.
    let free = run("1:1,2:8", 1, "s2f-dvfs:40", 0.0, spaced(100.0, 20, 1));
    let cores = CoreSet::parse("1@1,1@2").unwrap();
    let amp = simulate_hetero(&HeteroSimConfig {
        base: spaced(100.0, 20, 2),
        cores,
        policy: HeteroPolicy::Fixed(vec![40.0]),
        open_loop: None,
    })
    .unwrap();
    for (a, b) in latencies(&free).iter().zip(latencies(&amp)) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
}

#[test]
fn a_crossing_late_in_a_long_run_is_not_missed() {
    // Past 2^26 ms an f64 time has about 1e-8 ms of resolution: arrival + threshold can
    // land just below the threshold's age, and must still count as the crossing.
    let b = base(
        Demand::Const { ms: 100.0 },
        Arrivals::Trace((0..200).map(|i| 1.0e8 + i as f64 * 333.3).collect()),
        200,
        1,
    );
    let out = run("1:1,2:8", 1, "s2f-dvfs:40.1", 0.0, b);
    for l in latencies(&out) {
        assert!((l - (40.1 + 59.9 / 2.0)).abs() < 1e-5, "{l}");
    }
}

#[test]
fn requests_queue_first_come_first_served_and_never_move() {
    // Three at once on two cores at speed 1: the third starts when the first ends.
    let b = base(
        Demand::Const { ms: 40.0 },
        Arrivals::Trace(vec![0.0, 1.0, 2.0]),
        3,
        2,
    );
    let out = run("1:1,2:8", 2, "s2f-dvfs:1000", 0.0, b);
    let finish: Vec<f64> = out.records.iter().map(|r| r.finish_ms).collect();
    assert_eq!(finish, vec![40.0, 41.0, 80.0]);
}

#[test]
fn schedutil_steps_up_once_pelt_passes_its_tipping_point() {
    // At speed 1 of a top of 2, utilization climbs towards 0.5; 1.25 * 2 * u passes 1
    // (the next state, 1.5) at u = 0.4, after 32 log2(5) = 74.3 ms, seen at the next
    // 4 ms tick. A request shorter than that never leaves the slowest state.
    let short = run(
        "1:1,1.5:3.375,2:8",
        1,
        "schedutil",
        0.02,
        spaced(60.0, 10, 1),
    );
    assert!(latencies(&short).iter().all(|l| (l - 60.0).abs() < 1e-9));
    let long = run(
        "1:1,1.5:3.375,2:8",
        1,
        "schedutil",
        0.02,
        spaced(300.0, 10, 1),
    );
    let crossing = PELT_HALF_LIFE_MS * 5f64.log2();
    let e = long.summary.energy.as_ref().unwrap();
    let l = latencies(&long)[5];
    let slow_ms = e.busy_share[0] * l;
    assert!(
        slow_ms >= crossing - 1e-6 && slow_ms <= crossing + 4.03,
        "{slow_ms} ms slow of {l}"
    );
    assert!(l < 300.0 && e.busy_share[1] > 0.0, "{e:?}");
}

#[test]
fn pegasus_settles_at_the_slowest_state_that_meets_its_target_at_low_load() {
    // 60 ms requests at 2 rps on one core: speed 1 gives 60 ms, under 0.6 of 200, so
    // Pegasus walks its power down from the top to the slowest state and stays.
    let b = base(
        Demand::Const { ms: 60.0 },
        Arrivals::Trace((0..2000).map(|i| i as f64 * 500.0).collect()),
        2000,
        1,
    );
    let out = run("1:1,1.5:3.375,2:8", 1, "pegasus:200", 0.02, b);
    let l = latencies(&out);
    assert!((l[0] - 30.0).abs() < 1e-9, "starts at the top: {}", l[0]);
    assert!(l[1000..].iter().all(|x| (x - 60.0).abs() < 1e-9));
    // A target speed 1 cannot meet: it stays at the state that does.
    let b = base(
        Demand::Const { ms: 60.0 },
        Arrivals::Trace((0..2000).map(|i| i as f64 * 500.0).collect()),
        2000,
        1,
    );
    let out = run("1:1,1.5:3.375,2:8", 1, "pegasus:50", 0.02, b);
    let l = latencies(&out);
    let tail = &l[1000..];
    assert!(
        tail.iter().filter(|x| **x <= 50.0).count() * 100 >= tail.len() * 95,
        "most meet 50 ms at speed 1.5 or 2"
    );
}

#[test]
fn bad_settings_are_refused_with_the_flag() {
    let e = simulate_dvfs(&DvfsSimConfig {
        base: spaced(10.0, 5, 1),
        cores: DvfsCores::new(1, PStates::parse("1:1,2:8").unwrap()),
        policy: DvfsPolicy::Max,
        transition_ms: -1.0,
        rate_limit_ms: 0.5,
        open_loop: None,
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("--transition"), "{e}");
}
