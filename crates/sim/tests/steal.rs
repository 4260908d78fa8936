//! The work-stealing fluid model: exact small cases and the policies' effects.

use std::sync::Arc;

use tailor_core::{
    Arrivals, Demand, DemandModel, Policy, Speedup, SpeedupSpec, StealPolicy, TailControlRow,
    TailControlTable, TAIL_CONTROL_TABLE_KIND,
};
use tailor_sim::{simulate_steal, SimConfig, SimOutput, StealSimConfig};

fn table(threshold_ms: f64) -> Arc<TailControlTable> {
    Arc::new(TailControlTable {
        kind: TAIL_CONTROL_TABLE_KIND.into(),
        target_ms: 20.0,
        rps: 300.0,
        cores: 4,
        rows: vec![TailControlRow {
            active: 1,
            threshold_ms,
            expected_misses: 1.0,
        }],
    })
}

fn run(policy: StealPolicy, demand: Demand, arrivals: Arrivals, rps: f64, n: usize) -> SimOutput {
    let demand =
        DemandModel::new(demand, Some(SpeedupSpec::Curve(Speedup::Linear))).expect("demand");
    let mut base = SimConfig::new(4, Policy::Seq, demand, arrivals, rps, n, 5);
    base.warmup = Some(0);
    base.records = true;
    base.target_ms = Some(20.0);
    simulate_steal(&StealSimConfig {
        base,
        policy,
        unit_ms: 0.25,
    })
    .expect("runs")
}

/// A lone request of `work` ms on `cores` = k cores with units of `unit` = u ms: all k
/// cores drain it until k - 1 units are left; from then a core leaves whenever the
/// unclaimed units fall below the cores, so the last k - 1 units take
/// u/(k-1) + ... + u/2 + u.
fn lone_finish(work: f64, cores: usize, unit: f64) -> f64 {
    let k = cores as f64;
    let tail: f64 = (1..cores).map(|j| unit / j as f64).sum();
    (work - (k - 1.0) * unit) / k + tail
}

#[test]
fn a_lone_request_takes_every_core_and_sheds_them_as_units_run_short() {
    let out = run(
        StealPolicy::StealFirst,
        Demand::Const { ms: 10.0 },
        Arrivals::Trace(vec![0.0]),
        1.0,
        1,
    );
    let r = &out.records[0];
    assert_eq!(r.max_degree, 4);
    // 9.25 ms on 4 cores, then 0.25 / 3 + 0.25 / 2 + 0.25: 2.7708 ms.
    let want = lone_finish(10.0, 4, 0.25);
    assert!((want - 2.770_833_333).abs() < 1e-6);
    assert!((r.finish_ms - want).abs() < 1e-6, "finish {}", r.finish_ms);
}

#[test]
fn steal_first_finishes_older_requests_first_and_admit_first_starts_newer_ones() {
    // Three 8 ms requests arriving while the first holds every core. When the first runs
    // short of units, steal-first admits the second and gives it every core that frees
    // up; admit-first admits the third with the second freed core, so the two share.
    let three = || Arrivals::Trace(vec![0.0, 0.1, 0.2]);
    let sf = run(
        StealPolicy::StealFirst,
        Demand::Const { ms: 8.0 },
        three(),
        1.0,
        3,
    );
    let af = run(
        StealPolicy::AdmitFirst,
        Demand::Const { ms: 8.0 },
        three(),
        1.0,
        3,
    );
    let finishes = |o: &SimOutput| -> Vec<f64> { o.records.iter().map(|r| r.finish_ms).collect() };
    let (sf, af) = (finishes(&sf), finishes(&af));
    // The first request is alone on the cores either way.
    assert!((sf[0] - lone_finish(8.0, 4, 0.25)).abs() < 1e-6, "{sf:?}");
    assert!((af[0] - sf[0]).abs() < 1e-9, "{af:?}");
    assert!(
        sf[1] < af[1] - 0.5,
        "steal-first {sf:?}, admit-first {af:?}"
    );
    assert!(sf[2] > af[2], "steal-first {sf:?}, admit-first {af:?}");
}

#[test]
fn marking_changes_the_schedule_only_when_the_threshold_is_low_enough() {
    let demand = || Demand::LogNormal {
        mean_ms: 10.0,
        sd_ms: 13.0,
    };
    let go = |policy| run(policy, demand(), Arrivals::Poisson, 300.0, 20_000);
    let sf = go(StealPolicy::StealFirst);
    // A threshold above every request: tail-control is steal-first, decision for
    // decision.
    let never = go(StealPolicy::TailControl(table(1e9)));
    assert_eq!(never.summary.serialized, Some(0));
    assert_eq!(never.summary.latency_ms, sf.summary.latency_ms);
    // A 1 ms threshold marks requests while they still gain cores: fewer cores per
    // request, and a different schedule.
    let low = go(StealPolicy::TailControl(table(1.0)));
    assert!(low.summary.serialized.unwrap() > 1000);
    assert!(low.summary.mean_degree < sf.summary.mean_degree - 0.2);
    assert_ne!(low.summary.latency_ms, sf.summary.latency_ms);
    // The clairvoyant variant serializes large requests before they start.
    let cv = go(StealPolicy::TailControlClairvoyant(table(20.0)));
    let large_degrees: Vec<usize> = cv
        .records
        .iter()
        .filter(|r| r.work_ms > 20.0)
        .map(|r| r.max_degree)
        .collect();
    assert!(!large_degrees.is_empty());
    assert!(large_degrees.iter().all(|&d| d == 1));
}

#[test]
fn every_request_completes_under_every_policy() {
    for policy in [
        StealPolicy::StealFirst,
        StealPolicy::AdmitFirst,
        StealPolicy::RandomAdmit,
        StealPolicy::TailControl(table(5.0)),
        StealPolicy::TailControlClairvoyant(table(5.0)),
    ] {
        let name = policy.name();
        let out = run(
            policy,
            Demand::Exp { mean_ms: 5.0 },
            Arrivals::Poisson,
            600.0,
            5_000,
        );
        assert_eq!(out.summary.completed, 5_000, "{name}");
        assert_eq!(out.summary.policy, name);
    }
}
