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

use tailor_core::{DemandProfile, Policy, RequestProfile};
use tailor_runtime::{Runtime, RuntimeConfig, Shutdown, StartError};

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

/// Measures the profile of the first `cfg.requests` requests of `source`, calling
/// `progress(done, total)` after each run.
pub fn measure_profile<S: RequestSource>(
    cfg: &ProfileConfig,
    source: &S,
    progress: impl Fn(usize, usize),
) -> Result<DemandProfile, StartError> {
    let count = cfg.requests.min(source.len());
    let repeat = cfg.repeat.max(1);
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
                let done = rt
                    .submit(source.job(i))
                    .expect("an idle runtime admits a request")
                    .wait()
                    .expect("a request runs to its end");
                if pass > 0 {
                    let t = done.timing;
                    total[d] += t.finish.duration_since(t.start).as_secs_f64() * 1000.0;
                }
                done_steps += 1;
                progress(done_steps, steps);
            }
        }
    }
    for rt in runtimes {
        rt.shutdown(Shutdown::Drain);
    }
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
    Ok(DemandProfile::new(requests).expect("measured times are positive"))
}
