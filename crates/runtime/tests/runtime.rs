//! Integration tests of the runtime, by feature: results, failures, admission, shutdown,
//! FM's self-scheduling and admission, boosting, the async handle, metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tailor_core::{IntervalTable, Job, Policy};
use tailor_runtime::{BoostMode, RequestError, Runtime, RuntimeConfig, Shutdown, SubmitError};

/// Busy-waits: CPU-bound like the real workloads, independent of calibration.
fn busy(us: u64) {
    let end = Instant::now() + Duration::from_micros(us);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A request of `units` units of `unit_us` each, returning the unit indices it merged.
struct Spin {
    units: usize,
    unit_us: u64,
    panic_at: Option<usize>,
}

impl Spin {
    fn new(units: usize, unit_us: u64) -> Spin {
        Spin {
            units,
            unit_us,
            panic_at: None,
        }
    }
}

impl Job for Spin {
    type Part = usize;
    type Output = Vec<usize>;
    fn units(&self) -> usize {
        self.units
    }
    fn run(&self, unit: usize) -> usize {
        if self.panic_at == Some(unit) {
            panic!("unit {unit} failed");
        }
        busy(self.unit_us);
        unit
    }
    fn merge(&self, parts: Vec<usize>) -> Vec<usize> {
        parts
    }
    fn demand_hint_ms(&self) -> Option<f64> {
        Some(self.units as f64 * self.unit_us as f64 / 1000.0)
    }
}

fn config(cores: usize, policy: Policy) -> RuntimeConfig {
    let mut c = RuntimeConfig::new(cores, policy);
    c.boost_mode = Some(BoostMode::Unavailable);
    c
}

/// The FM paper's runtime (§4.2): no core guard, so threads may outnumber the cores.
fn paper(cores: usize, policy: Policy) -> RuntimeConfig {
    let mut c = config(cores, policy);
    c.guard = false;
    c
}

fn fm_table(rows: Vec<(Vec<f64>, bool)>) -> Arc<IntervalTable> {
    let n = rows[0].0.len();
    Arc::new(IntervalTable::from_schedules(n, rows))
}

// ---------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------

#[test]
fn parts_are_merged_in_unit_order_at_any_degree() {
    for policy in [Policy::Seq, Policy::Fix { degree: 3 }] {
        let rt = Runtime::start(config(2, policy)).unwrap();
        let handles: Vec<_> = (0..20)
            .map(|_| rt.submit(Spin::new(17, 50)).unwrap())
            .collect();
        for h in handles {
            let done = h.wait().unwrap();
            assert_eq!(done.output, (0..17).collect::<Vec<_>>());
            assert!(done.timing.finish >= done.timing.start);
        }
        let m = rt.shutdown(Shutdown::Drain).metrics;
        assert_eq!(m.completed, 20);
        assert_eq!(m.degree_counts.iter().sum::<u64>(), 20);
        assert_eq!(m.load, 0);
    }
}

/// The handle resolves only after the request is counted and profiled, so a submitter
/// that has its result reads a metrics and a profile that include it.
#[test]
fn a_resolved_request_is_already_counted_and_profiled() {
    for policy in [Policy::Seq, Policy::Fix { degree: 2 }] {
        let rt = Runtime::start(config(2, policy.clone())).unwrap();
        for i in 1..=200u64 {
            rt.submit(Spin::new(2, 1)).unwrap().wait().unwrap();
            assert_eq!(rt.metrics().completed, i, "{policy:?}");
            assert_eq!(rt.served().len() as u64, i, "{policy:?}");
        }
        rt.shutdown(Shutdown::Drain);
    }
}

#[test]
fn a_fixed_degree_uses_that_many_threads() {
    let rt = Runtime::start(config(4, Policy::Fix { degree: 3 })).unwrap();
    let done = rt.submit(Spin::new(30, 300)).unwrap().wait().unwrap();
    assert_eq!(done.timing.max_degree, 3);
    assert!((done.timing.mean_degree - 3.0).abs() < 1e-9);
    let seq = Runtime::start(config(4, Policy::Seq)).unwrap();
    let alone = seq.submit(Spin::new(30, 300)).unwrap().wait().unwrap();
    assert_eq!(alone.timing.max_degree, 1);
}

#[test]
fn requests_without_units_still_merge() {
    let rt = Runtime::start(config(2, Policy::Fix { degree: 2 })).unwrap();
    let done = rt.submit(Spin::new(0, 10)).unwrap().wait().unwrap();
    assert!(done.output.is_empty());
}

/// A request whose merge does all the work, as tantivy's own executor peer does.
struct SlowMerge(u64);

impl Job for SlowMerge {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        0
    }
    fn run(&self, _: usize) {}
    fn merge(&self, _: Vec<()>) {
        busy(self.0);
    }
}

#[test]
fn the_latency_includes_the_merge() {
    let rt = Runtime::start(config(2, Policy::Seq)).unwrap();
    let submitted = Instant::now();
    let done = rt.submit(SlowMerge(20_000)).unwrap().wait().unwrap();
    // The merge ran for at least 20 ms before the result was ready.
    assert!(done.timing.finish >= submitted + Duration::from_millis(20));
    assert!(done.timing.latency_ms() >= 20.0);
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert!(m.latency_ms.max >= 20.0, "{:?}", m.latency_ms);
}

// ---------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------

#[test]
fn a_panicking_unit_fails_only_its_request() {
    let rt = Runtime::start(config(2, Policy::Fix { degree: 2 })).unwrap();
    let bad = rt
        .submit(Spin {
            panic_at: Some(3),
            ..Spin::new(10, 100)
        })
        .unwrap();
    let good: Vec<_> = (0..10)
        .map(|_| rt.submit(Spin::new(5, 100)).unwrap())
        .collect();
    match bad.wait() {
        Err(RequestError::Panicked(m)) => assert!(m.contains("unit 3 failed"), "{m}"),
        other => panic!("expected a panic, got {other:?}"),
    }
    for h in good {
        assert_eq!(h.wait().unwrap().output.len(), 5);
    }
    // The runtime keeps serving after the panic.
    assert!(rt.submit(Spin::new(2, 10)).unwrap().wait().is_ok());
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.failed, m.completed), (1, 11));
}

#[test]
fn a_full_queue_refuses_beyond_its_bound() {
    let mut c = config(1, Policy::Seq);
    c.workers = Some(1);
    c.queue_bound = 2;
    let rt = Runtime::start(c).unwrap();
    let running = rt.submit(Spin::new(20, 1000)).unwrap();
    let queued: Vec<_> = (0..2)
        .map(|_| rt.submit(Spin::new(1, 10)).unwrap())
        .collect();
    assert_eq!(
        rt.submit(Spin::new(1, 10)).err(),
        Some(SubmitError::QueueFull)
    );
    assert!(running.wait().is_ok());
    for h in queued {
        assert!(h.wait().is_ok());
    }
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.completed, m.rejected), (3, 1));
}

#[test]
fn shutdown_drains_or_cancels_and_loses_nothing() {
    // Drain: everything accepted completes.
    let mut c = config(1, Policy::Seq);
    c.workers = Some(1);
    let rt = Runtime::start(c.clone()).unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| rt.submit(Spin::new(5, 500)).unwrap())
        .collect();
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!(m.completed, 6);
    assert!(handles.into_iter().all(|h| h.wait().is_ok()));

    // Cancel: waiting and running requests resolve as cancelled; none is lost.
    let rt = Runtime::start(c).unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| rt.submit(Spin::new(50, 1000)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(5));
    let m = rt.shutdown(Shutdown::Cancel).metrics;
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.wait()).collect();
    let cancelled = outcomes
        .iter()
        .filter(|o| matches!(o, Err(RequestError::Cancelled)))
        .count();
    assert!(cancelled >= 5, "{outcomes:?}");
    assert_eq!(m.completed + m.cancelled + m.failed, 6);
    assert_eq!(m.cancelled as usize, cancelled);
}

#[test]
fn submissions_after_shutdown_begins_are_refused() {
    let rt = Arc::new(Runtime::start(config(1, Policy::Seq)).unwrap());
    let rt2 = rt.clone();
    drop(rt2);
    let rt = Arc::try_unwrap(rt).ok().unwrap();
    let report = rt.shutdown(Shutdown::Drain);
    assert_eq!(report.metrics.load, 0);
}

// ---------------------------------------------------------------------------------------
// FM: self-scheduling and admission
// ---------------------------------------------------------------------------------------

#[test]
fn fm_raises_the_degree_as_the_request_runs() {
    // Load 1: degree 1 for 10 ms, degree 2 for 10 ms, then 3.
    let table = fm_table(vec![(vec![0.0, 10.0, 10.0], false)]);
    let rt = Runtime::start(config(
        4,
        Policy::Fm {
            table,
            boost: false,
        },
    ))
    .unwrap();
    let done = rt.submit(Spin::new(200, 250)).unwrap().wait().unwrap();
    // 50 ms of work outlasts both intervals. (Timing belongs to benchmarks, not tests:
    // only the degree reached is checked.)
    assert_eq!(done.timing.max_degree, 3);
    let mean = done.timing.mean_degree;
    assert!(mean > 1.0 && mean < 3.0, "mean degree {mean}");
    // A short request finishes before the first raise.
    let short = rt.submit(Spin::new(4, 250)).unwrap().wait().unwrap();
    assert_eq!(short.timing.max_degree, 1);
}

#[test]
fn fm_delays_admission_by_v0_and_admits_on_exit() {
    let table = fm_table(vec![
        (vec![0.0, 100.0], false),
        (vec![20.0, 100.0], false),
        (vec![100.0, 100.0], true),
    ]);
    let rt = Runtime::start(paper(
        4,
        Policy::Fm {
            table,
            boost: false,
        },
    ))
    .unwrap();
    let first = rt.submit(Spin::new(40, 1000)).unwrap();
    let second = rt.submit(Spin::new(1, 100)).unwrap();
    let third = rt.submit(Spin::new(1, 100)).unwrap();
    let (a, b, c) = (
        first.wait().unwrap(),
        second.wait().unwrap(),
        third.wait().unwrap(),
    );
    let waited = b.timing.start.duration_since(b.timing.arrival);
    assert!(waited >= Duration::from_millis(20), "v0 wait {waited:?}");
    // The third waited for an exit: the second's (it finishes first, after its v0).
    let first_exit = a.timing.finish.min(b.timing.finish);
    assert!(c.timing.start >= first_exit, "admitted on the first exit");
}

#[test]
fn an_admit_on_exit_first_row_serves_every_request() {
    let table = fm_table(vec![(vec![100.0, 0.0], true), (vec![100.0, 0.0], true)]);
    let rt = Runtime::start(config(
        2,
        Policy::Fm {
            table,
            boost: false,
        },
    ))
    .unwrap();
    let handles: Vec<_> = (0..20)
        .map(|_| rt.submit(Spin::new(2, 100)).unwrap())
        .collect();
    assert!(handles.into_iter().all(|h| h.wait().is_ok()));
}

#[test]
fn boosting_keeps_boosted_threads_below_the_cores() {
    // Every request starts at the maximum degree 2; with 3 cores one at a time is boosted.
    let table = fm_table(vec![(vec![0.0, 0.0], false)]);
    let rt = Runtime::start(paper(3, Policy::Fm { table, boost: true })).unwrap();
    let handles: Vec<_> = (0..12)
        .map(|_| rt.submit(Spin::new(8, 300)).unwrap())
        .collect();
    let mut peak = 0;
    while !handles.iter().all(|h| h.is_done()) {
        peak = peak.max(rt.metrics().boosted_threads);
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(peak < 3, "boosted threads reached {peak}");
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.wait().unwrap()).collect();
    assert!(outcomes.iter().any(|d| d.timing.boosted));
    assert!(outcomes
        .iter()
        .all(|d| d.output == (0..8).collect::<Vec<_>>()));
    assert_eq!(rt.metrics().boosted_threads, 0);
}

#[test]
fn a_freed_boost_slot_goes_to_a_request_already_running() {
    // Both requests start at the maximum degree 2; on 3 cores only one can be boosted.
    // The first takes the slot; the second, ten times longer, starts while the slot is
    // taken and waits. When the first leaves, the second is boosted mid-run (FM paper
    // §4.1: the oldest threads are boosted), moving to the boost pool between units.
    let table = fm_table(vec![(vec![0.0, 0.0], false)]);
    let rt = Runtime::start(paper(3, Policy::Fm { table, boost: true })).unwrap();
    let first = rt.submit(Spin::new(10, 1000)).unwrap();
    let second = rt.submit(Spin::new(100, 1000)).unwrap();
    let first = first.wait().unwrap();
    let second = second.wait().unwrap();
    assert!(first.timing.boosted);
    assert!(
        second.timing.boosted,
        "the freed slot went to the running request"
    );
    assert_eq!(second.output, (0..100).collect::<Vec<_>>());
    assert_eq!(rt.metrics().boosted_threads, 0);
}

// ---------------------------------------------------------------------------------------
// FM's core guard (docs/guard.md)
// ---------------------------------------------------------------------------------------

/// A table that sends every request to degree `n` at once, at every load.
fn all_at_once(n: usize) -> Arc<IntervalTable> {
    fm_table(vec![(vec![0.0; n], false)])
}

#[test]
fn the_guard_keeps_request_threads_within_the_cores() {
    // A burst of requests, each asking for 16 threads from its start, on 2 cores.
    let rt = Runtime::start(config(
        2,
        Policy::Fm {
            table: all_at_once(16),
            boost: true,
        },
    ))
    .unwrap();
    let handles: Vec<_> = (0..30)
        .map(|_| rt.submit(Spin::new(16, 100)).unwrap())
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.wait().unwrap()).collect();
    assert!(outcomes
        .iter()
        .all(|d| d.output == (0..16).collect::<Vec<_>>()));
    // The counters settle after the handles resolve: read them once the runtime drained.
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert!(
        m.peak_threads_in_use <= 2,
        "{} threads at once",
        m.peak_threads_in_use
    );
    assert_eq!(m.completed, 30);
    assert!(outcomes
        .iter()
        .all(|d| d.timing.max_degree <= 2 && !d.timing.boosted));
    // Without the guard the same burst runs more threads than cores.
    let rt = Runtime::start(paper(
        2,
        Policy::Fm {
            table: all_at_once(16),
            boost: false,
        },
    ))
    .unwrap();
    let handles: Vec<_> = (0..30)
        .map(|_| rt.submit(Spin::new(16, 100)).unwrap())
        .collect();
    assert!(handles.into_iter().all(|h| h.wait().is_ok()));
    assert!(rt.shutdown(Shutdown::Drain).metrics.peak_threads_in_use > 2);
}

#[test]
fn a_waiting_request_takes_a_helpers_core_between_units() {
    // On 2 cores the first request runs at degree 2 (40 units of 1 ms); the second
    // arrives while both cores are taken and starts at the helper's next unit boundary,
    // long before the first ends, at degree 1.
    let rt = Runtime::start(config(
        2,
        Policy::Fm {
            table: all_at_once(2),
            boost: false,
        },
    ))
    .unwrap();
    let first = rt.submit(Spin::new(40, 1000)).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let second = rt.submit(Spin::new(4, 1000)).unwrap();
    let (a, b) = (first.wait().unwrap(), second.wait().unwrap());
    assert_eq!(a.timing.max_degree, 2);
    assert!(
        b.timing.start < a.timing.finish,
        "the second waited for the first to end"
    );
    assert_eq!(
        b.timing.max_degree, 1,
        "a request from the backlog starts sequentially"
    );
    assert!(a.timing.mean_degree < 2.0, "the first gave a core away");
}

#[test]
fn no_helper_is_sent_where_no_unit_is_left() {
    // Degree 8 asked for a 3-unit request on 8 cores: 2 helpers at most (3 units, one
    // for the first thread).
    let rt = Runtime::start(config(
        8,
        Policy::Fm {
            table: all_at_once(8),
            boost: false,
        },
    ))
    .unwrap();
    let done = rt.submit(Spin::new(3, 2000)).unwrap().wait().unwrap();
    assert!(done.timing.max_degree <= 3, "{}", done.timing.max_degree);
    assert_eq!(done.output, vec![0, 1, 2]);
}

#[test]
fn the_guard_cancels_waiting_requests_at_shutdown() {
    let rt = Runtime::start(config(
        1,
        Policy::Fm {
            table: all_at_once(2),
            boost: false,
        },
    ))
    .unwrap();
    let handles: Vec<_> = (0..5)
        .map(|_| rt.submit(Spin::new(20, 1000)).unwrap())
        .collect();
    let report = rt.shutdown(Shutdown::Cancel);
    let m = report.metrics;
    assert_eq!(m.completed + m.cancelled, 5);
    assert!(m.cancelled >= 1);
    let cancelled = handles
        .into_iter()
        .map(|h| h.wait())
        .filter(|r| matches!(r, Err(RequestError::Cancelled)))
        .count();
    assert_eq!(cancelled as u64, m.cancelled);
}

// ---------------------------------------------------------------------------------------
// The handle as a future
// ---------------------------------------------------------------------------------------

#[test]
fn the_handle_can_be_awaited() {
    use std::future::Future;
    use std::task::{Context, Poll, Wake, Waker};

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let rt = Runtime::start(config(2, Policy::Seq)).unwrap();
    let mut handle = Box::pin(rt.submit(Spin::new(3, 100)).unwrap());
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let done = loop {
        match handle.as_mut().poll(&mut cx) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => std::thread::park_timeout(Duration::from_millis(50)),
        }
    };
    assert_eq!(done.output, vec![0, 1, 2]);
}

// ---------------------------------------------------------------------------------------
// Injected stalls (issue #24)
// ---------------------------------------------------------------------------------------

#[test]
fn stalls_hold_every_request_at_a_unit_boundary_and_all_complete() {
    // Stalls of 20 ms with seeded exponential gaps of mean 5 ms between them (40 stalls
    // a second): 20 requests of 1 ms (ten 0.1 ms units) on one worker, about 20 ms of
    // work, take longer by the stalls that begin while they run; every one completes.
    let mut c = config(1, Policy::Seq);
    c.noise = Some((
        tailor_core::Noise {
            rate_per_s: 200.0,
            length_ms: 20.0,
        },
        7,
    ));
    let rt = Runtime::start(c).unwrap();
    let started = Instant::now();
    let handles: Vec<_> = (0..20)
        .map(|_| rt.submit(Spin::new(10, 100)).unwrap())
        .collect();
    for h in handles {
        assert_eq!(h.wait().unwrap().output.len(), 10);
    }
    let took = started.elapsed();
    // With this seed the first two stalls begin within the 20 ms of work: at least
    // 20 + 2 x 20 ms (measured: 60.2-60.4 ms).
    assert!(rt.stalls() >= 2, "{} stalls", rt.stalls());
    assert!(
        took >= Duration::from_millis(50),
        "took {took:?} with stalls"
    );
    // Shutdown ends the stall thread at once.
    let stopping = Instant::now();
    rt.shutdown(Shutdown::Drain);
    assert!(stopping.elapsed() < Duration::from_secs(5));
}

/// `set_policy` swaps FM's table for the requests that follow (issue 41's re-planning),
/// counts the swap, and refuses a policy that runs another way or needs a larger pool.
#[test]
fn a_swapped_table_takes_over_the_next_requests() {
    // Degree 1 for the first second of every request, then degree 2.
    let slow = fm_table(vec![(vec![0.0, 1000.0], false)]);
    let rt = Runtime::start(config(
        2,
        Policy::Fm {
            table: slow,
            boost: true,
        },
    ))
    .unwrap();
    let before = rt.submit(Spin::new(16, 1000)).unwrap().wait().unwrap();
    assert_eq!(before.timing.max_degree, 1);
    assert_eq!(rt.policy_swaps().0, 0);

    let eager = all_at_once(2);
    rt.set_policy(Policy::Fm {
        table: eager.clone(),
        boost: true,
    })
    .unwrap();
    assert!(matches!(&*rt.policy(), Policy::Fm { table, .. } if Arc::ptr_eq(table, &eager)));
    let (swaps, age) = rt.policy_swaps();
    assert_eq!(swaps, 1);
    assert!(age < Duration::from_secs(5));
    let after = rt.submit(Spin::new(16, 1000)).unwrap().wait().unwrap();
    assert_eq!(after.timing.max_degree, 2, "the new table's helper joined");
    assert_eq!(after.output, (0..16).collect::<Vec<_>>());

    let refused = rt.set_policy(Policy::Seq).unwrap_err();
    assert!(
        refused.to_string().contains("runs another way"),
        "{refused}"
    );
    let wider = rt
        .set_policy(Policy::Fm {
            table: all_at_once(4),
            boost: true,
        })
        .unwrap_err();
    assert!(wider.to_string().contains("maximum degree 4"), "{wider}");
    assert_eq!(rt.policy_swaps().0, 1, "refusals swap nothing");
    rt.shutdown(Shutdown::Drain);
}
