//! What the machine did to a live run apart from the policy: CPU time the hypervisor
//! took (steal), CPU time other processes used, and stalls of a real-time thread
//! (hiccups).
//!
//! A hiccup meter in the manner of jHiccup: a thread at a real-time priority above the
//! generator's and the emulators' sleeps 5 ms at a time, and any wake-up more than 2 ms
//! late is a stretch in which nothing of ordinary priority could have run either. (It
//! slept 1 ms at first; waking 1,000 times a second took about 1% of two cores from the
//! server under test. At 5 ms a stall of 5 ms or more is always seen, a shorter one in
//! proportion to its length.) On a
//! VM, steal time from `/proc/stat` says how much CPU time the host gave to others, and
//! the busy time there less this process's own CPU time says what other programs on the
//! machine took. None depends on the policy under test, so a run's tail can be read
//! against them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tailor_core::HostStats;

/// How often the meter wakes.
const TICK: Duration = Duration::from_millis(5);
/// How often it reads the CPU counters (every 100 ms).
const STEAL_EVERY: u32 = 20;
/// A wake-up this much later than asked is recorded as a hiccup.
pub const HICCUP_MS: f64 = 2.0;

/// What the meter recorded, in ms since the run's start.
#[derive(Debug, Clone, Default)]
pub struct HostTrace {
    /// (time, cumulative steal) samples; empty where steal is not reported.
    steal: Vec<(f64, f64)>,
    /// (time, cumulative CPU time of other processes) samples: the machine's busy time
    /// less this process's; empty off Linux.
    others: Vec<(f64, f64)>,
    /// (time the hiccup ended, its length) for every hiccup over [`HICCUP_MS`].
    hiccups: Vec<(f64, f64)>,
    /// The longest lateness of any wake-up, with its end time.
    worst: (f64, f64),
}

impl HostTrace {
    /// Steal and hiccups between `from` and `to` (ms since the run's start). Steal is
    /// interpolated between samples; a hiccup counts where it ended.
    pub fn stats(&self, from: f64, to: f64) -> HostStats {
        let inside = |t: f64| t >= from && t < to;
        let mut max_hiccup_ms: f64 = self
            .hiccups
            .iter()
            .filter(|h| inside(h.0))
            .map(|h| h.1)
            .fold(0.0, f64::max);
        if inside(self.worst.0) {
            max_hiccup_ms = max_hiccup_ms.max(self.worst.1);
        }
        let span = |samples: &[(f64, f64)]| {
            (!samples.is_empty()).then(|| interpolate(samples, to) - interpolate(samples, from))
        };
        HostStats {
            steal_ms: span(&self.steal),
            // Ticks of 10 ms on both sides can make a quiet span slightly negative.
            other_cpu_ms: span(&self.others).map(|ms| ms.max(0.0)),
            max_hiccup_ms,
            hiccup_ms: self
                .hiccups
                .iter()
                .filter(|h| inside(h.0))
                .map(|h| h.1)
                // Not `sum()`: an empty f64 sum is -0.0, printed as "-0.0" in summaries.
                .fold(0.0, |total, h| total + h),
            work_scale: None,
        }
    }
}

impl HostTrace {
    /// Records the steal and other processes' CPU counters at `at` ms.
    fn sample(&mut self, at: f64) {
        if let Some((steal, others)) = cpu_ms() {
            self.steal.push((at, steal));
            self.others.push((at, others));
        }
    }
}

/// The cumulative value at `t` of increasing samples (t, value), held flat outside them.
fn interpolate(samples: &[(f64, f64)], t: f64) -> f64 {
    let i = samples.partition_point(|s| s.0 <= t);
    match (i.checked_sub(1).map(|j| samples[j]), samples.get(i)) {
        (Some(a), Some(b)) if b.0 > a.0 => a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0),
        (Some(a), _) => a.1,
        (None, Some(b)) => b.1,
        (None, None) => 0.0,
    }
}

/// The steal and busy (user, nice, system, irq, softirq) fields of /proc/stat's
/// aggregate `cpu` line, in clock ticks.
fn parse_cpu_ticks(proc_stat: &str) -> Option<(u64, u64)> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal ...
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = fields[..] else {
        return None;
    };
    Some((steal, user + nice + system + irq + softirq))
}

/// The machine's steal time and other processes' CPU time so far, ms (summed over
/// CPUs), or `None` off Linux.
fn cpu_ms() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let (steal, busy) = parse_cpu_ticks(&text)?;
    let ms = 1000.0 / crate::os::clock_ticks_per_second()?;
    let own = crate::os::process_cpu_seconds() * 1000.0;
    Some((steal as f64 * ms, busy as f64 * ms - own))
}

/// A running hiccup meter; [`HostMeter::stop`] ends it and hands back its trace.
pub struct HostMeter {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<HostTrace>,
}

impl HostMeter {
    /// Starts the meter; times are measured from `t0`.
    pub fn start(t0: Instant) -> std::io::Result<HostMeter> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tailor-hiccups".into())
            .spawn(move || {
                crate::os::prepare_realtime_thread(crate::os::HICCUP_PRIORITY);
                let ms = |at: Instant| {
                    if at >= t0 {
                        at.duration_since(t0).as_secs_f64() * 1000.0
                    } else {
                        -(t0.duration_since(at).as_secs_f64() * 1000.0)
                    }
                };
                let mut trace = HostTrace::default();
                let mut tick = 0u32;
                while !flag.load(Ordering::Relaxed) {
                    if tick.is_multiple_of(STEAL_EVERY) {
                        trace.sample(ms(Instant::now()));
                    }
                    tick = tick.wrapping_add(1);
                    let asked = Instant::now();
                    std::thread::sleep(TICK);
                    let woke = Instant::now();
                    let late = (woke - asked).as_secs_f64() * 1000.0 - TICK.as_secs_f64() * 1000.0;
                    if late > trace.worst.1 {
                        trace.worst = (ms(woke), late);
                    }
                    if late > HICCUP_MS {
                        trace.hiccups.push((ms(woke), late));
                    }
                }
                trace.sample(ms(Instant::now()));
                trace
            })?;
        Ok(HostMeter { stop, thread })
    }

    /// Stops the meter and returns what it saw.
    pub fn stop(self) -> HostTrace {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_steal_and_busy_time_from_the_aggregate_line() {
        let text = "cpu  7566198 774117 593776 7025505 147970 0 12177 51180 0 0\n\
                    cpu0 3812439 381867 285510 3495733 36486 0 1489 27593 0 0\n";
        let busy = 7566198 + 774117 + 593776 + 12177;
        assert_eq!(parse_cpu_ticks(text), Some((51180, busy)));
        assert_eq!(parse_cpu_ticks("cpu0 1 2 3\n"), None);
        assert_eq!(parse_cpu_ticks("cpu  1 2 3\n"), None);
        assert_eq!(parse_cpu_ticks("cpu  1 2 3 4 5 6 x 8\n"), None);
    }

    #[test]
    fn splits_steal_and_hiccups_by_span() {
        let trace = HostTrace {
            steal: vec![(0.0, 100.0), (100.0, 100.0), (200.0, 300.0)],
            others: vec![(0.0, 50.0), (200.0, 40.0)],
            hiccups: vec![(50.0, 4.0), (150.0, 30.0), (160.0, 3.0)],
            worst: (150.0, 30.0),
        };
        let first = trace.stats(0.0, 100.0);
        assert_eq!(first.steal_ms, Some(0.0));
        assert_eq!(first.max_hiccup_ms, 4.0);
        assert_eq!(first.hiccup_ms, 4.0);
        let second = trace.stats(100.0, 200.0);
        assert_eq!(second.steal_ms, Some(200.0));
        assert_eq!(second.max_hiccup_ms, 30.0);
        assert_eq!(second.hiccup_ms, 33.0);
        // Other processes' time never reads below zero.
        assert_eq!(second.other_cpu_ms, Some(0.0));
        // Half-way between samples, and past the last one.
        assert_eq!(trace.stats(150.0, 1000.0).steal_ms, Some(100.0));
        assert_eq!(HostTrace::default().stats(0.0, 1.0).steal_ms, None);
        // A span with no hiccups reports +0, not -0.
        assert!(trace.stats(300.0, 400.0).hiccup_ms.is_sign_positive());
    }

    #[test]
    fn the_meter_stops_and_reports() {
        let meter = HostMeter::start(Instant::now()).expect("the meter starts");
        std::thread::sleep(Duration::from_millis(30));
        let trace = meter.stop();
        let all = trace.stats(f64::NEG_INFINITY, f64::INFINITY);
        assert!(all.max_hiccup_ms >= 0.0);
        if cfg!(target_os = "linux") {
            assert!(all.steal_ms.is_some());
            assert!(all.other_cpu_ms.is_some_and(|ms| ms >= 0.0));
        }
    }
}
