//! Replica health in the front end: passive outlier ejection and active health checks.
//!
//! After [`CONSECUTIVE_FAILURES`] copies in a row get no good answer from a replica (it
//! could not be reached, broke off, or answered 5xx other than 503), or after
//! [`PROBE_FAILURES`] failed health checks in a row, the replica is ejected: no first copy
//! or reissue goes to it while its shard has another live replica. It comes back when a
//! health check passes, but not before its ejection time has passed; that time doubles
//! with each ejection, from [`BASE_EJECTION`] to at most [`MAX_EJECTION`], and resets once
//! the replica has stayed up for [`MAX_EJECTION`]. This is Envoy's outlier detection
//! (consecutive failures, an ejection time that grows with the ejections) with its active
//! health checking bringing hosts back; the constants are tailor's. A 503 is the replica
//! shedding load, not failing, and does not count.
//!
//! Bounds: under traffic a dead replica is ejected after [`CONSECUTIVE_FAILURES`] of its
//! copies fail (at 100 copies a second, 50 ms); without traffic within
//! `PROBE_FAILURES x (PROBE_INTERVAL + PROBE_TIMEOUT)`, 3 s. A restarted replica is back
//! within its ejection time plus one probe interval.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// Copies in a row without a good answer that eject a replica (Envoy's default for
/// consecutive 5xx).
pub(crate) const CONSECUTIVE_FAILURES: u32 = 5;
/// Failed health checks in a row that eject a replica.
pub(crate) const PROBE_FAILURES: u32 = 2;
/// The first ejection's length (chosen by hand: shorter than Envoy's 30 s, since a
/// health check has to pass as well before the replica is used again).
pub(crate) const BASE_EJECTION: Duration = Duration::from_secs(1);
/// The longest ejection.
pub(crate) const MAX_EJECTION: Duration = Duration::from_secs(30);
/// How often every replica's `/healthz` is asked.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long a health check may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// One replica's health.
#[derive(Debug)]
pub(crate) struct ReplicaHealth {
    up: AtomicBool,
    failures: AtomicU32,
    probe_failures: AtomicU32,
    /// When it was last ejected, how many times in a row, and when it last came back.
    ejection: Mutex<Ejection>,
    /// 1 while up, 0 while ejected (`tailor_fanout_replica_up`).
    gauge: Gauge,
    /// Ejections so far (`tailor_fanout_replica_ejections`).
    ejections: Counter,
}

#[derive(Debug, Default)]
struct Ejection {
    at: Option<Instant>,
    count: u32,
    back: Option<Instant>,
}

impl ReplicaHealth {
    pub(crate) fn new(gauge: Gauge, ejections: Counter) -> ReplicaHealth {
        gauge.set(1);
        ReplicaHealth {
            up: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            probe_failures: AtomicU32::new(0),
            ejection: Mutex::new(Ejection::default()),
            gauge,
            ejections,
        }
    }

    /// Whether copies may go to it.
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// A copy's outcome: a good answer, or none. Returns whether this ejected it.
    pub(crate) fn record(&self, good: bool) -> bool {
        if good {
            self.failures.store(0, Ordering::Release);
            return false;
        }
        let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        failures >= CONSECUTIVE_FAILURES && self.eject()
    }

    /// A health check's outcome at `now`. Returns `Some(true)` if it brought the replica
    /// back, `Some(false)` if it ejected it, `None` if nothing changed.
    pub(crate) fn probed(&self, good: bool, now: Instant) -> Option<bool> {
        if !good {
            let failures = self.probe_failures.fetch_add(1, Ordering::AcqRel) + 1;
            return (failures >= PROBE_FAILURES && self.eject()).then_some(false);
        }
        self.probe_failures.store(0, Ordering::Release);
        if self.is_up() {
            return None;
        }
        let mut e = self.ejection.lock().unwrap_or_else(|p| p.into_inner());
        let due = e.at.map_or(now, |at| at + ejection_time(e.count));
        if now < due {
            return None;
        }
        e.back = Some(now);
        self.failures.store(0, Ordering::Release);
        self.up.store(true, Ordering::Release);
        self.gauge.set(1);
        Some(true)
    }

    /// Ejects it unless it already is; returns whether it was up.
    fn eject(&self) -> bool {
        let mut e = self.ejection.lock().unwrap_or_else(|p| p.into_inner());
        if !self.up.swap(false, Ordering::AcqRel) {
            return false;
        }
        let now = Instant::now();
        // A replica that stayed up for the longest ejection starts over.
        if e.back
            .is_some_and(|b| now.duration_since(b) >= MAX_EJECTION)
        {
            e.count = 0;
        }
        e.count += 1;
        e.at = Some(now);
        self.gauge.set(0);
        self.ejections.inc();
        true
    }

    /// How long its current ejection lasts at least (zero while up).
    pub(crate) fn ejected_for(&self) -> Duration {
        if self.is_up() {
            return Duration::ZERO;
        }
        let e = self.ejection.lock().unwrap_or_else(|p| p.into_inner());
        ejection_time(e.count)
    }
}

/// The length of the `count`-th ejection in a row: doubling from the base, capped.
pub(crate) fn ejection_time(count: u32) -> Duration {
    let doublings = count.saturating_sub(1).min(16);
    (BASE_EJECTION * 2u32.pow(doublings)).min(MAX_EJECTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica() -> ReplicaHealth {
        ReplicaHealth::new(Gauge::default(), Counter::default())
    }

    #[test]
    fn consecutive_failures_eject_and_a_good_answer_resets_them() {
        let r = replica();
        for _ in 0..CONSECUTIVE_FAILURES - 1 {
            assert!(!r.record(false));
        }
        // A good answer resets the count.
        assert!(!r.record(true));
        for _ in 0..CONSECUTIVE_FAILURES - 1 {
            assert!(!r.record(false));
        }
        assert!(r.is_up());
        assert!(r.record(false));
        assert!(!r.is_up());
        assert!(!r.record(false), "already ejected");
        assert_eq!(r.gauge.get(), 0);
        assert_eq!(r.ejections.get(), 1);
    }

    #[test]
    fn a_passing_check_brings_it_back_only_after_its_ejection_time() {
        let r = replica();
        for _ in 0..CONSECUTIVE_FAILURES {
            r.record(false);
        }
        let now = Instant::now();
        assert_eq!(r.probed(true, now), None, "too early");
        assert_eq!(r.probed(true, now + BASE_EJECTION), Some(true));
        assert!(r.is_up());
        // Ejected again at once: the second ejection lasts twice as long.
        for _ in 0..CONSECUTIVE_FAILURES {
            r.record(false);
        }
        assert_eq!(r.ejected_for(), 2 * BASE_EJECTION);
        let later = Instant::now();
        assert_eq!(r.probed(true, later + BASE_EJECTION), None);
        assert_eq!(r.probed(true, later + 2 * BASE_EJECTION), Some(true));
    }

    #[test]
    fn failed_checks_eject_a_replica_without_traffic() {
        let r = replica();
        let now = Instant::now();
        assert_eq!(r.probed(false, now), None);
        assert_eq!(r.probed(false, now), Some(false));
        assert!(!r.is_up());
    }

    #[test]
    fn ejection_times_double_up_to_the_cap() {
        assert_eq!(ejection_time(1), BASE_EJECTION);
        assert_eq!(ejection_time(3), 4 * BASE_EJECTION);
        assert_eq!(ejection_time(40), MAX_EJECTION);
    }
}
