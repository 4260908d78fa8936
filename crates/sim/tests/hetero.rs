//! Sequential requests on heterogeneous cores: exact small cases of Algorithm 2's placement, energy, and the policies' order of tail and energy.

use tailor_core::{Arrivals, CoreSet, Demand, DemandModel, HeteroPolicy, Policy};
use tailor_sim::{simulate_hetero, HeteroSimConfig, SimConfig, SimOutput};

fn run(
    cores: &str,
    policy: HeteroPolicy,
    demand: Demand,
    arrivals: Arrivals,
    n: usize,
) -> SimOutput {
    let demand = DemandModel::new(demand, None).expect("demand");
    let cores = CoreSet::parse(cores).expect("cores");
    let mut base = SimConfig::new(cores.total(), Policy::Seq, demand, arrivals, 5.0, n, 3);
    base.warmup = Some(0);
    base.records = true;
    base.target_ms = Some(100.0);
    simulate_hetero(&HeteroSimConfig {
        base,
        cores,
        policy,
        open_loop: None,
    })
    .expect("runs")
}

#[test]
fn a_request_moves_to_the_fast_core_exactly_at_its_threshold() {
    // 100 ms of work, threshold 30.1: 30.1 ms slow, then 69.9 ms of work at 2x. Arrival
    // times that do not add up exactly in floating point must not delay the crossing:
    // with a = 333.3 i, (a + 30.1) - a < 30.1 for 157 of these 200.
    let arrivals: Vec<f64> = (0..200).map(|i| i as f64 * 333.3).collect();
    let out = run(
        "1@1,1@2",
        HeteroPolicy::Fixed(vec![30.1]),
        Demand::Const { ms: 100.0 },
        Arrivals::Trace(arrivals),
        200,
    );
    for r in &out.records {
        let latency = r.finish_ms - r.arrival_ms;
        assert!(
            (latency - 65.05).abs() < 1e-6,
            "request {}: {latency}",
            r.request
        );
    }
    assert_eq!(out.summary.migrations_per_request, Some(1.0));
    // Energy: 30.1 ms slow and 34.95 ms fast; static 9 * 0.25 = 2.25 over 2 cores.
    let e = out.summary.energy.as_ref().unwrap();
    let expect = 30.1 * (1.0 + 1.125) + 34.95 * (8.0 + 1.125);
    assert!((e.per_request - expect).abs() < 1e-6, "{e:?}");
    assert!((e.dynamic_per_request - (30.1 + 8.0 * 34.95)).abs() < 1e-6);
}

#[test]
fn rtl_starts_on_the_fast_core_and_ee_never_leaves_a_free_slow_one() {
    let spaced = Arrivals::Trace((0..20).map(|i| i as f64 * 1000.0).collect());
    let rtl = run(
        "2@1,1@2",
        HeteroPolicy::Rtl,
        Demand::Const { ms: 40.0 },
        spaced.clone(),
        20,
    );
    assert!(rtl
        .records
        .iter()
        .all(|r| (r.finish_ms - r.arrival_ms - 20.0).abs() < 1e-9));
    let ee = run(
        "2@1,1@2",
        HeteroPolicy::Ee,
        Demand::Const { ms: 40.0 },
        spaced,
        20,
    );
    assert!(ee
        .records
        .iter()
        .all(|r| (r.finish_ms - r.arrival_ms - 40.0).abs() < 1e-9));
    assert!(ee.summary.energy.unwrap().per_request < rtl.summary.energy.unwrap().per_request);
    // Three at once on two slow cores: EE sends the oldest to the fast core.
    let burst = Arrivals::Trace(vec![0.0, 1.0, 2.0]);
    let ee = run(
        "2@1,1@2",
        HeteroPolicy::Ee,
        Demand::Const { ms: 40.0 },
        burst,
        3,
    );
    assert_eq!(ee.summary.migrations_per_request.unwrap() * 3.0, 1.0);
    // The first ran 2 ms slow, then 38 ms of work at 2x.
    assert!((ee.records[0].finish_ms - 21.0).abs() < 1e-9);
}

#[test]
fn policies_order_by_tail_and_energy_as_the_dissertation_reports() {
    let demand = || Demand::LogNormal {
        mean_ms: 60.0,
        sd_ms: 60.0,
    };
    let go = |p: HeteroPolicy| run("8@1,1@2", p, demand(), Arrivals::Poisson, 20_000);
    let rtl = go(HeteroPolicy::Rtl);
    let ee = go(HeteroPolicy::Ee);
    let obl = go(HeteroPolicy::Oblivious);
    let mid = go(HeteroPolicy::Fixed(vec![100.0]));
    let energy = |o: &SimOutput| o.summary.energy.as_ref().unwrap().per_request;
    let p99 = |o: &SimOutput| o.summary.latency_ms.p99;
    // RTL has the lowest tail and the most energy; EE the least energy.
    assert!(
        p99(&rtl) < p99(&mid) && p99(&mid) < p99(&ee),
        "{} {} {}",
        p99(&rtl),
        p99(&mid),
        p99(&ee)
    );
    assert!(energy(&rtl) > energy(&mid) && energy(&mid) > energy(&ee));
    assert!(energy(&rtl) > energy(&obl) && energy(&obl) > energy(&ee));
    // Every request completes.
    for o in [&rtl, &ee, &obl, &mid] {
        assert_eq!(o.summary.completed, 20_000);
    }
}

#[test]
fn rc_sends_only_long_requests_to_the_fast_core() {
    let out = run(
        "2@1,1@2",
        HeteroPolicy::RcHetero(50.0),
        Demand::Exp { mean_ms: 30.0 },
        Arrivals::Poisson,
        2_000,
    );
    let share = &out.summary.energy.as_ref().unwrap().busy_share;
    for r in &out.records {
        let latency = r.finish_ms - r.arrival_ms;
        if r.work_ms < 50.0 {
            // Short ones never run fast: at least their work in time.
            assert!(latency >= r.work_ms - 1e-9);
        }
    }
    assert!(share[1] > 0.0);
    // Fewer than two core types is refused.
    let demand = DemandModel::new(Demand::Const { ms: 1.0 }, None).unwrap();
    let base = SimConfig::new(2, Policy::Seq, demand, Arrivals::Poisson, 5.0, 10, 1);
    let err = simulate_hetero(&HeteroSimConfig {
        base,
        cores: CoreSet::parse("2").unwrap(),
        policy: HeteroPolicy::RcHetero(5.0),
        open_loop: None,
    });
    assert!(err.is_err());
}
