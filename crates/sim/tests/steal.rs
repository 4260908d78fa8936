//! The work-stealing fluid model: exact small cases and the policies' effects.

use std::sync::Arc;

use tailor_core::{
    Arrivals, Demand, DemandModel, Dissolve, Policy, SpeedTrace, Speedup, SpeedupSpec, StealPolicy,
    TailControlRow, TailControlTable, TAIL_CONTROL_TABLE_KIND,
};
use tailor_sim::{simulate_steal, Joins, SimConfig, SimOutput, Sleep, StealSimConfig, StealSize};

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
    run_dissolving(policy, Dissolve::Prompt, demand, arrivals, rps, n)
}

fn run_dissolving(
    policy: StealPolicy,
    dissolve: Dissolve,
    demand: Demand,
    arrivals: Arrivals,
    rps: f64,
    n: usize,
) -> SimOutput {
    let machine = Machine {
        dissolve,
        ..Machine::default()
    };
    machine.run(policy, demand, arrivals, rps, n)
}

/// The simulated machine: its cores, whether idle cores sleep, how marks dissolve, and
/// its speed over time.
struct Machine {
    cores: usize,
    sleep: Option<Sleep>,
    dissolve: Dissolve,
    speed: Option<SpeedTrace>,
    /// The grain, ms of work.
    unit_ms: f64,
    joins: Joins,
    steal_size: StealSize,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            cores: 4,
            sleep: None,
            dissolve: Dissolve::Prompt,
            speed: None,
            unit_ms: 0.25,
            joins: Joins::Free,
            steal_size: StealSize::HalfNow,
        }
    }
}

impl Machine {
    fn run(
        &self,
        policy: StealPolicy,
        demand: Demand,
        arrivals: Arrivals,
        rps: f64,
        n: usize,
    ) -> SimOutput {
        let demand =
            DemandModel::new(demand, Some(SpeedupSpec::Curve(Speedup::Linear))).expect("demand");
        let mut base = SimConfig::new(self.cores, Policy::Seq, demand, arrivals, rps, n, 5);
        base.warmup = Some(0);
        base.records = true;
        base.target_ms = Some(20.0);
        simulate_steal(&StealSimConfig {
            base,
            policy,
            unit_ms: self.unit_ms,
            dissolve: self.dissolve,
            sleep: self.sleep,
            speed: self.speed.clone(),
            joins: self.joins,
            steal_size: self.steal_size,
        })
        .expect("runs")
    }
}

/// Steal-first on `cores` cores with sleeping modelled (spin 0.05 ms, wake 0.5 ms), or not.
fn sleepy(cores: usize, sleep: bool, demand: Demand, at: Vec<f64>) -> SimOutput {
    let n = at.len();
    let sleep = sleep.then_some(Sleep {
        spin_ms: 0.05,
        wake_ms: 0.5,
    });
    let machine = Machine {
        cores,
        sleep,
        ..Machine::default()
    };
    machine.run(StealPolicy::StealFirst, demand, Arrivals::Trace(at), 1.0, n)
}

#[test]
fn a_sleeping_machine_wakes_a_core_for_the_request_and_another_for_its_piece() {
    // 10 ms on 2 cores. Awake: the root starts at once and the thief takes 19 of the 39
    // unstarted units (4.75 ms), so the request ends at 5.25 ms. Asleep: one core wakes
    // for the waiting request (0.5 ms) and admits it, then the other wakes for its piece
    // (0.5 ms more) and takes 18 of the 37 unstarted units (4.5 ms): it ends at 6.0 ms.
    let awake = sleepy(2, false, Demand::Const { ms: 10.0 }, vec![0.0]);
    let asleep = sleepy(2, true, Demand::Const { ms: 10.0 }, vec![0.0]);
    assert!(
        (awake.records[0].finish_ms - 5.25).abs() < 1e-6,
        "{:?}",
        awake.records
    );
    let r = &asleep.records[0];
    assert!((r.start_ms - 0.5).abs() < 1e-6, "{r:?}");
    assert!((r.finish_ms - 6.0).abs() < 1e-6, "{r:?}");
    assert_eq!(r.max_degree, 2);
}

#[test]
fn a_core_still_spinning_takes_new_work_at_once_and_a_sleeping_one_wakes_first() {
    // 1 ms requests on one core, asleep at first: the first waits 0.5 ms for the wake-up
    // and ends at 1.5; the second arrives 0.03 ms later, while the core still spins, and
    // starts at once; the third arrives long after the core has gone to sleep.
    let out = sleepy(1, true, Demand::Const { ms: 1.0 }, vec![0.0, 1.53, 5.0]);
    let starts: Vec<f64> = out.records.iter().map(|r| r.start_ms).collect();
    for (got, want) in starts.iter().zip([0.5, 1.53, 5.5]) {
        assert!((got - want).abs() < 1e-6, "starts {starts:?}");
    }
}

#[test]
fn sleep_with_no_wake_up_cost_matches_cores_that_never_sleep() {
    // Zero-length wake-ups happen at the same instants as the no-sleep model's steals,
    // in a different order (so the victims drawn differ): the latencies agree closely,
    // not exactly.
    let demand = Demand::LogNormal {
        mean_ms: 10.0,
        sd_ms: 13.0,
    };
    let go = |sleep| {
        let machine = Machine {
            sleep,
            ..Machine::default()
        };
        machine.run(
            StealPolicy::StealFirst,
            demand.clone(),
            Arrivals::Poisson,
            300.0,
            5000,
        )
    };
    let free = Some(Sleep {
        spin_ms: 0.0,
        wake_ms: 0.0,
    });
    let (a, b) = (go(None).summary.latency_ms, go(free).summary.latency_ms);
    for (x, y) in [(a.mean, b.mean), (a.p99, b.p99)] {
        assert!(
            (x / y - 1.0).abs() < 0.02,
            "no sleep {a:?}, free sleep {b:?}"
        );
    }
    // A real wake-up cost makes every latency longer on average.
    let slow = go(Some(Sleep {
        spin_ms: 0.05,
        wake_ms: 0.2,
    }));
    assert!(
        slow.summary.latency_ms.mean > a.mean + 0.1,
        "{:?}",
        slow.summary.latency_ms
    );
}

#[test]
fn a_lone_request_spreads_over_every_core_by_stealing_halves() {
    // 10 ms in 0.25 ms units on 4 cores: the root holds all 40 units; thieves take half
    // of a victim's unstarted units and steal again when their piece ends, so the request
    // ends within a unit or so of a perfect split.
    let out = run(
        StealPolicy::StealFirst,
        Demand::Const { ms: 10.0 },
        Arrivals::Trace(vec![0.0]),
        1.0,
        1,
    );
    let r = &out.records[0];
    assert_eq!(r.max_degree, 4);
    assert!(
        r.finish_ms >= 2.5 - 1e-9 && r.finish_ms <= 2.5 + 2.0 * 0.25,
        "finish {}",
        r.finish_ms
    );
}

#[test]
fn steal_first_finishes_older_requests_first_and_admit_first_starts_newer_ones() {
    // Three 8 ms requests arriving while the first holds every core. Under steal-first a
    // core whose piece ends steals more of the oldest request before it admits, so the
    // requests end in arrival order, about 2 ms apart; under admit-first it admits the
    // next request at once, so the second shares the cores with the third and ends
    // later, and the third ends sooner.
    let three = || Arrivals::Trace(vec![0.0, 0.1, 0.2]);
    let go = |p| run(p, Demand::Const { ms: 8.0 }, three(), 1.0, 3);
    let finishes = |o: &SimOutput| -> Vec<f64> { o.records.iter().map(|r| r.finish_ms).collect() };
    let sf = finishes(&go(StealPolicy::StealFirst));
    let af = finishes(&go(StealPolicy::AdmitFirst));
    assert!(sf[0] < sf[1] && sf[1] < sf[2], "steal-first {sf:?}");
    assert!(
        (sf[0] - af[0]).abs() < 1e-9,
        "the first is alone either way"
    );
    assert!(
        af[1] > sf[1] + 0.5,
        "steal-first {sf:?}, admit-first {af:?}"
    );
    assert!(af[2] < sf[2], "steal-first {sf:?}, admit-first {af:?}");
    // 24 ms of work on 4 cores: both keep every core busy until the end, within a unit.
    for f in [&sf, &af] {
        let last = f.iter().cloned().fold(0.0, f64::max);
        assert!((6.0..=6.25 + 1e-9).contains(&last), "{f:?}");
    }
}

/// 100 ms requests arriving at `at` (ms) on 4 cores under tail-control, serialized past
/// 20 ms of processed time.
fn hundred_ms_requests(dissolve: Dissolve, at: Vec<f64>) -> SimOutput {
    let n = at.len();
    run_dissolving(
        StealPolicy::TailControl(table(20.0)),
        dissolve,
        Demand::Const { ms: 100.0 },
        Arrivals::Trace(at),
        1.0,
        n,
    )
}

#[test]
fn a_mark_lands_while_every_core_is_busy_and_prompt_gathers_the_pieces() {
    // A lone 100 ms request on 4 cores, serialized past 20 ms of processed time. The
    // crossing is an event: at 5 ms (20 ms of processed time on 4 cores) it is marked
    // though no core is idle. Prompt dissolving leaves it one core, which finishes the
    // remaining 80 ms alone; lazy dissolving leaves each core its piece, so it still
    // ends near 25 ms, as under steal-first.
    let go = |dissolve| hundred_ms_requests(dissolve, vec![0.0]);
    let prompt = go(Dissolve::Prompt);
    assert_eq!(prompt.summary.serialized, Some(1));
    let f = prompt.records[0].finish_ms;
    assert!((f - 85.0).abs() < 0.01, "prompt finish {f}");
    let lazy = go(Dissolve::Lazy);
    assert_eq!(lazy.summary.serialized, Some(1));
    let f = lazy.records[0].finish_ms;
    assert!((25.0..=25.5).contains(&f), "lazy finish {f}");
}

#[test]
fn cores_freed_by_a_prompt_mark_serve_the_next_request() {
    // The first 100 ms request is marked at 5 ms; a second arrives at 10 ms. Prompt
    // dissolving has three idle cores, so it starts at once; lazy dissolving keeps them on
    // the first request's pieces until about 25 ms.
    let go = |dissolve| hundred_ms_requests(dissolve, vec![0.0, 10.0]);
    let prompt = go(Dissolve::Prompt);
    let lazy = go(Dissolve::Lazy);
    assert!((prompt.records[1].start_ms - 10.0).abs() < 1e-9);
    assert!(prompt.records[1].max_degree >= 3, "{:?}", prompt.records[1]);
    assert!(lazy.records[1].start_ms > 24.0, "{:?}", lazy.records[1]);
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

/// Every work-stealing policy, tail-control's with a 5 ms threshold.
fn every_policy() -> Vec<StealPolicy> {
    vec![
        StealPolicy::StealFirst,
        StealPolicy::AdmitFirst,
        StealPolicy::RandomAdmit,
        StealPolicy::TailControl(table(5.0)),
        StealPolicy::TailControlClairvoyant(table(5.0)),
    ]
}

#[test]
fn every_request_completes_under_every_policy() {
    for policy in every_policy() {
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

#[test]
fn a_slow_window_stretches_the_work_that_runs_in_it() {
    // 10 ms of work on one core; the host runs at nominal speed for 4 ms, then at half
    // speed (scale 2) from 4 ms to 8 ms, then nominal again: 4 + 2 + 4 ms of work end at
    // 12 ms. A window while the core is idle changes nothing.
    let machine = Machine {
        cores: 1,
        speed: SpeedTrace::new(vec![(0.0, 1.0), (4.0, 2.0), (8.0, 1.0), (20.0, 3.0)]),
        ..Machine::default()
    };
    let at = vec![0.0, 30.0];
    let out = machine.run(
        StealPolicy::StealFirst,
        Demand::Const { ms: 10.0 },
        Arrivals::Trace(at),
        1.0,
        2,
    );
    assert!(
        (out.records[0].finish_ms - 12.0).abs() < 1e-6,
        "{:?}",
        out.records
    );
    // The second request runs wholly in the last window, at a third of the speed.
    assert!(
        (out.records[1].finish_ms - 60.0).abs() < 1e-6,
        "{:?}",
        out.records
    );
}

#[test]
fn a_constant_speed_trace_equals_scaling_every_request() {
    // A host at a steady 1.25x is the same as every request's work and grain 1.25x
    // longer, for every policy, marks included (processed time is wall time in both).
    // (A trace keeps the unit count of the nominal work, as the live spin loop does.)
    let slow = Machine {
        speed: SpeedTrace::new(vec![(0.0, 1.25)]),
        ..Machine::default()
    };
    let scaled = Demand::parse("scale:1.25:lognormal:10:13").expect("demand");
    let plain = Demand::parse("lognormal:10:13").expect("demand");
    for policy in [
        StealPolicy::StealFirst,
        StealPolicy::AdmitFirst,
        StealPolicy::TailControl(table(15.0)),
    ] {
        let a = slow.run(
            policy.clone(),
            plain.clone(),
            Arrivals::Poisson,
            250.0,
            3000,
        );
        let longer_units = Machine {
            unit_ms: 0.25 * 1.25,
            ..Machine::default()
        };
        let b = longer_units.run(policy, scaled.clone(), Arrivals::Poisson, 250.0, 3000);
        for (x, y) in a.records.iter().zip(&b.records) {
            assert!((x.finish_ms - y.finish_ms).abs() < 1e-6, "{x:?} {y:?}");
        }
        assert_eq!(a.summary.serialized, b.summary.serialized);
    }
}

#[test]
fn held_joins_make_cores_wait_and_every_request_still_completes() {
    // Under held joins a core whose piece ends waits for the pieces stolen from it, so
    // threads on requests exceed the cores doing work; with free joins they are equal.
    for dissolve in [Dissolve::Prompt, Dissolve::Lazy] {
        for policy in every_policy() {
            let name = policy.name();
            let summary = |joins| {
                let machine = Machine {
                    joins,
                    dissolve,
                    ..Machine::default()
                };
                let demand = Demand::Exp { mean_ms: 5.0 };
                machine
                    .run(policy.clone(), demand, Arrivals::Poisson, 600.0, 5_000)
                    .summary
            };
            let (free, held) = (summary(Joins::Free), summary(Joins::Held));
            for s in [&free, &held] {
                assert_eq!(s.completed, 5_000, "{name} {dissolve:?}");
            }
            let busy = |s: &tailor_core::RunSummary| s.cpu_utilization * 4.0;
            assert!((free.mean_threads - busy(&free)).abs() < 1e-9, "{name}");
            assert!(
                held.mean_threads > busy(&held) + 1e-3,
                "{name} {dissolve:?}: threads {} busy {}",
                held.mean_threads,
                busy(&held)
            );
        }
    }
}

#[test]
fn a_request_alone_ends_at_the_same_time_with_held_joins() {
    // Alone, a request's cores have nothing else to do: waiting for a thief instead of
    // leaving changes nothing, so it ends when its last piece does in both models.
    let at = vec![0.0];
    let demand = Demand::Const { ms: 10.0 };
    let one = |joins| {
        let machine = Machine {
            joins,
            ..Machine::default()
        };
        machine.run(
            StealPolicy::StealFirst,
            demand.clone(),
            Arrivals::Trace(at.clone()),
            1.0,
            1,
        )
    };
    let (free, held) = (one(Joins::Free), one(Joins::Held));
    assert!(
        (free.records[0].finish_ms - held.records[0].finish_ms).abs() < 1e-9,
        "{:?} {:?}",
        free.records,
        held.records
    );
}

#[test]
fn on_two_cores_only_the_split_time_steal_makes_held_joins_wait() {
    // Taking half of what is left at the steal, the victim always keeps more than its
    // thief, so on 2 cores no core ever waits for a thief; taking the half offered at
    // the last split, the victim has run on meanwhile and ends first, and waits.
    let waits = |steal_size| {
        let machine = Machine {
            cores: 2,
            joins: Joins::Held,
            steal_size,
            ..Machine::default()
        };
        let s = machine
            .run(
                StealPolicy::StealFirst,
                Demand::Exp { mean_ms: 5.0 },
                Arrivals::Poisson,
                300.0,
                5_000,
            )
            .summary;
        assert_eq!(s.completed, 5_000);
        s.mean_threads - s.cpu_utilization * 2.0
    };
    assert!(waits(StealSize::HalfNow).abs() < 1e-9);
    assert!(waits(StealSize::LastSplit) > 1e-3);
}
