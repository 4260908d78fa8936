//! The hedging front end's memory of shard latencies, as tower's `Hedge` keeps it (the
//! live front end's `hedge:P`): per shard, a histogram of whole milliseconds that rotates
//! every period, the hedge delay read from the previous period's.
//!
//! Dean and Barroso's hedged request (CACM 2013) waits for the P-th percentile of the
//! expected latency. tower (0.5, `hedge/rotating_histogram.rs`, `hedge/mod.rs`) writes
//! each answered copy's latency, measured from that copy's own send and rounded up to a
//! millisecond, into the write histogram; the delay is the read histogram's P-th
//! percentile; every period the write histogram becomes the read one (after two periods
//! without a rotation both are cleared); no hedge goes out while the read histogram has
//! fewer than its minimum of points. A copy dropped by the select (the loser) records
//! nothing. This module is that, in simulated time.

use crate::time::SimTime;

/// One shard's rotating histogram of whole-millisecond latencies.
#[derive(Debug, Clone)]
pub(crate) struct RotatingLatencies {
    period_ms: f64,
    min_points: usize,
    last_rotation: SimTime,
    /// The previous period's latencies, sorted.
    read: Vec<u64>,
    /// This period's.
    write: Vec<u64>,
}

impl RotatingLatencies {
    pub(crate) fn new(period_ms: f64, min_points: usize) -> RotatingLatencies {
        RotatingLatencies {
            period_ms,
            min_points,
            last_rotation: SimTime::ZERO,
            read: Vec::new(),
            write: Vec::new(),
        }
    }

    fn rotate_to(&mut self, now: SimTime) {
        let rotations = ((now - self.last_rotation) / self.period_ms).floor();
        if rotations >= 2.0 {
            self.read.clear();
            self.write.clear();
        } else if rotations >= 1.0 {
            std::mem::swap(&mut self.read, &mut self.write);
            self.read.sort_unstable();
            self.write.clear();
        }
        if rotations >= 1.0 {
            self.last_rotation = self.last_rotation + rotations * self.period_ms;
        }
    }

    /// An answered copy's latency, from its own send, at `now`.
    pub(crate) fn record(&mut self, now: SimTime, latency_ms: f64) {
        self.rotate_to(now);
        // tower rounds up to whole milliseconds.
        self.write.push(latency_ms.max(0.0).ceil() as u64);
    }

    /// The hedge delay at `now`: the previous period's `percentile`-th latency, once it
    /// has the minimum of points.
    pub(crate) fn delay_ms(&mut self, now: SimTime, percentile: f64) -> Option<f64> {
        self.rotate_to(now);
        if self.read.len() < self.min_points.max(1) {
            return None;
        }
        let n = self.read.len();
        let rank = ((percentile / 100.0) * n as f64).ceil() as usize;
        Some(self.read[rank.clamp(1, n) - 1] as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> SimTime {
        SimTime::ZERO + ms
    }

    #[test]
    fn the_delay_is_the_previous_periods_percentile_in_whole_ms() {
        let mut h = RotatingLatencies::new(1000.0, 10);
        for i in 0..100 {
            h.record(at(f64::from(i)), 0.5 + f64::from(i % 10));
        }
        // Nothing read during the first period.
        assert_eq!(h.delay_ms(at(999.0), 50.0), None);
        // Rotated: latencies 1..=10 ms (rounded up), ten each.
        assert_eq!(h.delay_ms(at(1000.0), 50.0), Some(5.0));
        assert_eq!(h.delay_ms(at(1500.0), 95.0), Some(10.0));
        // What this period writes is read only after the next rotation.
        for i in 0..20 {
            h.record(at(1500.0 + f64::from(i)), 40.0);
        }
        assert_eq!(h.delay_ms(at(1999.0), 50.0), Some(5.0));
        assert_eq!(h.delay_ms(at(2000.0), 50.0), Some(40.0));
        // Two periods without a rotation clear both.
        assert_eq!(h.delay_ms(at(4000.0), 50.0), None);
    }

    #[test]
    fn too_few_points_give_no_delay() {
        let mut h = RotatingLatencies::new(1000.0, 100);
        for i in 0..99 {
            h.record(at(f64::from(i)), 3.0);
        }
        assert_eq!(h.delay_ms(at(1000.0), 99.0), None);
    }
}
