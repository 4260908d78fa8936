//! Measured demand profiles: each request run alone at each degree, several times.
//!
//! This is the offline measurement of the FM paper (§6.1): every request executes in
//! isolation at degrees 1..N, each time averaged over repetitions (the paper used at
//! least 10) after one unmeasured warm-up run, and the result is the profile
//! `tailor plan fm` reads.

use tailor_core::{DemandProfile, Policy, RequestProfile};
use tailor_runtime::{Runtime, RuntimeConfig, Shutdown, StartError};

use crate::source::RequestSource;

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
/// `progress(done, total)` after each request.
pub fn measure_profile<S: RequestSource>(
    cfg: &ProfileConfig,
    source: &S,
    progress: impl Fn(usize, usize),
) -> Result<DemandProfile, StartError> {
    let count = cfg.requests.min(source.len());
    // One runtime per degree, each running one request at a time at that degree.
    let runtimes = (1..=cfg.max_degree)
        .map(|d| {
            let mut rc = RuntimeConfig::new(d, Policy::Fix { degree: d });
            rc.workers = Some(1);
            Runtime::start(rc)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let width = count.to_string().len();
    let mut requests = Vec::with_capacity(count);
    for i in 0..count {
        let times_ms = runtimes
            .iter()
            .map(|rt| {
                // One unmeasured run first, so that no measured one pays for cold caches
                // (a search's first touch of the index pages, say).
                let total: f64 = (0..=cfg.repeat.max(1))
                    .map(|run| {
                        let done = rt
                            .submit(source.job(i))
                            .expect("an idle runtime admits a request")
                            .wait()
                            .expect("a request runs to its end");
                        let t = done.timing;
                        if run == 0 {
                            0.0
                        } else {
                            t.finish.duration_since(t.start).as_secs_f64() * 1000.0
                        }
                    })
                    .sum();
                (total / cfg.repeat.max(1) as f64).max(1e-6)
            })
            .collect();
        requests.push(RequestProfile {
            id: format!("q{:0width$}", i + 1),
            times_ms,
        });
        progress(i + 1, count);
    }
    for rt in runtimes {
        rt.shutdown(Shutdown::Drain);
    }
    Ok(DemandProfile::new(requests).expect("measured times are positive"))
}
