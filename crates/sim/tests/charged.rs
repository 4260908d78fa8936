//! Integration tests of the charged model (`--calibration`): the runtime's threads at unit
//! granularity. Exact cases against the fluid model and the unit model's alone times,
//! FM's core guard, the hand-off delay, the helper cost and the slowdown.

use std::sync::Arc;

use tailor_core::{
    Arrivals, Calibration, Curve, Demand, DemandModel, IntervalTable, Policy, Speedup, SpeedupSpec,
    Units,
};
use tailor_sim::{simulate, SimConfig, SimOutput};

fn model(demand: Demand, speedup: Speedup) -> DemandModel {
    DemandModel::new(demand, Some(SpeedupSpec::Curve(speedup))).unwrap()
}

fn amdahl(f: f64) -> Speedup {
    Speedup::Amdahl { serial_fraction: f }
}

fn config(
    cores: usize,
    policy: Policy,
    demand: DemandModel,
    rps: f64,
    cal: Calibration,
) -> SimConfig {
    let mut cfg = SimConfig::new(cores, policy, demand, Arrivals::Poisson, rps, 20_000, 7);
    cfg.calibration = Some(Arc::new(cal));
    cfg
}

fn run(cfg: &SimConfig) -> SimOutput {
    simulate(cfg).unwrap()
}

/// A table sending every request to degree `n` from its start, at every load.
fn all_at_once(n: usize) -> Arc<IntervalTable> {
    Arc::new(IntervalTable::from_schedules(
        n,
        vec![(vec![0.0; n], false)],
    ))
}

#[test]
fn an_ideal_calibration_gives_seq_as_the_fluid_model_does() {
    let demand = model(Demand::Exp { mean_ms: 10.0 }, amdahl(0.2));
    let fluid = SimConfig::new(
        4,
        Policy::Seq,
        demand.clone(),
        Arrivals::Poisson,
        300.0,
        20_000,
        7,
    );
    let charged = config(
        4,
        Policy::Seq,
        demand,
        300.0,
        Calibration::ideal(4, Units::Count(8)),
    );
    let (a, b) = (run(&fluid).summary, run(&charged).summary);
    assert!((a.latency_ms.mean - b.latency_ms.mean).abs() < 1e-6 * a.latency_ms.mean);
    assert_eq!(a.latency_ms.p99, b.latency_ms.p99);
}

#[test]
fn alone_a_request_takes_its_serial_part_and_rounds_of_units() {
    // 40 ms of work, serial fraction 0.25, 8 units of 3.75 ms: at degree 3 the units go
    // in 3 rounds, so 10 + 3 * 3.75 = 21.25 ms; at degree 8 in one round, 13.75 ms.
    for (degree, expected) in [(1, 40.0), (3, 21.25), (8, 13.75), (16, 13.75)] {
        let demand = model(Demand::Const { ms: 40.0 }, amdahl(0.25));
        let mut cfg = config(
            16,
            Policy::Fix { degree },
            demand,
            0.1,
            Calibration::ideal(16, Units::Count(8)),
        );
        cfg.requests = 20;
        cfg.records = true;
        let out = run(&cfg);
        for r in &out.records {
            let took = r.finish_ms - r.arrival_ms;
            assert!((took - expected).abs() < 1e-6, "degree {degree}: {took}");
            assert_eq!(r.max_degree, degree);
        }
    }
}

#[test]
fn the_guard_keeps_threads_within_the_cores_and_the_paper_runtime_does_not() {
    let demand = model(Demand::Exp { mean_ms: 4.0 }, amdahl(0.5));
    let fm = Policy::Fm {
        table: all_at_once(16),
        boost: true,
    };
    let mut cal = Calibration::ideal(2, Units::UnitMs(0.25));
    cal.dispatch_ms = Curve::through(vec![[0.0, 0.05]], 0.0);
    let mut guarded = config(2, fm.clone(), demand, 300.0, cal);
    guarded.trace = true;
    let out = run(&guarded);
    let peak = out.trace.iter().map(|p| p.threads).max().unwrap();
    assert!(peak <= 2, "{peak} threads on 2 cores");
    assert_eq!(out.summary.completed, 20_000);
    assert!(out.summary.degree_distribution.len() >= 2);
    let mut paper = guarded.clone();
    paper.guard = false;
    let out = run(&paper);
    let peak = out.trace.iter().map(|p| p.threads).max().unwrap();
    assert!(peak > 2, "the paper's runtime stayed within the cores");
}

#[test]
fn under_the_guard_a_degree_16_table_stays_near_seq_where_the_paper_runtime_does_not() {
    // Work that barely speeds up (serial fraction 0.6), a table sending every request to
    // 16 threads at once, 2 cores at 60% of SEQ's capacity, and helpers that cost CPU.
    let demand = model(Demand::Exp { mean_ms: 4.0 }, amdahl(0.6));
    let mut cal = Calibration::ideal(2, Units::UnitMs(0.25));
    cal.helper_cost_ms = 0.05;
    cal.dispatch_ms = Curve::through(vec![[0.0, 0.05]], 0.0);
    let rps = 0.6 * 2.0 * 1000.0 / 4.0;
    let seq = run(&config(2, Policy::Seq, demand.clone(), rps, cal.clone())).summary;
    let fm = Policy::Fm {
        table: all_at_once(16),
        boost: true,
    };
    let guarded = run(&config(2, fm.clone(), demand.clone(), rps, cal.clone())).summary;
    let mut paper = config(2, fm, demand, rps, cal);
    paper.guard = false;
    let paper = run(&paper).summary;
    let ratio = guarded.latency_ms.p99 / seq.latency_ms.p99;
    assert!(ratio < 1.15, "guarded FM {ratio:.2}x SEQ's p99");
    assert!(
        paper.latency_ms.p99 > 1.5 * seq.latency_ms.p99,
        "unguarded {:.1} against SEQ's {:.1}",
        paper.latency_ms.p99,
        seq.latency_ms.p99
    );
}

#[test]
fn hand_off_delays_helper_costs_and_slowdown_each_lengthen_requests() {
    let demand = model(Demand::Const { ms: 8.0 }, amdahl(0.1));
    let ideal = Calibration::ideal(8, Units::Count(8));
    let base = run(&config(
        8,
        Policy::Fix { degree: 4 },
        demand.clone(),
        50.0,
        ideal.clone(),
    ))
    .summary
    .latency_ms
    .mean;
    let mut delayed = ideal.clone();
    delayed.dispatch_ms = Curve::through(vec![[0.0, 1.0]], 0.0);
    let mut costly = ideal.clone();
    costly.helper_cost_ms = 0.5;
    let mut slow = ideal;
    slow.slowdown = Curve::through(vec![[0.0, 1.5]], 0.5);
    for (name, cal, least) in [
        ("hand-off", delayed, 1.0),
        ("helper cost", costly, 1.0),
        ("slowdown", slow, 1.0),
    ] {
        let mean = run(&config(
            8,
            Policy::Fix { degree: 4 },
            demand.clone(),
            50.0,
            cal,
        ))
        .summary
        .latency_ms
        .mean;
        assert!(mean > base + least * 0.5, "{name}: {mean} against {base}");
    }
}

#[test]
fn the_same_seed_repeats_a_run_exactly() {
    let demand = model(Demand::Exp { mean_ms: 4.0 }, amdahl(0.3));
    let mut cal = Calibration::ideal(4, Units::UnitMs(0.25));
    cal.dispatch_ms = Curve::through(vec![[0.0, 0.1], [1.0, 0.6]], 0.0);
    cal.helper_cost_ms = 0.02;
    let fm = Policy::Fm {
        table: all_at_once(4),
        boost: false,
    };
    let a = run(&config(4, fm.clone(), demand.clone(), 500.0, cal.clone())).summary;
    let b = run(&config(4, fm, demand, 500.0, cal)).summary;
    assert_eq!(a, b);
}
