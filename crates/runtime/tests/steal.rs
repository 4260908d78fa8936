//! The work-stealing executor: fork-join results, admission policies, tail-control's
//! marking, failures and shutdown.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tailor_core::{
    Dissolve, Job, StealPolicy, TailControlRow, TailControlTable, STEAL_POLICY_NAMES,
    TAIL_CONTROL_TABLE_KIND,
};
use tailor_runtime::steal::{StealConfig, StealRuntime, Worker};
use tailor_runtime::{Handle, RequestError, Shutdown, SubmitError};

fn table(threshold_ms: f64) -> Arc<TailControlTable> {
    Arc::new(TailControlTable {
        kind: TAIL_CONTROL_TABLE_KIND.into(),
        target_ms: 10.0,
        rps: 100.0,
        cores: 2,
        rows: vec![TailControlRow {
            active: 1,
            threshold_ms,
            expected_misses: 1.0,
        }],
    })
}

fn every_policy(threshold_ms: f64) -> Vec<StealPolicy> {
    let t = table(threshold_ms);
    STEAL_POLICY_NAMES
        .iter()
        .map(|name| StealPolicy::parse(name, Some(&t)).unwrap())
        .collect()
}

fn start(cores: usize, policy: StealPolicy) -> StealRuntime {
    StealRuntime::start(StealConfig::new(cores, policy)).unwrap()
}

fn fib(w: &Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    if n < 10 {
        return fib(w, n - 1) + fib(w, n - 2);
    }
    let (a, b) = w.join(|w| fib(w, n - 1), move |w| fib(w, n - 2));
    a + b
}

fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn fork_join_results_are_right_under_every_policy() {
    for policy in every_policy(1.0) {
        let name = policy.name();
        let rt = start(3, policy);
        let handles: Vec<_> = (0..40u64)
            .map(|i| {
                rt.submit(move |w: &Worker| {
                    let data: Arc<Vec<u64>> = Arc::new((0..10_000 + i).collect());
                    let sum = Arc::new(AtomicUsize::new(0));
                    let body = {
                        let (data, sum) = (data.clone(), sum.clone());
                        Arc::new(move |r: std::ops::Range<usize>, _: &Worker| {
                            let s: u64 = data[r].iter().sum();
                            sum.fetch_add(s as usize, Ordering::Relaxed);
                        })
                    };
                    w.parallel_for(0..data.len(), 64, &body);
                    (fib(w, 18 + i % 3), sum.load(Ordering::Relaxed) as u64)
                })
                .unwrap()
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            let i = i as u64;
            let done = h.wait().unwrap();
            let n = 10_000 + i;
            let expect_fib = [2584u64, 4181, 6765][(i % 3) as usize];
            assert_eq!(
                done.output,
                (expect_fib, n * (n - 1) / 2),
                "{name} request {i}"
            );
            assert!(done.timing.max_degree >= 1 && done.timing.max_degree <= 3);
        }
        let report = rt.shutdown(Shutdown::Drain);
        assert_eq!(report.metrics.completed, 40, "{name}");
        assert_eq!(report.metrics.load, 0, "{name}");
    }
}

#[test]
fn a_panic_fails_only_its_request_even_in_a_stolen_half() {
    let rt = start(2, StealPolicy::StealFirst);
    let bad = rt
        .submit(|w: &Worker| {
            w.join(
                |_| spin_for(Duration::from_millis(20)),
                |_| -> u32 { panic!("boom in the forked half") },
            )
        })
        .unwrap();
    let good = rt.submit(|w: &Worker| fib(w, 20)).unwrap();
    match bad.wait() {
        Err(RequestError::Panicked(m)) => assert!(m.contains("boom"), "{m}"),
        other => panic!("expected a panic, got {other:?}"),
    }
    assert_eq!(good.wait().unwrap().output, 6765);
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.completed, m.failed), (1, 1));
}

#[test]
fn a_long_request_is_parallelized_when_alone() {
    let rt = start(2, StealPolicy::StealFirst);
    let done = submit_units(&rt, 40, Duration::from_millis(2))
        .wait()
        .unwrap();
    assert_eq!(done.timing.max_degree, 2, "the idle worker steals");
}

#[test]
fn tail_control_marks_a_request_past_its_threshold_and_still_finishes_it() {
    // Threshold 5 ms at every load. A request of two 30 ms halves runs on two of three
    // workers; the idle third one checks for a pileup before each steal attempt and
    // marks it once its processed time passes 5 ms.
    let rt = start(3, StealPolicy::TailControl(table(5.0)));
    let h = rt
        .submit(|w: &Worker| {
            w.join(
                |_| spin_for(Duration::from_millis(30)),
                |_| spin_for(Duration::from_millis(30)),
            );
            7
        })
        .unwrap();
    assert_eq!(h.wait().unwrap().output, 7);
    assert_eq!(rt.serialized(), 1);
    // A request far under the threshold is never marked (200 ms leaves room for a
    // preempted worker on a busy machine).
    let rt = start(3, StealPolicy::TailControl(table(200.0)));
    let short = rt
        .submit(|w: &Worker| {
            w.join(
                |_| spin_for(Duration::from_micros(500)),
                |_| spin_for(Duration::from_micros(500)),
            )
        })
        .unwrap();
    short.wait().unwrap();
    assert_eq!(rt.serialized(), 0);
}

/// Submits a request that spins `unit` in each of `units` units of one parallel-for.
fn submit_units(rt: &StealRuntime, units: usize, unit: Duration) -> Handle<()> {
    rt.submit(move |w: &Worker| {
        let body = Arc::new(move |_: std::ops::Range<usize>, _: &Worker| spin_for(unit));
        w.parallel_for(0..units, 1, &body);
    })
    .unwrap()
}

/// Runs a 100-unit request of 2 ms units under tail-control with a 5 ms threshold on two
/// workers, and a one-unit request submitted 20 ms later; returns the units each worker
/// ran of the first (every unit must run exactly once) and the second one's latency.
fn marked_request_and_a_newcomer(dissolve: Dissolve) -> ([usize; 2], Duration) {
    let mut config = StealConfig::new(2, StealPolicy::TailControl(table(5.0)));
    config.dissolve = dissolve;
    let rt = StealRuntime::start(config).unwrap();
    let ran: Arc<Vec<AtomicUsize>> = Arc::new((0..100).map(|_| AtomicUsize::new(0)).collect());
    let by_worker: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let long = {
        let (ran, by_worker) = (ran.clone(), by_worker.clone());
        rt.submit(move |w: &Worker| {
            let body = Arc::new(move |r: std::ops::Range<usize>, w: &Worker| {
                for i in r {
                    spin_for(Duration::from_millis(2));
                    ran[i].fetch_add(1, Ordering::Relaxed);
                    by_worker[w.index()].fetch_add(1, Ordering::Relaxed);
                }
            });
            w.parallel_for(0..100, 1, &body);
        })
        .unwrap()
    };
    std::thread::sleep(Duration::from_millis(20));
    let short = submit_units(&rt, 1, Duration::from_millis(1));
    let short = short.wait().unwrap().timing.latency_ms();
    long.wait().unwrap();
    assert!(
        ran.iter().all(|r| r.load(Ordering::Relaxed) == 1),
        "each unit runs once"
    );
    assert_eq!(rt.serialized(), 1);
    let units = [0, 1].map(|i| by_worker[i].load(Ordering::Relaxed));
    (units, Duration::from_secs_f64(short / 1000.0))
}

#[test]
fn prompt_dissolving_frees_a_marked_requests_thieves_for_other_requests() {
    // Marked after about 2.5 ms, the long request keeps one worker; the other hands its
    // part back at its next unit and is free when the newcomer arrives. Lazily, it keeps
    // its half (about 50 units, 100 ms) and the newcomer waits for it.
    let (prompt_units, prompt_wait) = marked_request_and_a_newcomer(Dissolve::Prompt);
    let (lazy_units, lazy_wait) = marked_request_and_a_newcomer(Dissolve::Lazy);
    assert!(
        prompt_units.iter().min().unwrap() <= &10,
        "one worker did almost all of it: {prompt_units:?}"
    );
    assert!(
        lazy_units.iter().min().unwrap() >= &25,
        "both kept their halves: {lazy_units:?}"
    );
    assert!(prompt_wait < Duration::from_millis(30), "{prompt_wait:?}");
    assert!(lazy_wait > Duration::from_millis(40), "{lazy_wait:?}");
}

struct PanicsInUnits;

impl Job for PanicsInUnits {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        panic!("units() failed")
    }
    fn run(&self, _: usize) {}
    fn merge(&self, _: Vec<()>) {}
}

#[test]
fn a_panic_anywhere_in_a_job_fails_it_and_the_executor_keeps_going() {
    let rt = start(2, StealPolicy::StealFirst);
    let bad = rt.submit_job(PanicsInUnits, Instant::now(), true).unwrap();
    match bad.wait() {
        Err(RequestError::Panicked(m)) => assert!(m.contains("units() failed"), "{m}"),
        other => panic!("expected a panic, got {other:?}"),
    }
    // Both workers are still there, and shutdown returns.
    let handles: Vec<_> = (0..4)
        .map(|_| rt.submit(|w: &Worker| fib(w, 15)).unwrap())
        .collect();
    for h in handles {
        assert_eq!(h.wait().unwrap().output, 610);
    }
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.completed, m.failed, m.load), (4, 1, 0));
}

#[test]
fn dropping_the_executor_inside_a_request_does_not_hang() {
    let rt = Arc::new(start(2, StealPolicy::StealFirst));
    let inner = rt.clone();
    let h = rt.submit(move |_: &Worker| drop(inner)).unwrap();
    drop(rt);
    // The request's closure held the last reference, so the executor was dropped on a
    // worker: it must stop without waiting for that very request.
    h.wait().unwrap();
}

#[test]
fn an_empty_table_is_refused_at_start() {
    let mut t = (*table(1.0)).clone();
    t.rows.clear();
    let err = StealRuntime::start(StealConfig::new(2, StealPolicy::TailControl(Arc::new(t))));
    assert!(err.is_err());
}

#[test]
fn clairvoyant_serializes_large_requests_from_the_start() {
    let rt = start(2, StealPolicy::TailControlClairvoyant(table(5.0)));
    let body =
        Arc::new(|_: std::ops::Range<usize>, _: &Worker| spin_for(Duration::from_micros(500)));
    let large = {
        let body = body.clone();
        rt.submit_at(
            move |w: &Worker| w.parallel_for(0..40, 1, &body),
            Instant::now(),
            true,
            Some(20.0),
        )
        .unwrap()
    };
    assert_eq!(large.wait().unwrap().timing.max_degree, 1);
    let small = rt
        .submit_at(
            move |w: &Worker| w.parallel_for(0..8, 1, &body),
            Instant::now(),
            true,
            Some(4.0),
        )
        .unwrap();
    small.wait().unwrap();
    assert_eq!(rt.serialized(), 1);
}

struct Units {
    n: usize,
    joins: Arc<AtomicUsize>,
}

impl Job for Units {
    type Part = usize;
    type Output = usize;
    fn units(&self) -> usize {
        self.n
    }
    fn run(&self, unit: usize) -> usize {
        spin_for(Duration::from_micros(50));
        unit * unit
    }
    fn merge(&self, parts: Vec<usize>) -> usize {
        parts.iter().sum()
    }
    fn on_join(&self) {
        self.joins.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn jobs_run_as_a_parallel_for_then_their_merge() {
    let rt = start(2, StealPolicy::AdmitFirst);
    let joins = Arc::new(AtomicUsize::new(0));
    let h = rt
        .submit_job(
            Units {
                n: 100,
                joins: joins.clone(),
            },
            Instant::now(),
            true,
        )
        .unwrap();
    let done = h.wait().unwrap();
    assert_eq!(done.output, (0..100).map(|i| i * i).sum::<usize>());
    assert_eq!(joins.load(Ordering::Relaxed), done.timing.max_degree);
    let empty = rt
        .submit_job(
            Units {
                n: 0,
                joins: joins.clone(),
            },
            Instant::now(),
            true,
        )
        .unwrap();
    assert_eq!(empty.wait().unwrap().output, 0);
}

#[test]
fn every_request_completes_or_is_refused_and_cancel_resolves_the_rest() {
    let mut config = StealConfig::new(1, StealPolicy::StealFirst);
    config.queue_bound = 5;
    let rt = StealRuntime::start(config).unwrap();
    let mut handles = Vec::new();
    let mut refused = 0;
    for _ in 0..20 {
        match rt.submit(|_: &Worker| spin_for(Duration::from_millis(20))) {
            Ok(h) => handles.push(h),
            Err(SubmitError::QueueFull) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused >= 14, "only {refused} refused");
    rt.cancel_unfinished();
    assert!(matches!(
        rt.submit(|_: &Worker| ()),
        Err(SubmitError::ShuttingDown)
    ));
    let report = rt.shutdown(Shutdown::Cancel);
    let (mut ok, mut cancelled) = (0, 0);
    for h in handles {
        match h.wait() {
            Ok(_) => ok += 1,
            Err(RequestError::Cancelled) => cancelled += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let m = report.metrics;
    assert_eq!(ok + cancelled + refused, 20);
    assert_eq!(m.completed as usize, ok);
    assert_eq!(m.cancelled as usize, cancelled);
    assert_eq!(m.rejected as usize, refused + 1);
    assert!(cancelled >= 1);
}

#[test]
fn random_admit_spreads_requests_and_finishes_them_all() {
    let rt = start(3, StealPolicy::RandomAdmit);
    let handles: Vec<_> = (0..60)
        .map(|_| {
            rt.submit(|w: &Worker| {
                spin_for(Duration::from_micros(300));
                w.index()
            })
            .unwrap()
        })
        .collect();
    let mut by_worker = [0usize; 3];
    for h in handles {
        by_worker[h.wait().unwrap().output] += 1;
    }
    assert!(by_worker.iter().all(|&c| c > 0), "{by_worker:?}");
}
