//! Injected stalls: a runtime that pauses at random, as real servers do (a garbage
//! collection, a compaction, a noisy neighbour), for the fan-out experiments (issue #24).
//!
//! As in the simulator (`tailor_core::Noise`, crates/sim/src/fanout.rs), the gap from the
//! end of one stall to the start of the next is exponential with rate `rate_per_s`, and
//! each stall lasts `length_ms`: stalls start 1 / (1 / rate + length) times a second.
//! During a stall every pool thread waits at its next unit boundary, like threads stopped
//! at a safepoint: units make no progress and admitted requests do not start. A request's
//! serial part (its merge) is not held. A stall ends early when the runtime stops, so
//! shutdown never waits one out.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tailor_core::{splitmix_below, Noise};

/// The shared state of the stalls: when the current one ends, and a way to wake the
/// waiting threads when the runtime stops.
#[derive(Debug)]
pub(crate) struct StallGate {
    epoch: Instant,
    /// The end of the current stall, ns after `epoch`; 0 before the first.
    until_ns: AtomicU64,
    stopping: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    /// Stalls begun so far.
    pub(crate) stalls: AtomicU64,
}

impl StallGate {
    pub(crate) fn new() -> StallGate {
        StallGate {
            epoch: Instant::now(),
            until_ns: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            stalls: AtomicU64::new(0),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Called by a thread between units: waits while a stall lasts. Outside a stall it
    /// takes no lock: one atomic load before the first stall, then a clock read too.
    pub(crate) fn pass(&self) {
        let until = self.until_ns.load(Ordering::Acquire);
        if until == 0 || self.now_ns() >= until || self.stopping.load(Ordering::Acquire) {
            return;
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let until = self.until_ns.load(Ordering::Acquire);
            let now = self.now_ns();
            if now >= until || self.stopping.load(Ordering::Acquire) {
                return;
            }
            guard = self
                .wake
                .wait_timeout(guard, Duration::from_nanos(until - now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The stall thread: waits an exponential gap, stalls for the length, and again,
    /// until [`StallGate::stop`]. The gaps come from `seed`.
    pub(crate) fn run(&self, noise: Noise, seed: u64) {
        if noise.rate_per_s <= 0.0 {
            return;
        }
        let mut state = seed ^ 0x4E4F_4953;
        let length = Duration::from_secs_f64(noise.length_ms / 1000.0);
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // Inverse transform: U in (0, 1], gap = -ln(U) / rate.
            let u = (splitmix_below(&mut state, 1 << 53) as f64 + 1.0) / (1u64 << 53) as f64;
            let gap = Duration::from_secs_f64(-u.ln() / noise.rate_per_s);
            guard = match self.sleep(guard, Instant::now() + gap) {
                Some(g) => g,
                None => return,
            };
            let end = self
                .now_ns()
                .saturating_add(length.as_nanos() as u64)
                .max(1);
            self.until_ns.store(end, Ordering::Release);
            self.stalls.fetch_add(1, Ordering::Relaxed);
            // The stall's own length, then the next gap starts.
            guard = match self.sleep(guard, Instant::now() + length) {
                Some(g) => g,
                None => return,
            };
        }
    }

    /// Sleeps on the gate's condition variable until `deadline`; `None` if the gate
    /// stopped meanwhile.
    fn sleep<'a>(
        &self,
        mut guard: MutexGuard<'a, ()>,
        deadline: Instant,
    ) -> Option<MutexGuard<'a, ()>> {
        loop {
            if self.stopping.load(Ordering::Acquire) {
                return None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Some(guard);
            }
            guard = self
                .wake
                .wait_timeout(guard, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Ends the current stall and the stall thread.
    pub(crate) fn stop(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.stopping.store(true, Ordering::Release);
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_thread_waits_out_a_stall_and_stop_ends_it() {
        let gate = Arc::new(StallGate::new());
        // Before any stall, passing costs nothing.
        gate.pass();
        // A stall that would last an hour: stopping the gate releases the waiter.
        gate.until_ns
            .store(gate.now_ns() + 3_600_000_000_000, Ordering::Release);
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.pass();
                Instant::now()
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "the waiter passed during the stall");
        gate.stop();
        waiter.join().unwrap();
    }

    #[test]
    fn the_stall_thread_stalls_and_stops() {
        let gate = Arc::new(StallGate::new());
        let noise = Noise {
            rate_per_s: 1000.0,
            length_ms: 1.0,
        };
        let runner = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.run(noise, 3))
        };
        while gate.stalls.load(Ordering::Relaxed) < 3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        gate.stop();
        runner.join().unwrap();
        assert!(gate.until_ns.load(Ordering::Acquire) > 0);
    }
}
