//! The synthetic workload: CPU-bound units calibrated in microseconds at start-up.
//!
//! A request of sequential work W ms with serial fraction f and per-thread overhead o us
//! splits (1 - f) W into units of about `unit_us` each, runs f W in its merge (one thread,
//! after the units), and charges every thread o us when it joins. Its time at degree d is
//! then about f W + o + (1 - f) W / d, Amdahl's law plus the cost of each added thread.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tailor_core::{Job, SpeedTrace, Speedup, MAX_WORK_SCALE};

/// Burns CPU for a requested number of microseconds, by a loop calibrated on this machine.
///
/// Clones share one meter of the time the loop actually took against the time asked of
/// it ([`Spinner::work_scale`]).
#[derive(Debug, Clone)]
pub struct Spinner {
    iterations_per_us: f64,
    meter: Arc<SpinMeter>,
}

/// Nanoseconds asked of the spin loop, and nanoseconds it took by the wall clock: in
/// all, and in windows of [`SPEED_WINDOW`] from the meter's creation (the first
/// [`MAX_SPEED_WINDOWS`] of them, about 1.8 hours).
#[derive(Debug)]
struct SpinMeter {
    asked_ns: AtomicU64,
    took_ns: AtomicU64,
    epoch: Instant,
    windows: Mutex<Vec<(u64, u64)>>,
}

impl Default for SpinMeter {
    fn default() -> Self {
        SpinMeter {
            asked_ns: AtomicU64::new(0),
            took_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            windows: Mutex::new(Vec::new()),
        }
    }
}

/// The window of the spin loop's speed trace ([`Spinner::speed_trace`]).
pub(crate) const SPEED_WINDOW: Duration = Duration::from_millis(100);

/// The most windows a spinner keeps (1 MiB of counts).
const MAX_SPEED_WINDOWS: usize = 1 << 16;

impl SpinMeter {
    fn record(&self, start: Instant, asked_ns: u64, took_ns: u64) {
        self.asked_ns.fetch_add(asked_ns, Ordering::Relaxed);
        self.took_ns.fetch_add(took_ns, Ordering::Relaxed);
        let window = (start.saturating_duration_since(self.epoch).as_nanos()
            / SPEED_WINDOW.as_nanos()) as usize;
        if window < MAX_SPEED_WINDOWS {
            let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
            if windows.len() <= window {
                windows.resize(window + 1, (0, 0));
            }
            windows[window].0 += asked_ns;
            windows[window].1 += took_ns;
        }
    }
}

/// Iterations of the spin loop; the body is one dependent multiply-add, so the time per
/// iteration is stable and the compiler cannot remove it (`black_box`).
fn spin(iterations: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9;
    for i in 0..iterations {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

impl Spinner {
    /// Measures the loop's speed as a loaded server sees it: one spinning thread per core,
    /// each timing five runs of about 20 ms, and the median of all those rates. Timing
    /// the loop alone and keeping the fastest run made units about 4% shorter than they
    /// turned out under load, which at 70% load put live queueing 18% above the
    /// simulator's (docs/validation.md).
    pub fn calibrate() -> Spinner {
        let mut iterations = 100_000u64;
        // Grow the run until it takes at least 20 ms.
        let alone = loop {
            let t = Instant::now();
            black_box(spin(iterations));
            let elapsed = t.elapsed().as_secs_f64();
            if elapsed >= 0.02 {
                break iterations as f64 / (elapsed * 1e6);
            }
            iterations *= 2;
        };
        let median = crate::median_on_every_core(|_| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    black_box(spin(iterations));
                    iterations as f64 / (t.elapsed().as_secs_f64() * 1e6)
                })
                .collect()
        });
        Spinner::with_rate(median.unwrap_or(alone))
    }

    /// A spinner with a given speed (for tests and for reusing a calibration).
    pub fn with_rate(iterations_per_us: f64) -> Spinner {
        Spinner {
            iterations_per_us,
            meter: Arc::default(),
        }
    }

    /// The wall time the loop took over the time asked of it, over every spin of this
    /// spinner and its clones so far (None before the first): above 1 when the machine
    /// ran the loop slower than at calibration (the hypervisor, another thread on the
    /// core, a slower clock), below 1 when faster. A live run's work takes this factor
    /// times its nominal ms, which is what the simulator needs to be told to compare
    /// with it (docs/reproduction.md, "The simulator against the live executor").
    pub fn work_scale(&self) -> Option<f64> {
        let asked = self.meter.asked_ns.load(Ordering::Relaxed);
        let took = self.meter.took_ns.load(Ordering::Relaxed);
        (asked > 0).then(|| took as f64 / asked as f64)
    }

    /// Loop iterations per microsecond on this machine.
    pub fn iterations_per_us(&self) -> f64 {
        self.iterations_per_us
    }

    /// Burns about `us` microseconds of CPU by the calibrated loop. (Timing units
    /// against the thread's CPU clock instead was tried and dropped: on this virtual
    /// machine the CPU clock runs 2% to 16% behind the wall clock even on an idle core,
    /// so units grew in wall time and live latencies drifted further from the
    /// simulator's; docs/validation.md.)
    pub fn spin_us(&self, us: f64) {
        if us > 0.0 {
            let start = Instant::now();
            black_box(spin((us * self.iterations_per_us) as u64));
            let took = start.elapsed().as_nanos() as u64;
            self.meter.record(start, (us * 1000.0) as u64, took);
        }
    }

    /// The work scale window by window ([`SPEED_WINDOW`]), over every spin of this
    /// spinner and its clones, with window starts in ms from `since` (a live run's
    /// arrival origin); windows with no spin are left out. None before the first spin.
    pub fn speed_trace(&self, since: Instant) -> Option<SpeedTrace> {
        let offset_ms = if self.meter.epoch >= since {
            (self.meter.epoch - since).as_secs_f64() * 1e3
        } else {
            -(since - self.meter.epoch).as_secs_f64() * 1e3
        };
        let window_ms = SPEED_WINDOW.as_secs_f64() * 1e3;
        let windows = self.meter.windows.lock().unwrap_or_else(|e| e.into_inner());
        let points = windows
            .iter()
            .enumerate()
            .filter(|(_, &(asked, _))| asked > 0)
            .map(|(i, &(asked, took))| {
                let scale = (took as f64 / asked as f64).clamp(1e-3, MAX_WORK_SCALE);
                (offset_ms + i as f64 * window_ms, scale)
            })
            .collect();
        SpeedTrace::new(points)
    }
}

/// How a synthetic request parallelizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticShape {
    /// Fraction of the work that runs on one thread, in [0, 1].
    pub serial_fraction: f64,
    /// CPU each thread spends when it joins a request, in us.
    pub overhead_us: f64,
    /// Target length of one unit of parallel work, in us.
    pub unit_us: f64,
}

impl SyntheticShape {
    /// Amdahl's law with serial fraction `f`, no per-thread overhead, 250 us units
    /// (short against the 5 ms quantum, long against the cost of claiming a unit).
    pub fn amdahl(f: f64) -> SyntheticShape {
        SyntheticShape {
            serial_fraction: f,
            overhead_us: 0.0,
            unit_us: 250.0,
        }
    }

    /// The shape for a `SPEEDUP` value: `linear` or `amdahl:F`. Tables and profiles cannot
    /// be synthesized and are refused.
    pub fn from_speedup(speedup: &Speedup) -> Result<SyntheticShape, String> {
        match speedup {
            Speedup::Linear => Ok(SyntheticShape::amdahl(0.0)),
            Speedup::Amdahl { serial_fraction } => Ok(SyntheticShape::amdahl(*serial_fraction)),
            Speedup::Table(_) => Err(
                "a synthetic workload's speedup is linear or amdahl:F (a serial fraction)".into(),
            ),
        }
    }

    /// The speedup this shape gives a request of `work_ms` at `degree`.
    pub fn speedup(&self, work_ms: f64, degree: usize) -> f64 {
        let w = work_ms * 1000.0;
        let one = w + self.overhead_us;
        let d = degree.max(1) as f64;
        one / (self.serial_fraction * w + self.overhead_us + (1.0 - self.serial_fraction) * w / d)
    }
}

/// One synthetic request.
#[derive(Debug, Clone)]
pub struct SyntheticJob {
    work_ms: f64,
    shape: SyntheticShape,
    units: usize,
    unit_us: f64,
    spinner: Arc<Spinner>,
}

impl SyntheticJob {
    /// A request of `work_ms` sequential work with the given shape.
    pub fn new(work_ms: f64, shape: SyntheticShape, spinner: Arc<Spinner>) -> SyntheticJob {
        let parallel_us = (1.0 - shape.serial_fraction) * work_ms * 1000.0;
        let units = if parallel_us > 0.0 {
            (parallel_us / shape.unit_us.max(1.0)).ceil().max(1.0) as usize
        } else {
            0
        };
        let unit_us = if units > 0 {
            parallel_us / units as f64
        } else {
            0.0
        };
        SyntheticJob {
            work_ms,
            shape,
            units,
            unit_us,
            spinner,
        }
    }

    /// The request's sequential work in ms.
    pub fn work_ms(&self) -> f64 {
        self.work_ms
    }
}

impl Job for SyntheticJob {
    type Part = ();
    type Output = ();

    fn units(&self) -> usize {
        self.units
    }

    fn run(&self, _unit: usize) {
        self.spinner.spin_us(self.unit_us);
    }

    fn merge(&self, _parts: Vec<()>) {
        self.spinner
            .spin_us(self.shape.serial_fraction * self.work_ms * 1000.0);
    }

    /// The serial part in pieces of one unit's length, checking `stop` between them, so
    /// that a cancelled request stops within a unit's time here too.
    fn merge_or_stop(&self, _parts: Vec<()>, stop: &dyn Fn() -> bool) -> Option<()> {
        let mut left = self.shape.serial_fraction * self.work_ms * 1000.0;
        let piece = self.shape.unit_us.max(1.0);
        while left > 0.0 {
            if stop() {
                return None;
            }
            self.spinner.spin_us(left.min(piece));
            left -= piece;
        }
        Some(())
    }

    fn on_join(&self) {
        self.spinner.spin_us(self.shape.overhead_us);
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        Some(self.work_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_parallel_work_into_units() {
        let spinner = Arc::new(Spinner::with_rate(1.0));
        let job = SyntheticJob::new(10.0, SyntheticShape::amdahl(0.1), spinner.clone());
        // 9 ms of parallel work in 250 us units.
        assert_eq!(job.units(), 36);
        assert!((job.unit_us * 36.0 - 9000.0).abs() < 1e-6);
        let serial = SyntheticJob::new(10.0, SyntheticShape::amdahl(1.0), spinner);
        assert_eq!(serial.units(), 0);
        assert_eq!(serial.demand_hint_ms(), Some(10.0));
    }

    #[test]
    fn the_work_scale_is_the_loops_time_over_the_time_asked() {
        let rate = Spinner::calibrate().iterations_per_us();
        // Eight times the calibrated rate: every microsecond asked spins eight.
        let slow = Spinner::with_rate(8.0 * rate);
        assert_eq!(slow.work_scale(), None);
        let clone = slow.clone();
        clone.spin_us(2000.0);
        slow.spin_us(0.0);
        let scale = slow.work_scale().expect("the clone's spin counts");
        // Preemption only lengthens a spin; only a machine four times as fast as at
        // calibration could bring it under 2 (a calibration preempted by parallel tests
        // in CI once made the machine look twice as slow as it was).
        assert!(scale > 2.0, "work scale {scale}");
    }

    #[test]
    fn the_speed_trace_has_a_window_per_spin_time_and_the_scale_of_each() {
        let rate = Spinner::calibrate().iterations_per_us();
        let since = Instant::now();
        // Eight times the calibrated rate; the second spin starts in the second window.
        let slow = Spinner::with_rate(8.0 * rate);
        assert!(slow.speed_trace(since).is_none());
        slow.spin_us(5_000.0);
        std::thread::sleep(
            (since + Duration::from_millis(150)).saturating_duration_since(Instant::now()),
        );
        slow.clone().spin_us(5_000.0);
        let trace = slow.speed_trace(since).expect("spins were timed");
        let points: Vec<(f64, f64)> = trace.points().collect();
        assert_eq!(points.len(), 2, "{points:?}");
        assert!(points[0].0 >= 0.0 && points[0].0 < 1.0, "{points:?}");
        assert!(points[1].0 >= 100.0, "{points:?}");
        // As in the test above, only a machine four times as fast as at calibration
        // would bring a window under 2.
        assert!(points.iter().all(|p| p.1 > 2.0), "{points:?}");
        // From a later origin, the same windows start earlier.
        let later = slow
            .speed_trace(since + Duration::from_millis(50))
            .expect("trace");
        let first = later.points().next().expect("a point").0;
        assert!((first - (points[0].0 - 50.0)).abs() < 1e-6, "{first}");
    }

    #[test]
    fn the_model_speedup_is_amdahl_plus_overhead() {
        let s = SyntheticShape::amdahl(0.05);
        assert!((s.speedup(20.0, 2) - 1.0 / (0.05 + 0.95 / 2.0)).abs() < 1e-12);
        let with_overhead = SyntheticShape {
            overhead_us: 1000.0,
            ..s
        };
        assert!(with_overhead.speedup(20.0, 2) < s.speedup(20.0, 2));
        assert!(SyntheticShape::from_speedup(&Speedup::table(vec![1.0, 2.0]).unwrap()).is_err());
    }

    /// The span of `job` on `degree` threads when every unit takes its planned time: the
    /// units dealt out evenly (they are equal, so any list schedule gives this), each
    /// thread's join overhead, then the serial merge.
    fn span_us(job: &SyntheticJob, degree: usize) -> f64 {
        let per_thread = job.units.div_ceil(degree) as f64;
        per_thread * job.unit_us
            + job.shape.overhead_us
            + job.shape.serial_fraction * job.work_ms * 1000.0
    }

    #[test]
    fn the_units_give_the_model_speedup_on_an_ideal_machine() {
        // The structure a live run times (the wall-clock check is `tailor profile`, recorded
        // in BENCHMARKS.md): a request split this way has span work / s(d), up to one unit
        // of rounding when the units do not divide evenly.
        let spinner = Arc::new(Spinner::with_rate(1.0));
        for f in [0.0, 0.05, 0.3, 1.0] {
            for work_ms in [0.1, 1.0, 20.0, 333.3] {
                let shape = SyntheticShape::amdahl(f);
                let job = SyntheticJob::new(work_ms, shape, spinner.clone());
                for degree in 1..=16 {
                    let ideal = work_ms * 1000.0 / shape.speedup(work_ms, degree);
                    let span = span_us(&job, degree);
                    assert!(
                        span >= ideal - 1e-6 && span <= ideal + job.unit_us + 1e-6,
                        "f {f}, {work_ms} ms, degree {degree}: span {span} us, model {ideal} us"
                    );
                }
            }
        }
    }

    #[test]
    fn calibration_gives_a_positive_rate() {
        let s = Spinner::calibrate();
        assert!(s.iterations_per_us() > 1.0);
    }
}
