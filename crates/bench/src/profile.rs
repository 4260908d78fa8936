//! Measured demand profiles: each request run alone at each degree, several times.
//!
//! This is the offline measurement of the FM paper (§6.1): every request executes in
//! isolation at degrees 1..N, each time averaged over repetitions (the paper used at
//! least 10), and the result is the profile `tailor plan fm` reads. The repetitions are
//! passes over all the requests, one degree at a time, rather than one request run again
//! and again: a request repeated back to back finds the caches full of its own data, and
//! measured that way short searches came out at half the time they take among other
//! requests in a live run.
//! One unmeasured pass comes first, so that no measured run pays for a first touch of
//! the data (a search's first read of the index pages, say).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tailor_core::{DemandProfile, Job, Policy, ProfileConditions, RequestProfile};
use tailor_runtime::{Runtime, RuntimeConfig, Shutdown, StartError};

use crate::host::HostMeter;
use crate::source::RequestSource;

/// The version of the measuring method, for names of kept profiles: a profile measured
/// by an older method is not reused (2: passes over all requests, one degree at a time).
pub const PROFILE_METHOD: u32 = 2;

/// How to profile.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// How many requests to measure: the first of the source.
    pub requests: usize,
    /// Degrees 1..=`max_degree`.
    pub max_degree: usize,
    /// Runs per request and degree; the profile keeps their mean.
    pub repeat: usize,
}

/// One request's degree-1 run split into its parts, averaged over the passes: the
/// units' times in unit order, the merge's, and the rest of t1 (joining, claiming).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitTimes {
    /// `units_ms[u]`: unit u's time.
    pub units_ms: Vec<f64>,
    /// The merge's time.
    pub merge_ms: f64,
}

/// A measured profile with what was measured beside it.
#[derive(Debug, Clone)]
pub struct MeasuredProfile {
    /// The profile.
    pub profile: DemandProfile,
    /// The machine's conditions while it was measured.
    pub conditions: ProfileConditions,
    /// Each request's units and merge at degree 1, in profile order.
    pub units: Vec<UnitTimes>,
}

/// Measures the profile of the first `cfg.requests` requests of `source`, calling
/// `progress(done, total)` after each run.
pub fn measure_profile<S: RequestSource>(
    cfg: &ProfileConfig,
    source: &S,
    progress: impl Fn(usize, usize),
) -> Result<DemandProfile, StartError> {
    Ok(measure_profile_in_detail(cfg, source, progress)?.profile)
}

/// A job whose units and merge are timed, for the degree-1 runs: there one thread runs
/// them one after another, so each time is the part's own.
struct Timed<J> {
    job: J,
    /// Nanoseconds of each unit, then of the merge.
    ns: Arc<Vec<AtomicU64>>,
}

impl<J: Job> Job for Timed<J> {
    type Part = J::Part;
    type Output = J::Output;

    fn units(&self) -> usize {
        self.job.units()
    }

    fn run(&self, unit: usize) -> J::Part {
        let start = Instant::now();
        let part = self.job.run(unit);
        self.ns[unit].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        part
    }

    fn merge(&self, parts: Vec<J::Part>) -> J::Output {
        let start = Instant::now();
        let out = self.job.merge(parts);
        self.ns[self.ns.len() - 1].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    fn on_join(&self) {
        self.job.on_join()
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        self.job.demand_hint_ms()
    }
}

/// [`measure_profile`], also returning the machine's conditions over the measurement
/// (the hiccup meter runs throughout) and each request's unit and merge times at degree 1.
pub fn measure_profile_in_detail<S: RequestSource>(
    cfg: &ProfileConfig,
    source: &S,
    progress: impl Fn(usize, usize),
) -> Result<MeasuredProfile, StartError> {
    let count = cfg.requests.min(source.len());
    let repeat = cfg.repeat.max(1);
    let t0 = Instant::now();
    let meter = HostMeter::start(t0).map_err(|e| StartError::Thread(e.to_string()))?;
    // One runtime per degree, each running one request at a time at that degree.
    let runtimes = (1..=cfg.max_degree)
        .map(|d| {
            let mut rc = RuntimeConfig::new(d, Policy::Fix { degree: d });
            rc.workers = Some(1);
            Runtime::start(rc)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // totals[i][d]: request i's measured time at degree d + 1, summed over the passes.
    let mut totals = vec![vec![0.0; runtimes.len()]; count];
    // parts[i]: request i's unit and merge nanoseconds at degree 1, summed likewise.
    let parts: Vec<Arc<Vec<AtomicU64>>> = (0..count)
        .map(|i| {
            Arc::new(
                (0..=source.job(i).units())
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            )
        })
        .collect();
    let passes = repeat + 1;
    let steps = passes * runtimes.len() * count;
    let mut done_steps = 0;
    for pass in 0..passes {
        // One degree at a time, so that its threads stay awake from one request to the
        // next, as they are in a busy server (a degree-2 run right after a degree-1 run
        // found the second core asleep and measured 20 ms requests at s(2) = 1.57
        // instead of 1.9).
        for (d, rt) in runtimes.iter().enumerate() {
            for (i, total) in totals.iter_mut().enumerate() {
                let handle = if d == 0 && pass > 0 {
                    rt.submit(Timed {
                        job: source.job(i),
                        ns: parts[i].clone(),
                    })
                    .map(|h| h.wait().map(|done| done.timing))
                } else {
                    rt.submit(source.job(i))
                        .map(|h| h.wait().map(|done| done.timing))
                };
                let timing = handle
                    .expect("an idle runtime admits a request")
                    .expect("a request runs to its end");
                if pass > 0 {
                    total[d] += timing.finish.duration_since(timing.start).as_secs_f64() * 1000.0;
                }
                done_steps += 1;
                progress(done_steps, steps);
            }
        }
    }
    for rt in runtimes {
        rt.shutdown(Shutdown::Drain);
    }
    let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let host = meter.stop().stats(f64::NEG_INFINITY, f64::INFINITY);
    let width = count.to_string().len();
    let requests = totals
        .into_iter()
        .enumerate()
        .map(|(i, sums)| RequestProfile {
            id: format!("q{:0width$}", i + 1),
            times_ms: sums
                .into_iter()
                .map(|sum| (sum / repeat as f64).max(1e-6))
                .collect(),
        })
        .collect();
    let mean_ms = |ns: &AtomicU64| ns.load(Ordering::Relaxed) as f64 / 1e6 / repeat as f64;
    let units = parts
        .iter()
        .map(|ns| UnitTimes {
            units_ms: ns[..ns.len() - 1].iter().map(mean_ms).collect(),
            merge_ms: mean_ms(&ns[ns.len() - 1]),
        })
        .collect();
    Ok(MeasuredProfile {
        profile: DemandProfile::new(requests).expect("measured times are positive"),
        conditions: ProfileConditions {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            wall_ms,
            host,
        },
        units,
    })
}
