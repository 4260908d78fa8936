//! The rolling profile of served requests: each one's unit times, merge and degree.
//!
//! Issue 41's continuous profiling. The FM paper profiles offline, each request alone at
//! every degree (§6.1); a running service already sees every request's work, one unit at a
//! time, so the runtime keeps the last requests' parts here and a profile can be rebuilt
//! from them at any time (`tailor_bench::projected_profile` predicts the higher degrees by
//! list scheduling). Recording is two clock reads per unit and one short lock per request.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Instant;

/// One served request's parts, as its threads measured them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedRequest {
    /// The arrival its latency counts from (the intended one, if the submitter gave one):
    /// with it a caller matches a served request to its own record.
    pub arrival: Instant,
    /// Each unit's time in ms, in unit order.
    pub units_ms: Vec<f64>,
    /// Its merge's time in ms.
    pub merge_ms: f64,
    /// The highest degree it ran at.
    pub max_degree: usize,
    /// Its latency in ms, from its arrival.
    pub latency_ms: f64,
}

impl ServedRequest {
    /// Its sequential work: the units and the merge.
    pub fn work_ms(&self) -> f64 {
        self.units_ms.iter().sum::<f64>() + self.merge_ms
    }
}

/// The last `window` served requests.
#[derive(Debug)]
pub(crate) struct ServedLog {
    window: usize,
    log: Mutex<VecDeque<ServedRequest>>,
}

impl ServedLog {
    pub(crate) fn new(window: usize) -> ServedLog {
        ServedLog {
            window,
            log: Mutex::new(VecDeque::with_capacity(window.min(1 << 16))),
        }
    }

    /// Whether requests are recorded at all.
    pub(crate) fn on(&self) -> bool {
        self.window > 0
    }

    /// Keeps `r`, dropping the oldest past the window.
    pub(crate) fn push(&self, r: ServedRequest) {
        if self.window == 0 {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() == self.window {
            log.pop_front();
        }
        log.push_back(r);
    }

    /// The requests kept, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<ServedRequest> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(ms: f64) -> ServedRequest {
        ServedRequest {
            arrival: Instant::now(),
            units_ms: vec![ms, ms],
            merge_ms: 0.5,
            max_degree: 1,
            latency_ms: 2.0 * ms + 0.5,
        }
    }

    #[test]
    fn the_window_keeps_the_newest() {
        let log = ServedLog::new(3);
        for i in 0..5 {
            log.push(served(f64::from(i)));
        }
        let kept: Vec<f64> = log.snapshot().iter().map(|r| r.units_ms[0]).collect();
        assert_eq!(kept, vec![2.0, 3.0, 4.0]);
        assert_eq!(log.snapshot()[0].work_ms(), 4.5);
    }

    #[test]
    fn a_window_of_zero_keeps_nothing() {
        let log = ServedLog::new(0);
        assert!(!log.on());
        log.push(served(1.0));
        assert!(log.snapshot().is_empty());
    }
}
