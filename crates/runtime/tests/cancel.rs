//! Cancelling one request through its handle: a running request stops at its next unit
//! boundary, a waiting one never runs, a merge that checks stops within it, and a
//! handle made to cancel on drop does so when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tailor_core::{Job, Policy};
use tailor_runtime::{BoostMode, RequestError, Runtime, RuntimeConfig, Shutdown};

fn busy(us: u64) {
    let end = Instant::now() + Duration::from_micros(us);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// `units` units of `unit_us`, counting how many ran, and a merge of `merge_us` that
/// checks for a stop every 100 us.
struct Counted {
    units: usize,
    unit_us: u64,
    merge_us: u64,
    ran: Arc<AtomicUsize>,
}

impl Job for Counted {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        self.units
    }
    fn run(&self, _: usize) {
        busy(self.unit_us);
        self.ran.fetch_add(1, Ordering::Relaxed);
    }
    fn merge(&self, _: Vec<()>) {
        busy(self.merge_us);
    }
    fn merge_or_stop(&self, _: Vec<()>, stop: &dyn Fn() -> bool) -> Option<()> {
        let end = Instant::now() + Duration::from_micros(self.merge_us);
        while Instant::now() < end {
            if stop() {
                return None;
            }
            busy(100);
        }
        Some(())
    }
}

fn counted(units: usize, unit_us: u64, merge_us: u64) -> (Counted, Arc<AtomicUsize>) {
    let ran = Arc::new(AtomicUsize::new(0));
    (
        Counted {
            units,
            unit_us,
            merge_us,
            ran: ran.clone(),
        },
        ran,
    )
}

fn runtime(workers: usize) -> Runtime {
    let mut c = RuntimeConfig::new(2, Policy::Seq);
    c.boost_mode = Some(BoostMode::Unavailable);
    c.workers = Some(workers);
    Runtime::start(c).unwrap()
}

#[test]
fn a_cancelled_request_stops_at_its_next_unit_boundary() {
    let rt = runtime(1);
    // 2 s of work in 1 ms units.
    let (job, ran) = counted(2000, 1000, 0);
    let handle = rt.submit(job).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let cancelled = Instant::now();
    handle.cancel();
    assert_eq!(handle.wait().unwrap_err(), RequestError::Cancelled);
    // It resolved within a few units, far from the 2 s the work would take.
    assert!(
        cancelled.elapsed() < Duration::from_millis(500),
        "{:?}",
        cancelled.elapsed()
    );
    assert!(
        ran.load(Ordering::Relaxed) < 1000,
        "{} units ran",
        ran.load(Ordering::Relaxed)
    );
    // The worker is free for the next request at once.
    let (next, _) = counted(1, 1000, 0);
    let started = Instant::now();
    rt.submit(next).unwrap().wait().unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.completed, m.cancelled), (1, 1));
}

#[test]
fn a_waiting_request_that_is_cancelled_never_runs() {
    let rt = runtime(1);
    let (long, _) = counted(100, 1000, 0);
    let first = rt.submit(long).unwrap();
    let (waiting, ran) = counted(10, 1000, 0);
    let second = rt.submit(waiting).unwrap();
    second.cancel();
    first.wait().unwrap();
    assert_eq!(second.wait().unwrap_err(), RequestError::Cancelled);
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    rt.shutdown(Shutdown::Drain);
}

#[test]
fn a_merge_that_checks_stops_within_it() {
    let rt = runtime(1);
    // No units: 2 s of sequential merge.
    let (job, _) = counted(0, 0, 2_000_000);
    let handle = rt.submit(job).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let cancelled = Instant::now();
    handle.cancel();
    assert_eq!(handle.wait().unwrap_err(), RequestError::Cancelled);
    assert!(cancelled.elapsed() < Duration::from_millis(500));
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!(m.cancelled, 1);
}

#[test]
fn dropping_a_cancel_on_drop_handle_cancels_and_a_plain_one_does_not() {
    let rt = runtime(2);
    let (job, ran) = counted(2000, 1000, 0);
    drop(rt.submit(job).unwrap().cancel_on_drop());
    let (plain, plain_ran) = counted(20, 1000, 0);
    drop(rt.submit(plain).unwrap());
    let m = rt.shutdown(Shutdown::Drain).metrics;
    assert_eq!((m.completed, m.cancelled), (1, 1));
    assert!(ran.load(Ordering::Relaxed) < 1000);
    assert_eq!(plain_ran.load(Ordering::Relaxed), 20);
}
